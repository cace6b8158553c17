"""Shared inputs of the export tests: the real fixtures (copied), the seed example, generated sessions."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import orjson


from shared_fixtures import FIXTURES_DIR as FIXTURES  # noqa: E402  (the one place that finds them)
REPO = Path(__file__).resolve().parents[2]


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.jsonl")) if FIXTURES.is_dir() else []


def copy_fixture(path: Path, tmp: Path) -> Path:
    """The fixtures are read-only: every test works on a copy."""
    target = tmp / path.name
    shutil.copyfile(path, target)
    return target


def generated_session(seed: int, count: int = 160) -> list[dict]:
    """A session with branches, labels, a compaction, context edits, tool calls and errors."""
    rng = random.Random(seed)
    entries: list[dict] = [{"type": "session", "version": 3, "id": f"S{seed}", "timestamp": "2026-01-01T00:00:00Z",
                            "cwd": "/repo"}]
    ids: list[str] = []
    ms = 1_760_000_000_000

    def stamp() -> str:
        nonlocal ms
        ms += rng.randint(500, 5000)
        from datetime import datetime, timezone
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"

    parent = None
    call = 0
    for n in range(count):
        if ids and rng.random() < 0.06:
            parent = rng.choice(ids)  # a branch point
        entry_id = f"e{seed}x{n}"
        roll = rng.random()
        base = {"id": entry_id, "parentId": parent, "timestamp": stamp()}
        if roll < 0.25:
            e = {"type": "message", **base, "message": {"role": "user", "content": f"question {n} about auth {rng.randint(0, 9)}", "timestamp": ms}}
        elif roll < 0.45:
            call += 1
            e = {"type": "message", **base, "message": {"role": "assistant", "content": [
                {"type": "text", "text": "" if rng.random() < 0.5 else f"answer {n}"},
                {"type": "toolCall", "id": f"c{call}", "name": rng.choice(["read", "bash", "edit"]),
                 "arguments": {"path": f"/repo/f{n}.ts", "command": "ls"}}],
                "usage": {"input": rng.randint(100, 5000), "output": 50, "cacheRead": 0, "cacheWrite": 0,
                          "totalTokens": 0, "cost": {"total": 0}},
                "stopReason": "toolUse", "provider": "anthropic", "model": "claude-opus-4-5", "timestamp": ms}}
        elif roll < 0.62 and call:
            e = {"type": "message", **base, "message": {"role": "toolResult", "toolCallId": f"c{call}", "toolName": "read",
                                                        "content": [{"type": "text", "text": "x" * rng.randint(1, 900)}],
                                                        "isError": rng.random() < 0.1, "timestamp": ms}}
        elif roll < 0.72:
            e = {"type": "message", **base, "message": {"role": "assistant", "content": [{"type": "text", "text": f"done {n}"}],
                                                        "stopReason": rng.choice(["stop", "error", "aborted"]),
                                                        "usage": {"input": 900, "output": 10, "cacheRead": 0, "cacheWrite": 0,
                                                                  "totalTokens": 910, "cost": {"total": 0}},
                                                        "provider": "anthropic", "model": "claude-opus-4-5", "timestamp": ms}}
        elif roll < 0.77 and ids:
            e = {"type": "label", **base, "targetId": rng.choice(ids), "label": rng.choice(["good", "bad", None, "check"])}
        elif roll < 0.81 and len(ids) > 4:
            e = {"type": "compaction", **base, "summary": f"summary {n}", "firstKeptEntryId": rng.choice(ids[-4:]),
                 "tokensBefore": rng.randint(1000, 90000)}
        elif roll < 0.85 and ids:
            e = {"type": "context_edit", **base, "targetId": rng.choice(ids),
                 "replacement": None if rng.random() < 0.5 else [{"type": "text", "text": "[edited]"}]}
        elif roll < 0.88:
            e = {"type": "thinking_level_change", **base, "thinkingLevel": rng.choice(["low", "high"])}
        elif roll < 0.91:
            e = {"type": "model_change", **base, "provider": "openai", "modelId": "gpt-5"}
        elif roll < 0.94 and ids:
            e = {"type": "branch_summary", **base, "fromId": rng.choice(ids), "summary": f"branch {n}"}
        elif roll < 0.96:
            e = {"type": "custom_message", **base, "customType": "note", "content": f"note {n}", "display": True}
        else:
            e = {"type": "usage", **base}
        entries.append(e)
        ids.append(entry_id)
        parent = entry_id
    return entries


def write_session(entries: list[dict], path: Path) -> Path:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    return path


# Markup and script in every field a viewer shows: a viewer that renders this runs none of it.
HOSTILE = [
    "<script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "[click](javascript:window.__pwned='link')",
    "<svg onload=\"window.__pwned='svg'\"><script>window.__pwned='svg2'</script></svg>",
    "<iframe src=\"javascript:parent.__pwned='iframe'\"></iframe>",
    "<a href=\"javascript:window.__pwned='a'\">x</a>",
    "\"><script>window.__pwned='attr'</script>",
    "</script><script>window.__pwned='close'</script>",
]


def hostile_session() -> list[dict]:
    h = " ".join(HOSTILE)
    e = [{"type": "session", "version": 3, "id": "H" + HOSTILE[0], "timestamp": "2026-01-01T00:00:00Z", "cwd": h}]
    e.append({"type": "session_info", "id": "i0", "parentId": None, "timestamp": "2026-01-01T00:00:01Z", "name": h})
    e.append({"type": "message", "id": "u1", "parentId": "i0", "timestamp": "2026-01-01T00:00:02Z",
              "message": {"role": "user", "content": h, "timestamp": 1}})
    e.append({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:03Z",
              "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": h}, {"type": "text", "text": h},
                                                           {"type": "toolCall", "id": "c1", "name": h, "arguments": {"path": h, "command": h}}],
                          "model": h, "provider": h, "stopReason": "toolUse",
                          "usage": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11, "cost": {"total": 0}}}})
    e.append({"type": "message", "id": "t1", "parentId": "a1", "timestamp": "2026-01-01T00:00:04Z",
              "message": {"role": "toolResult", "toolCallId": "c1", "toolName": h, "content": [{"type": "text", "text": h}], "isError": True}})
    e.append({"type": "label", "id": "l1", "parentId": "t1", "timestamp": "2026-01-01T00:00:05Z", "targetId": "u1", "label": h})
    e.append({"type": "custom_message", "id": "m1", "parentId": "l1", "timestamp": "2026-01-01T00:00:06Z", "customType": h, "content": h, "display": True})
    e.append({"type": "model_change", "id": "mc", "parentId": "m1", "timestamp": "2026-01-01T00:00:07Z", "provider": h, "modelId": h})
    e.append({"type": "compaction", "id": "k1", "parentId": "mc", "timestamp": "2026-01-01T00:00:08Z", "summary": h,
              "firstKeptEntryId": "m1", "tokensBefore": 100})
    e.append({"type": "branch_summary", "id": "b1", "parentId": "u1", "timestamp": "2026-01-01T00:00:09Z", "fromId": "k1", "summary": h})
    e.append({"type": "message", "id": "x1", "parentId": "b1", "timestamp": "2026-01-01T00:00:10Z",
              "message": {"role": "bashExecution", "command": h, "output": h, "exitCode": 1, "timestamp": 2}})
    e.append({"type": h, "id": "w1", "parentId": "k1", "timestamp": "2026-01-01T00:00:11Z", "data": h})
    return e


ESBUILD = REPO / "node_modules" / ".bin" / "esbuild"


def node_bundle(source: Path, out_dir: Path) -> Path:
    """``source`` (a TypeScript checker beside the tests) bundled for node by the project's
    esbuild; the test skips without node or the front-end toolchain."""
    import pytest

    if shutil.which("node") is None or not ESBUILD.exists():
        pytest.skip("node and the front-end toolchain (jlpm install) are needed")
    out = out_dir / "check.js"
    subprocess.run([str(ESBUILD), str(source), "--bundle", "--platform=node", f"--outfile={out}",
                    "--log-level=warning"], check=True, cwd=REPO, timeout=120)
    return out


def standard_sessions(tmp: Path, seeds: tuple[int, ...], count: int = 160) -> list[tuple[str, Path]]:
    """(name, copy) of every real fixture, the worked example and generated sessions of
    ``count`` entries for ``seeds``: the inputs the page-versus-kernel checks run over."""
    from helpers import SEED_SECTION_14

    found = [(p.name, copy_fixture(p, tmp)) for p in fixture_files()]
    seed = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    found.append(("seed", write_session(seed, tmp / "seed.jsonl")))
    for s in seeds:
        found.append((f"generated-{s}", write_session(generated_session(s, count), tmp / f"gen{s}.jsonl")))
    return found


def write_packed_parts(sm, path: Path) -> Path:
    """The export's parts as the page packs them (main, chunks and their offsets), written to
    ``path`` as JSON for the node checks that run the page's own code on them."""
    import json

    from pi_lab.export.data import export_data
    from pi_lab.export.html import pack, pack7

    main, chunks = export_data(sm)
    encoded = [pack7(chunk) for chunk in chunks]
    offsets = [0]
    for part in encoded:
        offsets.append(offsets[-1] + len(part))
    path.write_text(json.dumps({"main": pack(main), "chunks": "".join(encoded), "offsets": offsets}))
    return path
