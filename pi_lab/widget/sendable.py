"""Text the kernel sends must be valid UTF-8: lone surrogates written as their escapes.

Session text may hold a lone surrogate (a hand edit's ``"\\ud800"`` in a JSON string, an
unpaired half of an emoji cut by a tool) and a file name that is not UTF-8 holds surrogate
escapes (``\\udc80``-``\\udcff``). jupyter_client packs every message as UTF-8 and raises on
them, so a display, a comm message or a log line carrying one never arrives (and a stream
message that fails stops the kernel's output thread). The Lab viewer and the static export
send JSON text, where such a character is a ``\\udXXX`` escape; a kernel message is packed by
jupyter_client, so here each one is written as that escape text instead (the corpus tables'
rule, :func:`pi_lab.corpus.schema.utf8_safe`: the form pi writes in the file, distinct values
stay distinct). Text without a surrogate is sent as it is, and checking costs one orjson pass.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from pi_lab._text_out import utf8_safe

__all__ = ["sendable", "SendableLogRecords", "keep_logs_sendable"]


def _buffer(value: Any) -> Any:
    # Bytes in a widget's state travel as binary buffers, apart from the JSON.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return None
    raise TypeError


def sendable(value: Any) -> Any:
    """``value`` (a message's content, a display bundle) with every string, keys included,
    valid UTF-8. The value itself when it already is (the common case: nothing is copied);
    otherwise a copy, made with an explicit stack (session data may nest thousands deep)."""
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=_buffer)
        return value
    except TypeError:  # a surrogate, but also nesting past 255, an int past 64 bits, bytes...
        pass
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, holder, key = stack.pop()
        if isinstance(item, str):
            out: Any = utf8_safe(item)
        elif isinstance(item, dict):
            out = {}
            for k, v in item.items():
                name = utf8_safe(k) if isinstance(k, str) else k
                out[name] = None  # keeps the key order; filled in when popped
                stack.append((v, out, name))
        elif isinstance(item, (list, tuple)):
            out = [None] * len(item)
            stack.extend((v, out, i) for i, v in enumerate(item))
        else:
            out = item
        holder[key] = out
    return root[0]


class SendableLogRecords(logging.Filter):
    """Writes a record's text (message, traceback) with lone surrogates escaped. In a kernel a
    record that reaches no handler is written to ``sys.stderr``, which is a stream message to
    the notebook: a file name that is not UTF-8 in a warning would stop the kernel's output."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        safe = utf8_safe(message) if _has_surrogate(message) else message
        if safe is not message:
            record.msg, record.args = safe, None
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = utf8_safe(text) if _has_surrogate(text) else text
        if record.stack_info and _has_surrogate(record.stack_info):
            record.stack_info = utf8_safe(record.stack_info)
        return True


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# pi_lab's loggers that write from a kernel: the widget's job queue and the corpus reader. A
# logger's filter sees only the records made on that logger, so each one gets it.
KERNEL_LOGGERS = ("pi_lab", "pi_lab.widget.jobs", "pi_lab.corpus")
_FILTER = SendableLogRecords()


def keep_logs_sendable(names: tuple[str, ...] = KERNEL_LOGGERS) -> None:
    """Put :class:`SendableLogRecords` on pi_lab's kernel-side loggers (idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
