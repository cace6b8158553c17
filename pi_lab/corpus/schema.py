"""Arrow schemas of the corpus tables (one place, so every reader builds the same types)."""

from __future__ import annotations

import math
from typing import Any

# The one rule for a lone surrogate in a string cell (also the widget's): see its docstring.
from pi_lab._text_out import utf8_safe

__all__ = ["AGENTS", "TABLE_NAMES", "SCHEMAS", "schema_of", "to_table", "empty_table", "arrow_compute", "utf8_safe",
           "plain_array", "plain_scalar"]

TABLE_NAMES = ("sessions", "entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries")

_TS = ("timestamp", "ts")  # timestamps are epoch ms in the columns, typed as UTC timestamps


def _fields() -> dict[str, list[tuple[str, str]]]:
    copied = [("copied", "bool"), ("copied_from", "str")]
    usage = [("input", "f64"), ("output", "f64"), ("cache_read", "f64"), ("cache_write", "f64"), ("total_tokens", "f64"), ("cost", "f64")]
    return {
        "sessions": [
            ("file", "str"), ("session_id", "str"), ("cwd", "str"), ("project", "str"),
            ("parent_session", "str"), ("parent_session_id", "str"), ("created", "ts"), ("last_activity", "ts"),
            ("name", "str"), ("version", "i64"), ("entries", "i64"), ("messages", "i64"), ("model_calls", "i64"),
            ("branch_points", "i64"), ("leaves", "i64"), ("max_depth", "i64"), ("compactions", "i64"),
            ("branch_summaries", "i64"), ("context_edits", "i64"), ("labels", "i64"), ("models", "strs"),
            *usage, ("copied_entries", "i64"), ("skipped_lines", "i64"), ("partial_last_line", "bool"),
        ],
        "entries": [
            ("file", "str"), ("session_id", "str"), ("entry_id", "str"), ("parent_id", "str"), ("line", "i64"),
            ("type", "str"), ("role", "str"), ("timestamp", "ts"), ("depth", "i64"), ("child_count", "i64"),
            ("is_leaf", "bool"), ("on_active_path", "bool"), ("branch_point", "bool"), ("label", "str"),
            ("chars", "i64"), *copied,
        ],
        "messages": [
            ("file", "str"), ("session_id", "str"), ("entry_id", "str"), ("timestamp", "ts"), ("role", "str"),
            ("text_chars", "i64"), ("est_tokens", "i64"), ("stop_reason", "str"), ("error_message", "str"),
            ("model", "str"), ("provider", "str"), ("tool_name", "str"), *usage, ("on_active_path", "bool"), *copied,
        ],
        "model_calls": [
            ("file", "str"), ("session_id", "str"), ("entry_id", "str"), ("parent_id", "str"), ("timestamp", "ts"),
            ("provider", "str"), ("model", "str"), ("stop_reason", "str"), ("context_messages", "i64"),
            ("context_tokens_est", "f64"), ("context_tokens_plain", "i64"), ("context_tokens_projected", "f64"),
            ("input_tokens_measured", "f64"),
            *usage, ("compaction_id", "str"), ("context_window", "i64"), ("fill_ratio", "f64"),
            ("overflowed", "bool"), ("retried", "bool"), ("depth", "i64"), ("on_active_path", "bool"), *copied,
        ],
        "tool_calls": [
            ("file", "str"), ("session_id", "str"), ("entry_id", "str"), ("tool_call_id", "str"), ("tool_name", "str"),
            ("argument_bytes", "i64"), ("result_entry_id", "str"), ("result_bytes", "i64"), ("is_error", "bool"),
            ("seconds", "f64"), ("model", "str"), *copied,
        ],
        "compactions": [
            ("file", "str"), ("session_id", "str"), ("entry_id", "str"), ("parent_id", "str"), ("timestamp", "ts"),
            ("tokens_before", "f64"), ("first_kept_entry_id", "str"), ("summary_chars", "i64"), ("kept_entries", "i64"),
            ("messages_after", "i64"), ("tokens_after", "f64"), ("trigger", "str"), ("from_hook", "bool"),
            ("read_files", "strs"), ("modified_files", "strs"), ("summary_cost", "f64"), ("summary_tokens", "f64"),
            *copied,
        ],
        "branch_summaries": [
            ("file", "str"), ("session_id", "str"), ("entry_id", "str"), ("timestamp", "ts"), ("from_id", "str"),
            ("target_id", "str"), ("summary_chars", "i64"), ("read_files", "strs"), ("modified_files", "strs"),
            ("from_hook", "bool"), *copied,
        ],
    }


# Which agent wrote the session ("pi", "claude-code", "codex"): a column of every table, added
# here once so each table's rows carry it (a join is never needed to split a question by agent).
AGENTS = ("pi", "claude-code", "codex")


def _with_agent(fields: dict[str, list[tuple[str, str]]]) -> dict[str, list[tuple[str, str]]]:
    return {name: [*columns, ("agent", "str")] for name, columns in fields.items()}


class _Field:
    __slots__ = ("name", "kind")

    def __init__(self, name: str, kind: str):
        self.name, self.kind = name, kind


SCHEMAS: dict[str, list[_Field]] = {name: [_Field(n, k) for n, k in fields] for name, fields in _with_agent(_fields()).items()}

_arrow_schemas: dict[str, Any] = {}


def schema_of(name: str) -> Any:
    """The pyarrow schema of table ``name`` (pyarrow is imported only when tables are built)."""
    found = _arrow_schemas.get(name)
    if found is None:
        import pyarrow as pa

        types = {
            "str": pa.string(), "i64": pa.int64(), "f64": pa.float64(), "bool": pa.bool_(),
            "ts": pa.timestamp("ms", tz="UTC"), "strs": pa.list_(pa.string()),
        }
        found = pa.schema([pa.field(f.name, types[f.kind]) for f in SCHEMAS[name]])
        _arrow_schemas[name] = found
    return found


def to_table(name: str, columns: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    schema = schema_of(name)
    arrays = []
    for field, spec in zip(schema, SCHEMAS[name]):
        values = columns[field.name]
        try:
            arrays.append(pa.array(values, type=field.type))
        except (UnicodeEncodeError, OverflowError, pa.ArrowInvalid):
            # Only a column holding a value Arrow cannot store is rebuilt (the common case
            # pays nothing); a value that is still wrong after that raises as before.
            arrays.append(pa.array(arrow_safe(values, spec.kind), type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def arrow_safe(values: list[Any], kind: str) -> list[Any]:
    """``values`` of a column of ``kind`` with what Arrow cannot hold made storable: strings
    through :func:`utf8_safe`; integers outside int64 as null in an integer or timestamp column
    (no count is that large: such a value is a hand edit, e.g. a header ``version`` 2**63); and
    in a float column an integer past the float range as the infinity JavaScript reads it as."""
    if kind == "str":
        return [utf8_safe(v) if v.__class__ is str else v for v in values]
    if kind == "strs":
        return [[utf8_safe(s) if s.__class__ is str else s for s in v] if isinstance(v, list) else v for v in values]
    if kind in ("i64", "ts"):
        return [None if isinstance(v, int) and not _I64_MIN <= v <= _I64_MAX else v for v in values]
    if kind == "f64":
        return [_as_float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
    return values


def _as_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


_F64_EXACT = 2**53  # (a larger integer is refused by pa.array in a float64 column: that way it goes)


def plain_array(values: list[Any], kind: str) -> Any:
    """``pa.array(values, type)`` for a column kind ``str``, ``f64``, ``i64`` or ``bool``,
    built from buffers (the same array, ``equals`` it).

    pa.array asks pandas whether a list is one of its objects, which imports pandas (0.3-0.4
    CPU s) the first time in a process; a pooled scan's own process builds only such small
    arrays (the file order, copy marks, session totals) once its workers have made the tables,
    and with this never imports it. A value pa.array might treat in any other way (a lone
    surrogate, a number of another type or past the exact range, a bool among numbers) sends the
    list to pa.array itself."""
    import numpy as np
    import pyarrow as pa

    arrow_type = {"str": pa.string, "f64": pa.float64, "i64": pa.int64, "bool": pa.bool_}[kind]()
    n = len(values)
    valid = [v is not None for v in values]
    nulls = n - sum(valid)
    present = [v for v in values if v is not None]
    if kind == "str":
        if any(v.__class__ is not str for v in present):
            return pa.array(values, arrow_type)
        try:
            encoded = [v.encode("utf-8") for v in present]
        except UnicodeEncodeError:
            return pa.array(values, arrow_type)
        lengths = np.zeros(n + 1, dtype=np.int64)
        lengths[1:][np.array(valid, dtype=np.bool_)] = [len(b) for b in encoded]
        offsets = np.cumsum(lengths)
        if offsets[-1] >= 2**31:
            return pa.array(values, arrow_type)
        data = [pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
    elif kind == "bool":
        if any(v.__class__ is not bool for v in present):
            return pa.array(values, arrow_type)
        data = [pa.py_buffer(np.packbits(np.array([v is True for v in values], dtype=np.bool_), bitorder="little"))]
    else:
        if kind == "i64":
            if any(v.__class__ is not int or not _I64_MIN <= v <= _I64_MAX for v in present):
                return pa.array(values, arrow_type)
            numbers = np.array([0 if v is None else v for v in values], dtype=np.int64)
        else:
            if any(v.__class__ is not float and (v.__class__ is not int or not -_F64_EXACT <= v <= _F64_EXACT)
                   for v in present):
                return pa.array(values, arrow_type)
            numbers = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
        data = [pa.py_buffer(numbers)]
    validity = pa.py_buffer(np.packbits(np.array(valid, dtype=np.bool_), bitorder="little")) if nulls else None
    return pa.Array.from_buffers(arrow_type, n, [validity, *data], null_count=nulls)


def plain_scalar(value: Any, kind: str) -> Any:
    """The Arrow scalar of ``value`` (``pa.scalar``, which asks pandas too: see :func:`plain_array`)."""
    return plain_array([value], kind)[0]


def empty_table(name: str) -> Any:
    return schema_of(name).empty_table()


def arrow_compute() -> Any:
    """``pyarrow.compute``, typed ``Any``: its kernels (``is_in``, ``if_else``, ...) are made at
    import from Arrow's function registry, so no type checker can see them."""
    import pyarrow.compute as pc

    return pc
