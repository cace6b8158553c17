"""Re-filtering a large session runs off the kernel's event loop (the kernel keeps answering)."""

from __future__ import annotations

import asyncio

from pi_lab.session import SessionManager
from pi_lab.widget import SessionWidget


def big_session(n=30_000):
    entries = [{"type": "session", "version": 3, "id": "big", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}]
    parent = None
    for i in range(n):
        entry_id = f"{i:08x}"
        role = "user" if i % 2 == 0 else "assistant"
        content = f"question {i} about files" if role == "user" else [{"type": "text", "text": f"answer {i}"}]
        entries.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                        "message": {"role": role, "content": content, "timestamp": i}})
        parent = entry_id
    return SessionManager.in_memory(entries=entries)


def test_search_relayout_leaves_the_loop_free():
    async def scenario():
        widget = SessionWidget(big_session(), follow=False)
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        tick_task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        before = widget.row_count
        widget.search = "question 1234"
        assert widget._jobs.pending  # the observer returned at once: the re-layout is a queued job
        while widget._jobs.pending:
            await asyncio.sleep(0.005)
        done.set()
        await tick_task
        return before, widget.row_count, ticks, widget.folded

    before, after, ticks, folded = asyncio.run(scenario())
    # user messages 1234, 11234, 21234 and 12340–12348 contain both tokens
    assert before == 30_000 and after == 8
    assert ticks > 3  # the event loop ran other work while the rows were re-filtered
    assert folded == []


def test_navigation_relayout_leaves_the_loop_free():
    async def scenario():
        widget = SessionWidget(big_session(), follow=False)
        sent = []
        widget.send = lambda message, buffers=None: sent.append(message)
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        tick_task = asyncio.ensure_future(ticker())
        await widget._act(7, "navigate", {"id": f"{1001:08x}"})  # an assistant in the middle
        done.set()
        await tick_task
        return widget, sent, ticks

    widget, sent, ticks = asyncio.run(scenario())
    assert widget.session_manager.leaf_id == f"{1001:08x}" and widget.leaf_id == f"{1001:08x}"
    assert any(m.get("kind") == "response" and m.get("ok") for m in sent)
    assert ticks > 3  # the loop ran while the rows were laid out for the new leaf
