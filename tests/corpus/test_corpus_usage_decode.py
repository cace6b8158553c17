"""The typed decode of assistant lines in ``pi_lab.corpus.usage_lines`` (msgspec, when installed)
against the orjson way it stands in for: the same calls and keys for every line, the lines it
cannot answer for going the orjson way, the same reports as ``Corpus.scan(cache=False)``, and
the same results without msgspec."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from corpus_builders import a, write_session
from fuzz import fieldfuzz
from helpers import header, msg, usage, user_msg
from test_corpus_usage_fast import _bench_module, _slow, assert_same_reports

from pi_lab.corpus import usage_fast, usage_lines
from pi_lab.corpus.reading import read_pi_entries

ROOT = Path(__file__).resolve().parents[2]
MUTATIONS = int(os.environ.get("PI_LAB_FUZZ_EXAMPLES", "300"))
typed_only = pytest.mark.skipif(usage_lines._DECODE is None, reason="msgspec is not installed")


def _line(**top) -> str:
    """An assistant entry line as pi writes it, with ``top``'s keys replacing or added at the
    end (a key given twice, as JSON text, through ``extra``)."""
    entry = msg("a1", "u1", a("the answer", usage(12, 3, cache_read=40, cache_write=7)), 2)
    entry["message"]["provider"] = "anthropic"
    extra = top.pop("extra", "")
    entry.update(top)
    text = json.dumps(entry, separators=(",", ":"))
    return text[:-1] + extra + "}" if extra else text


def _both_ways(data: bytes, monkeypatch) -> tuple[tuple, tuple]:
    """(_searched_calls typed, _searched_calls the orjson way), keys sorted."""
    typed = usage_lines._searched_calls(data)
    with monkeypatch.context() as m:
        m.setattr(usage_lines, "_DECODE", None)
        plain = usage_lines._searched_calls(data)
    return (typed[0], sorted(typed[1], key=repr)), (plain[0], sorted(plain[1], key=repr))


def _file(*lines: str | bytes) -> bytes:
    head = json.dumps(header("D"), separators=(",", ":")).encode()
    return b"\n".join([head, *(x.encode() if isinstance(x, str) else x for x in lines)]) + b"\n"


@typed_only
def test_every_field_the_report_reads_comes_through_the_typed_decode():
    # Each cell its own value: a field the Struct dropped would read None or 0 here.
    entry = msg("a-id", "u1", a("x", usage(11, 22, cache_read=33, cache_write=44)), 5)
    entry["message"].update(provider="prov", model="mod")
    entry["message"]["usage"]["totalTokens"] = 999
    entry["message"]["usage"]["cost"]["total"] = 0.125
    line = json.dumps(entry).encode()
    call, key = usage_lines._typed_call(line)
    assert key is None
    assert call == usage_lines._call_of(orjson.loads(line))
    assert call[0] == "a-id" and call[2:4] == ("prov", "mod") and call[4:10] == (11.0, 22.0, 33.0, 44.0, 999.0, 0.125)
    assert call[1] is not None
    # A zero total is the four counters' sum, as the orjson way's fast path.
    entry["message"]["usage"]["totalTokens"] = 0
    assert usage_lines._typed_call(json.dumps(entry).encode())[0][8] == 11 + 22 + 33 + 44
    # Another entry holding the bytes: its (id, timestamp) key, as _keys gives it.
    other = msg("u-id", None, user_msg("ask the assistant"), 3)
    line = json.dumps(other).encode()
    assert usage_lines._typed_call(line) == (None, next(iter(usage_lines._keys([orjson.loads(line)]))))


ODD_LINES = {
    # lines the typed decode answers (the answer must be orjson's)
    "plain": _line(),
    "duplicate id, last wins": _line(extra=',"id":"second"'),
    "duplicate message, last wins": _line(extra=',"message":{"role":"assistant","model":"m2","usage":null}'),
    "message null last": _line(extra=',"message":null'),
    "escaped key": _line().replace('"model"', '"mod\\u0065l"'),
    "non-ASCII id": _line(id="\u00e9t\u00e9-\U0001f600"),
    "surrogate pair escape": _line(id="x").replace('"id":"x"', '"id":"\\ud83d\\ude00"'),
    "big int in content": _line(extra=',"x":123456789012345678901234567890'),
    "counter as float": _line().replace('"input":12', '"input":12.0'),
    "counter past int64": _line().replace('"input":12', '"input":9223372036854775808'),
    "counter negative past int64": _line().replace('"input":12', '"input":-9223372036854775809'),
    "counter true": _line().replace('"input":12', '"input":true'),
    "cost total string": _line().replace('"total":', '"total":"1",  "was":'),
    "usage without a total (older pi)": _line().replace('"totalTokens":', '"was":'),
    "usage with a null total": _line().replace('"totalTokens":', '"totalTokens":null,"was":'),
    "usage without cost": _line(message={"role": "assistant", "usage": {"input": 1, "output": 2}}),
    "usage a list": _line(message={"role": "assistant", "usage": [1, 2]}),
    "message a string": _line(message="assistant"),
    "id an int": _line(id=7),
    "timestamp a number": _line(timestamp=1767225600000),
    "type absent": json.dumps({"id": "q", "message": {"role": "assistant"}}),
    "a session entry": json.dumps({"type": "session", "id": "assistant"}),
    "user line": json.dumps(msg("u9", None, user_msg("the assistant"), 1)),
    "no id": json.dumps({"type": "custom", "data": "assistant"}),
    "minus zero cost": _line().replace('"total":', '"total":-0.0,"was":'),
    "long float cost": _line().replace('"total":', '"total":0.1000000000000000055511151231257827,"was":'),
    "tiny float cost": _line().replace('"total":', '"total":1e-400,"was":'),
    "trailing whitespace and CR": _line() + "  \r",
    # lines orjson refuses: pi's reader decides (the typed decode must not answer otherwise)
    "invalid UTF-8 in content": _line().encode().replace(b"the answer", b"the \xff\xfe answer"),
    "overlong UTF-8 in content": _line().encode().replace(b"the answer", b"the \xc0\xaf answer"),
    "invalid UTF-8 in model": _line().encode().replace(b"claude-sonnet", b"claude-\xffsonnet"),
    "encoded surrogate in id": _line(id="X").encode().replace(b'"id":"X"', b'"id":"\xed\xa0\x80"'),
    "lone surrogate in content": _line().replace("the answer", "the \\ud800 answer"),
    "lone surrogate in id": _line(id="X").replace('"id":"X"', '"id":"\\udc00"'),
    "lone surrogate key": _line(extra=',"\\ud800":1'),
    "float past range in content": _line(extra=',"x":1e400'),
    "float past range as cost": _line().replace('"total":', '"total":1e400,"was":'),
    "float past range as counter": _line().replace('"input":12', '"input":1e999'),
    "int past float range in content": _line(extra=',"x":1' + "0" * 400),
    "raw tab in content": _line().replace("the answer", "the\tanswer"),
    "control character in id": _line(id="a\u0001b").replace("\\u0001", "\x01"),
    "trailing bytes": _line() + " x",
    "NaN": _line(extra=',"x":NaN'),
    "deep nesting 900": _line(extra=',"x":' + "[" * 900 + "]" * 900),
    "deep nesting 3000": _line(extra=',"x":' + "[" * 3000 + "]" * 3000),
    "torn": _line()[:-20],
}


@typed_only
@pytest.mark.parametrize("name", list(ODD_LINES))
def test_an_odd_line_gives_the_orjson_ways_calls_and_keys(name, monkeypatch):
    line = ODD_LINES[name]
    data = _file(line, json.dumps(msg("z", None, a("tail", usage(1, 1)), 9)))
    typed, plain = _both_ways(data, monkeypatch)
    assert typed == plain
    # and pi's reader of the whole file agrees
    entries = read_pi_entries(data)[1]
    assert typed[0] == [c for c in map(usage_lines._call_of, entries) if c is not None]


@typed_only
def test_the_lines_it_cannot_answer_for_go_the_orjson_way():
    # (so the cases above test the fallback, not only an agreeing answer)
    for name in ("lone surrogate in id", "float past range as cost", "counter past int64", "counter as float",
                 "id an int", "message a string", "deep nesting 3000", "invalid UTF-8 in model", "usage without cost"):
        with pytest.raises(usage_lines._TYPED_ERRORS):
            usage_lines._typed_call(ODD_LINES[name].encode() if isinstance(ODD_LINES[name], str) else ODD_LINES[name])
    for name in ("plain", "duplicate id, last wins", "invalid UTF-8 in content", "float past range in content",
                 "usage without a total (older pi)", "usage with a null total"):
        line = ODD_LINES[name]
        usage_lines._typed_call(line.encode() if isinstance(line, str) else line)


def test_odd_lines_folder_reports_equal_the_scan(tmp_path, monkeypatch):
    folder = tmp_path / "c"
    folder.mkdir()
    for i, line in enumerate(ODD_LINES.values()):
        (folder / f"odd{i}.jsonl").write_bytes(_file(line))
    # a fork of a file whose copied line is one the typed decode answered
    parent = write_session(folder / "p.jsonl", [header("P"), msg("u1", None, user_msg("hi"), 1),
                                                msg("a1", "u1", a("one", usage(7, 1)), 2)])
    write_session(folder / "f.jsonl", [header("F", parentSession=str(parent)), msg("u1", None, user_msg("hi"), 1),
                                       msg("a1", "u1", a("one", usage(7, 1)), 2), msg("a2", "a1", a("two", usage(3, 1)), 3)])
    assert_same_reports(folder, monkeypatch=monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(usage_lines, "_DECODE", None)
        assert_same_reports(folder)


@typed_only
def test_float_costs_read_as_orjson_reads_them(monkeypatch):
    rng = random.Random(5)
    texts = [repr(rng.uniform(0, 10) * 10 ** rng.randint(-12, 12)) for _ in range(400)]
    texts += [f"{rng.randint(0, 10**25)}.{rng.randint(0, 10**25)}e{rng.randint(-330, 300)}" for _ in range(400)]
    lines = [_line().replace('"total":', f'"total":{t},"was":') for t in texts]
    typed, plain = _both_ways(_file(*lines), monkeypatch)
    assert typed == plain and len(typed[0]) == len(lines) + 0


@typed_only
def test_field_fuzz_mutations(monkeypatch):
    bench = _bench_module("generate")
    head, *lines = _generated_lines(bench)
    rng = random.Random(41)
    typed_answers = 0
    for _ in range(MUTATIONS):
        # (the header kept: a file with another first line is read whole, not searched)
        body, what = fieldfuzz.mutate_line(lines, fieldfuzz.FIELD_PATHS, rng)
        data = head + b"\n" + body
        typed, plain = _both_ways(data, monkeypatch)
        assert typed == plain, what
        assert typed[0] == [c for c in map(usage_lines._call_of, read_pi_entries(data)[1]) if c is not None], what
        typed_answers += len(typed[0])
    assert typed_answers > MUTATIONS  # (the mutated files still hold calls)


def _generated_lines(bench) -> list[bytes]:
    """One generated pi session's lines (bench/generate.py, as the scale bench writes them)."""
    lines, _stats = bench.generate(60, seed=3)
    return [x.encode() for x in lines]


def test_without_msgspec_the_module_reads_the_orjson_way(tmp_path):
    # A fresh interpreter where importing msgspec fails, as before it is a dependency.
    folder = tmp_path / "c"
    write_session(folder / "s.jsonl", [header("S"), msg("u1", None, user_msg("hi"), 1),
                                       msg("a1", "u1", a("x", usage(5, 2)), 2)])
    code = ("import sys; sys.modules['msgspec'] = None\n"
            "from pi_lab.corpus import usage_fast, usage_lines\n"
            "assert usage_lines._DECODE is None\n"
            f"report, errors, read = usage_fast.usage_report([{str(folder)!r}], 'day', workers=1)\n"
            "print(report['rows'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == str(usage_fast.usage_report([folder], "day", workers=1)[0]["rows"])


def test_a_group_of_minus_zero_costs_sums_to_zero_as_the_sql(tmp_path):
    # (-0.0 == 0.0: the reports are compared as pi-lab usage --json writes them)
    entry = msg("a1", None, a("x", usage(1, 1)), 2)
    entry["message"]["usage"]["cost"]["total"] = -0.0
    write_session(tmp_path / "c" / "s.jsonl", [header("S"), entry])
    for by in ("day", "session", "model"):
        got = usage_fast.usage_report([tmp_path / "c"], by, workers=1)[0]
        expected = _slow(tmp_path / "c", by)[0]
        assert json.dumps(got) == json.dumps(expected) and "-0.0" not in json.dumps(got)


@pytest.mark.parametrize(("load", "cores", "pooled"), [(0.2, 2, True), (1.2, 2, False), (7.0, 2, False), (3.0, 8, True)])
def test_readers_fork_only_onto_free_cores(tmp_path, monkeypatch, load, cores, pooled):
    for i in range(4):
        write_session(tmp_path / f"s{i}.jsonl", [header(f"S{i}"), msg("a1", None, a("x", usage(1, 1)), 2)])
    files = [str(p) for p in sorted(tmp_path.glob("*.jsonl"))]
    monkeypatch.setattr(usage_fast, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    readers = usage_fast._Readers(files, None)
    try:
        assert (readers.pool is not None) is pooled
    finally:
        readers.close()
    # Told how many, it forks that many whatever the load.
    readers = usage_fast._Readers(files, 2)
    try:
        assert readers.pool is not None
    finally:
        readers.close()
