"""Tools: schemas derived from type hints and docstrings; the sandboxed demo set."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest

from pi_lab.agent import ToolError, demo_tools, tool


def test_schema_from_hints_and_docstring():
    @tool
    def search(query: str, limit: int = 10, mode: Literal["fast", "exact"] = "fast", tags: list[str] | None = None) -> str:
        """Search the notes.

        query: words to look for
        limit: most results to return
        """
        return query

    assert search.name == "search" and search.description == "Search the notes."
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words to look for"},
            "limit": {"type": "integer", "description": "most results to return"},
            "mode": {"enum": ["fast", "exact"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["query"],
    }
    assert search.definition()["name"] == "search"


def test_tool_errors_become_error_results():
    @tool(name="fail")
    def failing() -> str:
        raise ToolError("no such thing")

    @tool
    def crashing() -> str:
        return 1 / 0

    assert asyncio.run(failing.run({})).is_error is True
    out = asyncio.run(crashing.run({}))
    assert out.is_error and out.content[0]["text"].startswith("ZeroDivisionError")


def test_demo_tools_stay_in_the_sandbox(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    tools = {t.name: t for t in demo_tools(tmp_path)}
    assert set(tools) == {"read", "ls"}
    assert asyncio.run(tools["read"].run({"path": "a.txt", "offset": 2, "limit": 1})).content[0]["text"] == "two"
    escaped = asyncio.run(tools["read"].run({"path": "../../etc/passwd"}))
    assert escaped.is_error and "outside the sandbox" in escaped.content[0]["text"]
    assert asyncio.run(tools["ls"].run({})).content[0]["text"] == "a.txt"


def test_exec_tools_are_opt_in(tmp_path):
    tools = {t.name: t for t in demo_tools(tmp_path, allow_exec=True)}
    out = asyncio.run(tools["python"].run({"code": "import os; print(os.getcwd())"}))
    assert out.content[0]["text"].strip() == str(tmp_path.resolve())
    failed = asyncio.run(tools["bash"].run({"command": "exit 3"}))
    assert failed.is_error and "exit code 3" in failed.content[0]["text"]
