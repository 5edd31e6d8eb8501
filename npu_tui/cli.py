"""Command line: `npu-tui [PATH]` opens the TUI; `report`, `sql`, `diff`, `collect` work headless.

Exit codes: 0 ok, 1 a `--fail-on` finding fired, 2 the input could not be read, or some of it (the
report is incomplete; `--partial` accepts that), or an option is wrong (reason on stderr).
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from . import __version__

SUBCOMMANDS = ("report", "sql", "diff", "collect")
EXIT_FINDING = 1
EXIT_INPUT = 2


RUN_HELP = "in a folder of collected runs, open this run (a run_* folder's name) instead of the newest"
PARTIAL_HELP = "exit as usual when a file could not be loaded whole (else 2: the result is incomplete)"


def _open_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="npu-tui",
        description="Explore Ascend NPU / PyTorch profiler output in the terminal.",
        epilog="Headless commands: npu-tui {report,sql,diff,collect} --help",
    )
    p.add_argument("path", nargs="?", help="profile folder or file (default: the bundled demo)")
    p.add_argument("--demo", action="store_true", help="open the bundled demo profile")
    p.add_argument("--rules", metavar="FILE", help="rules TOML merged over the shipped ones")
    p.add_argument("--run", metavar="NAME", help=RUN_HELP)
    p.add_argument("--version", action="version", version=f"npu-tui {__version__}")
    return p


def _sub_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="npu-tui")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("report", help="findings as text, Markdown or JSON")
    r.add_argument("path", nargs="?", help="profile folder or file (default: the bundled demo, as the app opens)")
    r.add_argument("--format", choices=("text", "md", "json"), default="text")
    r.add_argument("--run", metavar="NAME", help=RUN_HELP)
    r.add_argument("--rules", metavar="FILE", help="rules TOML merged over the shipped ones (a changed threshold alone is enough)")
    r.add_argument("--fail-on", metavar="RULE|any",
                   help="exit 1 when this rule (or any rule) fires, 2 for an unknown rule; a CI gate")
    r.add_argument("--partial", action="store_true", help=PARTIAL_HELP)
    r.add_argument("--stage", action="append", metavar="[RANK:]STAGE=START-END",
                   help="set a stage window by hand (us from the rank's first kernel); repeatable")

    s = sub.add_parser("sql", help="run SQL over the loaded profile and print the result")
    s.add_argument("path", help="profile folder or file")
    s.add_argument("query", help="SQL; the canonical tables and analysis views are available")
    s.add_argument("--format", choices=("table", "md", "csv", "json"), default="table",
                   help="table and md escape profile text for the terminal; csv and json keep it exact")
    s.add_argument("--rules", metavar="FILE", help="rules TOML merged over the shipped ones")
    s.add_argument("--run", metavar="NAME", help=RUN_HELP)
    s.add_argument("--partial", action="store_true", help=PARTIAL_HELP)

    d = sub.add_parser("diff", help="compare two profiles (before / after)")
    d.add_argument("base", help="the earlier profile")
    d.add_argument("new", help="the later profile")
    d.add_argument("--format", choices=("text", "md", "json"), default="text")
    d.add_argument("--rules", metavar="FILE", help="rules TOML merged over the shipped ones")
    d.add_argument("--partial", action="store_true", help=PARTIAL_HELP)

    c = sub.add_parser("collect", help="run a workload under the profiler into a new folder")
    c.add_argument("workload", nargs="?", help="Python file defining build(), or omit with --demo")
    c.add_argument("--demo", action="store_true", help="profile the built-in demo DiT + VAE workload")
    c.add_argument("--out", metavar="DIR", default="./prof_out", help="profile root (default ./prof_out)")
    c.add_argument("--steps", type=int, default=5, help="profiled steps (at least 5)")
    c.add_argument("--cmd", metavar="COMMAND",
                   help="instead: any command line (quoted) whose script calls "
                        "npu_tui.collect.profile_steps(step)")
    c.add_argument("--rules", metavar="FILE", help="rules TOML merged over the shipped ones")
    return p


def _fail(msg: str) -> int:
    from .text import path_text

    print(f"npu-tui: {path_text(msg)}", file=sys.stderr)  # the paths it names as the disk spells them
    return EXIT_INPUT


def _say(note: str) -> None:
    """What npu-tui chose for the user (which run it opened): on stderr, so stdout stays the data."""
    if note:
        print(f"npu-tui: {note}", file=sys.stderr)


def _print_rows(columns: List[str], rows: List[tuple], fmt: str) -> None:
    out = sys.stdout
    if fmt == "csv":
        # RFC 4180 line ends: a value holding CR or LF is then quoted, and reads back whole.
        w = csv.writer(out)
        w.writerow(columns)
        w.writerows(rows)
    elif fmt == "json":
        json.dump([dict(zip(columns, r)) for r in rows], out, default=str, indent=1)
        out.write("\n")
    else:
        from .text import table

        out.write("\n".join(table(columns, rows, md=fmt == "md")) + "\n")
        if fmt == "table":
            out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


def cmd_sql(args) -> int:
    from .query import QueryError
    from .session import open_session

    session = open_session(args.path, _rules(args), run=args.run)
    _say(session.note)
    try:
        results = session.run_all(args.query)
    except QueryError as e:
        return _fail(f"query failed: {e}")
    # Statements run in order (temp tables carry over); the last one's rows are printed.
    if results and results[-1].columns:
        last = results[-1]
        _print_rows(last.columns, session.engine().page(0, last.row_count), args.format)
    return _incomplete([session], args.partial)


def _incomplete(sessions, partial: bool) -> int:
    """EXIT_INPUT, said on stderr, when a file of these sessions' profiles could not be loaded
    (what was printed leaves it out), unless ``partial`` accepts that."""
    from .text import first_named, lost_phrase

    lost = [file for s in sessions for file in s.not_whole]
    if not lost or partial:
        return 0
    return _fail(f"incomplete: {lost_phrase(lost)} failed to load whole ({first_named(lost)}); --partial accepts "
                 "the result as it is")


def cmd_open(args) -> int:
    if args.path and not args.demo:
        path = Path(args.path)
        if not path.exists():
            return _fail(f"{path}: no such file or folder")
    else:
        from .demo import PATH as path
    from .tui.app import NpuTuiApp

    app = NpuTuiApp(Path(path), Path(args.rules) if args.rules else None, run=args.run)
    app.run()
    return app.return_code or 0


def _rules(args):
    from .analysis import load_rules

    return load_rules(Path(args.rules) if args.rules else None)


def _write_diff(d: dict, fmt: str) -> None:
    from .analysis.diff import render

    if fmt == "json":
        json.dump(d, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(d, fmt))


def cmd_diff(args) -> int:
    from .session import open_session

    rules = _rules(args)
    new, base = open_session(args.new, rules), open_session(args.base, rules)
    for session in (new, base):
        _say(session.note)
    _write_diff(new.diff(base), args.format)
    return _incomplete([base, new], args.partial)


def _collect_event(event: dict) -> None:
    """Live progress of the collection child on stderr (stdout keeps the result)."""
    phase = event["phase"]
    if phase == "log":
        print(event["text"], file=sys.stderr)
    elif phase in ("warmup", "step"):
        print(f"npu-tui: {'warm-up' if phase == 'warmup' else 'profiled step'} "
              f"{event['step']}/{event['of']}", file=sys.stderr)
    elif phase in ("backend", "export"):
        print(f"npu-tui: {phase} {event.get('name', '')}".rstrip(), file=sys.stderr)
    elif phase == "profiler_parse":
        print("npu-tui: waiting for the profiler's parse to finish", file=sys.stderr)


def cmd_collect(args) -> int:
    import shlex

    from .collect.runner import Collection, CollectError, CollectSpec, previous_run

    try:
        spec = CollectSpec(demo=args.demo, workload=args.workload, steps=args.steps,
                           command=shlex.split(args.cmd) if args.cmd else None)
    except CollectError as e:
        return _fail(str(e))
    rules = _rules(args)
    root = Path(args.out)
    base = previous_run(root)
    col = Collection(spec, root, on_event=_collect_event)
    try:
        col.start()
        try:
            result = col.wait()
        except KeyboardInterrupt:
            col.cancel()
            result = col.wait()
    except CollectError as e:
        return _fail(str(e))
    if result.status == "cancelled":
        print(f"npu-tui: cancelled; {result.run_dir} keeps the log", file=sys.stderr)
        return _stopped_code()
    if result.status != "ok":
        return _fail(f"collection failed: {result.error} (log: {result.run_dir / 'collect.log'})")
    print(f"npu-tui: collected into {result.run_dir}; parsing", file=sys.stderr)
    from .session import open_session

    new = open_session(result.run_dir, rules)
    if base is None:
        sys.stdout.write(new.render("text"))
    else:
        _write_diff(new.diff(open_session(base, rules)), "text")
    return 0


def cmd_report(args) -> int:
    from .analysis.rules import rule_ids
    from .analysis.stages import parse_stage_option
    from .session import Session

    rules = _rules(args)
    known = rule_ids(rules)
    if args.fail_on and args.fail_on != "any" and args.fail_on not in known:
        return _fail(f"--fail-on {args.fail_on}: no such rule; the rules are: any, {', '.join(known)}")
    try:
        windows = [parse_stage_option(s) for s in args.stage or []]
    except ValueError as e:
        return _fail(str(e))
    # Hand-set windows change the stored stage tables: keep them out of the cache.
    if args.path is None:
        from .demo import PATH as path
    else:
        path = args.path
    session = Session.load(path, rules, cache=not windows, run=args.run)
    _say(session.note)
    unknown = sorted({w[0] for w in windows if w[0] is not None} - set(session.ranks))
    if unknown:
        return _fail(f"--stage: no rank {', '.join(map(str, unknown))}; "
                     f"the ranks are {', '.join(map(str, session.ranks))}")
    for rank, stage, start_us, end_us in windows:
        session.add_stage_window(rank, stage, start_us, end_us)
    # Printed, never read here: the stage windows (which only JSON shows) and the memory per
    # forward stay as DuckDB encoded them.
    report = session.analyse(windows=args.format == "json", encoded=True)
    sys.stdout.write(session.render(args.format))
    code = _incomplete([session], args.partial)
    if code:
        return code
    fired = {f["rule"] for f in report["findings"]}
    if args.fail_on and (fired if args.fail_on == "any" else args.fail_on in fired):
        return EXIT_FINDING
    return 0


COMMANDS = {"report": cmd_report, "sql": cmd_sql, "diff": cmd_diff, "collect": cmd_collect}


_SIGNALLED: List[int] = []


def _stop(signum: int, frame) -> None:
    """SIGTERM or SIGHUP (a job's time limit, a closed SSH session) stops a headless command as
    Ctrl-C does: a load in progress takes its cache file along, not left for the next to sweep."""
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt


def _stopped_code() -> int:
    """The exit of a command stopped by a signal, as a shell reports it: 128 + its number."""
    return 128 + (_SIGNALLED[-1] if _SIGNALLED else signal.SIGINT)


class _OutputFailed(Exception):
    """Standard output could not be written (a full disk, a closed descriptor)."""


class _Stdout:
    """Standard output for the headless commands: a write that fails is said apart from the
    command's own errors, not read as a finding (exit 1) or shown as a traceback."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def _call(self, name: str, *args):
        if self.stream is None:
            raise _OutputFailed("standard output is closed")
        try:
            return getattr(self.stream, name)(*args)
        except (BrokenPipeError, UnicodeError):  # (UnicodeError: a ValueError of what was written)
            raise
        except (OSError, ValueError) as e:  # ValueError: written after it was closed
            raise _OutputFailed(getattr(e, "strerror", None) or str(e)) from None

    def write(self, text: str) -> int:
        return self._call("write", text)

    def flush(self) -> None:
        self._call("flush")

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _run_headless(argv: List[str]) -> int:
    args = _sub_parser().parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # a console that cannot spell µs or a name gets escapes
        sys.stdout.reconfigure(errors="backslashreplace")
    stdout, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # what is left in the buffer fails here, not at exit unsaid
        return code
    except _OutputFailed as e:
        if stdout is not None:  # what stays buffered would fail again as the interpreter exits
            _to_devnull(stdout)
        print(f"npu-tui: cannot write the output: {e}", file=sys.stderr)
        return EXIT_INPUT
    finally:
        sys.stdout = stdout


def _to_devnull(stream) -> None:
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):  # not a file of the system's (a test's capture)
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from .profile.errors import ProfileError

    headless = bool(argv) and argv[0] in SUBCOMMANDS
    before = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGHUP)} if headless else {}
    _SIGNALLED.clear()
    try:
        if headless:
            return _run_headless(argv)
        return cmd_open(_open_parser().parse_args(argv))
    except ProfileError as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        return _stopped_code()
    except RuntimeError as e:
        # DuckDB's answer to Ctrl-C during a query, in place of the KeyboardInterrupt
        if str(e) == "Query interrupted":
            return _stopped_code()
        raise
    except BrokenPipeError:
        return 0
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
