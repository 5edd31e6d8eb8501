"""Loading a profile: discovery, then every source of every rank into the canonical tables."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import duckdb

from .discover import Discovery, RankSource, discover
from .errors import LoadCancelled, ProfileError, SourceError
from .schema import CANONICAL_TABLES, connect
from .sources import source_modules
from .sources.base import LoadResult, RankContext

# progress(done, total, label): called before each file and once at the end.
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


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _load_file(con, module, path: Path, ctx: RankContext) -> LoadResult:
    """One source file in its own transaction, so a failure leaves no partial rows behind."""
    con.execute("BEGIN TRANSACTION")
    try:
        result = module.load(con, path, ctx)
    except SourceError as e:
        con.execute("ROLLBACK")
        return LoadResult(rows=0, note=_one_line(e))
    except (duckdb.Error, OSError, ValueError, UnicodeError) as e:
        con.execute("ROLLBACK")
        return LoadResult(rows=0, note=f"unreadable: {_one_line(e)}")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return result


def load_discovered(
    disc: Discovery,
    con: Optional[duckdb.DuckDBPyConnection] = None,
    progress: Optional[Progress] = None,
    cancelled: Optional[Callable[[], bool]] = None,
) -> Profile:
    con = con or connect()
    modules = source_modules()
    for note in _assign_ranks(disc.ranks):
        con.execute(INSERT_LOG, [None, str(disc.path), "discovery", 0, 0, 0.0, note])
    for path, note in disc.problems:
        con.execute(INSERT_LOG, [None, str(path), "discovery", 0, 0, 0.0, note])

    total = sum(len(v) for s in disc.ranks for v in s.files.values())
    done = 0
    for src in sorted(disc.ranks, key=lambda s: s.rank):
        ctx = RankContext(rank=src.rank, root=src.root, files=src.files, source_format=src.source_format)
        _apply_info(ctx, src.info)
        for module in modules:
            for path in src.files.get(module.KIND, []):
                if cancelled and cancelled():
                    raise LoadCancelled()
                if progress:
                    progress(done, total, f"rank {src.rank}: {path.name}")
                t0 = time.perf_counter()
                result = _load_file(con, module, path, ctx)
                if result.rows:
                    ctx.loaded.add(module.KIND)
                con.execute(INSERT_LOG, [src.rank, str(path), module.KIND, result.rows,
                                         result.skipped, time.perf_counter() - t0, result.note])
                done += 1
        con.execute(INSERT_RANK, [ctx.rank, ctx.device_id, str(src.root), ctx.source_format,
                                  ctx.torch_npu_version, ctx.cann_version, ctx.profiler_level])
    if progress:
        progress(total, total, "done")

    if not any(con.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in DATA_TABLES):
        reasons = con.execute(
            "SELECT file, note FROM load_log WHERE note <> '' ORDER BY file LIMIT 3"
        ).fetchall()
        why = "; ".join(f"{Path(f).name}: {n}" for f, n in reasons) or "no profiler files found"
        raise ProfileError(f"{disc.path}: nothing could be loaded ({why})")
    ranks = [r for (r,) in con.execute("SELECT rank FROM ranks ORDER BY rank").fetchall()]
    formats = sorted({s.source_format for s in disc.ranks})
    return Profile(con=con, path=disc.path, layout=disc.layout, ranks=ranks, formats=formats)


def load_profile(path, con=None, progress=None, cancelled=None) -> Profile:
    """Discover and load everything under ``path``. Raises ProfileError when nothing loads."""
    return load_discovered(discover(Path(path)), con=con, progress=progress, cancelled=cancelled)


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
