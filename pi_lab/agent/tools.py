"""Tools the agent can call: plain Python callables described by a JSON schema.

``@tool`` derives the schema from type hints and the docstring, so a notebook user writes::

    @tool
    def read_file(path: str, offset: int = 0) -> str:
        \"\"\"Read a text file.

        path: file to read, relative to the sandbox
        offset: first line to return
        \"\"\"

A tool returns a string, a list of content blocks, or a :class:`ToolOutput`; raising an
exception produces an error result (``isError: true``) with the exception text, as pi does.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_lab.errors import PiLabError

__all__ = ["Tool", "ToolOutput", "tool", "demo_tools", "ToolError"]


class ToolError(PiLabError):
    """Raise from a tool to report a failure to the model without a traceback."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    content: list[dict[str, Any]]
    details: Any = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any] = field(compare=False)

    def definition(self) -> dict[str, Any]:
        """The shape pi records in system messages and sends to providers."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    async def run(self, arguments: dict[str, Any]) -> ToolOutput:
        try:
            result = self.function(**arguments)
            if inspect.isawaitable(result):
                result = await result
        except ToolError as error:
            return ToolOutput([{"type": "text", "text": str(error)}], is_error=True)
        except Exception as error:  # a tool failure is reported to the model, not raised
            return ToolOutput([{"type": "text", "text": f"{type(error).__name__}: {error}"}], is_error=True)
        return _to_output(result)


def _to_output(result: Any) -> ToolOutput:
    if isinstance(result, ToolOutput):
        return result
    if isinstance(result, str):
        return ToolOutput([{"type": "text", "text": result}])
    if isinstance(result, list) and all(isinstance(b, dict) and "type" in b for b in result):
        return ToolOutput(result)
    if result is None:
        return ToolOutput([{"type": "text", "text": ""}])
    return ToolOutput([{"type": "text", "text": str(result)}])


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}


def _schema_for(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _schema_for(non_none[0])
        return {"anyOf": [_schema_for(a) for a in non_none]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple):
        schema: dict[str, Any] = {"type": "array"}
        if args:
            schema["items"] = _schema_for(args[0])
        return schema
    if origin is dict:
        return {"type": "object"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    return {}


def _parameter_docs(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and ``name: text`` parameter lines."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    description: list[str] = []
    params: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        name, sep, text = stripped.partition(":")
        if sep and name.isidentifier() and text.strip():
            params[name] = text.strip()
        elif not params:
            description.append(line)
    return "\n".join(description).strip(), params


@typing.overload
def tool(function: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool: ...


@typing.overload
def tool(function: None = None, *, name: str | None = None,
         description: str | None = None) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(function: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a :class:`Tool` (usable with or without arguments)."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        hints = typing.get_type_hints(fn)
        summary, param_docs = _parameter_docs(fn.__doc__ or "")
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = _schema_for(hints.get(param.name, Any))
            if param.name in param_docs:
                schema["description"] = param_docs[param.name]
            if param.default is param.empty:
                required.append(param.name)
            properties[param.name] = schema
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        return Tool(name or fn.__name__, description or summary or fn.__name__, parameters, fn)

    return wrap(function) if function is not None else wrap


def demo_tools(sandbox: str | os.PathLike[str], *, allow_exec: bool = False) -> list[Tool]:
    """A small tool set for demos, confined to ``sandbox``: read, ls, and (opt-in) python/bash.

    Paths are resolved inside the sandbox and refused when they lead out of it. The
    ``python`` and ``bash`` tools run real subprocesses in the sandbox folder with a timeout;
    they are only included with ``allow_exec=True``.
    """
    root = Path(sandbox).resolve()

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if target != root and root not in target.parents:
            raise ToolError(f"{path} is outside the sandbox")
        return target

    @tool
    def read(path: str, offset: int | None = None, limit: int | None = None) -> str:
        """Read a text file from the sandbox.

        path: file path relative to the sandbox
        offset: first line to return (1-based)
        limit: number of lines to return
        """
        lines = inside(path).read_text(encoding="utf-8", errors="replace").splitlines()
        start = max((offset or 1) - 1, 0)
        end = start + limit if limit else None
        return "\n".join(lines[start:end])

    @tool
    def ls(path: str = ".") -> str:
        """List a folder of the sandbox.

        path: folder relative to the sandbox
        """
        entries = sorted(inside(path).iterdir(), key=lambda p: p.name)
        return "\n".join(p.name + ("/" if p.is_dir() else "") for p in entries)

    tools: list[Tool] = [read, ls]
    if allow_exec:

        @tool
        async def bash(command: str, timeout: int = 30) -> str:
            """Run a shell command in the sandbox folder.

            command: the command line
            timeout: seconds before it is stopped
            """
            return await _run([os.environ.get("SHELL", "/bin/sh"), "-c", command], root, timeout)

        @tool
        async def python(code: str, timeout: int = 30) -> str:
            """Run a Python snippet in the sandbox folder and return what it printed.

            code: Python source
            timeout: seconds before it is stopped
            """
            return await _run([sys.executable, "-c", code], root, timeout)

        tools += [bash, python]
    return tools


async def _run(argv: list[str], cwd: Path, timeout: int) -> str:
    def call() -> str:
        try:
            done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise ToolError(f"timed out after {timeout} s") from error
        output = done.stdout + done.stderr
        if done.returncode:
            raise ToolError(f"{output}\nexit code {done.returncode}".strip())
        return output

    return await asyncio.to_thread(call)
