"""Loading a profile: discovery, then every source of every rank into the canonical tables."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import duckdb

from ..text import path_text
from .cache import Store, cache_key, discard, loaded_base, open_cached, start_store
from .discover import MINDSPORE_SUFFIX, Discovery, RankSource, discover, more_traces, traces_ended
from .errors import LOADER_FAULT, LoadCancelled, MalformedTrace, ProfileError, SourceError, one_line
from .schema import CANONICAL_TABLES, connect, scratch_dir
from .sources import cluster_modules, communication_matrix, kernel_details, msprof_timeline, source_modules, trace_view
from .sources.base import LoadResult, RankContext

# progress(done, total, label): called before each file and once at the end, from loader threads.
Progress = Callable[[int, int, str], None]

DATA_TABLES = tuple(t for t in CANONICAL_TABLES if t not in ("ranks", "load_log", "db_tables"))

INSERT_LOG = "INSERT INTO load_log VALUES (?, ?, ?, ?, ?, ?, ?)"
INSERT_RANK = "INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


@dataclass
class Profile:
    """A loaded profile: the DuckDB connection holding its canonical tables, and where it came from."""

    con: duckdb.DuckDBPyConnection
    path: Path
    layout: str
    ranks: List[int]
    formats: List[str]
    # Work left for load_pending() when loaded with background=True.
    pending: List["_RankJob"] = field(default_factory=list)
    stopped: bool = False  # load_pending() was stopped (or failed): pending is left, not loading
    cache_key: Optional[str] = None
    from_cache: bool = False
    read_only: bool = False  # a reopened cache, until writable()
    store: Optional[Store] = None  # the cache file a fresh load went into, until save_cache
    # The folders read: the path opened and each rank's own folder (above it, for an output
    # folder opened as its rank). npu-tui writes into none of them.
    folders: List[Path] = field(default_factory=list)
    # The path, whole, under which the tables name files and folders (ranks.path, load_log.file):
    # whole, they stay true whatever folder or name the profile is opened from later (its cache
    # is shared by them all); ``named`` gives them as this open names the profile. ``real``: the
    # folder it named, its links resolved, to tell this open's name of it (the first may be gone).
    base: str = ""
    real: str = ""

    def load_pending(self, progress: Optional[Progress] = None,
                     cancelled: Optional[Callable[[], bool]] = None) -> None:
        """Load what was deferred (host events, flows, lanes of big traces). Stopped or failed
        part way, it takes back what it loaded, so that the tables are the first phase's and agree
        with its analysis; the work stays pending, and ``stopped`` says so."""
        jobs = self.pending
        total = sum(len(j.files) for j in jobs)
        try:
            _run_jobs(self.con, jobs, _Progress(total, progress), cancelled)
        except BaseException:
            self.stopped = True
            _take_back(self.con, jobs)
            raise
        self.pending, self.stopped = [], False
        if progress:
            progress(total, total, "done")

    def save_cache(self) -> bool:
        """Keep the complete profile, with whatever the caller added (the analysis tables), so the
        next open with ``cache=True`` finds it ready: a fresh load is already in its cache file,
        which gets its name now. Nothing to do while work is pending, or for a profile opened from
        the cache (it is that file). False when writing the file out failed so that its connection
        is gone (the disk filled meanwhile): the file is removed, and the profile must be loaded
        again without the cache."""
        if self.store is None or self.pending:
            return True
        if self.store.save():
            self.store = None
            return True
        return self.store.usable

    def named(self, text: str) -> str:
        """A path of the tables as this open names the profile: what lies under ``path``
        under it; the rest (a rank folder above an output folder) from the working folder where
        ``path`` is relative, else whole."""
        if not self.base:  # tables made by hand: their names as they are
            return text
        opened, whole = path_text(self.path), _whole(self.path)
        if self.base != whole and _under(text, self.base) and _real(self.path) == self.real:
            text = whole + text[len(self.base):]  # loaded by another name of this folder (a link)
        if _under(text, whole):
            return opened if text == whole else os.path.join(opened, os.path.relpath(text, whole))
        here = _working_folder()
        return text if os.path.isabs(opened) or here is None else os.path.relpath(text, path_text(here))

    def writable(self, progress: Optional[Progress] = None, cancelled: Optional[Callable[[], bool]] = None,
                 background: bool = False) -> "Profile":
        """This profile on a connection that can take tables (a reopened cache is read-only): its
        cache file opened for writing, or, while another npu-tui reads that file, a fresh load
        into memory (``progress``, ``cancelled`` and ``background`` as for load_profile), which
        leaves the file as it is. This connection is closed."""
        if not self.read_only:
            return self
        self.con.close()
        con = open_cached(self.cache_key, write=True)
        if con is None:
            return load_profile(self.path, progress=progress, cancelled=cancelled, background=background)
        return Profile(con=con, path=self.path, layout=self.layout, ranks=self.ranks, formats=self.formats,
                       cache_key=self.cache_key, from_cache=True, folders=self.folders, base=self.base,
                       real=self.real)

    def reloaded(self, progress: Optional[Progress] = None,
                 cancelled: Optional[Callable[[], bool]] = None) -> "Profile":
        """This profile loaded afresh from its files, for a cache file that failed: one that opened
        but then failed to read is removed, and the fresh load writes a new one; one this load was
        still writing (its disk filled) is removed, and the load goes into memory. Nothing is left
        for the background: the caller's load was under way. This connection is closed."""
        writing, self.store = self.store, None
        if writing is not None:
            writing.abandon()
            return load_profile(self.path, progress=progress, cancelled=cancelled)
        try:
            self.con.close()
        except duckdb.Error:
            pass
        if self.from_cache and self.cache_key:
            discard(self.cache_key)
        return load_profile(self.path, progress=progress, cancelled=cancelled, cache=True)

    def skipped(self) -> List[Tuple]:
        """(rank, file, skipped_rows, note) for every file that lost rows or could not be used."""
        return self.con.execute(
            "SELECT rank, file, skipped_rows, note FROM load_log "
            "WHERE skipped_rows > 0 OR note <> '' ORDER BY rank, file"
        ).fetchall()


def _where(s: RankSource) -> Path:
    """What names a rank source: its folder, or a loose Kineto worker's first trace."""
    return s.files["kineto"][0] if s.source_format == "kineto" else s.root


def _ended(s: RankSource) -> int:
    """When the run of a rank ended, ns: a torch_npu rank folder's profiler_info collectionTimeEnd
    (an msprof device's end_info.N), a Kineto worker's last trace by the time in its name; -1 where
    none says."""
    end = s.info.get("end_info")
    value = end.get("collectionTimeEnd") if isinstance(end, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return traces_ended(s)


def _assign_ranks(disc: Discovery) -> List[Tuple[Path, str]]:
    """Ranks from profiler_info (or distributedInfo) where given, else the lowest free number in
    folder order. A rank claimed again (a copied folder, a job run twice into one folder) is another
    run's, not one of this job's: it is left out of ``disc``, for (folder or trace, note) each. Given
    a number of its own, it would take the id of a rank the job's communication data names, and its
    figures would count as that rank's in every cross-rank comparison. Of a job run twice, the
    latest run's folders stay (by when each ended: every rank of the second run ends after every
    rank of the first, where the order of names would mix the runs, rank by rank); else the first."""
    taken: Dict[int, RankSource] = {}
    for s in disc.ranks:
        if s.rank is None:
            continue
        held = taken.get(s.rank)
        if held is None or _ended(s) > _ended(held):
            taken[s.rank] = s
    kept: List[RankSource] = []
    claimed: List[RankSource] = []
    for s in disc.ranks:
        (claimed if s.rank is not None and taken[s.rank] is not s else kept).append(s)
    nxt = 0
    for s in kept:
        if s.rank is None:
            while nxt in taken:
                nxt += 1
            s.rank = nxt
            taken[nxt] = s
    # What discovery said inside a folder left out goes with it (a trace's folder is its workers').
    gone = {s.root for s in claimed} - {s.root for s in kept}
    disc.ranks = kept
    disc.problems = [(p, n) for p, n in disc.problems if not any(r == p or r in p.parents for r in gone)]

    def named(s: RankSource) -> str:  # as far down as tells it apart (msprof's device_N are many)
        where = _where(s)
        return path_text(where.relative_to(disc.path) if disc.path in where.parents else where.name)

    def note(s: RankSource) -> str:
        held = taken[s.rank]
        later = ", whose run ended later" if _ended(held) > _ended(s) else ""
        return f"rank {s.rank} claimed twice, by {named(held)} too{later}: not loaded{more_traces(s)}"

    return [(_where(s), note(s)) for s in claimed]


def _reason(e: BaseException) -> str:
    """The first line of what went wrong; when a failed statement aborted the transaction and the
    loader's cleanup then failed too, the original error, not the cleanup's."""
    if isinstance(e, duckdb.TransactionException) and e.__context__ is not None:
        e = e.__context__
    text = str(e).strip().splitlines()
    return one_line(text[0] if text else type(e).__name__)


@contextmanager
def _readable(path: Path) -> Iterator[Path]:
    """``path``, or a link to it under a UTF-8 name where its own name is not one (written in another
    locale): DuckDB opens only UTF-8 names."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        with tempfile.TemporaryDirectory(prefix="npu_tui_name_", dir=scratch_dir()) as tmp:
            link = Path(tmp) / path_text(path.name)
            link.symlink_to(path.absolute())
            yield link
        return
    yield path


class _OutOfMemory(Exception):
    """A file hit DuckDB's memory cap while other ranks were loading too; it is tried again alone."""


def _load_file(con, module, path: Path, ctx: RankContext, alone: bool, capped: bool = True) -> LoadResult:
    """One source file in its own transaction, so a failure leaves no partial rows behind. A file
    that needs more memory than the cap even alone loads again under the machine's limit instead
    (``capped=False``): the cap is there to protect the machine, not to turn valid files away."""
    try:
        con.execute("BEGIN TRANSACTION")
        with _readable(path) as named:
            result = module.load(con, named, ctx)
    except MalformedTrace as e:
        _rollback(con)
        if ctx.salvage:
            return LoadResult(rows=0, note=_reason(e))
        # The fast read takes the events whole; this one keeps every event that parses.
        ctx.salvage = True
        try:
            return _load_file(con, module, path, ctx, alone)
        finally:
            ctx.salvage = False
    except SourceError as e:
        _rollback(con)
        return LoadResult(rows=0, note=_reason(e))
    except duckdb.Error as e:
        _rollback(con)
        e = _underneath(e)
        if isinstance(e, (duckdb.FatalException, duckdb.InterruptException)):
            raise e  # the database is gone (its disk filled), or the load was stopped: no file's note
        if not isinstance(e, duckdb.OutOfMemoryException):
            return LoadResult(rows=0, note=f"unreadable: {_reason(e)}")
        if not alone:
            raise _OutOfMemory() from e
        if capped:
            return _uncapped(con, module, path, ctx)
        return LoadResult(rows=0, note=f"out of memory, even with {_machine_limit() >> 20:,} MiB: {_reason(e)}")
    except (OSError, ValueError, UnicodeError) as e:
        _rollback(con)
        return LoadResult(rows=0, note=f"unreadable: {_reason(e)}")
    except (_OutOfMemory, LoadCancelled):
        _rollback(con)  # (ctx.settle's: the rank's files beside stopped short, or the load was stopped)
        raise
    except Exception as e:  # a loader's own fault on this file: the file failed, not the whole load
        _rollback(con)
        return LoadResult(rows=0, note=f"{LOADER_FAULT} ({type(e).__name__}: {_reason(e)}), not the file's: "
                                       "please report it")
    except BaseException:
        _rollback(con)
        raise
    try:
        con.execute("COMMIT")
    except (duckdb.FatalException, duckdb.InterruptException):
        _rollback(con)
        raise
    except duckdb.Error as e:  # committing needs memory too
        _rollback(con)
        if not alone:
            raise _OutOfMemory() from e
        if capped and isinstance(e, duckdb.OutOfMemoryException):
            return _uncapped(con, module, path, ctx)
        return LoadResult(rows=0, note=f"could not be stored: {_reason(e)}")
    return result


# What stopped a statement, beneath what a loader's cleanup raised after it: its DROP of a staging
# table, run in the transaction the failure aborted, fails in turn, and Python chains the two.
_STOPPERS = (duckdb.FatalException, duckdb.InterruptException, duckdb.OutOfMemoryException)


def _underneath(e: duckdb.Error) -> duckdb.Error:
    seen = e
    while seen is not None:
        if isinstance(seen, _STOPPERS):
            return seen
        seen = seen.__context__
    return e


def _uncapped(con, module, path: Path, ctx: RankContext) -> LoadResult:
    """The file once more with DuckDB's memory cap at the machine's limit, then the cap as it was
    (nothing else loads meanwhile: this is a file loading alone)."""
    cap = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    con.execute(f"SET memory_limit = '{_machine_limit()}B'")
    try:
        return _load_file(con, module, path, ctx, alone=True, capped=False)
    finally:
        con.execute(f"SET memory_limit = '{cap}'")


def _rollback(con) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:  # the transaction never began (BEGIN itself failed)
        pass


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


# A big trace adds host events and flows (stage markers) but no kernels once kernel_details.csv
# gave them: with ``background``, such a file waits until the rest is on screen. Not where another
# file of the rank fills its TRACE_TABLES too (a db export beside the text files): whichever
# loads first gives them, and the two phases would give them from different files.
DEFERRABLE = {"trace_view": "kernel_details"}


def _deferrable(module: ModuleType, job: "_RankJob") -> bool:
    # (nor where the trace numbers the kernels' steps: the first phase's figures would be one step's)
    return DEFERRABLE.get(module.KIND) in job.ctx.loaded and not job.ctx.stepless_kernels and not any(
        set(getattr(m, "TRACE_TABLES", ())) & set(module.TRACE_TABLES) for m, _ in job.files if m is not module)


@dataclass
class _RankJob:
    src: RankSource
    ctx: RankContext
    files: List[Tuple[ModuleType, Path]]


def _take_back(con, jobs: List[_RankJob]) -> None:
    """Remove what the deferred files of ``jobs`` loaded, and their log rows, in one transaction
    (grids read meanwhile). A deferred file is its rank's only source of its TRACE_TABLES
    (_deferrable), so its rows are the rank's rows there."""
    try:
        con.execute("BEGIN TRANSACTION")
        for job in jobs:
            for module, path in job.files:
                for table in module.TRACE_TABLES:
                    con.execute(f"DELETE FROM {table} WHERE rank = ?", [job.ctx.rank])
                con.execute("DELETE FROM load_log WHERE file = ?", [_whole(path)])
                job.ctx.loaded.discard(module.KIND)
        con.execute("COMMIT")
    except duckdb.Error:  # the database failed under the load (its disk filled): that error is raised
        _rollback(con)


def _run_rank(cur, job: _RankJob, progress: _Progress, stop: Callable[[], bool], defer: bool,
              alone: bool, spare=None) -> Tuple[List[Tuple[ModuleType, Path]], List[Tuple[ModuleType, Path]]]:
    """One rank's files in order on its own cursor (a DuckDB connection of its own), so ranks load
    in parallel: DuckDB runs the SQL without the GIL, and appends from several connections to one
    table do not conflict. With a ``spare`` cursor (a core no rank is using), the rank's big trace
    loads on it beside the files it waits for (see _Beside). Returns the files deferred for the
    background, and those to load again alone because the memory cap was hit while other files
    were loading."""
    deferred = []
    ctx = job.ctx
    beside = _Beside.start(spare, job, progress, alone) if spare is not None and not defer else None
    try:
        for i, (module, path) in enumerate(job.files):
            if beside and beside.index == i:
                if beside.join(ok=True):
                    return deferred, job.files[i:]
                continue
            if stop():
                raise LoadCancelled()
            if defer and _deferrable(module, job):
                deferred.append((module, path))
                progress.finish()
                continue
            try:
                _load_logged(cur, module, path, ctx, progress, alone)
            except _OutOfMemory:
                again = job.files[i:]
                if beside and not beside.join(ok=False) and beside.index > i:
                    # it ended without them (a failure of its own, logged): not loaded twice
                    again = [f for f in again if f is not job.files[beside.index]]
                return deferred, again
        _give_steps(cur, ctx)
    finally:
        if beside:
            beside.join(ok=False)
        cur.close()
    return deferred, []


def _give_steps(cur, ctx: RankContext) -> None:
    """Steps that only the rank's files together give, once all are in: kernels that
    kernel_details.csv gave without steps take them from the rank's trace (which may have loaded
    beside, in a transaction that does not see the kernels), said on the kernel file as by design;
    msprof's tasks, from every timeline file's Iteration ranges (a sliced timeline's). Failing,
    they stay without: health says so."""
    from_trace = ctx.stepless_kernels and trace_view.KIND in ctx.loaded
    if not from_trace and not ctx.iterations:
        return
    ctx.stepless_kernels, iterations, ctx.iterations = False, ctx.iterations, []
    try:
        cur.execute("BEGIN TRANSACTION")
        t0 = time.perf_counter()
        given, total = trace_view.give_steps(cur, ctx.rank) if from_trace else (0, 0)
        if given:
            path = next(p for p in ctx.files[kernel_details.KIND] if p.name in ctx.gave)
            _log(cur, ctx.rank, path, kernel_details.KIND, 0, 0, time.perf_counter() - t0,
                 f"{trace_view.STEPS_FROM_TRACE} ({given:,} kernels of {total:,})")
        if iterations:
            msprof_timeline.give_steps(cur, ctx.rank, iterations)
        cur.execute("COMMIT")
    except duckdb.Error as e:
        _rollback(cur)
        if isinstance(_underneath(e), (duckdb.FatalException, duckdb.InterruptException)):
            raise


def _log(con, rank: Optional[int], path: Path, kind: str, rows: int, skipped: int, secs: float, note: str) -> None:
    # Paths, and notes naming them, may hold bytes of another locale: DuckDB takes only UTF-8.
    con.execute(INSERT_LOG, [rank, _whole(path), kind, rows, skipped, secs, path_text(note)])


def _whole(path: Path) -> str:
    """A path as the tables hold it (Profile.base): from the root, its ``..`` left for the system
    to follow (``link/..`` is the link target's parent, not the folder holding the link)."""
    here = _working_folder() if not path.is_absolute() else None
    return path_text(Path(here) / path if here is not None else path)


def _real(path: Path) -> str:
    return path_text(os.path.realpath(path))


def _under(text: str, folder: str) -> bool:
    return text == folder or text.startswith(folder.rstrip("/") + "/")


def _working_folder() -> Optional[str]:
    try:
        return os.getcwd()
    except OSError:  # gone: no relative name reaches anything from it
        return None


def _load_logged(cur, module: ModuleType, path: Path, ctx: RankContext, progress: _Progress,
                 alone: bool) -> None:
    progress.start(f"rank {ctx.rank}: {path.name}" if ctx.rank is not None else path.name)
    t0 = time.perf_counter()
    result = _load_file(cur, module, path, ctx, alone)
    if result.rows:
        ctx.loaded.add(module.KIND)
        ctx.gave.add(path.name)
    _log(cur, ctx.rank, path, module.KIND, result.rows, result.skipped, time.perf_counter() - t0, result.note)
    progress.finish()


class _Beside:
    """A rank's big trace (a DEFERRABLE kind) loading on a spare core while the files before it
    load: staging it is the long part and needs nothing from them. Its loader calls ctx.settle()
    before the part that does, which waits until they are in. Used only with cores to spare, so a
    worker never waits on work still queued behind it."""

    def __init__(self, cur, job: _RankJob, index: int, progress: _Progress, alone: bool):
        self.cur, self.job, self.index = cur, job, index
        self.before_done = threading.Event()
        self.before_ok = False
        self.out_of_memory = False
        self.error: Optional[BaseException] = None
        self.joined = False
        job.ctx.settle = self._settle
        module, path = job.files[index]
        self.thread = threading.Thread(target=self._run, args=(module, path, progress, alone),
                                       name=f"npu-tui-load-{job.ctx.rank}-beside", daemon=True)
        self.thread.start()

    @classmethod
    def start(cls, cur, job: _RankJob, progress: _Progress, alone: bool) -> Optional["_Beside"]:
        kinds = [m.KIND for m, _ in job.files]
        for i, kind in enumerate(kinds):
            if DEFERRABLE.get(kind) in kinds[:i]:
                return cls(cur, job, i, progress, alone)
        cur.close()
        return None

    def _settle(self) -> None:
        self.before_done.wait()
        if not self.before_ok:  # the earlier files stopped short: this one loads again after them
            raise _OutOfMemory()

    def _run(self, module, path, progress, alone) -> None:
        try:
            _load_logged(self.cur, module, path, self.job.ctx, progress, alone)
        except _OutOfMemory:
            self.out_of_memory = True
        except BaseException as e:  # re-raised in the rank's own thread
            self.error = e
        finally:
            self.cur.close()

    def join(self, ok: bool) -> bool:
        """Let the trace finish (``ok``: the files before it are in) and wait for it; True when it
        ran out of memory and must load again. Interrupting the cursor is the caller's to do."""
        if self.joined:
            return False
        self.joined = True
        self.before_ok = ok
        self.before_done.set()
        self.thread.join()
        self.job.ctx.settle = lambda: None
        if self.error is not None:
            raise self.error
        return self.out_of_memory


def _run_jobs(con, jobs: List[_RankJob], progress: _Progress, cancelled,
              defer: bool = False, workers: Optional[int] = None) -> List[_RankJob]:
    """Run the ranks' jobs in a thread pool sized to the cores; returns the deferred work. Files
    that ran out of memory beside other ranks are loaded again afterwards, one rank at a time."""
    stopped = threading.Event()

    def stop() -> bool:
        return stopped.is_set() or bool(cancelled and cancelled())

    later: List[_RankJob] = []
    again: List[_RankJob] = []
    cores = os.cpu_count() or 1
    # Cores left over by the ranks each take one rank's big trace beside its other files; not when
    # loading again alone (``workers`` given) or when the trace waits for the background anyway.
    spare = 0 if workers or defer else max(0, cores - len(jobs))
    workers = workers or max(1, min(len(jobs), cores))
    alone = workers == 1 and not spare
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="npu-tui-load") as pool:
        cursors = [con.cursor() for _ in jobs]
        spares = [con.cursor() if i < spare else None for i in range(len(jobs))]
        futures = {pool.submit(_run_rank, cur, job, progress, stop, defer, alone, extra): job
                   for cur, extra, job in zip(cursors, spares, jobs)}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
                for f in done:
                    job = futures[f]
                    deferred, retry = f.result()
                    if deferred:
                        later.append(_RankJob(job.src, job.ctx, deferred))
                    if retry:
                        again.append(_RankJob(job.src, job.ctx, retry))
                if cancelled and cancelled():
                    raise LoadCancelled()
        except BaseException:
            # Stop the other ranks at their next file and cut short what DuckDB is running. An
            # interrupt reaches only a statement running at that moment, and a rank between two
            # statements of a file would run the rest of it: interrupt until every rank is out.
            stopped.set()
            for f in pending:
                f.cancel()
            while pending:
                for cur in cursors + [c for c in spares if c is not None]:
                    try:
                        cur.interrupt()
                    except duckdb.Error:  # that rank already finished and closed its cursor
                        pass
                _, pending = wait(pending, timeout=0.05)
            raise
    if again:
        later += _run_jobs(con, again, progress, cancelled, defer, workers=1)
    return sorted(later, key=lambda j: j.ctx.rank)


def _rank_jobs(disc: Discovery) -> List[_RankJob]:
    modules = source_modules()
    jobs = []
    for src in sorted(disc.ranks, key=lambda s: s.rank):
        ctx = RankContext(rank=src.rank, root=src.root, files=src.files, source_format=src.source_format,
                          mindspore=any(p.name.endswith(MINDSPORE_SUFFIX) for p in (src.root, src.root.parent)))
        _apply_info(ctx, src.info)
        if src.device is not None:
            ctx.device_id = ctx.device_only = src.device
            ctx.devices_split = src.devices
        files = [(m, p) for m in modules for p in getattr(m, "load_order", list)(src.files.get(m.KIND, []))]
        jobs.append(_RankJob(src, ctx, files))
    return jobs


def load_discovered(
    disc: Discovery,
    progress: Optional[Progress] = None,
    cancelled: Optional[Callable[[], bool]] = None,
    cache: bool = False,
    background: bool = False,
) -> Profile:
    """Load every rank (in parallel, up to the core count) into a new database.

    With ``cache``, an unchanged profile opens from the user's cache directory instead, and a fresh
    load goes into its cache file there (else into memory); ``Profile.save_cache()`` keeps it once
    the caller has added what it wants kept. With ``background``, files in DEFERRABLE are left in
    ``Profile.pending`` for ``Profile.load_pending()``, so kernels and step data can be shown first.
    """
    key = cache_key(disc) if cache else None
    cached = open_cached(key) if key else None
    if cached is not None:
        try:
            profile = _profile(cached, disc, *loaded_base(cached))
        except duckdb.Error:  # a block of its rank list fails to read: the file goes, the load is fresh
            cached.close()
            discard(key)
        else:
            if progress:
                progress(1, 1, "opened from cache")
            profile.from_cache = profile.read_only = True
            profile.cache_key = key
            return profile

    claimed = _assign_ranks(disc)  # once: a second load finds no rank claimed twice
    size = _input_bytes(disc)
    store = start_store(key, size, _whole(disc.path), _real(disc.path)) if key else None
    con = store.con if store is not None else connect()
    while True:
        try:
            pending = _load_all(con, disc, claimed, size, progress, cancelled, background)
            if store is None or not store.failed_under(con):
                break
        except (duckdb.Error, ProfileError) as e:
            if store is None:
                if isinstance(e, duckdb.FatalException):
                    raise ProfileError(f"{disc.path}: the database failed while loading: {_reason(e)}") from None
                raise
            if isinstance(e, duckdb.InterruptException) or not store.failed_under(con, e):
                store.abandon()
                raise
        except BaseException:
            if store is not None:
                store.abandon()
            raise
        # The cache file's disk filled (or failed) under the load: it loads again into memory.
        store.abandon()
        store, con = None, connect()
    profile = _profile(con, disc, _whole(disc.path), _real(disc.path))
    profile.pending, profile.cache_key, profile.store = pending, key, store
    return profile


def _load_all(con, disc: Discovery, claimed: List[Tuple[Path, str]], size: int, progress, cancelled,
              background: bool) -> List[_RankJob]:
    """Every rank's files and the job-wide ones into ``con``; returns the work deferred for the
    background. Raises ProfileError when nothing could be loaded."""
    con.execute(f"SET memory_limit = '{_memory_limit(size)}B'")
    for where, note in claimed:
        _log(con, None, where, "discovery", 0, 0, 0.0, note)
    # A problem in or on a rank's folder is that rank's (its folder's long name need not be said);
    # not in a folder of Kineto traces, whose ranks are their traces, not the folder.
    roots: Dict[Path, Optional[int]] = {}
    for s in disc.ranks:
        if s.source_format != "kineto":  # (a folder of several ranks' db exports is none of theirs)
            roots[s.root] = s.rank if s.root not in roots else None
    for path, note in disc.problems:
        rank = next((roots[p] for p in (path, *path.parents) if p in roots), None)
        _log(con, rank, path, "discovery", 0, 0, 0.0, note)

    jobs = _rank_jobs(disc)
    cluster = [(m, p) for m in cluster_modules() for p in disc.cluster.get(m.KIND, [])]
    total = sum(len(j.files) for j in jobs) + len(cluster)
    steps = _Progress(total, progress)
    pending = _run_jobs(con, jobs, steps, cancelled, defer=background)
    job_ctx = RankContext(rank=None, root=disc.path)
    for module, path in cluster:  # small, job-wide: after the ranks, one by one
        _load_logged(con, module, path, job_ctx, steps, alone=True)
    for job in jobs:
        ctx = job.ctx
        con.execute(INSERT_RANK, [ctx.rank, ctx.device_id, _whole(job.src.root), ctx.source_format,
                                  ctx.torch_npu_version, ctx.cann_version, ctx.profiler_level, ctx.world_size])
    communication_matrix.number_globally(con)  # by every rank's files: a group's ranks are spread over them
    if progress:
        progress(total, total, "done")

    if not any(con.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in DATA_TABLES):
        reasons = con.execute(
            "SELECT file, CASE WHEN note <> '' THEN note ELSE 'every one of its ' || skipped_rows || ' rows skipped' END "
            "FROM load_log WHERE note <> '' OR skipped_rows > 0 ORDER BY file LIMIT 3"
        ).fetchall()
        why = "; ".join(f"{Path(f).name}: {n}" for f, n in reasons) or "no profiler files found"
        raise ProfileError(f"{disc.path}: nothing could be loaded ({why})")
    return pending


def _input_bytes(disc: Discovery) -> int:
    size = 0
    # A file shared by several ranks (an msprof output merged over devices) is read by each, but
    # is on disk, and in the cache, once.
    for f in {f for src in disc.ranks for files in src.files.values() for f in files}:
        try:
            size += f.stat().st_size
        except OSError:
            pass
    return size


def _memory_limit(size: int) -> int:
    """DuckDB's memory cap: 1.25x the input's ``size`` (at least 1 GiB, at most 3/4 of the machine).

    Past it DuckDB spills to disk instead of growing: a GB trace on a shared server must not take
    the memory of the job being profiled. Measured (2 cores): a 1.6 GB rank peaks at 3.1 GB RSS
    uncapped, 2.1 GB capped; 8 ranks of 200k kernels (2.7 GB) at 2.3 GB, in the same 20 s.
    """
    return int(min(max(size * 5 // 4, 1 << 30), _machine_limit()))


def _machine_limit() -> int:
    """3/4 of the machine's memory: the most npu-tui lets DuckDB take, whatever the input."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return physical * 3 // 4


def _profile(con: duckdb.DuckDBPyConnection, disc: Discovery, base: str, real: str) -> Profile:
    ranks = [r for (r,) in con.execute("SELECT rank FROM ranks ORDER BY rank").fetchall()]
    formats = sorted({s.source_format for s in disc.ranks}) or (["msprof-analyze cluster"] if disc.cluster else [])
    folders = sorted({p for p in [disc.path, *(s.root for s in disc.ranks)] if p.is_dir()})
    return Profile(con=con, path=disc.path, layout=disc.layout, ranks=ranks, formats=formats, folders=folders,
                   base=base, real=real)


def load_profile(path, progress=None, cancelled=None, cache=False, background=False) -> Profile:
    """Discover and load everything under ``path``. Raises ProfileError when nothing loads.

    ``progress(done, total, label)`` may be called from loader threads.
    """
    return load_discovered(discover(Path(path)), progress=progress, cancelled=cancelled,
                           cache=cache, background=background)


def _apply_info(ctx: RankContext, info: dict) -> None:
    """Settings recorded in profiler_info.json (the profiler level, versions where present; MindSpore
    keeps its level under profiler_parameters and names its own version)."""
    cfg = info.get("config", {}) if isinstance(info, dict) else {}
    exp = cfg.get("experimental_config", {}) if isinstance(cfg, dict) else {}
    level = exp.get("_profiler_level") if isinstance(exp, dict) else None
    if isinstance(info, dict) and "ms_version" in info:
        ctx.mindspore = True
        params = info.get("profiler_parameters")
        level = params.get("profiler_level") if isinstance(params, dict) else None
    if isinstance(level, str):
        ctx.profiler_level = level
    for key in ("torch_npu_version", "cann_version"):
        if isinstance(info.get(key), str):
            setattr(ctx, key, info[key])
