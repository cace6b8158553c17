"""The helpers SessionManager is built from (FileSync, EntryAppends) reach it only through the
protocols declared next to them; the manager must provide every member those name.

pyright checks this statically (the helpers are typed against the protocols); these tests keep
it true at run time too, for a manager in memory and one on disk, also after a rename or a new
session, so that a protocol and the manager cannot drift apart unnoticed.
"""

from __future__ import annotations

import inspect

import pytest

from pi_lab.session import SessionManager
from pi_lab.session.appends import AppendsOwner, EntryAppends
from pi_lab.session.file_sync import FileSync, FileSyncOwner


def _members(protocol: type) -> set[str]:
    names = set(protocol.__annotations__)
    names.update(name for name, value in vars(protocol).items()
                 if inspect.isfunction(value) or isinstance(value, property))
    return {name for name in names if not name.startswith("__")}


@pytest.mark.parametrize("protocol", [FileSyncOwner, AppendsOwner])
def test_the_manager_provides_what_each_helper_protocol_names(protocol, tmp_path):
    on_disk = SessionManager.create(tmp_path, tmp_path / "sessions")
    on_disk.append_message({"role": "user", "content": "hi", "timestamp": 0})
    for sm in (SessionManager.in_memory(), on_disk):
        missing = sorted(name for name in _members(protocol) if not hasattr(sm, name))
        assert missing == [], f"{protocol.__name__} names what SessionManager lacks: {missing}"


def test_the_protocols_are_narrow():
    # Each names only what its helper does not define itself.
    assert not _members(FileSyncOwner) & set(vars(FileSync))
    assert not _members(AppendsOwner) & (set(vars(EntryAppends)) | set(vars(FileSync)))


def test_the_helpers_are_layered_as_before():
    # Appends go to the file through FileSync; the manager's method order is unchanged.
    assert SessionManager.__mro__[1:4] == (EntryAppends, FileSync, object)
