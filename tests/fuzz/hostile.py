"""Small hostile sessions for the fuzz regression tests: a header, a user and an assistant entry
with any id, and ``DEEP``, a marker replaced by a list nested 3,000 levels deep in the file text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
DEEP = "\u0000DEEP\u0000"  # replaced by a list nested 3,000 levels deep in the file text


def user(entry_id: Any, parent: Any, text: str = "hi") -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(entry_id: Any, parent: Any) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p", "model": "m",
                        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                        "stopReason": "stop", "timestamp": 2}}


def session_bytes(*entries: dict[str, Any]) -> bytes:
    # json.dumps writes a lone surrogate as a \ud800 escape, as JSON.stringify does.
    text = "".join(json.dumps(e) + "\n" for e in (HEADER, *entries))
    return text.replace(json.dumps(DEEP), "[" * 3000 + '"x"' + "]" * 3000).encode()


def write(tmp_path: Path, data: bytes, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path
