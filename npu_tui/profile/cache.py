"""A DuckDB file per loaded profile in the user's cache directory, so a second open is instant.

The key covers everything that decides the loaded rows: every source file's path, size and mtime,
the profiler_info files, and the text of the schema and loader code. A cache whose key table is
missing or unreadable (a crash while writing, another version) is deleted and rebuilt, never used.
A cache that opens but then fails to read (a bad block: the disk, or a copy cut short) is removed
by whoever hits it (``discard``) and the profile loaded afresh. Never inside the profile folder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable, Optional

import duckdb

from .discover import INFO_RE, Discovery

KEEP = 8  # cache files kept; the least recently used beyond that are removed
KEY_TABLE = "npu_tui_cache"

ATTACH = "ATTACH ? AS cache_out"
COPY = "COPY FROM DATABASE memory TO cache_out"
MARK = f"CREATE TABLE cache_out.{KEY_TABLE} AS SELECT ? AS key"
DETACH = "DETACH cache_out"


def cache_dir() -> Path:
    env = os.environ.get("NPU_TUI_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "npu-tui"


def _code_digest() -> bytes:
    """Loader code and schema: a changed loader must not reuse rows an older one wrote."""
    h = hashlib.sha256()
    root = Path(__file__).parent
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".sql") and "__pycache__" not in f.parts:
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
    return h.digest()


def _stat_lines(paths: Iterable[Path]) -> Iterable[str]:
    for p in sorted(set(paths)):
        st = p.stat()
        yield f"{p.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n"


def cache_key(disc: Discovery) -> Optional[str]:
    """None when a file vanished while keying: such a profile is loaded but not cached."""
    files = [f for s in disc.ranks for fs in s.files.values() for f in fs]
    files += [f for fs in disc.cluster.values() for f in fs]
    for s in disc.ranks:
        files += [f for f in s.root.iterdir() if INFO_RE.match(f.name)] if s.root.is_dir() else []
    h = hashlib.sha256(_code_digest())
    try:
        for line in _stat_lines(files):
            h.update(line.encode())
    except OSError:
        return None
    return h.hexdigest()[:32]


def open_cached(key: str) -> Optional[duckdb.DuckDBPyConnection]:
    path = cache_dir() / f"{key}.duckdb"
    if not path.is_file():
        return None
    try:
        con = duckdb.connect(str(path), config={"autoinstall_known_extensions": False})
        con.execute("SET enable_progress_bar = false")
        if con.execute(f"SELECT key FROM {KEY_TABLE}").fetchone() == (key,):
            os.utime(path)  # recency for eviction
            return con
        con.close()
    except duckdb.Error:
        # Locked by another npu-tui, or corrupt: load afresh; remove only what is unreadable.
        if _unreadable(path):
            path.unlink(missing_ok=True)
    return None


def discard(key: str) -> None:
    """Remove the cache file of ``key`` (it failed to read)."""
    (cache_dir() / f"{key}.duckdb").unlink(missing_ok=True)


def _unreadable(path: Path) -> bool:
    try:
        duckdb.connect(str(path), read_only=True).close()
        return False
    except duckdb.IOException as e:
        return "lock" not in str(e).lower()
    except duckdb.Error:
        return True


def write_cache(con: duckdb.DuckDBPyConnection, key: str) -> Optional[Path]:
    """Copy the loaded in-memory database to the cache atomically; None when that is not possible."""
    folder = cache_dir()
    final = folder / f"{key}.duckdb"
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        con.execute(ATTACH, [str(tmp)])
        try:
            con.execute(COPY)
            con.execute(MARK, [key])
        finally:
            con.execute(DETACH)
        os.replace(tmp, final)
    except (OSError, duckdb.Error):
        tmp.unlink(missing_ok=True)
        return None
    _evict(folder)
    return final


def _evict(folder: Path) -> None:
    entries = sorted(folder.glob("*.duckdb"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
