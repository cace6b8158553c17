"""`pi-lab tree` and `pi-lab context` on real pi session files."""

from __future__ import annotations

import re

import pytest

from pi_lab.cli import main, message_preview


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_no_arguments_prints_help(capsys):
    code, out, err = run(capsys)
    assert code == 0 and err == ""
    assert "tree" in out and "context" in out and "usage: pi-lab" in out


def test_subcommand_help(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["tree", "--help"])
    assert raised.value.code == 0
    out = capsys.readouterr().out
    for option in ("--filter", "--search", "--leaf", "--label-times"):
        assert option in out


def test_tree_prints_every_row_with_the_leaf_marked(capsys, fixture_copy):
    path = fixture_copy("public-twkrash-branching.jsonl")
    code, out, err = run(capsys, "tree", str(path))
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "  • user: sanitized",
        "› ├─ • ",
        "  └⊟ [read: ]",
        "        [compaction: 0k tokens]",
        "        assistant: sanitized",
        "  (2/5)",
    ]


def test_tree_with_another_leaf(capsys, fixture_copy):
    code, out, _ = run(capsys, "tree", str(fixture_copy("public-twkrash-branching.jsonl")), "--leaf", "e6")
    assert code == 0
    assert out.splitlines() == [
        "  • user: sanitized",
        "  ├⊟ • [read: ]",
        "  │     • [compaction: 0k tokens]",
        "› │     • assistant: sanitized",
        "  └─ ",
        "  (4/5)",
    ]


def test_tree_filters_and_search(capsys, fixture_copy):
    path = str(fixture_copy("public-twkrash-branching.jsonl"))
    code, out, _ = run(capsys, "tree", path, "--filter", "all")
    assert code == 0
    assert "[model: alpha]" in out and out.splitlines()[-1] == "  (3/6) [all]"
    _, out, _ = run(capsys, "tree", path, "--filter", "user-only")
    assert out.splitlines() == ["› • user: sanitized", "  (1/1) [user]"]
    _, out, _ = run(capsys, "tree", path, "--search", "compaction")
    assert out.splitlines() == ["› [compaction: 0k tokens]", "  (1/1)"]  # a lone visible root
    _, out, _ = run(capsys, "tree", path, "--filter", "labeled-only", "--label-times")
    assert out.splitlines() == ["  No entries found", "  (0/0) [labeled] [+label time]"]


def test_tree_on_large_v1_sessions(capsys, fixture_copy):
    for name, count in (("before-compaction.jsonl", 777), ("large-session.jsonl", 720)):
        code, out, err = run(capsys, "tree", str(fixture_copy(name)))
        assert code == 0 and err == ""
        rows = out.splitlines()
        assert rows[-1] == f"  ({count}/{count})"
        assert sum(line.startswith("› ") for line in rows) == 1
        assert any("[bash: " in line for line in rows)


def test_v1_ids_are_stable_between_runs(capsys, fixture_copy):
    path = str(fixture_copy("public-whamp-v1-linear.jsonl"))
    _, first, _ = run(capsys, "context", path)
    _, second, _ = run(capsys, "context", path)
    assert first == second
    leaf = re.match(r"Context at leaf (\S+):", first).group(1)
    code, out, _ = run(capsys, "tree", path, "--leaf", leaf)
    assert code == 0 and out.splitlines()[-1] == "  (4/4)"


def test_the_file_is_never_modified(capsys, fixture_copy):
    path = fixture_copy("public-whamp-v1-linear.jsonl")
    data = path.read_bytes().rstrip(b"\n")  # no final newline: pi would add one
    path.write_bytes(data)
    run(capsys, "tree", str(path))
    run(capsys, "context", str(path))
    assert path.read_bytes() == data


def test_context_lists_the_model_messages(capsys, fixture_copy):
    code, out, err = run(capsys, "context", str(fixture_copy("public-twkrash-branching.jsonl")), "--leaf", "e6")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("Context at leaf e6: 4 messages, ~")
    assert "(model acme/alpha, thinking off)" in lines[0]
    headings = lines[1::2]
    assert [h.split(" · ")[0] for h in headings] == [
        "[1] compactionSummary",
        "[2] assistant",
        "[3] toolResult read",
        "[4] assistant",
    ]
    assert [h.split(" · ")[1] for h in headings] == ["entry e5", "entry e3", "entry e4", "entry e6"]
    assert all(re.fullmatch(r"~\d+ tok", h.split(" · ")[2]) for h in headings)
    assert lines[2] == "    sanitized"
    assert lines[4] == "    → read({})"
    assert lines[6] == "    redacted fixture"


def test_context_token_estimates_add_up(capsys, fixture_copy):
    from pi_lab.compaction import estimate_tokens
    from pi_lab.session import SessionManager

    path = fixture_copy("public-dwsy-real-truncated.jsonl")
    code, out, _ = run(capsys, "context", str(path))
    assert code == 0
    messages = SessionManager.open(path).build_session_context().messages
    total = sum(estimate_tokens(m) for m in messages)
    assert f"{len(messages)} messages, ~{total} tok" in out.splitlines()[0]
    per_message = [int(m) for m in re.findall(r" · ~(\d+) tok$", out, flags=re.M)]
    assert per_message == [estimate_tokens(m) for m in messages]


def test_context_of_a_compacted_v1_session(capsys, fixture_copy):
    code, out, _ = run(capsys, "context", str(fixture_copy("before-compaction.jsonl")))
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("[1] compactionSummary · entry ")
    assert all(len(line) <= 4 + 100 for line in lines[2::2])


def test_invalid_file_is_a_one_line_error(capsys, fixtures_dir):
    for command in ("tree", "context"):
        code, out, err = run(capsys, command, str(fixtures_dir / "SOURCES.md"))
        assert code == 1 and out == ""
        assert err.count("\n") == 1 and err.startswith("pi-lab: ") and "not a valid pi session" in err


def test_header_must_come_first(capsys, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type":"message","id":"a"}\n', encoding="utf-8")
    code, out, err = run(capsys, "tree", str(path))
    assert code == 1 and out == "" and "not a session header" in err


def test_missing_file_and_unknown_leaf(capsys, tmp_path, fixture_copy):
    code, _, err = run(capsys, "tree", str(tmp_path / "nope.jsonl"))
    assert code == 1 and "no such file" in err
    code, _, err = run(capsys, "context", str(tmp_path))
    assert code == 1 and "directory" in err
    code, _, err = run(capsys, "tree", str(fixture_copy("public-twkrash-uat.jsonl")), "--leaf", "zzz")
    assert code == 1 and err.strip() == "pi-lab: no entry with id 'zzz' in this session"


def test_message_preview():
    assert message_preview({"role": "user", "content": "a\n\n  b"}) == "a b"
    assert message_preview({"role": "user", "content": "x" * 150}) == "x" * 99 + "…"
    assert message_preview({"role": "bashExecution", "command": "ls", "output": "a\nb"}) == "$ ls ⇒ a b"
    assert message_preview({"role": "assistant", "content": [], "errorMessage": "boom"}) == "(error) boom"
    assert message_preview({"role": "branchSummary", "summary": "went"}) == "went"
    assert message_preview({"role": "assistant", "content": []}) == "(empty)"


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("command", ["tree", "context"])
def test_a_fifo_is_one_line_on_stderr_not_a_hang(tmp_path, command):
    """Issue 16: `pi-lab tree` opened a FIFO named like a session and waited for a writer forever."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "pi_lab.cli", command, str(fifo)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "FIFO" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_an_os_error_is_one_line_not_a_traceback(capsys, tmp_path):
    code, out, err = run(capsys, "tree", str(tmp_path / ("x" * 5000 + ".jsonl")))
    assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("pi-lab: ")


# ---------------------------------------------------------------------------------------------
# Issue 21: lone surrogates, and the tree of a deep session


def _write_session(path, entries):
    import orjson

    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    return path


def test_a_lone_surrogate_is_printed_as_its_escape(capsys, tmp_path):
    """pi writes `\\ud83d` itself when it cuts an emoji in half; `tree` and `context` ended with
    `internal error: UnicodeEncodeError`."""
    from helpers import header

    line = (b'{"type":"message","id":"u1","parentId":null,"timestamp":"2026-07-29T09:00:01.000Z",'
            b'"message":{"role":"user","content":"cut \\ud83d here","timestamp":1}}\n')
    path = tmp_path / "s.jsonl"
    path.write_bytes(_write_session(tmp_path / "h.jsonl", [header()]).read_bytes() + line)
    for command in ("tree", "context"):
        code, out, err = run(capsys, command, str(path))
        assert code == 0 and err == "", err
        assert "cut \\ud83d here" in out


def _comb(path, n):
    """A chain of ``n`` entries with a side branch at every fourth: rows indented ever deeper,
    with a gutter per branch point above them."""
    from helpers import asst_msg, header, msg, user_msg

    entries = [header()]
    parent = None
    for i in range(n):
        entries.append(msg(f"s{i}", parent, user_msg(f"q{i}") if i % 2 == 0 else asst_msg(f"a{i}")))
        if i % 4 == 3:
            entries.append(msg(f"x{i}", f"s{i}", user_msg(f"side {i}")))
        parent = f"s{i}"
    return _write_session(path, entries)


def _tree_work(capsys, path):
    import pi_lab.cli_render as cli_render
    from session.work_counts import lines_run

    work, code = lines_run(cli_render, lambda: main(["tree", str(path)]))
    out = capsys.readouterr().out
    assert code == 0
    return work, out


def test_tree_work_grows_with_its_output_not_faster(capsys, tmp_path):
    """Issue 21: `pi-lab tree` on the 100k bench session took 124.6 s: each row's indentation
    walked levels x gutters. Counted in Python lines run per character printed (no clock):
    the same for a tree twice as deep (it doubled before)."""
    small_work, small_out = _tree_work(capsys, _comb(tmp_path / "a.jsonl", 200))
    large_work, large_out = _tree_work(capsys, _comb(tmp_path / "b.jsonl", 400))
    assert max(map(len, large_out.splitlines())) > 600  # hundreds of levels deep
    small, large = small_work / len(small_out), large_work / len(large_out)
    assert large < 1.2 * small and large < 3, (small, large)


def test_tree_rows_are_drawn_as_before_with_the_gutters_per_level(capsys, tmp_path):
    """The indentation built from the gutters equals the level-by-level rule it replaced."""
    from pi_lab.cli_render import _prefix
    from pi_lab.session import SessionManager
    from pi_lab.session.flatten import flatten_tree, visible_rows

    def by_levels(row):  # the rule, one level at a time (tree-and-context.md §13.4)
        pieces = []
        connector = row.show_connector and not row.is_virtual_root_child
        for level in range(row.indent):
            for position, show in row.gutters:
                if position == level:
                    pieces.append("│  " if show else "   ")
                    break
            else:
                if connector and level == row.indent - 1:
                    glyph = "⊞" if row.folded else ("⊟" if row.foldable else "─")
                    pieces.append(("└" if row.is_last else "├") + glyph + " ")
                else:
                    pieces.append("   ")
        return "".join(pieces)

    sm = SessionManager.open(_comb(tmp_path / "c.jsonl", 60), read_only=True)
    for leaf in (sm.leaf_id, "x31", "s10"):
        flat = flatten_tree(sm.get_tree(), leaf)
        for mode in ("default", "all", "user-only"):
            rows = visible_rows(flat, filter_mode=mode)
            assert rows and [_prefix(r) for r in rows] == [by_levels(r) for r in rows]


def test_tree_writes_each_row_as_it_is_made(tmp_path, monkeypatch):
    """The text of a deep tree is many times its rows (76 MB for the 100k bench session): it
    is written line by line, never joined whole in memory first."""
    import sys

    writes = []

    class Recorder:
        encoding = "utf-8"

        def write(self, text):
            writes.append(len(text))
            return len(text)

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Recorder())
    assert main(["tree", str(_comb(tmp_path / "d.jsonl", 200))]) == 0
    assert len(writes) > 200 and max(writes) < 1000


AGENT_FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name,first_row", [
    ("claude-code/inspect_scout-compaction_session.jsonl", "user: Start a long conversation"),
    ("codex/inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
     "user: <environment_context>"),
])
def test_tree_and_context_read_other_agents_files_by_their_rules(capsys, tmp_path, name, first_row):
    import shutil

    path = shutil.copy(AGENT_FIXTURES / name, tmp_path / "session.jsonl")
    before = open(path, "rb").read()
    code, out, err = run(capsys, "tree", str(path))
    assert code == 0 and err == ""
    assert first_row in out
    code, out, err = run(capsys, "context", str(path))
    assert code == 0 and out.startswith("Context at leaf ")
    if name.startswith("claude-code"):
        # after the compaction the model saw its summary, not the messages it replaced
        assert "compactionSummary" in out and "Start a long conversation" not in out
    assert open(path, "rb").read() == before
