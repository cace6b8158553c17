"""kill -9 at random moments of every whole-file write: no file under a session name is ever
half written.

Each trial starts a child process that performs one whole-file write (the migration rewrite
on open, create_branched_session, the lazy first write of a large backlog) and kills it with
SIGKILL after a random delay spread over the write's duration. Then every ``*.jsonl`` in the
folder must be either absent, the untouched original, or the complete expected file.
``PI_LAB_CRASH_TRIALS`` sets the number of trials per kind (default 30; the issue's probe ran 240).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone

import pytest

from pi_lab.session import SessionManager

TRIALS = int(os.environ.get("PI_LAB_CRASH_TRIALS", "30"))
ENTRIES = 4000  # about 4 MB: the write takes long enough to be cut at many points

CHILD = textwrap.dedent(
    """
    import itertools, sys
    from datetime import datetime, timezone
    from pi_lab.session import SessionManager

    kind, folder, source = sys.argv[1], sys.argv[2], sys.argv[3]
    counter = itertools.count()
    ids = lambda: f"{next(counter):08x}-0000-4000-8000-000000000000"
    clock = lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    if kind == "first_write":
        sm = SessionManager.create("/repo", folder, id="crash-first", uuid_factory=ids, clock=clock)
        for i in range(int(source)):
            sm.append_custom_entry("backlog", {"i": i, "text": "b" * 1000})
        print("ready", flush=True)
        sm.append_message({"role": "user", "content": "the first message", "timestamp": 1})
    elif kind == "migrate":
        print("ready", flush=True)
        SessionManager.open(source, uuid_factory=ids, clock=clock)
    elif kind == "branch":
        sm = SessionManager.open(source, uuid_factory=ids, clock=clock)
        sm._session_id_factory = lambda: "crash-branch"
        print("ready", flush=True)
        sm.create_branched_session(sm.leaf_id)
    print("done", flush=True)
    """
)


def _run_in_process(kind: str, folder: str, source: str) -> float:
    """The child's work, here (to learn the expected bytes); returns the seconds from the
    child's "ready" to the end of its write."""
    import itertools

    counter = itertools.count()

    def ids():
        return f"{next(counter):08x}-0000-4000-8000-000000000000"

    def clock():
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

    if kind == "first_write":
        sm = SessionManager.create("/repo", folder, id="crash-first", uuid_factory=ids, clock=clock)
        for i in range(int(source)):
            sm.append_custom_entry("backlog", {"i": i, "text": "b" * 1000})
        started = time.perf_counter()
        sm.append_message({"role": "user", "content": "the first message", "timestamp": 1})
    elif kind == "migrate":
        started = time.perf_counter()
        SessionManager.open(source, uuid_factory=ids, clock=clock)
    else:
        sm = SessionManager.open(source, uuid_factory=ids, clock=clock)
        sm._session_id_factory = lambda: "crash-branch"
        started = time.perf_counter()
        sm.create_branched_session(sm.leaf_id)
    return time.perf_counter() - started


def _v2_source(path) -> None:
    lines = ['{"type":"session","version":2,"id":"crash-src","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/repo"}']
    parent = None
    for i in range(ENTRIES):
        role = "hookMessage" if i % 3 == 2 else ("user" if i % 3 == 0 else "assistant")
        content = f'"{"m" * 900} {i}"' if role != "assistant" else f'[{{"type":"text","text":"{"a" * 900} {i}"}}]'
        parent_text = "null" if parent is None else f'"{parent}"'
        lines.append(f'{{"type":"message","id":"e{i:07d}","parentId":{parent_text},"timestamp":"2026-01-01T00:00:01.000Z",'
                     f'"message":{{"role":"{role}","content":{content},"timestamp":{i}}}}}')
        parent = f"e{i:07d}"
    path.write_text("\n".join(lines) + "\n")


def _session_files(folder) -> dict[str, bytes]:
    return {n: open(os.path.join(folder, n), "rb").read() for n in os.listdir(folder) if n.endswith(".jsonl")}


@pytest.mark.parametrize("kind", ["migrate", "branch", "first_write"])
def test_kill_during_a_whole_file_write_never_leaves_a_damaged_session(tmp_path, kind):
    template = tmp_path / "template"
    template.mkdir()
    source_name = "2026-01-01T00-00-00-000Z_crash-src.jsonl"
    if kind in ("migrate", "branch"):
        _v2_source(template / source_name)
        if kind == "branch":  # a current-format source: only the branch is written
            SessionManager.open(template / source_name)
    original = (template / source_name).read_bytes() if kind != "first_write" else None

    # The expected complete files, and how long the write takes.
    calibrate = tmp_path / "calibrate"
    shutil.copytree(template, calibrate)
    arg = str(ENTRIES) if kind == "first_write" else str(calibrate / source_name)
    duration = _run_in_process(kind, str(calibrate), arg)
    expected = _session_files(calibrate)

    rng = random.Random(1234)
    outcomes = {"untouched": 0, "complete": 0, "damaged": 0}
    leftovers = 0
    for trial in range(TRIALS):
        folder = tmp_path / f"t{trial}"
        shutil.copytree(template, folder)
        arg = str(ENTRIES) if kind == "first_write" else str(folder / source_name)
        proc = subprocess.Popen([sys.executable, "-c", CHILD, kind, str(folder), arg],
                                stdout=subprocess.PIPE, cwd=tmp_path)
        assert proc.stdout.readline().strip() == b"ready"
        # Every kind writes at the end of its work (after reading and serialising), so two
        # kills in three aim at the last part; the rest are spread over all of it.
        low, high = (0.0, 1.3) if trial % 3 == 0 else (0.6, 1.1)
        delay = rng.uniform(duration * low, duration * high)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        found = _session_files(folder)
        changed = any(data != original for data in found.values()) if original is not None else bool(found)
        if not changed and delay > duration * 0.9:
            # Killed late and yet nothing was written: the machine is slower now than when the
            # write was timed (other work on the cores), so aim later from here on.
            duration *= 1.25
        for name, data in found.items():
            # A branch names its parent file (in this trial's folder) in its header.
            data = data.replace(str(folder).encode(), str(calibrate).encode())
            if name == source_name and data == original:
                outcomes["untouched"] += 1
            elif data == expected.get(name):
                outcomes["complete"] += 1
            else:
                outcomes["damaged"] += 1
        if kind == "first_write" and not found:
            outcomes["untouched"] += 1
        leftovers += sum(1 for n in os.listdir(folder) if n.endswith(".tmp"))
        # Whatever is there opens, and a half-written file never opens as if whole.
        for name in found:
            SessionManager.open(folder / name, read_only=True)
        shutil.rmtree(folder)
    print(f"\n{kind}: {TRIALS} kills, outcomes {outcomes}, unfinished temp files left {leftovers}, "
          f"write took {duration * 1000:.0f} ms")
    assert outcomes["damaged"] == 0
    # The kills were spread over the write: some landed before it finished, some after.
    assert outcomes["complete"] > 0
