"""A DuckDB file per loaded profile in the user's cache directory, so a second open is instant.

A fresh load goes straight into its cache file, under a temporary name (``Store``): DuckDB then
compresses each table as it is written, and can leave loaded rows on disk instead of in memory.
Once the caller has added what it wants kept (the analysis), ``Store.save`` marks it with its key,
checkpoints it and gives it its name. A load that never got there (cancelled, failed, the process
quit or was killed) leaves no file under a key: its temporary file is removed on the way out, or by
the next store made in the folder once its process is gone.

The key covers everything that decides the loaded rows: every source file's path, size, times and
readability, the profiler_info files, how discovery made ranks of them, and the text of the schema
and loader code. A cache whose key table is missing or unreadable (another version, a file that is
not one) is deleted and rebuilt, never used; a cache that opens but then fails to read (a bad
block: the disk, or a copy cut short) is removed by whoever hits it (``discard``) and the profile
loaded afresh. Never inside the profile folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import os
import re
import shutil
import weakref
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

import duckdb

from .discover import INFO_RE, MSPROF_DEVICE_RE, MSPROF_INFO_RE, RANK_STATED_ABOVE, Discovery
from .schema import CONFIG, connect, nameable
from .sources.cluster_db import KIND as CLUSTER_DB
from .sources.sqlite_export import KIND as SQLITE, SIDE_FILES

KEEP = 8  # cache files kept; the least recently used beyond that are removed
# Free space a store needs beyond its input's size: however small the profile, its tables and the
# analysis take about 14 MB, and the checkpoint briefly holds its log beside the file.
STORE_ROOM = 64 << 20
SAVE_ROOM = 16 << 20  # beyond the log that the checkpoint writes into the file
KEY_TABLE = "npu_tui_cache"

# The key, and the profile's path, whole, as the load that wrote the file was given it (the paths
# in its tables lie under it), with the folder that path named (Profile.named).
MARK = f"CREATE OR REPLACE TABLE {KEY_TABLE} AS SELECT ? AS key, ? AS base, ? AS real"
# A source whose rows DuckDB could not write into the store (it names the file, or its log).
WRITE_FAILED = "SELECT count(*) FROM load_log WHERE note LIKE ?"
# A saved cache's name, and a store's temporary one (".{key}.{pid}.{n}.tmp"), each with DuckDB's
# write-ahead log beside it; nothing else in the folder is npu-tui's to remove.
CACHE_NAME = re.compile(r"^[0-9a-f]{32}\.duckdb$")
TEMP_NAME = re.compile(r"^\.[0-9a-f]+\.(\d+)\.(?:\d+\.)?tmp(\.wal)?$")
# Every store of this process gets a name of its own: DuckDB hands a connection to a path this
# process still holds open (an earlier load of the same profile, kept by the app until its
# reload is shown) to that same database, and the new load would go into the old one's rows.
_stores = itertools.count()


def cache_dir() -> Path:
    """Where cache files go. OSError where there is no such place: no HOME, and a user id the
    system does not know (a container's ``-u 12345``); the load goes on without the cache."""
    env = os.environ.get("NPU_TUI_CACHE_DIR")
    if env:
        folder = Path(env)
    else:
        try:
            base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        except (RuntimeError, KeyError):
            raise OSError("no home folder to keep the cache in (HOME unset, and the user unknown)") from None
        folder = Path(base) / "npu-tui"
    if not nameable(folder):
        raise OSError("the cache folder's name is not UTF-8 (a home folder named in GBK): DuckDB opens no file there")
    return folder


def _code_digest() -> bytes:
    """Loader code and schema, the wording of its notes (text.py) and DuckDB's version (its CSV and
    JSON readers): a changed loader must not reuse rows an older one wrote."""
    h = hashlib.sha256(duckdb.__version__.encode())
    root = Path(__file__).parent
    for f in [*sorted(root.rglob("*")), root.parent / "text.py"]:
        if f.suffix in (".py", ".sql") and "__pycache__" not in f.parts:
            h.update(f.relative_to(root.parent).as_posix().encode())
            h.update(f.read_bytes())
    return h.digest()


def _named(p: Path, base: Path, real: Path) -> Path:
    """A path as the key names it: under ``base`` by the base's real path and its place under it,
    so a profile opened by another path (a link, a relative one) keeps its key, and the 577 files
    of 64 ranks are not resolved one by one (a fifth of a reopen's key). A file that is a link is
    named by its target: pointed elsewhere, it is another file."""
    try:
        return p.resolve() if p.is_symlink() else real / p.relative_to(base)
    except ValueError:
        return p.resolve()


def _stat_lines(paths: Iterable[Path], base: Path, real: Path) -> Iterable[str]:
    """Each file's name, size, mtime, ctime and whether this user may read it. The ctime: an edit
    that keeps the size and sets the mtime back (``touch -r``, a tool that keeps times) changes
    it, as a chmod does, and no one can set it. Readable: a cache folder shared between users
    must not hand one the rows of a file only another could read."""
    for p in sorted(set(paths)):
        st = p.stat()
        yield (f"{_named(p, base, real)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
               f"{os.access(p, os.R_OK)}\n")


def _framing(disc: Discovery, base: Path, real: Path) -> Iterable[str]:
    """How discovery read the files into ranks: the same files opened by another path (a rank
    folder, its output folder, one file of it; a PROF_* folder or one device's timeline) make
    ranks of other roots and devices, and a rank may come from a folder's name (device_N)."""
    yield f"{disc.layout}\n"
    for s in disc.ranks:
        roles = sorted((role, str(_named(f, base, real))) for role, fs in s.files.items() for f in fs)
        left = sorted((str(_named(f, base, real)), note) for f, note in s.left_out)
        yield f"{_named(s.root, base, real)}\0{s.source_format}\0{s.rank}\0{s.device}\0{roles}\0{left}\n"


def cache_key(disc: Discovery) -> Optional[str]:
    """None when a file vanished while keying, or a folder cannot be listed: such a profile is
    loaded but not cached."""
    files = [f for s in disc.ranks for fs in s.files.values() for f in fs]
    files += [f for fs in disc.cluster.values() for f in fs]
    # What discovery said of the rest (another profile beside the ranks): said again only while so.
    files += [p for p, _ in disc.problems]
    # A SQLite export's state depends on the log or journal beside it (sqlite_export reads them),
    # whatever its name (a .dat loads by its header).
    dbs = [f for s in disc.ranks for f in s.files.get(SQLITE, ())] + disc.cluster.get(CLUSTER_DB, [])
    files += [w for f in dbs for w in (Path(f"{f}{s}") for s in SIDE_FILES) if w.is_file()]
    h = hashlib.sha256(_code_digest())
    try:
        for s in disc.ranks:
            for root in (s.root, s.root.parent) if s.root.name in RANK_STATED_ABOVE else (s.root,):
                files += _rank_infos(root) if root.is_dir() else []
        real = disc.path.resolve()
        for line in (*_stat_lines(files, disc.path, real), *_framing(disc, disc.path, real)):
            h.update(line.encode("utf-8", "surrogateescape"))  # names as the disk holds them
        # And what discovery said, with each entry's mode: a folder not searched for want of
        # permission, searched once it is given (chmod changes no size or time), is another key.
        for p, note in sorted(disc.problems):
            h.update(f"{p}\0{note}\0{p.lstat().st_mode}\n".encode("utf-8", "surrogateescape"))
    except OSError:
        return None
    return h.hexdigest()[:32]


def _rank_infos(root: Path) -> List[Path]:
    """The files a rank's number is read from: torch_npu's profiler_info_N.json in its folder,
    msprof's info.json.N in its device_N folder (the rank folder itself, or a PROF_* folder's)."""
    found = []
    for f in root.iterdir():
        if INFO_RE.match(f.name) or MSPROF_INFO_RE.match(f.name):
            found.append(f)
        elif MSPROF_DEVICE_RE.match(f.name) and f.is_dir():
            found += [i for i in f.iterdir() if MSPROF_INFO_RE.match(i.name)]
    return found


def open_cached(key: str, write: bool = False) -> Optional[duckdb.DuckDBPyConnection]:
    """The cache file of ``key``, or None. Read-only unless ``write``: every npu-tui that opens an
    unchanged profile (an app, a report beside it) then shares the file; one that writes keeps
    the others out until it closes."""
    try:
        path = cache_dir() / f"{key}.duckdb"
        if not path.is_file():
            return None
    except OSError:
        return None
    try:
        con = duckdb.connect(str(path), read_only=not write, config=CONFIG)
        con.execute("SET enable_progress_bar = false")
        if con.execute(f"SELECT key FROM {KEY_TABLE}").fetchone() == (key,):
            try:
                os.utime(path)  # recency for eviction
            except OSError:  # a file this user may read but not write (a shared cache folder)
                pass
            return con
        con.close()
    except duckdb.Error:
        # In use (written by another npu-tui, or read by one while this one would write), or
        # corrupt: the caller loads afresh; only what is unreadable is removed.
        if _unreadable(path):
            discard(key)
    return None


def loaded_base(con: duckdb.DuckDBPyConnection) -> Tuple[str, str]:
    """The path of the profile, whole, as the load that wrote this cache file was given it, and
    the folder it named, its links resolved."""
    return con.execute(f"SELECT base, real FROM {KEY_TABLE}").fetchone()


def discard(key: str) -> bool:
    """Remove the cache file of ``key`` (it failed to read), with its write-ahead log: a log left
    behind would not match the next file of that key, and spoil it too. Where this user may not
    remove them, they stay: the load goes on without the cache. Whether a file was removed."""
    try:
        path = cache_dir() / f"{key}.duckdb"
        there = path.exists()
        _remove(path)
    except OSError:
        return False
    return there


def _unreadable(path: Path) -> bool:
    try:
        duckdb.connect(str(path), read_only=True).close()
        return False
    except duckdb.IOException as e:  # another process's lock on it, or the file itself
        return "lock" not in str(e).lower()
    except duckdb.ConnectionException:  # open for writing in this process
        return False
    except duckdb.Error:
        return True


class Store:
    """A profile loading straight into the cache file of ``key``, under a temporary name until
    ``save``; ``con`` is its connection (the canonical schema in place)."""

    def __init__(self, key: str, folder: Path, base: str, real: str) -> None:
        self.key, self.base, self.real = key, base, real
        self.final = folder / f"{key}.duckdb"
        self.path = folder / f".{key}.{os.getpid()}.{next(_stores)}.tmp"
        _remove(self.path)
        self.con = connect(str(self.path))
        # Until save() the file is scratch: a crash loses nothing the files do not still hold, so
        # its commits need not wait for the disk (512 of them for 64 ranks).
        _fsync(self.con, "NONE")
        self._unsaved = weakref.finalize(self, _remove, self.path)

    def save(self) -> bool:
        """Mark the file with its key, write it out and give it its name; False when it was not
        (the load is just not cached). Too little room for the log to go into the file: not
        tried. Refused by the disk all the same (filled meanwhile): DuckDB gives up the database,
        and the file is removed at once (``usable`` is then False)."""
        if not self._unsaved.alive:
            return True
        try:
            wal = Path(f"{self.path}.wal")
            if shutil.disk_usage(self.path.parent).free < (wal.stat().st_size if wal.exists() else 0) + SAVE_ROOM:
                return False
            self.con.execute(MARK, [self.key, self.base, self.real])
            _fsync(self.con, "STANDARD")
            self.con.execute("CHECKPOINT")
            os.replace(self.path, self.final)
        except (OSError, duckdb.Error):
            if not self.usable:
                self.abandon()
            return False
        self._unsaved.detach()
        _evict(self.final.parent)
        return True

    def failed_under(self, con, error: Optional[BaseException] = None) -> bool:
        """Whether loading into this file failed for the file's sake: the database gone, or a
        source's rows that could not be written into it (its disk filled), or ``error`` is a write
        into it (its log's, when the disk filled under the load log's own row)."""
        if error is not None and self.path.name in str(error):
            return True
        try:
            return con.execute(WRITE_FAILED, [f"%{self.path.name}%"]).fetchone()[0] > 0
        except duckdb.Error:
            return True

    @property
    def usable(self) -> bool:
        try:
            self.con.execute("SELECT 1")
            return True
        except duckdb.Error:
            return False

    def abandon(self) -> None:
        """A load that failed: close the file and remove it."""
        try:
            self.con.close()
        except duckdb.Error:
            pass
        self._unsaved()


def _fsync(con: duckdb.DuckDBPyConnection, mode: str) -> None:
    """DuckDB's fsync_mode, where it has one (2.0 on): before it every commit waits for the disk,
    slower but as safe, and a SET it does not know would make every load uncached."""
    try:
        con.execute(f"SET fsync_mode = '{mode}'")
    except duckdb.CatalogException:
        pass


def start_store(key: str, input_bytes: int, base: str, real: str) -> Optional[Store]:
    """A new Store for ``key`` (of the profile at ``base``, whole; ``real``, resolved), or None
    when the cache folder cannot take one (not writable, or with less free space than the input's
    size and STORE_ROOM: a load must not fail for want of cache space; one that fills the disk
    all the same loads again into memory)."""
    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(folder).free < input_bytes + STORE_ROOM:
            return None
        _remove_orphans(folder)
        return Store(key, folder, base, real)
    except (OSError, duckdb.Error):
        return None


def _remove(path: Path) -> None:
    for p in (path, Path(f"{path}.wal")):
        p.unlink(missing_ok=True)


def _remove_orphans(folder: Path) -> None:
    """Temporary files of stores whose process is gone (killed while loading). A pid alone does
    not tell: an npu-tui in another container sharing the folder has pids of its own, which may
    be none here; the store file it writes is locked by its DuckDB, and it and its log are kept."""
    names = [(f, TEMP_NAME.match(f.name)) for f in folder.iterdir()]
    temps = [(f, m) for f, m in names if m and not _alive(int(m.group(1)))]
    held = {f.name for f, m in temps if not m.group(2) and _locked(f)}
    for f, m in temps:
        if f.name.removesuffix(".wal") in held:
            continue
        try:
            f.unlink(missing_ok=True)
        except OSError:  # another user's, in a shared folder: theirs to remove
            pass


def _locked(path: Path) -> bool:
    """Whether another process holds DuckDB's write lock on ``path`` (read-only: another user's
    store may be read, not written)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (releases the lock this took, as any close of the file would)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _evict(folder: Path) -> None:
    """Keep the KEEP most recently used cache files. Other npu-tuis may be evicting in the same
    folder at once: a file gone before it is looked at is simply not counted."""
    entries = []
    try:
        for f in folder.iterdir():
            if CACHE_NAME.match(f.name):
                try:
                    entries.append((f.stat().st_mtime, f))
                except OSError:
                    pass
        entries.sort(reverse=True)
    except OSError:  # the next save tries again
        return
    for _, old in entries[KEEP:]:
        try:
            _remove(old)
        except OSError:  # another user's file in a shared folder: the rest are still evicted
            pass
