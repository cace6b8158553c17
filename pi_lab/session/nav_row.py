"""One visible line of the /tree list (:class:`NavRow`), and the row whose text is made when read.

:mod:`pi_lab.session.flatten` lays rows out; this module is only the rows' shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pi_lab.session.display import ToolCall
from pi_lab.session.entries import Entry

if TYPE_CHECKING:
    from pi_lab.session.flatten import FlatTree

__all__ = ["NavRow"]


@dataclass(frozen=True, slots=True)
class NavRow:
    """One visible line of the tree list.

    ``index`` is the entry's position in :class:`FlatTree`; ``parent`` the row index of the
    nearest visible ancestor (-1 for a visible root). ``indent`` is the display indent in
    levels of three columns; ``gutters`` holds ``(level, show)`` pairs (``show`` draws ``│``).
    A connector (``├``/``└``) is drawn when ``show_connector`` is set and the row is not a
    virtual-root child (see :attr:`connector`).
    """

    entry: Entry
    entry_id: Any
    index: int
    parent: int
    indent: int
    show_connector: bool
    is_last: bool
    gutters: tuple[tuple[int, bool], ...]
    is_virtual_root_child: bool
    on_active_path: bool
    is_leaf: bool
    label: str | None
    label_timestamp: str | None
    foldable: bool
    folded: bool
    text: str
    child_count: int = 0
    tool_call: ToolCall | None = None

    @property
    def connector(self) -> bool:
        """Whether the row draws ``├``/``└`` (and its fold glyph) in its prefix."""
        return self.show_connector and not self.is_virtual_root_child


_TEXT_SLOT = NavRow.__dict__["text"]  # the slot NavRow keeps its text in


class _LazyTextRow(NavRow):
    """A :class:`NavRow` whose text is made from its :class:`FlatTree` on first access.

    A viewer lays out every row but draws a few dozen at a time; the text of an 83,000-row
    session takes ~0.2 s to make and is mostly never shown. Reading ``text`` (or comparing,
    hashing, ``repr`` or ``dataclasses.replace``) makes it, so the row is in every respect
    the NavRow ``visible_rows`` would have built with its text.
    """

    __slots__ = ("_flat", "_home")

    @property  # type: ignore[override]
    def text(self) -> str:
        value = _TEXT_SLOT.__get__(self)
        if value is None:
            value = self._flat.display_text(self.index, self._home)
            _TEXT_SLOT.__set__(self, value)
        return value

    @text.setter
    def text(self, value: str) -> None:  # the dataclass __init__ and replace() come here
        _TEXT_SLOT.__set__(self, value)

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in NavRow.__dataclass_fields__)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NavRow):
            return self._fields() == tuple(getattr(other, name) for name in NavRow.__dataclass_fields__)
        return NotImplemented

    __hash__ = NavRow.__hash__  # the dataclass's own (over the fields, text included)

    def __repr__(self) -> str:
        return "NavRow" + NavRow.__repr__(self)[len(type(self).__qualname__):]


# The slot setters of a _LazyTextRow in NavRow's field order. A frozen dataclass's __init__
# sets each field through object.__setattr__ by name; visible_rows makes one row per visible
# entry (83,000 in a large session), so it sets the slots directly: the same object.
(_SET_ENTRY, _SET_ENTRY_ID, _SET_INDEX, _SET_PARENT, _SET_INDENT, _SET_SHOW_CONNECTOR, _SET_IS_LAST, _SET_GUTTERS,
 _SET_VIRTUAL, _SET_ON_PATH, _SET_IS_LEAF, _SET_LABEL, _SET_LABEL_TIME, _SET_FOLDABLE, _SET_FOLDED, _SET_TEXT,
 _SET_CHILD_COUNT, _SET_TOOL_CALL) = (NavRow.__dict__[name].__set__ for name in NavRow.__dataclass_fields__)
_SET_FLAT = _LazyTextRow.__dict__["_flat"].__set__
_SET_HOME = _LazyTextRow.__dict__["_home"].__set__
_new_object = object.__new__


def _lazy_row(entry: Entry, entry_id: Any, index: int, parent: int, indent: int, show_connector: bool,
              is_last: bool, gutters: tuple[tuple[int, bool], ...], virtual: bool, on_path: bool, is_leaf: bool,
              label: str | None, label_timestamp: str | None, foldable: bool, folded: bool, text: str | None,
              child_count: int, tool_call: ToolCall | None, flat: FlatTree, home: str) -> _LazyTextRow:
    """``_LazyTextRow(entry, …, tool_call)`` with its text source, when ``text`` is None."""
    row = _new_object(_LazyTextRow)
    _SET_ENTRY(row, entry)
    _SET_ENTRY_ID(row, entry_id)
    _SET_INDEX(row, index)
    _SET_PARENT(row, parent)
    _SET_INDENT(row, indent)
    _SET_SHOW_CONNECTOR(row, show_connector)
    _SET_IS_LAST(row, is_last)
    _SET_GUTTERS(row, gutters)
    _SET_VIRTUAL(row, virtual)
    _SET_ON_PATH(row, on_path)
    _SET_IS_LEAF(row, is_leaf)
    _SET_LABEL(row, label)
    _SET_LABEL_TIME(row, label_timestamp)
    _SET_FOLDABLE(row, foldable)
    _SET_FOLDED(row, folded)
    _SET_TEXT(row, text)
    _SET_CHILD_COUNT(row, child_count)
    _SET_TOOL_CALL(row, tool_call)
    if text is None:
        _SET_FLAT(row, flat)
        _SET_HOME(row, home)
    return row
