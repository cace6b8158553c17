"""``Corpus.usage`` beside ``ccusage pi daily`` (20.0.24, native) on a pi folder with a fork
(issue #25): where the two part, pinned with the reason.

pi's ``/fork`` writes a new file that starts with byte-for-byte copies of the parent's entries,
model calls included. pi_lab counts each call once (a fork's copies are matched to the parent's
by id and timestamp, following ``parentSession``, or a file of the same name in the folders read
when that path is gone). ccusage 20.0.24 counts a fork's copies again when it cannot follow the
fork's ``parentSession`` path to a file it read (it
does follow it where pi wrote the folder). The run of ccusage skips cleanly without node/npm.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from formats.test_claude_code_ccusage import _ccusage

from pi_lab.corpus import Corpus

PARENT = "2026-01-01T00-00-00-000Z_0190aaaa-0000-7000-8000-000000000001.jsonl"
FORK = "2026-01-01T01-00-00-000Z_0190bbbb-0000-7000-8000-000000000002.jsonl"


def _call(entry_id: str, parent: str | None, second: int, tokens: int) -> dict[str, Any]:
    timestamp = f"2026-01-01T00:00:{second:02d}.000Z"
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": timestamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "openai-responses",
                        "provider": "openai", "model": "gpt-5", "stopReason": "stop", "timestamp": 0,
                        "usage": {"input": tokens, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                  "totalTokens": tokens + 1, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                                      "cacheWrite": 0, "total": 0}}}}


def _user(entry_id: str, parent: str | None, second: int) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
            "message": {"role": "user", "content": "go", "timestamp": 0}}


def _pi_folder(tmp_path: Path) -> Path:
    """A parent of two calls and a fork of it that copies both and makes one of its own."""
    folder = tmp_path / "sessions" / "--home-user-project--"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "0190aaaa-0000-7000-8000-000000000001",
              "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/home/user/project"}
    copied = [_user("u1", None, 1), _call("a1", "u1", 2, 100), _user("u2", "a1", 3), _call("a2", "u2", 4, 200)]
    fork_header = {**header, "id": "0190bbbb-0000-7000-8000-000000000002", "timestamp": "2026-01-01T01:00:00.000Z",
                   "parentSession": str(folder / PARENT)}
    own = [_user("u3", "a2", 5), _call("a3", "u3", 6, 400)]
    for name, lines in ((PARENT, [header, *copied]), (FORK, [fork_header, *copied, *own])):
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path / "sessions"


def _ccusage_days(binary: Path, sessions: Path) -> list[tuple[str, int]]:
    env = {**os.environ, "TZ": "UTC", "NO_COLOR": "1"}
    done = subprocess.run([str(binary), "pi", "daily", "--json", "--offline", "--timezone", "UTC",
                           "--pi-path", str(sessions)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return [(d["date"], d["inputTokens"]) for d in json.loads(done.stdout)["daily"]]


def _corpus_days(sessions: Path) -> list[tuple[str, int]]:
    corpus = Corpus.scan([sessions], workers=1, cache=False)
    assert corpus.errors == []
    return [(r["day"], int(r["input"])) for r in corpus.usage(by="day").to_pylist()]


def test_difference_ccusage_counts_a_moved_pi_forks_copied_calls_again(tmp_path):
    binary = _ccusage()
    sessions = _pi_folder(tmp_path / "home")
    # Where pi wrote them, both count each call once: 100 + 200 (copied by the fork) + 400.
    assert _corpus_days(sessions) == _ccusage_days(binary, sessions) == [("2026-01-01", 700)]

    # The same folder moved (a backup, another machine, a shared corpus): the fork's
    # parentSession names a path that is gone. pi_lab still finds the parent in the folder by
    # its file name (pi's names are unique) and counts the copies once; ccusage counts them again.
    moved = tmp_path / "elsewhere"
    (tmp_path / "home").rename(moved)
    assert _corpus_days(moved / "sessions") == [("2026-01-01", 700)]
    assert _ccusage_days(binary, moved / "sessions") == [("2026-01-01", 1000)]
