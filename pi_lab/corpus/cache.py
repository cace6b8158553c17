"""The corpus cache: the tables of already-read session files, in a private folder.

One folder per list of scanned paths, ``<cache>/<key>``, made by pi_lab with mode 0700 and
used only while it is a real folder (not a symbolic link) owned by this user and closed to
others. Inside it, a generation folder holds one Arrow IPC file (Feather v2) per table,
``manifest.json`` (path -> size, mtime_ns, inode of every cached file, and the SHA-256 and
size of every table) and, once asked for, the usage reports of those tables (``usage-<by>.json``,
each starting with the SHA-256 of its JSON; a report is a function of the tables, so it is
valid exactly as long as its generation). ``current`` names the live generation and the
SHA-256 of its manifest, and is replaced atomically, so a reader never sees half a write.

Every file is opened relative to the folder's descriptor with ``O_NOFOLLOW`` (a link planted
inside is never followed) and ``O_NONBLOCK`` (a FIFO planted inside never blocks), and read
only when it is a regular file of this user. A scan maps the tables; each table's bytes are
hashed and checked against the manifest before pyarrow reads any of them, when the table is
first used in the process (and again whenever its inode, size or times change): a corpus
asked only for its usage hashes only ``model_calls``. Anything else (a link, a FIFO, someone
else's file, a checksum that does not match, a table that does not read) is treated as no
cache: the sessions are read again and a warning is logged (logger ``pi_lab.corpus``;
``pi-lab`` prints it as one line); found at a table's first use, the corpus reads the
sessions again then and replaces all its tables. A folder that is not ours is never
written to or deleted from.

Arrow IPC rather than Parquet: it is memory-mapped back without decoding, so an unchanged
corpus loads in milliseconds (Parquet took over a second for the benchmark's 98,000 entries).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pi_lab.corpus.schema import TABLE_NAMES

__all__ = ["CACHE_FORMAT", "Cache", "CacheUnusable", "Generation", "MappedTable", "read_all"]

# Bump when the extractor's rows or the cache's files change, so old caches are rebuilt
# (6: private folders, checksums, manifest.json instead of files.json).
CACHE_FORMAT = "8"  # 7: the agent column; 8: each table's size in the manifest

_log = logging.getLogger("pi_lab.corpus")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MANIFEST = "manifest.json"
_CURRENT = "current"
# (st_dev, st_ino) -> (size, mtime_ns, ctime_ns, sha256) of tables this process has checked:
# a notebook's re-scan of an unchanged corpus does not hash them again.
_checked_tables: dict[tuple[int, int], tuple[int, int, int, str]] = {}


class CacheUnusable(Exception):
    """Something in the cache is not what pi_lab wrote (the message says what)."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    # Only on this path: a cached report does not import the engine.
    from pi_lab.session.storage import file_kind

    return f"a {file_kind(mode)}"


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def _open_file(dir_fd: int, name: str) -> tuple[int, os.stat_result]:
    """A descriptor on ``name`` in ``dir_fd`` and its stat; :class:`CacheUnusable` unless it
    is a regular file of this user (a link fails to open: ``O_NOFOLLOW``)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as error:
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except OSError:
            mode = 0
        kind = _kind(mode) if mode and not stat.S_ISREG(mode) else "unreadable"
        raise CacheUnusable(f"{name} is {kind} ({error.strerror or error})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise CacheUnusable(f"{name} is {'owned by another user' if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)}")
    return fd, st


def _read_small(dir_fd: int, name: str) -> bytes:
    fd, _st = _open_file(dir_fd, name)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def _write_new(dir_fd: int, name: str, payload: bytes) -> None:
    fd = os.open(name, _NEW_FLAGS, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)


def _digest(data: Any) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest_mapped(mapped: Any, step: int = 64 << 20) -> str:
    """The SHA-256 of a read-only map, a slice at a time, each slice's pages let go after it
    (MADV_DONTNEED: they stay in the page cache): hashing a 3 GB table whole kept all of it in
    this process's resident memory."""
    import mmap

    digest = hashlib.sha256()
    view = memoryview(mapped)
    flag = getattr(mmap, "MADV_DONTNEED", None)
    try:
        for start in range(0, len(view), step):
            digest.update(view[start:start + step])
            if flag is not None and hasattr(mapped, "madvise"):
                mapped.madvise(flag, start, min(step, len(view) - start))
    finally:
        view.release()
    return digest.hexdigest()


class _HashingSink(io.RawIOBase):
    """A write-only file over a descriptor that hashes what passes through it (pyarrow
    writes the table here, so it is hashed without being read back)."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd, self.hash, self.position = fd, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.hash.update(view)
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        self.position += len(view)
        return len(view)

    def tell(self) -> int:
        return self.position


class Cache:
    """One private cache folder (see the module's notes); :meth:`for_paths` picks it."""

    def __init__(self, root: Path, key: str):
        self.root = root
        self.dir = root / key
        self.key = key

    @classmethod
    def for_paths(cls, root: Path, paths: list[Any]) -> Cache:
        # One store per list of scanned paths (in order: the rows are kept in that order).
        # Names are hashed as the bytes the OS holds (a name that is not UTF-8 carries surrogate
        # escapes, which str.encode refuses).
        joined = "\0".join([CACHE_FORMAT, *(os.path.abspath(os.fspath(p)) for p in paths)])
        key = hashlib.sha256(os.fsencode(joined)).hexdigest()[:20]
        return cls(root, key)

    # ------------------------------------------------------------------ the folder

    def _open_dir(self, create: bool) -> int | None:
        """A descriptor on the private folder (None: it does not exist and ``create`` is
        false); :class:`CacheUnusable` when it is a link, not ours, or open to others."""
        if create:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise CacheUnusable(f"the cache folder {self.root} cannot be opened ({error.strerror or error})") from None
        try:
            made = False
            if create:
                try:
                    os.mkdir(self.key, 0o700, dir_fd=root_fd)
                    made = True
                except FileExistsError:
                    pass
            try:
                fd = os.open(self.key, _DIR_FLAGS, dir_fd=root_fd)
            except FileNotFoundError:
                return None
            except OSError:
                mode = os.lstat(self.key, dir_fd=root_fd).st_mode
                raise CacheUnusable(f"{self.dir} is {_kind(mode)}, not a folder pi_lab made") from None
        finally:
            os.close(root_fd)
        st = os.fstat(fd)
        if made:
            os.fchmod(fd, 0o700)  # whatever the umask left
        elif st.st_uid != os.geteuid() or st.st_mode & 0o077:
            os.close(fd)
            whose = "owned by another user" if st.st_uid != os.geteuid() else f"open to others (mode {stat.S_IMODE(st.st_mode):o})"
            raise CacheUnusable(f"{self.dir} is {whose}")
        return fd

    def warn(self, problem: CacheUnusable, what: str) -> None:
        """Log that the cache is not used (``problem``) and what is done instead."""
        _log.warning("corpus cache %s not used: %s; %s", self.dir, problem, what)

    # ------------------------------------------------------------------ reading

    def _live(self, fd: int) -> tuple[str, dict[str, Any]] | None:
        """The live generation's name and its checked manifest (None: no generation yet)."""
        try:
            pointer = _read_small(fd, _CURRENT)
        except FileNotFoundError:
            return None
        try:
            generation, digest = pointer.decode("ascii").split()
        except (UnicodeDecodeError, ValueError):
            raise CacheUnusable("current does not name a generation") from None
        if not generation.startswith("gen-") or "/" in generation:
            raise CacheUnusable("current does not name a generation")
        gen_fd = self._open_generation(fd, generation)
        try:
            manifest = _read_small(gen_fd, _MANIFEST)
        except FileNotFoundError:
            raise CacheUnusable(f"{generation}/{_MANIFEST} is missing") from None
        finally:
            os.close(gen_fd)
        if _digest(manifest) != digest:
            raise CacheUnusable(f"{generation}/{_MANIFEST} does not match its checksum")
        try:
            data = json.loads(manifest)
            data["files"] = {f: (s, m, i) for f, (s, m, i) in data["files"].items()}
            if set(data["tables"]) != set(TABLE_NAMES) or set(data["sizes"]) != set(TABLE_NAMES):
                raise ValueError
        except (ValueError, TypeError, KeyError, AttributeError):
            raise CacheUnusable(f"{generation}/{_MANIFEST} is not pi_lab's") from None
        return generation, data

    @staticmethod
    def _open_generation(fd: int, generation: str) -> int:
        try:
            return os.open(generation, _DIR_FLAGS, dir_fd=fd)
        except OSError as error:
            raise CacheUnusable(f"{generation} is not a folder ({error.strerror or error})") from None

    def current(self) -> tuple[str, dict[str, tuple[int, int, int]]] | None:
        """The live generation and the stamps of its files (None: no usable cache), quietly:
        a scan after it says what was wrong. Reads no table, so it needs no pyarrow."""
        try:
            fd = self._open_dir(create=False)
            if fd is None:
                return None
            try:
                live = self._live(fd)
            finally:
                os.close(fd)
        except (CacheUnusable, OSError):
            return None
        return None if live is None else (live[0], live[1]["files"])

    def load(self) -> tuple[dict[str, tuple[int, int, int]], dict[str, MappedTable] | None, str | None]:
        """(stamps, tables, generation) of the live generation; ({}, None, None) when there is
        none or it cannot be trusted (then a warning says why). The tables are mapped, each
        read and checked when first used (:class:`MappedTable`)."""
        try:
            fd = self._open_dir(create=False)
        except CacheUnusable as problem:
            self.warn(problem, "the sessions are read again and nothing is written there (remove it to cache again)")
            return {}, None, None
        if fd is None:
            return {}, None, None
        try:
            live = self._live(fd)
            if live is None:
                return {}, None, None
            generation, manifest = live
            gen_fd = self._open_generation(fd, generation)
            try:
                tables = _read_tables(gen_fd, manifest["tables"], manifest["sizes"])
            finally:
                os.close(gen_fd)
            return manifest["files"], tables, generation
        except CacheUnusable as problem:
            self.warn(problem, "the sessions are read again")
            return {}, None, None
        except OSError as error:
            self.warn(CacheUnusable(error.strerror or str(error)), "the sessions are read again")
            return {}, None, None
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ writing

    def save(self, stamps: dict[str, tuple[int, int, int]], tables: dict[str, Any]) -> str | None:
        """Write a new generation, make it the live one and delete the others; returns its
        name (None: the folder is not ours, a warning was logged by :meth:`load`)."""
        generation = self.new_generation()
        if generation is None:
            return None
        with generation:
            for name in TABLE_NAMES:
                with generation.table(name) as write:
                    write(tables[name].combine_chunks())
            return generation.commit(stamps)

    def new_generation(self) -> Generation | None:
        """A generation being written, table by table (:meth:`Generation.table`), made live by
        :meth:`Generation.commit`; None when the folder is not ours. Use it as a context
        manager: one left uncommitted is deleted."""
        try:
            fd = self._open_dir(create=True)
        except CacheUnusable:
            return None
        assert fd is not None
        try:
            name = f"gen-{uuid.uuid4().hex}"
            os.mkdir(name, 0o700, dir_fd=fd)
            gen_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except BaseException:
            os.close(fd)
            raise
        return Generation(self, fd, name, gen_fd)

    def read_report(self, generation: str, name: str) -> Any:
        """The report ``name`` kept in ``generation`` (None: none, or it fails its checksum,
        which a warning says)."""
        try:
            fd = self._open_dir(create=False)
            if fd is None:
                return None
            try:
                gen_fd = self._open_generation(fd, generation)
                try:
                    data = _read_small(gen_fd, f"{name}.json")
                finally:
                    os.close(gen_fd)
            finally:
                os.close(fd)
            digest, _, text = data.partition(b"\n")
            if digest.decode("ascii", "replace") != _digest(text):
                raise CacheUnusable(f"{generation}/{name}.json does not match its checksum")
            return json.loads(text)
        except FileNotFoundError:
            return None
        except (CacheUnusable, ValueError) as problem:
            self.warn(problem if isinstance(problem, CacheUnusable) else CacheUnusable(str(problem)),
                       "the report is computed again")
            return None
        except OSError:
            return None

    def write_report(self, generation: str, name: str, report: Any) -> None:
        """Keep ``report`` beside the tables it was computed from (atomically; a generation
        replaced meanwhile is simply not written to)."""
        text = json.dumps(report, ensure_ascii=False).encode("utf-8")
        temporary = f".{name}.{uuid.uuid4().hex}.tmp"
        try:
            fd = self._open_dir(create=False)
            if fd is None:
                return
            try:
                gen_fd = self._open_generation(fd, generation)
            finally:
                os.close(fd)
        except (CacheUnusable, OSError):
            return
        try:
            _write_new(gen_fd, temporary, _digest(text).encode("ascii") + b"\n" + text)
            os.replace(temporary, f"{name}.json", src_dir_fd=gen_fd, dst_dir_fd=gen_fd)
        except OSError:
            _unlink_quietly(temporary, gen_fd)
        finally:
            os.close(gen_fd)


def _read_tables(gen_fd: int, digests: dict[str, str], sizes: dict[str, int]) -> dict[str, MappedTable]:
    """Every table of a generation, mapped (each file checked to be a regular file of this
    user now), its bytes checked and read when it is first used (:meth:`MappedTable.read`)."""
    return {name: _map_table(gen_fd, name, digests[name], sizes[name]) for name in TABLE_NAMES}


def _map_table(gen_fd: int, name: str, digest: str, size: int) -> MappedTable:
    import mmap

    fd, st = _open_file(gen_fd, f"{name}.arrow")
    try:
        if st.st_size != size:  # (a table cut short or replaced is found before any hashing)
            raise CacheUnusable(f"{name}.arrow is {st.st_size} bytes, not the {size} written")
        if st.st_size == 0:
            raise CacheUnusable(f"{name}.arrow is empty")
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    return MappedTable(name, mapped, digest, (st.st_dev, st.st_ino), (st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest))


class MappedTable:
    """One cached table's file, mapped but not read yet.

    :meth:`read` checks the mapped bytes against the manifest's SHA-256 before pyarrow reads
    any of them (once per process and version of the file: ``_checked_tables``), then its
    schema. A scan maps the tables; the checks run when a table is first used, so a corpus
    that is only asked for its model calls hashes only those (hashing every table of a 3 GB
    corpus took seconds)."""

    __slots__ = ("name", "mapped", "digest", "key", "seen", "_table")

    def __init__(self, name: str, mapped: Any, digest: str, key: tuple[int, int], seen: tuple[int, int, int, str]):
        self.name, self.mapped, self.digest, self.key, self.seen = name, mapped, digest, key, seen
        self._table: Any = None

    def read(self) -> Any:
        """The table; :class:`CacheUnusable` when its bytes are not the ones written."""
        if self._table is not None:
            return self._table
        import pyarrow as pa

        from pi_lab.corpus.schema import schema_of

        name = self.name
        if _checked_tables.get(self.key) != self.seen:
            if _digest_mapped(self.mapped) != self.digest:
                raise CacheUnusable(f"{name}.arrow does not match its checksum")
            _checked_tables[self.key] = self.seen
        try:
            table = pa.ipc.open_file(pa.py_buffer(self.mapped)).read_all()
            table.validate()
        except (pa.ArrowException, ValueError) as error:
            raise CacheUnusable(f"{name}.arrow does not read ({error})") from None
        if table.schema != schema_of(name):
            raise CacheUnusable(f"{name}.arrow has another schema")
        self._table = table
        return table


def read_all(store: Cache, tables: dict[str, Any]) -> dict[str, Any] | None:
    """Every table of ``tables`` read (a :class:`MappedTable` checked and read, on threads:
    hashlib lets go of the GIL); None, with the warning, when one is not what was written."""
    from concurrent.futures import ThreadPoolExecutor

    def read(item: Any) -> Any:
        return item.read() if isinstance(item, MappedTable) else item

    try:
        with ThreadPoolExecutor(max_workers=min(len(tables), os.cpu_count() or 1)) as pool:
            return dict(zip(tables, pool.map(read, tables.values())))
    except CacheUnusable as problem:
        store.warn(problem, "the sessions are read again")
        return None


class Generation:
    """A cache generation being written (:meth:`Cache.new_generation`): each table streamed
    into its file and hashed on the way, then the manifest and the ``current`` pointer."""

    def __init__(self, cache: Cache, fd: int, name: str, gen_fd: int):
        self.cache, self.fd, self.name, self.gen_fd = cache, fd, name, gen_fd
        self.written: dict[str, tuple[str, int]] = {}  # table -> (SHA-256, size)
        self.committed = False

    def __enter__(self) -> Generation:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the folders; a generation not committed is deleted."""
        if self.gen_fd < 0:
            return
        os.close(self.gen_fd)
        self.gen_fd = -1
        try:
            if not self.committed:
                _remove_generation(self.fd, self.name)
        finally:
            os.close(self.fd)

    @contextmanager
    def table(self, name: str) -> Iterator[Any]:
        """A function writing one chunk (a pyarrow.Table) of table ``name`` at a time."""
        import pyarrow as pa

        from pi_lab.corpus.schema import schema_of

        fd = os.open(f"{name}.arrow", _NEW_FLAGS, 0o600, dir_fd=self.gen_fd)
        try:
            sink = _HashingSink(fd)
            with pa.ipc.new_file(sink, schema_of(name)) as writer:
                yield writer.write_table
            digest = sink.hash.hexdigest()
            self.written[name] = (digest, sink.position)
            # This process wrote these bytes and hashed them on the way: while the file keeps
            # its inode, size and times, it need not be hashed again when first read.
            st = os.fstat(fd)
            _checked_tables[(st.st_dev, st.st_ino)] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)
        finally:
            os.close(fd)

    def commit(self, stamps: dict[str, tuple[int, int, int]]) -> str:
        """Write the manifest, make this generation the live one, delete the others; its name."""
        digests = {name: digest for name, (digest, _size) in self.written.items()}
        sizes = {name: size for name, (_digest, size) in self.written.items()}
        files = {f: list(stamps[f]) for f in sorted(stamps)}
        manifest = {"files": files, "tables": digests, "sizes": sizes}
        try:
            data = json.dumps(manifest, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8: its surrogates as JSON escapes
            data = json.dumps(manifest).encode("ascii")
        _write_new(self.gen_fd, _MANIFEST, data)
        pointer = f"{_CURRENT}.{self.name}.tmp"
        _write_new(self.fd, pointer, f"{self.name} {_digest(data)}\n".encode("ascii"))
        os.replace(pointer, _CURRENT, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        self.committed = True
        # Older generations go; a Corpus still mapping one keeps its (unlinked) file.
        for name in os.listdir(self.fd):
            if name.startswith("gen-") and name != self.name:
                _remove_generation(self.fd, name)
        return self.name

    def mapped(self) -> dict[str, MappedTable]:
        """The tables written, mapped (each read when first used, as a cached scan's)."""
        return {name: _map_table(self.gen_fd, name, *self.written[name]) for name in TABLE_NAMES}


def _remove_generation(fd: int, name: str) -> None:
    """Delete the generation ``name`` (its files, then it), never following a link: a link
    or file of that name is unlinked itself."""
    try:
        gen_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError:
        _unlink_quietly(name, fd)
        return
    try:
        for inner in os.listdir(gen_fd):
            _unlink_quietly(inner, gen_fd)
    finally:
        os.close(gen_fd)
    try:
        os.rmdir(name, dir_fd=fd)
    except OSError:
        pass
