"""Running a collection in a child process: a new run folder, live progress, cancel, the record.

Every run gets its own folder ``<root>/run_<YYYYmmdd_HHMMSS>_<NN>`` (never reused) holding the
profiler's output, ``collect.log`` (everything the child printed) and ``npu_tui_run.json`` (what ran,
the command that repeats it, and how it ended). The child runs in its own process group, so a
cancel kills the workload and anything it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, List, Optional

from ..profile.discover import parse_state
from . import progress
from .recipe import MIN_STEPS

RUN_RECORD = "npu_tui_run.json"
LOG_FILE = "collect.log"
RUN_PREFIX = "run_"
# How long a cancelled child gets to exit on SIGTERM before the group is killed outright.
CANCEL_GRACE_S = 3.0
PARSE_WAIT_S = 600.0  # how long the profiler's own parse may run on after the workload exits
PARSE_POLL_S = 0.5
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])

Event = dict
OnEvent = Callable[[Event], None]


class CollectError(Exception):
    """A collection could not be started (bad spec, unusable output root)."""


@dataclass
class CollectSpec:
    """What to run: the demo, a workload file defining build(), or any command line that calls
    ``npu_tui.collect.profile_steps``. Exactly one of the three."""

    demo: bool = False
    workload: Optional[str] = None
    command: Optional[List[str]] = None
    steps: int = MIN_STEPS
    cwd: str = field(default_factory=os.getcwd)

    def __post_init__(self):
        if sum((bool(self.demo), bool(self.workload), bool(self.command))) != 1:
            raise CollectError("give exactly one of: --demo, a workload file, or --cmd")
        if self.steps < MIN_STEPS:
            raise CollectError(f"at least {MIN_STEPS} profiled steps are needed, not {self.steps}")
        if self.workload:
            # Absolute, so the record repeats the run from any directory.
            self.workload = str(Path(self.cwd, self.workload).resolve())

    def child_argv(self, run_dir: Path) -> List[str]:
        if self.command:
            return list(self.command)
        what = ["--demo"] if self.demo else ["--workload", self.workload]
        return [sys.executable, "-m", "npu_tui.collect.child", *what,
                "--out", str(run_dir), "--steps", str(self.steps)]

    def cli_argv(self, root: Path) -> List[str]:
        """The ``npu-tui collect`` command line that repeats this run."""
        if self.command:
            import shlex
            what = ["--cmd", shlex.join(self.command)]
        else:
            what = ["--demo"] if self.demo else [self.workload]
        return ["npu-tui", "collect", *what, "--out", str(root), "--steps", str(self.steps)]

    @classmethod
    def from_record(cls, record: dict) -> "CollectSpec":
        return cls(**record["workload"])


@dataclass
class RunResult:
    run_dir: Path
    status: str  # "ok", "failed" or "cancelled"
    returncode: Optional[int]
    error: str = ""
    backend: Optional[str] = None


def new_run_dir(root: Path) -> Path:
    """A fresh folder under ``root``; the counter keeps two runs in the same second apart."""
    stamp = time.strftime("%Y%m%d_%H%M%S")
    for n in range(1, 1000):
        d = Path(root) / f"{RUN_PREFIX}{stamp}_{n:02d}"
        try:
            d.mkdir(parents=True)
            return d
        except FileExistsError:
            continue
    raise CollectError(f"{root}: no free run folder name for {stamp}")


def read_record(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / RUN_RECORD).read_text(encoding="utf-8"))


def _write_record(run_dir: Path, record: dict) -> None:
    tmp = Path(run_dir) / (RUN_RECORD + ".tmp")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    tmp.replace(Path(run_dir) / RUN_RECORD)


def list_runs(root: Path, status: Optional[str] = None) -> List[Path]:
    """Run folders under ``root``, oldest first (names sort by time), optionally of one status."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = []
    for d in sorted(root.glob(RUN_PREFIX + "*")):
        try:
            rec = read_record(d)
        except (OSError, ValueError):
            continue
        if status is None or rec.get("status") == status:
            runs.append(d)
    return runs


def previous_run(root: Path, before: Optional[Path] = None) -> Optional[Path]:
    """The latest successful run older than ``before`` (or the latest of all): the comparison base."""
    runs = [d for d in list_runs(root, "ok") if before is None or d.name < Path(before).name]
    return runs[-1] if runs else None


def run_of(path: Path) -> Optional[Path]:
    """The run folder holding ``path`` (a run folder, or a file or folder inside one), if any."""
    path = Path(path).resolve()
    for d in (path, *path.parents):
        if (d / RUN_RECORD).is_file():
            return d
    return None


def _has_output(run_dir: Path) -> bool:
    return any(p.name not in (RUN_RECORD, LOG_FILE) for p in run_dir.iterdir())


class Collection:
    """One run. ``start()`` then ``wait()`` (or ``run()``) on a worker thread; ``cancel()`` from
    any thread. ``on_event`` gets each progress event (see ``progress``) and each log line as
    ``{"phase": "log", "text": ...}``, on the thread that waits."""

    def __init__(self, spec: CollectSpec, root, on_event: Optional[OnEvent] = None):
        self.spec = spec
        self.root = Path(root)
        self.on_event = on_event or (lambda event: None)
        self.run_dir: Optional[Path] = None
        self.record: dict = {}
        self._proc: Optional[subprocess.Popen] = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._killer: Optional[threading.Timer] = None

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc else None

    def _env(self, run_dir: Path) -> dict:
        env = dict(os.environ)
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + path if path else "")
        env["PYTHONUNBUFFERED"] = "1"
        env[progress.ENV_OUT] = str(run_dir)
        env[progress.ENV_STEPS] = str(self.spec.steps)
        return env

    def start(self) -> Path:
        try:
            self.run_dir = new_run_dir(self.root)
        except OSError as e:
            raise CollectError(f"cannot create a run folder under {self.root}: {e}") from e
        argv = self.spec.child_argv(self.run_dir)
        self.record = {
            "command": self.spec.cli_argv(self.root),
            "child": argv,
            "workload": asdict(self.spec),
            "status": "running",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        _write_record(self.run_dir, self.record)
        with self._lock:
            try:
                self._proc = subprocess.Popen(
                    argv, cwd=self.spec.cwd, env=self._env(self.run_dir),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True, errors="replace", bufsize=1, start_new_session=True)
            except OSError as e:
                self._finish(None, "failed", f"cannot start {argv[0]}: {e}", None)
                raise CollectError(self.record["error"]) from e
            if self._cancelled.is_set():
                self._signal(signal.SIGKILL)
        return self.run_dir

    def _signal(self, sig) -> None:
        try:
            os.killpg(self._proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def cancel(self) -> None:
        """Stop the run: SIGTERM to the child's process group, SIGKILL after a short grace."""
        with self._lock:
            self._cancelled.set()
            if self._proc is None or self._proc.poll() is not None:
                return
            self._signal(signal.SIGTERM)
            self._killer = threading.Timer(CANCEL_GRACE_S, self._signal, (signal.SIGKILL,))
            self._killer.daemon = True
            self._killer.start()

    def wait(self) -> RunResult:
        error, backend, last_line = "", None, ""
        # Appending: a caller interrupted mid-wait (Ctrl-C) cancels and waits again.
        with open(self.run_dir / LOG_FILE, "a", encoding="utf-8") as log:
            for line in self._proc.stdout:
                line = line.rstrip("\n")
                event = progress.parse(line)
                if event is None:
                    log.write(line + "\n")
                    if line.strip():
                        last_line = line.strip()
                    event = {"phase": "log", "text": line}
                elif event["phase"] == "error":
                    error = str(event.get("message", ""))
                    log.write(f"error: {error}\n")
                elif event["phase"] == "backend":
                    backend = event.get("name")
                self.on_event(event)
        rc = self._proc.wait()
        # The profiler's parse may run on in processes of the workload's group (torch_npu's
        # async_mode): the run is loaded only once every rank folder is parsed.
        unparsed = self._await_parse() if rc == 0 and not self._cancelled.is_set() else None
        with self._lock:
            if self._killer:
                self._killer.cancel()
            # Whatever the workload left running in its group goes with it.
            self._signal(signal.SIGKILL)
        self._proc.stdout.close()
        if self._cancelled.is_set():
            status, error = "cancelled", "cancelled"
        elif rc != 0:
            status, error = "failed", error or last_line or f"exit status {rc}"
        elif not _has_output(self.run_dir):
            status, error = "failed", "the workload wrote no profile (does it call profile_steps?)"
        elif unparsed:
            status, error = "failed", f"the profiler's parse did not finish in {PARSE_WAIT_S:.0f} s: {unparsed}"
        else:
            status = "ok"
        return self._finish(rc, status, error, backend)

    def _await_parse(self) -> Optional[str]:
        """Wait while a rank folder of the run is still being parsed; what is still unparsed when
        the wait runs out (or the run is cancelled), else None."""
        deadline = time.monotonic() + PARSE_WAIT_S
        said = False
        while True:
            waiting = [f"{d.name}: {why}" for d in sorted(self.run_dir.rglob("*_ascend_pt"))
                       if (why := parse_state(d)) is not None]
            if not waiting or self._cancelled.is_set() or time.monotonic() > deadline:
                return "; ".join(waiting) or None
            if not said:
                self.on_event({"phase": "profiler_parse"})
                said = True
            time.sleep(PARSE_POLL_S)

    def _finish(self, rc, status, error, backend) -> RunResult:
        self.record.update(status=status, returncode=rc, error=error, backend=backend,
                           finished=time.strftime("%Y-%m-%dT%H:%M:%S"))
        _write_record(self.run_dir, self.record)
        return RunResult(self.run_dir, status, rc, error, backend)

    def run(self) -> RunResult:
        self.start()
        return self.wait()
