"""Loading a profile: discovery, then every source of every rank into the canonical tables."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import duckdb

from .cache import cache_key, open_cached, write_cache
from .discover import Discovery, RankSource, discover
from .errors import LoadCancelled, ProfileError, SourceError, one_line
from .schema import CANONICAL_TABLES, connect
from .sources import source_modules
from .sources.base import LoadResult, RankContext

# progress(done, total, label): called before each file and once at the end, from loader threads.
Progress = Callable[[int, int, str], None]

DATA_TABLES = tuple(t for t in CANONICAL_TABLES if t not in ("ranks", "load_log"))

INSERT_LOG = "INSERT INTO load_log VALUES (?, ?, ?, ?, ?, ?, ?)"
INSERT_RANK = "INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?)"


@dataclass
class Profile:
    """A loaded profile: the DuckDB connection holding its canonical tables, and where it came from."""

    con: duckdb.DuckDBPyConnection
    path: Path
    layout: str
    ranks: List[int]
    formats: List[str]

    def skipped(self) -> List[Tuple]:
        """(rank, file, skipped_rows, note) for every file that lost rows or could not be used."""
        return self.con.execute(
            "SELECT rank, file, skipped_rows, note FROM load_log "
            "WHERE skipped_rows > 0 OR note <> '' ORDER BY rank, file"
        ).fetchall()


def _assign_ranks(sources: List[RankSource]) -> List[str]:
    """Ranks from profiler_info where given, else the lowest free number in folder order."""
    notes = []
    taken = set()
    for s in sources:
        if s.rank is not None and s.rank in taken:
            notes.append(f"{s.root}: rank {s.rank} claimed twice; renumbered")
            s.rank = None
        if s.rank is not None:
            taken.add(s.rank)
    nxt = 0
    for s in sources:
        if s.rank is None:
            while nxt in taken:
                nxt += 1
            s.rank = nxt
            taken.add(nxt)
    return notes


def _reason(e: BaseException) -> str:
    """The first line of what went wrong; when a failed statement aborted the transaction and the
    loader's cleanup then failed too, the original error, not the cleanup's."""
    if isinstance(e, duckdb.TransactionException) and e.__context__ is not None:
        e = e.__context__
    text = str(e).strip().splitlines()
    return one_line(text[0] if text else type(e).__name__)


def _load_file(con, module, path: Path, ctx: RankContext) -> LoadResult:
    """One source file in its own transaction, so a failure leaves no partial rows behind."""
    con.execute("BEGIN TRANSACTION")
    try:
        result = module.load(con, path, ctx)
    except SourceError as e:
        con.execute("ROLLBACK")
        return LoadResult(rows=0, note=_reason(e))
    except (duckdb.Error, OSError, ValueError, UnicodeError) as e:
        con.execute("ROLLBACK")
        return LoadResult(rows=0, note=f"unreadable: {_reason(e)}")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return result


class _Progress:
    """Counts files done across rank threads and forwards to the caller's callback."""

    def __init__(self, total: int, callback: Optional[Progress]):
        self.total, self.done, self.callback = total, 0, callback
        self.lock = threading.Lock()

    def start(self, label: str) -> None:
        if self.callback:
            with self.lock:
                self.callback(self.done, self.total, label)

    def finish(self) -> None:
        with self.lock:
            self.done += 1


def _load_rank(cur, src: RankSource, modules, progress: _Progress, stop: Callable[[], bool]) -> None:
    """Every source of one rank, on its own cursor (a DuckDB connection of its own) so ranks can
    load in parallel: DuckDB runs the SQL without the GIL, and appends from several connections
    to one table do not conflict."""
    try:
        ctx = RankContext(rank=src.rank, root=src.root, files=src.files, source_format=src.source_format)
        _apply_info(ctx, src.info)
        for module in modules:
            for path in src.files.get(module.KIND, []):
                if stop():
                    raise LoadCancelled()
                progress.start(f"rank {src.rank}: {path.name}")
                t0 = time.perf_counter()
                result = _load_file(cur, module, path, ctx)
                if result.rows:
                    ctx.loaded.add(module.KIND)
                cur.execute(INSERT_LOG, [src.rank, str(path), module.KIND, result.rows,
                                         result.skipped, time.perf_counter() - t0, result.note])
                progress.finish()
        cur.execute(INSERT_RANK, [ctx.rank, ctx.device_id, str(src.root), ctx.source_format,
                                  ctx.torch_npu_version, ctx.cann_version, ctx.profiler_level])
    finally:
        cur.close()


def _load_ranks(con, disc: Discovery, progress: _Progress, cancelled) -> None:
    modules = source_modules()
    stopped = threading.Event()

    def stop() -> bool:
        return stopped.is_set() or bool(cancelled and cancelled())

    ranks = sorted(disc.ranks, key=lambda s: s.rank)
    workers = max(1, min(len(ranks), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="npu-tui-load") as pool:
        cursors = [con.cursor() for _ in ranks]
        pending = {pool.submit(_load_rank, cur, src, modules, progress, stop)
                   for cur, src in zip(cursors, ranks)}
        try:
            while pending:
                done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()
                if cancelled and cancelled():
                    raise LoadCancelled()
        except BaseException:
            # Stop the other ranks at their next file and cut short what DuckDB is running now.
            stopped.set()
            for cur in cursors:
                try:
                    cur.interrupt()
                except duckdb.Error:  # that rank already finished and closed its cursor
                    pass
            for f in pending:
                f.cancel()
            raise


def load_discovered(
    disc: Discovery,
    con: Optional[duckdb.DuckDBPyConnection] = None,
    progress: Optional[Progress] = None,
    cancelled: Optional[Callable[[], bool]] = None,
    cache: bool = False,
) -> Profile:
    """Load every rank (in parallel, up to the core count) into ``con`` or a new in-memory database.

    With ``cache``, an unchanged profile opens from the user's cache directory instead (then the
    returned connection is that cache file's, not ``con``), and a fresh load is saved there.
    """
    key = cache_key(disc) if cache else None
    cached = open_cached(key) if key else None
    if cached is not None:
        if progress:
            progress(1, 1, "opened from cache")
        return _profile(cached, disc)

    con = con or connect()
    for note in _assign_ranks(disc.ranks):
        con.execute(INSERT_LOG, [None, str(disc.path), "discovery", 0, 0, 0.0, note])
    for path, note in disc.problems:
        con.execute(INSERT_LOG, [None, str(path), "discovery", 0, 0, 0.0, note])

    total = sum(len(v) for s in disc.ranks for v in s.files.values())
    tracker = _Progress(total, progress)
    _load_ranks(con, disc, tracker, cancelled)
    if progress:
        progress(total, total, "done")

    if not any(con.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in DATA_TABLES):
        reasons = con.execute(
            "SELECT file, note FROM load_log WHERE note <> '' ORDER BY file LIMIT 3"
        ).fetchall()
        why = "; ".join(f"{Path(f).name}: {n}" for f, n in reasons) or "no profiler files found"
        raise ProfileError(f"{disc.path}: nothing could be loaded ({why})")
    if key:
        write_cache(con, key)
    return _profile(con, disc)


def _profile(con: duckdb.DuckDBPyConnection, disc: Discovery) -> Profile:
    ranks = [r for (r,) in con.execute("SELECT rank FROM ranks ORDER BY rank").fetchall()]
    formats = sorted({s.source_format for s in disc.ranks})
    return Profile(con=con, path=disc.path, layout=disc.layout, ranks=ranks, formats=formats)


def load_profile(path, con=None, progress=None, cancelled=None, cache=False) -> Profile:
    """Discover and load everything under ``path``. Raises ProfileError when nothing loads.

    ``progress(done, total, label)`` may be called from loader threads.
    """
    return load_discovered(discover(Path(path)), con=con, progress=progress, cancelled=cancelled,
                           cache=cache)


def _apply_info(ctx: RankContext, info: dict) -> None:
    """Settings recorded in profiler_info.json (the profiler level, versions where present)."""
    cfg = info.get("config", {}) if isinstance(info, dict) else {}
    exp = cfg.get("experimental_config", {}) if isinstance(cfg, dict) else {}
    level = exp.get("_profiler_level") if isinstance(exp, dict) else None
    if isinstance(level, str):
        ctx.profiler_level = level
    for key in ("torch_npu_version", "cann_version"):
        if isinstance(info.get(key), str):
            setattr(ctx, key, info[key])
