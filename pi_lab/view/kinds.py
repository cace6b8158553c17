"""Entry kinds and row flags: the small integer codes the binary row columns carry.

One place decides how an entry looks in the widget. The TypeScript core mirrors these
numbers through ``src_frontend/core/contract.ts`` (generated from ``pi_lab/view/contract.py``,
where the tables live); ``KIND_NAMES`` and ``FLAG_BITS`` are also sent
in every structure header so the two sides can be checked against each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# One answer for every view: the predicates live in the engine's entry model.
from pi_lab.session.entries import display_kind, has_visible_text
from pi_lab.view.contract import FLAG_BITS, KIND_NAMES

__all__ = ["KIND_NAMES", "KIND", "FLAG_BITS", "FLAG", "entry_kind", "has_visible_text", "unknown_entry_text"]

KIND = {name: code for code, name in enumerate(KIND_NAMES)}


def unknown_entry_text(entry_type: str | None) -> str:
    """The one name of an entry whose type pi does not know (pi draws a blank row), in every
    view; the TypeScript twin is ``unknownEntryText`` in ``src_frontend/core/rowList.ts``."""
    return f"[entry of an unknown type: {entry_type}]" if entry_type else "[entry of an unknown type]"

FLAG = {name: 1 << bit for bit, name in enumerate(FLAG_BITS)}

def entry_kind(entry: Mapping[str, Any]) -> int:
    """The kind code of one session entry (how its row is drawn; see ``entries.display_kind``)."""
    return KIND[display_kind(entry)]
