"""One open profile and its analysis, for every front end: the CLI, the TUI, diff, the collection
hand-off and notebooks (``npu_tui.open``). No UI imports; pandas only when a DataFrame is asked for.

The pipeline is discover → load → health → rules → views → report → cache, in two steps so a UI can
show the tables while the analysis runs::

    s = Session.load(path, rules, cache=True)   # tables in; s.analysed: the analysis came with them
    s.analyse()                                 # views (unless analysed), report, cache
    s.load_pending()                            # with background=True: the deferred trace, then again

``open_session(path)`` does both steps at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import duckdb

from .analysis import build_report, install_views, load_rules, stand_ins
from .analysis.rules import Rules
from .analysis.stages import add_relative_window
from .analysis.views import views_installed
from .profile import LoadCancelled, Profile, ProfileError, load_profile
from .profile.cache import discard
from .profile.discover import OTHER_PROFILE
from .profile.health import HealthItem, failed, health, passing_failure, ranks_apart
from .text import path_text

Progress = Callable[[int, int, str], None]
RulesLike = Union[Rules, str, Path, None]


def resolve_run(path, run: Optional[str] = None) -> Tuple[Path, str]:
    """The profile to open for ``path``, and a note saying what was chosen ("" when nothing was).

    A folder of collected runs (what ``npu-tui collect`` writes, a ``run_*`` folder per run) is
    not a profile itself: it opens its newest run that completed, or the run named ``run``."""
    from .collect.runner import list_runs

    path = Path(path)
    try:
        runs = list_runs(path) if path.is_dir() else []
    except OSError as e:  # inside a folder this user may not read
        raise ProfileError(f"{path}: cannot be read ({e.strerror or type(e).__name__})") from None
    if run is not None:
        if not runs:
            raise ProfileError(f"{path}: --run {run}: this folder holds no collected runs")
        chosen = path / run
        if chosen not in runs:
            raise ProfileError(f"{path}: no run {run}; the runs are {', '.join(r.name for r in runs)}",
                               runs)
        return chosen, f"run {run} of {path}"
    done = list_runs(path, "ok")
    if not done:
        return path, ""
    others = len(runs) - 1
    return done[-1], (f"{path} holds {len(runs)} runs: opened the newest complete one, {done[-1].name}"
                      + (f" ({others} other{'s' if others > 1 else ''}: --run NAME, or p in the app)"
                         if others else ""))


def _rules(rules: RulesLike) -> Rules:
    return rules if isinstance(rules, Rules) else load_rules(Path(rules) if rules else None)


def writable_folder(folders: List[Path]) -> Path:
    """Where npu-tui writes what it makes for the user (an export, a collection): the working
    folder, unless that is one of the profile's ``folders`` or inside one (`npu-tui .`), which it
    never writes into (they may be read-only or shared, and their next load would find the file):
    then the folder holding the outermost of them."""
    here = Path.cwd()
    holding = [f.resolve() for f in folders if f.resolve() == here or f.resolve() in here.parents]
    return min(holding, key=lambda f: len(f.parts)).parent if holding else here


def export_target(path: str, folders: List[Path]) -> Path:
    """Where an export named ``path`` goes (``~`` and the working folder resolved). ValueError when
    that is one of the profile's ``folders`` or inside one: npu-tui never writes into them (a name
    typed there would replace a profiler file)."""
    target = Path(path).expanduser().resolve()
    for folder in (f.resolve() for f in folders):
        if target == folder or folder in target.parents:
            raise ValueError(f"npu-tui never writes into the profile it reads ({path_text(folder)}): name a file "
                             "outside it")
    return target


class Session:
    """A loaded profile with its rules and, once analysed, its report.

    ``con`` holds the canonical tables and the analysis views; ``report`` is the §7 document built
    from them; ``health`` says what the load skipped. Reads go through ``sql`` / ``table`` (as
    pandas DataFrames, guarded: the profile's tables cannot be changed through them)."""

    def __init__(self, profile: Profile, rules: Rules, note: str = "", progress: Optional[Progress] = None,
                 cancelled: Optional[Callable[[], bool]] = None) -> None:
        self.profile = profile
        self.rules = rules
        self.note = note  # which run of a folder of runs was opened (resolve_run), or ""
        self.report: Optional[Dict[str, Any]] = None
        self._engine = None
        self.health: List[HealthItem] = self._health(progress, cancelled)

    def _health(self, progress: Optional[Progress] = None,
                cancelled: Optional[Callable[[], bool]] = None) -> List[HealthItem]:
        """What the load skipped. A cache file with a block that fails to read under these queries
        is replaced by a fresh load first, as under the analysis."""
        try:
            return health(self.profile)
        except duckdb.Error as e:
            if not self.profile.from_cache or isinstance(e, duckdb.InterruptException):
                raise
        self.profile = self.profile.reloaded(progress, cancelled)
        return health(self.profile)

    # -- opening ------------------------------------------------------------------------------

    @classmethod
    def load(cls, path, rules: RulesLike = None, *, cache: bool = True, background: bool = False,
             run: Optional[str] = None, progress: Optional[Progress] = None,
             cancelled: Optional[Callable[[], bool]] = None) -> "Session":
        """The profile's tables, from the cache when unchanged; a folder of runs opens its newest
        (or ``run``: see resolve_run). ``background`` leaves a big trace for ``load_pending``.
        Raises ProfileError when nothing loads, LoadCancelled when stopped."""
        rules = _rules(rules)
        path, note = resolve_run(path, run)
        try:
            profile = load_profile(path, progress=progress, cancelled=cancelled, cache=cache,
                                   background=background)
        except ProfileError as e:
            # A folder holding no profile itself but one below it (copied in with its parents):
            # that one is what was meant. Of several, the caller shows them to pick from.
            if len(e.candidates) != 1 or note:
                raise
            (below,) = e.candidates
            note = f"{path}: no profile here itself; opened the one below it, {below}"
            profile = load_profile(below, progress=progress, cancelled=cancelled, cache=cache,
                                   background=background)
        if cancelled is not None and cancelled():
            raise LoadCancelled()
        session = cls(profile, rules, note, progress, cancelled)
        if session.profile.read_only and not session.analysed:
            # A reopened cache is read-only (others may share it). Analysed under other rules, or
            # by another version, it takes this analysis in its place: opened for writing before
            # anything holds its connection.
            session.profile = session.profile.writable(progress=progress, cancelled=cancelled,
                                                       background=background)
            session.health = session._health(progress, cancelled)
        return session

    @property
    def analysed(self) -> bool:
        """Whether the analysis of these rules is installed already (a profile reopened from the cache)."""
        try:
            return views_installed(self.con, self.rules, self._apart())
        except duckdb.Error:  # a cache file that fails to read: analyse() loads afresh
            return False

    def analyse(self, windows: bool = True, encoded: bool = False, progress: Optional[Progress] = None,
                cancelled: Optional[Callable[[], bool]] = None) -> Dict[str, Any]:
        """Install the analysis views unless they are there, build the report and cache the whole.
        ``windows=False`` leaves the stage windows out of the report's stage_detection;
        ``encoded`` keeps the biggest arrays as JSON text, for ``render`` alone (build_report). A
        cache file that fails to read on the way, or to be written (its disk filled), is a lost
        speed-up, not a failed open: the profile is loaded afresh from its files instead (an
        error of the analysis itself then comes again, and is raised); that load reports to
        ``progress`` and stops (LoadCancelled) when ``cancelled``, as Session.load's does."""
        try:
            return self._analyse(windows, encoded, progress, cancelled)
        except duckdb.Error as e:
            if not (self.profile.from_cache or self.profile.store) or isinstance(e, duckdb.InterruptException):
                raise
        return self._reanalysed(windows, encoded, progress, cancelled)

    def _reanalysed(self, windows: bool, encoded: bool, progress: Optional[Progress] = None,
                    cancelled: Optional[Callable[[], bool]] = None) -> Dict[str, Any]:
        if self._engine is not None:  # its cursor is on the connection that goes
            self._engine.close()
            self._engine = None
        self.profile = self.profile.reloaded(progress, cancelled)
        self.health = health(self.profile)
        return self._analyse(windows, encoded, progress, cancelled)

    def _analyse(self, windows: bool, encoded: bool, progress: Optional[Progress],
                 cancelled: Optional[Callable[[], bool]]) -> Dict[str, Any]:
        if not self.analysed:
            install_views(self.con, self.rules, self._apart())
        self.report = build_report(self.profile, self.rules, windows=windows, encoded=encoded, items=self.health)
        # A no-op while work is pending, or when opened from the cache.
        if not passing_failure(self.profile) and not self.profile.save_cache():
            # The disk filled as the cache file was written out, taking its connection along.
            return self._reanalysed(windows, encoded, progress, cancelled)
        return self.report

    @property
    def pending(self) -> bool:
        """Work ``load_pending`` has still to do (a big trace left for the background)."""
        return bool(self.profile.pending)

    def load_pending(self, progress: Optional[Progress] = None,
                     cancelled: Optional[Callable[[], bool]] = None, windows: bool = True) -> Dict[str, Any]:
        """Load the deferred trace work, then analyse again: the stored analysis tables were
        snapshots of the first phase. Once the trace is in, the analysis runs to the end, so the
        views and the report always agree."""
        store = self.profile.store
        try:
            self.profile.load_pending(progress=progress, cancelled=cancelled)
        except duckdb.Error as e:
            if store is None or isinstance(e, duckdb.InterruptException) or not store.failed_under(self.con):
                self._refresh_health()
                raise
        except BaseException:
            self._refresh_health()
            raise
        if store is not None and store.failed_under(self.con):
            # The cache file's disk filled under the trace: the whole profile loads again, into memory.
            return self._reanalysed(windows, False, progress, cancelled)
        self.health = health(self.profile)
        install_views(self.con, self.rules, self._apart())
        return self.analyse(windows=windows, progress=progress, cancelled=cancelled)

    def forget_cache(self) -> bool:
        """Remove the cache file this session was opened from (a block of it failed to read under
        a query); this session reads on as it can, and the next open loads afresh. Whether the
        file was there to remove (several queries may meet the same damage)."""
        return bool(self.profile.from_cache and self.profile.cache_key and discard(self.profile.cache_key))

    def _refresh_health(self) -> None:
        """The health of what loaded before a failure, unless the database went with it (the
        failure is then what is worth raising)."""
        try:
            self.health = health(self.profile)
        except duckdb.Error:
            pass

    def add_stage_window(self, rank: Optional[int], stage: str, start_us: float, end_us: float) -> None:
        """A stage window set by hand (µs from the rank's first kernel; rank None: every rank); it
        replaces detection for its rank from the next ``analyse``. Only on a session loaded with
        ``cache=False``: hand-set windows must not become the cached analysis of the profile."""
        if self.profile.from_cache or self.profile.cache_key:
            raise ValueError("stage windows set by hand need a session loaded with cache=False")
        if not self.analysed:
            install_views(self.con, self.rules, self._apart())
        add_relative_window(self.con, rank, stage, start_us, end_us)

    # -- what it holds ------------------------------------------------------------------------

    def _apart(self) -> Dict[int, str]:
        """The ranks the analysis leaves out of its comparisons, and why (health.ranks_apart)."""
        return ranks_apart(self.health, self.profile)

    @property
    def not_whole(self) -> List[str]:
        """The files and folders that exist and could not be loaded whole: while there are any,
        every figure lacks what is missing (``health`` says why)."""
        return list(dict.fromkeys(i.file for i in failed(self.health)))

    @property
    def con(self):
        return self.profile.con

    @property
    def path(self) -> Path:
        return self.profile.path

    @property
    def folders(self) -> List[Path]:
        """The folders the profile is read from, which npu-tui writes into none of."""
        return list(self.profile.folders)

    @property
    def ranks(self) -> List[int]:
        return list(self.profile.ranks)

    @property
    def beside(self) -> List[Path]:
        """The other profiles found beside this one's rank folders (said, not loaded), as this open
        names them: what else the folder opened holds, to open instead. On a cursor of its own: the
        app asks while a worker may be loading the trace on the connection."""
        cur = self.con.cursor()
        try:
            rows = cur.execute("SELECT file FROM load_log WHERE kind = 'discovery' AND starts_with(note, ?) "
                               "ORDER BY file", [OTHER_PROFILE]).fetchall()
        finally:
            cur.close()
        return [Path(self.profile.named(f)) for (f,) in rows]

    @property
    def stand_ins(self) -> List[int]:
        """The ranks not loaded that msprof-analyze's cluster step trace stands in for, once analysed."""
        return stand_ins(self.report) if self.report is not None else []

    @property
    def formats(self) -> List[str]:
        return list(self.profile.formats)

    def _report(self) -> Dict[str, Any]:
        return self.report if self.report is not None else self.analyse()

    @property
    def findings(self) -> List[Dict[str, Any]]:
        return self._report()["findings"]

    @property
    def stage_detection(self) -> List[Dict[str, Any]]:
        return self._report()["stage_detection"]

    def render(self, fmt: str = "text") -> str:
        """The report as "text", "md" or "json" (what ``npu-tui report`` prints)."""
        from .analysis import render

        return render(self._report(), fmt)

    # -- reading ------------------------------------------------------------------------------

    def engine(self):
        """The guarded SQL engine on this profile (the console's and ``npu-tui sql``'s)."""
        if self._engine is None:
            from .query import QueryEngine

            self._engine = QueryEngine(self.con)
        return self._engine

    def sql(self, query: str):
        """The result of ``query`` (its last statement) as a pandas DataFrame. Statements that would
        change the profile's tables or views are rolled back with a QueryError."""
        import pandas

        results = self.run_all(query)
        if not results or not results[-1].columns:
            return pandas.DataFrame()
        return self.engine().frame()

    def run_all(self, query: str):
        """Every statement of ``query`` on the guarded engine, in order (``QueryEngine.run_all``).
        A cache file found damaged under them is replaced by a fresh load, and they run again."""
        from .query import QueryError

        try:
            return self.engine().run_all(query)
        except QueryError as e:
            if not (e.damaged and self.profile.from_cache):
                raise
        self._reanalysed(windows=True, encoded=False)
        return self.engine().run_all(query)

    def table(self, name: str):
        """A table or analysis view, whole, as a pandas DataFrame (``kernels``, ``stage_categories``…)."""
        from .query import QueryError
        from .text import literal

        relation = self.engine().catalog().relation(name)
        if relation is None:
            raise QueryError(f"no table or view named {literal(name)}")
        return self.sql(f'SELECT * FROM "{relation.name}"')

    def diff(self, other: Union["Session", str, Path]) -> Dict[str, Any]:
        """This run compared with ``other`` (the earlier one, or a path to it): what ``npu-tui diff
        OTHER THIS`` prints, as a dict."""
        from .analysis.diff import compare, run_data

        base = other if isinstance(other, Session) else open_session(other, self.rules)
        return compare(run_data(base.con, path_text(base.path), base._report()),
                       run_data(self.con, path_text(self.path), self._report()))

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
        self.con.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"{len(self.report['findings'])} findings" if self.report is not None else "not analysed"
        whole = f", incomplete: {len(self.not_whole)} not loaded whole" if self.not_whole else ""
        return f"<npu_tui.Session {str(self.path)!r}: {len(self.ranks)} rank(s), {state}{whole}>"


def open_session(path, rules: RulesLike = None, *, cache: bool = True, run: Optional[str] = None) -> Session:
    """Load and analyse a profile in one step: what the headless commands and notebooks use."""
    session = Session.load(path, rules, cache=cache, run=run)
    session.analyse()
    return session
