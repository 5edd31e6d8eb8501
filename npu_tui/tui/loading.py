"""Opening a profile behind the first frame, in two phases over one Session.

``LoadPanel`` (the loading box) runs phase one in a thread worker: the tables, then the analysis.
``TraceBar`` (one line above the footer) runs phase two: the big trace left for the background (host
events, flows: the stage markers), then the analysis again. Workers post messages and touch no
widget; each load has a number, and messages of a load that was cancelled or replaced are dropped
here, so none comes back over what replaced it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, OptionList, ProgressBar
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from .cells import literal


@dataclass
class SessionLoaded(Message):
    """The tables are in (grids can fill); ``session.report`` follows with Analysed."""

    session: object
    load: int = 0


@dataclass
class Analysed(Message):
    """The first phase's report is in ``session.report``; ``session.pending`` says a phase two follows."""

    session: object
    load: int = 0


@dataclass
class LoadStopped(Message):
    """The load ended without a profile: cancelled, or nothing readable (``candidates``: folders
    below the path that would load, offered in a picker)."""

    reason: str
    load: int = 0
    candidates: tuple = ()


@dataclass
class ProfilePicked(Message):
    """The user chose one of the profiles LoadPanel offered (``among``, found under ``folder``):
    open it."""

    path: Path
    folder: Path
    among: Tuple[Path, ...]


@dataclass
class TraceDone(Message):
    """Phase two ended: the analysis was rebuilt (``reason`` empty), or not, and why."""

    session: object
    reason: str = ""
    load: int = 0


@dataclass
class _Progress(Message):
    done: int
    total: int
    label: str
    load: int = 0


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"


class _Phase:
    """A numbered load: messages of older numbers are dropped (stopped before they bubble)."""

    number = 0
    running = False

    def _next(self) -> int:
        self.number += 1
        return self.number

    def stale(self, msg) -> bool:
        if msg.load != self.number:
            msg.stop()
            return True
        return False


class LoadPanel(_Phase, Vertical):
    def compose(self) -> ComposeResult:
        yield Label(id="load-label")
        yield ProgressBar(id="load-bar", show_eta=False)
        yield OptionList(id="load-candidates")
        yield Label("escape cancels · r reloads · q quits", classes="hint", id="load-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).display = False

    def start(self, path: Path, rules: Optional[Path], run: Optional[str] = None) -> None:
        self.running = True
        self.display = True
        self.query_one(ProgressBar).display = True
        self.query_one(OptionList).display = False
        self.query_one("#load-hint", Label).update("escape cancels · r reloads · q quits")
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.query_one(Label).update(Text(f"Loading {literal(path)}"))
        self._path = path
        self._load(self._next(), path, rules, run)

    def cancel(self, drop: bool = False) -> bool:
        """Stop the load in progress (True when one was running). The worker then says so with
        LoadStopped; with ``drop`` (a new profile replaces this one) its messages are dropped instead.
        Once the panes show the tables, the analysis runs on: escape there is the panes' (a drill,
        a dialog), and stopping it would leave every pane waiting for findings that never come."""
        if not self.running or not (drop or self.display):
            return False
        self.workers.cancel_group(self, "load")
        if drop:
            self._next()
            self.running = False
        return True

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, load: int, path: Path, rules: Optional[Path], run: Optional[str]) -> None:
        from ..profile import LoadCancelled, ProfileError
        from ..session import Session

        worker = get_current_worker()

        def progress(done: int, total: int, label: str) -> None:
            self.post_message(_Progress(done, total, label, load))

        def cancelled() -> bool:
            return worker.is_cancelled

        try:
            session = Session.load(path, rules, cache=True, background=True, run=run,
                                   progress=progress, cancelled=cancelled)
            if worker.is_cancelled:  # in as escape was pressed: nothing is shown
                session.close()
                raise LoadCancelled()
            analysed = session.analysed  # reopened from the cache
            con = session.con
            if not analysed:
                # Tables first: the grids fill while the analysis runs, which from now on runs to
                # its end (see cancel).
                self.post_message(SessionLoaded(session, load))
            session.analyse(windows=False, progress=progress, cancelled=cancelled)
        except LoadCancelled:
            self.post_message(LoadStopped("Load cancelled.", load))
            return
        except ProfileError as e:
            self.post_message(LoadStopped(str(e), load, tuple(e.candidates)))
            return
        except Exception as e:  # noqa: BLE001 - a bug must reach the screen, not hang it on "loading"
            self.post_message(LoadStopped(f"Load failed: {_first_line(e)}", load))
            raise
        if worker.is_cancelled and analysed:  # a cache's analysis, nothing shown yet
            self.post_message(LoadStopped("Load cancelled.", load))
            return
        if analysed or session.con is not con:
            # Tables and report together: the panes are laid out and drawn once, not twice. (A
            # cache file that failed to read was replaced by a fresh load: its tables, too.)
            self.post_message(SessionLoaded(session, load))
        self.post_message(Analysed(session, load))

    def on__progress(self, msg: _Progress) -> None:
        if self.stale(msg):
            return
        msg.stop()
        self.query_one(ProgressBar).update(total=max(msg.total, 1), progress=msg.done)
        self.query_one(Label).update(Text(f"Loading {literal(self._path)}: {literal(msg.label)}"))

    def on_session_loaded(self, msg: SessionLoaded) -> None:
        if not self.stale(msg):
            self.display = False

    def on_analysed(self, msg: Analysed) -> None:
        if not self.stale(msg):
            self.running = False

    def on_load_stopped(self, msg: LoadStopped) -> None:
        if self.stale(msg):
            return
        self.running = False
        self.query_one(Label).update(Text(literal(msg.reason)))
        # Over: no bar to stand still, nothing for escape to cancel.
        self.query_one(ProgressBar).display = False
        self.query_one("#load-hint", Label).update("r reloads · q quits")
        if msg.candidates:
            picker = self.query_one(OptionList)
            picker.clear_options()
            picker.add_options(Option(Text(literal(c)), id=str(i)) for i, c in enumerate(msg.candidates))
            self._candidates = list(msg.candidates)
            picker.display = True
            picker.highlighted = 0
            picker.focus()
            self.query_one("#load-hint", Label).update("enter opens the highlighted profile · r reloads · q quits")

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        msg.stop()
        among = tuple(Path(c) for c in self._candidates)
        self.post_message(ProfilePicked(among[int(msg.option.id)], self._path, among))


class TraceBar(_Phase, Horizontal):
    def compose(self) -> ComposeResult:
        yield Label(id="trace-label")
        yield ProgressBar(id="trace-bar", show_eta=False)
        yield Label("escape stops", id="trace-hint")

    def start(self, session) -> None:
        self.running = True
        self.display = True
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.query_one("#trace-hint").display = True
        self._label("")
        self._load_trace(self._next(), session)

    def cancel(self, drop: bool = False) -> bool:
        """Stop phase two (True when it was running). The worker then says so with TraceDone; with
        ``drop`` (a new profile replaces this one) its messages are dropped instead."""
        if not self.running:
            return False
        self.workers.cancel_group(self, "trace")
        if drop:
            self._next()
            self._done()
        else:
            self.query_one("#trace-label", Label).update(Text("Stopping the trace load…"))
            self.query_one("#trace-hint").display = False
        return True

    def _label(self, what: str) -> None:
        self.query_one("#trace-label", Label).update(Text("Loading trace: host events, flows"
                                                          + (f" ({literal(what)})" if what else "")))

    def _done(self) -> None:
        self.running = False
        self.display = False

    @work(thread=True, exclusive=True, group="trace", exit_on_error=False)
    def _load_trace(self, load: int, session) -> None:
        from ..profile import LoadCancelled, ProfileError

        worker = get_current_worker()

        def progress(done: int, total: int, label: str) -> None:
            # The trace is in when the loader says done: what follows is the analysis.
            self.post_message(_Progress(done, total, "analysing with the stage markers"
                                        if done == total else label, load))

        con = session.con
        try:
            session.load_pending(progress=progress, cancelled=lambda: worker.is_cancelled, windows=False)
        except LoadCancelled:
            self.post_message(TraceDone(session, "Trace not loaded: the panes show the kernels and step "
                                                 "data (stages from kernel signatures); r loads everything.",
                                        load))
            return
        except ProfileError as e:
            self.post_message(TraceDone(session, str(e), load))
            return
        except Exception as e:  # noqa: BLE001 - the first phase's panes stay usable
            self.post_message(TraceDone(session, f"Trace load failed: {_first_line(e)}", load))
            raise
        if session.con is not con:  # its cache file failed (the disk filled): loaded again, into memory
            self.post_message(SessionLoaded(session, load))
        self.post_message(TraceDone(session, "", load))

    def on__progress(self, msg: _Progress) -> None:
        if self.stale(msg):
            return
        msg.stop()
        self.query_one(ProgressBar).update(total=max(msg.total, 1), progress=msg.done)
        self._label(msg.label)

    def on_trace_done(self, msg: TraceDone) -> None:
        if not self.stale(msg):
            self._done()

    def on_session_loaded(self, msg: SessionLoaded) -> None:
        self.stale(msg)  # a profile loaded again under a trace load since replaced: dropped
