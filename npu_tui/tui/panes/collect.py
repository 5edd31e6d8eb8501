"""The collection log pane: live progress of a collection child, its log, then load and compare."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List, Optional, Tuple

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label, ProgressBar, RichLog

from ...collect.runner import (Collection, CollectError, CollectSpec, RunResult, previous_run, read_record,
                               run_of)
from ...session import writable_folder
from ..cells import literal

LOG_LINES = 5000
IDLE = "No collection running. c collects (the demo, or repeats the open run), after a confirmation."
DEMO_ROOT = "prof_out"  # where `c` collects the demo when the open profile is not a run


def collection_for(path: Path, folders: List[Path]) -> Tuple[CollectSpec, Path]:
    """What `c` collects for the open profile: the workload of the run it belongs to (or of the
    newest run of a folder of runs), again, beside it (the run's record says how); otherwise the
    built-in demo into ./prof_out, unless the working folder is inside the profile's ``folders``
    (`npu-tui .`), which npu-tui never writes into: then beside them."""
    run = run_of(path) or previous_run(path)  # a run, or the newest of a folder of runs
    if run is not None:
        return CollectSpec.from_record(read_record(run)), run.parent
    return CollectSpec(demo=True), writable_folder(folders) / DEMO_ROOT


def collection_plan(path: Path, folders: List[Path]):
    """(spec, root) of what `c` would collect for the open profile, or why it cannot (a string)."""
    try:
        return collection_for(path, folders)
    except (OSError, ValueError, KeyError, TypeError, CollectError) as e:
        return f"Cannot collect: {e}"


def progress_text(event: dict) -> Optional[str]:
    """The status line for one progress event; None for events that do not change it."""
    phase = event["phase"]
    if phase == "build":
        return "building the workload"
    if phase == "backend":
        return f"profiler: {event.get('name')}"
    if phase == "warmup":
        return f"warm-up {event['step']} of {event['of']} (not profiled)"
    if phase == "step":
        return f"profiled step {event['step']} of {event['of']}"
    if phase == "export":
        return "exporting the trace"
    if phase == "profiler_parse":
        return "waiting for the profiler's parse to finish"
    if phase == "parse":
        return "loading and comparing"
    return None


def _fraction(event: dict, steps: int) -> Optional[int]:
    """Progress in units of steps: 2 warm-ups, the profiled steps, then export and parse."""
    phase = event["phase"]
    if phase == "warmup":
        return event["step"]
    if phase == "step":
        return 2 + event["step"] - 1
    return {"export": 2 + steps, "parse": 3 + steps}.get(phase)


class CollectLog(Vertical):
    """Runs one collection at a time and shows it.

    Mount it anywhere (the app puts it in the Collect pane). ``start(spec, root, rules)`` begins a
    run; ``cancel()`` stops it (True when something was running, so an app-level escape can fall
    through otherwise); ``running`` says whether one is in flight. When the run ends the pane
    posts ``CollectLog.Finished`` (it bubbles to the app) with the result, the new run's session
    when it succeeded, and the comparison with the run before (or None).
    Unmounting cancels a running collection, so no child outlives the app.
    """

    DEFAULT_CSS = """
    CollectLog { height: 1fr; }
    CollectLog #collect-status { height: 1; padding: 0 1; }
    CollectLog #collect-bar { margin: 0 1; }
    CollectLog RichLog { height: 1fr; border: round $primary-darken-2; }
    """
    HELP_TITLE = "Collect"
    BINDINGS = [Binding("escape", "cancel", "Cancel collection", show=False)]

    class Event(Message):
        """A progress event or log line from the worker (handled by the pane itself)."""

        def __init__(self, event: dict) -> None:
            super().__init__()
            self.event = event

    class Finished(Message):
        """The run ended: ``session`` is the new run opened and analysed (None unless it succeeded
        and loaded), ``diff`` its comparison with the run before (None without one), ``error`` why
        loading or comparing failed after a successful collection ("" when it did not)."""

        def __init__(self, result: RunResult, session=None, diff: Optional[dict] = None,
                     error: str = "") -> None:
            super().__init__()
            self.result, self.session, self.diff, self.error = result, session, diff, error

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._collection: Optional[Collection] = None
        self._steps = 0
        self.status = IDLE

    def compose(self) -> ComposeResult:
        yield Label(IDLE, id="collect-status")
        yield ProgressBar(id="collect-bar", show_eta=False)
        yield RichLog(id="collect-log", max_lines=LOG_LINES, markup=False, wrap=False)

    @property
    def running(self) -> bool:
        return self._collection is not None

    def _status(self, text: str) -> None:
        self.status = text
        self.query_one("#collect-status", Label).update(Text(literal(text)))

    def start(self, spec: CollectSpec, root: Path, rules=None) -> bool:
        """Begin a run under ``root``; False (and nothing started) while another is running.
        ``rules`` (a rules file, or None for the shipped one) analyse the new run and the one before."""
        if self.running:
            return False
        self._steps = spec.steps
        col = Collection(spec, Path(root), on_event=lambda e: self.post_message(self.Event(e)))
        self._collection = col
        log = self.query_one(RichLog)
        log.clear()
        log.write(Text(literal("$ " + shlex.join(spec.cli_argv(Path(root)))), style="bold"))
        self.query_one(ProgressBar).update(total=spec.steps + 4, progress=0)
        self._status("starting")
        self.run_worker(lambda: self._work(col, rules), thread=True,
                        group="collect", exit_on_error=False)
        return True

    def _work(self, collection: Collection, rules) -> None:
        from ...profile import ProfileError
        from ...session import open_session

        base = previous_run(collection.root)
        try:
            result = collection.run()
        except CollectError as e:
            self.post_message(self.Finished(RunResult(collection.run_dir, "failed", None, str(e))))
            return
        if result.status != "ok":
            self.post_message(self.Finished(result))
            return
        self.post_message(self.Event({"phase": "parse"}))
        try:
            new = open_session(result.run_dir, rules)
            diff = new.diff(open_session(base, rules)) if base is not None else None
        except ProfileError as e:
            self.post_message(self.Finished(result, error=str(e)))
            return
        except Exception as e:  # an analysis bug must not leave the pane waiting forever
            self.post_message(self.Finished(result, error=f"{type(e).__name__}: {e}"))
            return
        self.post_message(self.Finished(result, new, diff))

    def cancel(self) -> bool:
        if self._collection is None:
            return False
        self._collection.cancel()
        self._status("cancelling")
        return True

    def action_cancel(self) -> None:
        if not self.cancel():
            raise SkipAction()

    def on_unmount(self) -> None:
        self.cancel()

    def on_collect_log_event(self, msg: "CollectLog.Event") -> None:
        msg.stop()
        event = msg.event
        if event["phase"] == "log":
            self.query_one(RichLog).write(Text(literal(event["text"])))
            return
        if event["phase"] == "error":
            self.query_one(RichLog).write(Text(literal(f"error: {event.get('message', '')}"),
                                               style="bold red"))
        text = progress_text(event)
        if text:
            self._status(text)
        done = _fraction(event, self._steps)
        if done is not None:
            self.query_one(ProgressBar).update(progress=done)

    def on_collect_log_finished(self, msg: "CollectLog.Finished") -> None:
        # Not stopped: the app hears it too.
        self._collection = None
        r = msg.result
        where = f" ({r.run_dir})" if r.run_dir else ""
        if r.status == "ok" and not msg.error:
            self.query_one(ProgressBar).update(progress=self._steps + 4)
            self._status(f"collected{where}")
        elif r.status == "ok":
            self._status(f"collected{where}, but it could not be loaded: {msg.error}")
        else:
            self._status(f"{r.status}: {r.error}{where}; the open profile is unchanged")
        style = "bold green" if r.status == "ok" and not msg.error else "bold red"
        self.query_one(RichLog).write(Text(literal(self.status), style=style))
