"""race() with a time limit on Python 3.10, which has no asyncio.timeout (pi_lab supports 3.10):
the limit still turns into pi's timeout error, and an answer in time is returned."""

from __future__ import annotations

import asyncio

import pytest

from pi_lab.llm import _http


async def _never() -> str:
    await asyncio.Event().wait()
    return "never"


async def _now() -> str:
    return "answer"


@pytest.fixture
def python310(monkeypatch):
    monkeypatch.delattr(asyncio, "timeout", raising=False)


def test_idle_limit_without_asyncio_timeout(python310):
    async def run():
        limits = _http.Limits(idle=0.05, deadline=None)
        return await _http.race(_never(), None, limits)

    with pytest.raises(_http.TransportFailure, match="Stream idle timeout"):
        asyncio.run(run())


def test_answer_in_time_without_asyncio_timeout(python310):
    async def run():
        return await _http.race(_now(), None, _http.Limits(idle=30, deadline=None))

    assert asyncio.run(run()) == "answer"
