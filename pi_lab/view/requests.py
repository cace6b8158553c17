"""The request layer every viewer shares: the error a refused request raises, the parsing of its
arguments, and the registry of the read requests.

Arguments come as parsed JSON from a comm message or a REST body, so they may be of any type at
all. Every read request takes them through the helpers here, so a wrong type is a
:class:`RequestError` with a one-line reason that names the argument and the type it got (never
the value: it may be a long string or nested deep), and never a TypeError, a ValueError or a
RecursionError further in.

The handlers live with their views (``payload``, ``timeline_requests``, ``whatif``,
``compare_requests``); each module adds its own with :func:`register_read_ops`, and
``pi_lab.view.payload.read_request`` answers any of them by name. This module imports no view
module but the contract, so every one of them can import it at the top.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from pi_lab.errors import PiLabError
from pi_lab.view.contract import MAX_WHOLE, READ_OP_NAMES

if TYPE_CHECKING:
    from pi_lab.session.protocol import ReadableSession

__all__ = [
    "RequestError",
    "ReadHandler",
    "READ_OPS",
    "register_read_ops",
    "kind_of",
    "request_args",
    "whole_number",
    "entry_id_arg",
    "optional_id",
    "flag_arg",
    "known_entry",
    "picked_entry",
]

ReadHandler = Callable[[Any, Mapping[str, Any]], Any]


class RequestError(PiLabError, ValueError):
    """A request the viewer can show to the user as is (a bad id, a stale version...): the
    user's mistake, not a bug, hence a :class:`~pi_lab.errors.PiLabError`."""


# ---------------------------------------------------------------------------------------------
# The registry of read requests

# Filled by the modules that answer them, in the order of contract.READ_OP_NAMES once
# pi_lab.view.payload is imported (it imports every module that registers some).
READ_OPS: dict[str, ReadHandler] = {}


def register_read_ops(ops: Mapping[str, ReadHandler]) -> None:
    """Add read request handlers; a name the contract does not list, or one already taken, is a
    programming error caught at import time."""
    for name, handler in ops.items():
        if name not in READ_OP_NAMES:
            raise RuntimeError(f"read request {name!r} is not in pi_lab/view/contract.py READ_OP_NAMES")
        if READ_OPS.get(name, handler) is not handler:
            raise RuntimeError(f"read request {name!r} is registered twice")
        READ_OPS[name] = handler


# ---------------------------------------------------------------------------------------------
# Arguments


def kind_of(value: Any) -> str:
    """The JSON kind of ``value`` as a reason names it ("a string", "null", "a list"...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def request_args(args: Any) -> Mapping[str, Any]:
    """The arguments object of a request (absent means none)."""
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise RequestError(f"the request arguments must be an object, not {kind_of(args)}")
    return args


def whole_number(value: Any, name: str, *, low: int = 0, high: int = MAX_WHOLE) -> int:
    """``value`` as a whole number from ``low`` to ``high``; a float is accepted only when it is
    one exactly (``5.0`` from a Python client), never NaN, an infinity or ``true``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RequestError(f"{name} must be a whole number from {low} to {high}, not {_number_or_kind(value)}")
    return value


def _number_or_kind(value: Any) -> str:
    """A number as written (a Python caller may pass a 5,000-digit int: that one is not), else its kind."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return kind_of(value)
    if isinstance(value, int) and abs(value).bit_length() > 128:
        return "a number that large"
    return repr(value)


@overload
def entry_id_arg(args: Mapping[str, Any], name: str = "id", *, optional: Literal[False] = False) -> str: ...


@overload
def entry_id_arg(args: Mapping[str, Any], name: str = "id", *, optional: bool) -> str | None: ...


def entry_id_arg(args: Mapping[str, Any], name: str = "id", *, optional: bool = False) -> str | None:
    """The entry id named ``name`` in ``args``: a string (``None`` when absent, if ``optional``)."""
    value = args.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RequestError(f"{name} must be an entry id (a string), not {kind_of(value)}")
    return value


def optional_id(args: Mapping[str, Any], name: str) -> Any:
    """The value named ``name``, ``None`` when absent, null or empty: the viewer sends the leaf
    it has, and none means "the current leaf". Any other value is passed on for the view
    function to refuse in its own words."""
    value = args.get(name)
    return None if value is None or value == "" else value


def flag_arg(args: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """The true/false argument named ``name`` (``default`` when absent or null)."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"{name} must be true or false, not {kind_of(value)}")
    return value


def known_entry(sm: ReadableSession, entry_id: Any) -> Mapping[str, Any]:
    """The entry of the session named ``entry_id``, or a :class:`RequestError`."""
    if not isinstance(entry_id, str):
        # Named by its type: the text of a deep value would recurse and say nothing useful.
        raise RequestError(f"Entry id must be a string, not {kind_of(entry_id)}")
    entry = sm.get_entry(entry_id)
    if entry is None:
        raise RequestError(f"Entry {entry_id} not found")
    return entry


def picked_entry(sm: ReadableSession, args: Mapping[str, Any], key: str, name: str) -> str:
    """The entry id the user picked as ``name`` (argument ``key``), checked: present, a string,
    an entry of the session."""
    value = args.get(key)
    if value is None or value == "":
        raise RequestError(f"pick {name} first: no entry is chosen as {name}")
    if not isinstance(value, str):
        raise RequestError(f"{name} must be an entry id (a string), not {kind_of(value)}")
    if sm.get_entry(value) is None:
        raise RequestError(f"{name}: entry {value} is not in this session")
    return value
