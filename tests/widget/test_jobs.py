"""The widget's one serial job queue: order, merging, quiet steps, and a fork's rebind."""

from __future__ import annotations

import asyncio

import pytest
from helpers import SEED_SECTION_14

from pi_lab.widget import SessionWidget
from pi_lab.widget.jobs import JobQueue


@pytest.fixture
def seed_file(tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    return path


def test_jobs_run_one_at_a_time_in_order_with_views_merged_and_syncs_once():
    async def scenario():
        done: list[tuple[str, object]] = []
        running = 0

        async def run(kind, payload):
            nonlocal running
            running += 1
            assert running == 1  # never two jobs at once
            await asyncio.sleep(0.01)
            done.append((kind, dict(payload) if kind == "view" else payload))
            running -= 1

        queue = JobQueue(run, ())
        queue.submit("view", {"search": "a"})
        await asyncio.sleep(0)  # the first view job starts; the next ones wait
        queue.submit("view", {"search": "ab"})
        queue.submit("view", {"folded": ()})
        first = queue.submit("sync")
        second = queue.submit("sync")
        assert queue.pending
        await asyncio.gather(first, second)
        await queue.run("call", "last")
        assert not queue.pending
        return done

    assert asyncio.run(scenario()) == [("view", {"search": "a"}), ("view", {"search": "ab", "folded": ()}),
                                       ("sync", None), ("call", "last")]


def test_quiet_steps_run_after_the_queue_was_quiet_and_restart_on_each_touch():
    async def scenario():
        steps: list[str] = []

        async def run(kind, payload):
            pass

        queue = JobQueue(run, ((0.4, lambda: steps.append("state")), (0.4, lambda: steps.append("snapshot"))))
        queue.touched()
        await asyncio.sleep(0.2)
        queue.touched()  # another delta: wait again
        await asyncio.sleep(0.25)
        assert steps == []  # 0.45 s after the first touch, 0.25 s after the second
        await asyncio.sleep(0.3)
        assert steps == ["state"]
        queue.quiet_now(1)  # e.g. the run is over: the next step at once
        assert steps == ["state", "snapshot"]
        await asyncio.sleep(0.5)
        return steps

    assert asyncio.run(scenario()) == ["state", "snapshot"]


def test_a_failing_job_is_logged_and_the_queue_goes_on(caplog):
    async def scenario():
        done = []

        async def run(kind, payload):
            if payload == "bad":
                raise KeyError("a bug")
            done.append(payload)

        queue = JobQueue(run, ())
        bad = queue.submit("call", "bad")
        await queue.run("call", "good")
        assert isinstance(bad.exception(), KeyError)
        return done

    assert asyncio.run(scenario()) == ["good"]
    assert "widget job call failed" in caplog.text


def test_without_an_event_loop_nothing_is_queued():
    queue = JobQueue(lambda kind, payload: None, ((1.0, lambda: None),))
    assert queue.submit("sync") is None and not queue.pending


def test_a_fork_by_the_agent_rebinds_the_widget_on_session_switch(seed_file):
    async def scenario():
        w = SessionWidget(seed_file, writable=True, follow=False)
        w.send = lambda message, buffers=None: None
        old = w.session_manager
        w.filter_mode = "user-only"
        await w.agent.fork("U4", position="before")  # not through the viewer: pi's /fork in the kernel
        while w._jobs.pending:
            await asyncio.sleep(0.005)
        return w, old

    w, old = asyncio.run(scenario())
    assert w.session_manager is w.agent.session_manager and w.session_manager is not old
    assert w.session["file"] == w.session_manager.session_file != old.session_file
    assert w.leaf_id == w.session_manager.leaf_id and w.row_count == len(w.view.rows.rows) > 0
