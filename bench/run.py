"""Load and view performance at real scale, measured as whole processes.

    python bench/run.py [--quick] [--out DIR] [--runs N]

Generates large profiles with npu_tui.synth (once; reused while the spec is unchanged), then runs
every measurement in a child process of its own: cold load to findings ready (`npu-tui report`
with an empty cache, and the app's findings on screen while the trace loads behind them), reopen
from the cache, peak RSS, the panes' grid queries, the TUI's first frame
and CPU per page-down in a grid over every kernel, and `msprof-analyze advisor all` on the same rank
folder when it is installed. Prints a Markdown summary and writes it, with every raw figure, to DIR.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from npu_tui.synth import Spec, generate, preset, truth_path  # noqa: E402
from npu_tui.synth.kineto import write_kineto  # noqa: E402

DEFAULT_OUT = Path(tempfile.gettempdir()) / "npu-tui-bench"

# Targets (seconds unless named); the cold load's is per case. Peak RSS: a base plus a share of the input.
TARGET_RSS_BASE_MB = 200.0
TARGET_RSS_RATIO = 1.5
TARGET_MB_S = 150.0  # input read per second, cold
TARGET_REOPEN_S = 0.5
TARGET_QUERY_S = 0.150
TARGET_FIRST_FRAME_S = 0.300
TARGET_PAGE_DOWN_MS = 30.0
TARGET_ADVISOR_RATIO = 50.0  # msprof-analyze advisor all, wall, over the cold report
TARGET_REDRAW_S = 0.100  # a Timeline zoom or pan at 200 columns

# Every measured npu-tui process runs under a resident-memory cap and a time limit: a regression
# that allocates without bound shows as a failed figure, not as the machine's OOM killer at work.
MEMORY_CAP = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
CHILD_TIMEOUT_S = 600.0

# scripts/measure_tui.py prints one line per mark: "<value>s|ms  <label>"; the labels, by prefix.
TUI_LINE = re.compile(r"^\s*([\d.]+)(ms|s)\s+(.+)$", re.M)
TUI_MARKS = {"first frame": "first_frame", "tables loaded": "tables_loaded",
             "populated Overview": "overview", "grid over all kernels ready": "grid_ready",
             "CPU per page-down": "page_down_ms"}


@dataclasses.dataclass(frozen=True)
class Case:
    label: str
    spec: Optional[Spec]  # a torch_npu profile from npu_tui.synth, or
    advisor: bool  # compare with msprof-analyze on this profile
    cold_target_s: float
    kineto_kernels: int = 0  # a Kineto trace of this many kernels (npu_tui.synth.kineto)


def cases(quick: bool) -> List[Case]:
    if quick:
        # No msprof-analyze here: it alone takes over a minute at this size.
        return [Case("rank-100k", preset("diffusion_1rank", layout="rank", kernels=100_000), False, 1.5)]
    return [
        # The smallest size the memory target names (10 MB), where its fixed 200 MB is most of it.
        Case("rank-6k", preset("diffusion_1rank", layout="rank", kernels=6_000), False, 1.5),
        Case("rank-250k", preset("diffusion_1rank", layout="rank", kernels=250_000), True, 1.5),
        Case("rank-1m", preset("diffusion_1rank", layout="rank", kernels=1_000_000), False, 6.0),
        Case("cluster-8x200k", preset("diffusion_1rank", ranks=8, kernels=200_000), False, 10.0),
        Case("cluster-64x50k", preset("diffusion_1rank", ranks=64, kernels=50_000), False, 40.0),
        Case("kineto-1gb", None, False, 10.0, kineto_kernels=1_600_000),
    ]


# -- child processes ---------------------------------------------------------------------------


@dataclasses.dataclass
class Child:
    wall_s: float
    max_rss_mb: float
    cpu_s: float
    rc: int
    stdout: str
    stderr: str


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_child(cmd: List[str], env: Dict[str, str], timeout: float = CHILD_TIMEOUT_S,
              cap: bool = True) -> Child:
    """Run one process to the end; its own peak RSS and CPU come from wait4 (not the max over all
    children that RUSAGE_CHILDREN would give). With ``cap`` it is killed when its resident memory
    passes MEMORY_CAP (an address-space limit would fail DuckDB's and Python's large reservations
    long before they are used)."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err)
    killed = ""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t > timeout:
            killed = f"killed after {timeout:.0f} s"
        elif cap and _rss_bytes(proc.pid) > MEMORY_CAP:
            killed = f"killed at {MEMORY_CAP / 2**30:.1f} GiB resident"
        if killed:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    stderr = err.read().decode("utf-8", "replace")
    if killed:
        stderr += f"\n{killed}"
    return Child(wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, proc.returncode,
                 out.read().decode("utf-8", "replace"), stderr)


def _env(cache: Path) -> Dict[str, str]:
    env = dict(os.environ, NPU_TUI_CACHE_DIR=str(cache), PYTHONUNBUFFERED="1")
    # Measured as installed: pip writes bytecode, so no child recompiles npu_tui from source.
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class Failed(Exception):
    """A measured process did not finish its work; the message says how, for the results."""


def _checked(child: Child, what: str) -> Child:
    if child.rc != 0:
        lines = [ln for ln in (child.stderr or child.stdout).strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if "Error" in ln or "Exception" in ln or "killed" in ln]
        why = (errors or lines or ["no output"])[-1].strip()[:300]
        raise Failed(f"{what} exited {child.rc} after {child.wall_s:.1f} s "
                     f"(peak RSS {child.max_rss_mb:,.0f} MiB): {why}")
    return child


def _over_base(rss_mb: float, size: int) -> str:
    """Peak RSS as the target spells it: the base and a share of the input (under the base: none)."""
    if rss_mb <= TARGET_RSS_BASE_MB:
        return f", within the {TARGET_RSS_BASE_MB:g} MiB base"
    return f" = {TARGET_RSS_BASE_MB:g} MiB + {(rss_mb - TARGET_RSS_BASE_MB) * 2**20 / size:.2f}× input"


def _median(values: List[float]) -> float:
    return statistics.median(values)


# -- data --------------------------------------------------------------------------------------


def ensure_profile(data: Path, case: Case) -> Tuple[Path, Dict]:
    """The generated profile for ``case``, generated only when absent or of another spec."""
    out = data / case.label
    tp = truth_path(out)
    want = dataclasses.asdict(case.spec) if case.spec else {"kineto_kernels": case.kineto_kernels}
    if tp.is_file() and out.is_dir():
        truth = json.loads(tp.read_text(encoding="utf-8"))
        # A spec written before a field was added holds it at its default.
        stored = {**dataclasses.asdict(Spec()), **truth.get("spec", {})} if case.spec else truth.get("spec")
        if stored == want:
            return out, {"generated_s": None, "truth": truth}
    print(f"generating {case.label} into {out} ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    # In a child of its own: a child forked from this process starts with its peak RSS (Linux keeps
    # the pre-exec high-water mark), so a bench grown big by generating would inflate every figure.
    subprocess.run([sys.executable, __file__, "--generate", case.label, "--out", str(data.parent)], check=True)
    return out, {"generated_s": time.perf_counter() - t, "truth": json.loads(tp.read_text(encoding="utf-8"))}


def _generate(data: Path, label: str) -> None:
    case = next(c for c in cases(False) + cases(True) if c.label == label)
    out = data / case.label
    if case.spec:
        generate(out, case.spec)
        return
    out.mkdir(parents=True, exist_ok=True)
    held = write_kineto(out / "worker_1.1700000000000.pt.trace.json", case.kineto_kernels)
    truth = {"spec": {"kineto_kernels": case.kineto_kernels}, "ranks": [{"rank": 0, "kernel_count": held["kernels"]}]}
    truth_path(out).write_text(json.dumps(truth), encoding="utf-8")


def input_bytes(path: Path) -> Dict[str, int]:
    sizes = {"total": 0}
    for f in path.rglob("*"):
        if f.is_file():
            sizes["total"] += f.stat().st_size
            if f.name in ("kernel_details.csv", "trace_view.json") or f.name.endswith(".pt.trace.json"):
                sizes[f.name] = sizes.get(f.name, 0) + f.stat().st_size
    return sizes


# -- measurements ------------------------------------------------------------------------------


def report_cmd(path: Path) -> List[str]:
    return [sys.executable, "-m", "npu_tui", "report", str(path), "--format", "json"]


def measure_cold(path: Path, work: Path, runs: int) -> Dict:
    """`npu-tui report` with an empty cache: load, cache write, views, findings, JSON out."""
    walls, rss, cpu = [], [], []
    for i in range(runs):
        cache = work / f"cold-cache-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        try:
            c = _checked(run_child(report_cmd(path), _env(cache)), "cold report")
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        findings = len(json.loads(c.stdout)["findings"])
        walls.append(c.wall_s)
        rss.append(c.max_rss_mb)
        cpu.append(c.cpu_s)
    return {"wall_s": walls, "max_rss_mb": rss, "cpu_s": cpu, "findings": findings}


def measure_breakdown(path: Path, work: Path) -> Dict:
    cache = work / "breakdown-cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    try:
        c = _checked(run_child([sys.executable, "bench/probe.py", "breakdown", str(path)], _env(cache)),
                     "breakdown probe")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    result = json.loads(c.stdout)
    result.update(wall_s=c.wall_s, max_rss_mb=c.max_rss_mb)
    return result


def warm_cache(path: Path, cache: Path) -> Dict:
    cache.mkdir(parents=True, exist_ok=True)
    c = _checked(run_child(report_cmd(path), _env(cache)), "cache fill")
    return {"wall_s": c.wall_s}


def measure_reopen(path: Path, cache: Path, runs: int) -> Dict:
    walls, rss = [], []
    for _ in range(runs):
        c = _checked(run_child(report_cmd(path), _env(cache)), "reopen report")
        walls.append(c.wall_s)
        rss.append(c.max_rss_mb)
    return {"wall_s": walls, "max_rss_mb": rss}


def measure_queries(path: Path, cache: Path) -> Dict:
    c = _checked(run_child([sys.executable, "bench/probe.py", "queries", str(path)], _env(cache)),
                 "queries probe")
    return json.loads(c.stdout)


def measure_timeline(path: Path, cache: Path) -> Dict:
    c = _checked(run_child([sys.executable, "bench/probe.py", "timeline", str(path)], _env(cache)),
                 "timeline probe")
    return json.loads(c.stdout)


def measure_tui_cold(path: Path, work: Path, runs: int) -> Dict:
    """The app with an empty cache: its first phase (kernels, step data, analysis) puts the findings
    on screen while the trace's host events and flows load behind it."""
    marks: Dict[str, List[float]] = {}
    for i in range(runs):
        cache = work / f"tui-cold-cache-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        try:
            c = _checked(run_child([sys.executable, "scripts/measure_tui.py", str(path), "--pages", "1"],
                                   _env(cache)), "measure_tui, cold")
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        found = {k: float(v) for v, _unit, label in TUI_LINE.findall(c.stdout)
                 for p, k in TUI_MARKS.items() if label.startswith(p) and k in ("first_frame", "overview")}
        if len(found) != 2:
            raise Failed(f"measure_tui (cold) gave no Overview: {c.stdout.strip()[-300:]}")
        for k, v in found.items():
            marks.setdefault(k, []).append(v)
        marks.setdefault("max_rss_mb", []).append(c.max_rss_mb)
    return marks


def measure_tui(path: Path, cache: Path, runs: int) -> Dict:
    """scripts/measure_tui.py (the app headless) in a process of its own, with the warm cache."""
    marks: Dict[str, List[float]] = {}
    rss = []
    for _ in range(runs):
        c = _checked(run_child([sys.executable, "scripts/measure_tui.py", str(path)], _env(cache)),
                     "measure_tui")
        found = {}
        for value, _unit, label in TUI_LINE.findall(c.stdout):
            key = next((k for p, k in TUI_MARKS.items() if label.startswith(p)), None)
            if key:
                found[key] = float(value)
        missing = set(TUI_MARKS.values()) - set(found)
        if missing:
            raise Failed(f"measure_tui gave no {', '.join(sorted(missing))}: {c.stdout.strip()[-300:]}")
        for k, v in found.items():
            marks.setdefault(k, []).append(v)
        rss.append(c.max_rss_mb)
    marks["max_rss_mb"] = rss
    return marks


def advisor_exe(out: Path) -> Optional[Path]:
    """msprof-analyze from PATH, or from the throwaway venv README.md describes."""
    found = shutil.which("msprof-analyze")
    if found:
        return Path(found)
    venv = out / "msprof-venv" / "bin" / "msprof-analyze"
    return venv if venv.is_file() else None


def measure_advisor(exe: Path, path: Path, work: Path) -> Dict:
    out = work / "advisor-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    c = run_child([str(exe), "advisor", "all", "-d", str(path), "-o", str(out)], env, timeout=3600,
                  cap=False)
    text = (c.stdout + "\n" + c.stderr).strip().splitlines()
    return {"wall_s": c.wall_s, "cpu_s": c.cpu_s, "max_rss_mb": c.max_rss_mb, "rc": c.rc,
            "outputs": sorted(p.name for p in out.rglob("*") if p.is_file()),
            "tail": text[-15:]}


# -- summary -----------------------------------------------------------------------------------


def machine() -> Dict:
    import duckdb

    info = {"platform": platform.platform(), "python": platform.python_version(),
            "duckdb": duckdb.__version__, "cores": os.cpu_count()}
    try:
        cpu = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
        info["cpu"] = cpu[0].split(":", 1)[1].strip() if cpu else platform.processor()
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["memory_gib"] = round(int(mem) / 2**20, 1)
    except OSError:
        pass
    return info


def _ok(value: float, target: float) -> str:
    return "ok" if value <= target else "**over**"


def _runs(xs: List[float], fmt: str = "{:.2f}") -> str:
    return ", ".join(fmt.format(x) for x in xs)


def _timed_rows(label: str, m: Dict, key: str, target: float, rss_label: str) -> List[str]:
    """A figure in seconds against its target, and the peak RSS of the same runs."""
    if "error" in m:
        return [f"| {label} | failed | | {m['error']} |"]
    v = _median(m[key])
    return [f"| {label} | {v:.2f} s | {_runs(m[key])} | ≤ {target:g} s: {_ok(v, target)} |",
            f"| {rss_label} | {max(m['max_rss_mb']):,.0f} MiB | {_runs(m['max_rss_mb'], '{:.0f}')} | |"]


def _case_rows(r: Dict) -> List[str]:
    """The table rows of one case; a failed measurement gets one row saying how it failed."""
    rows = []
    size, target = r["input_bytes"]["total"], r["cold_target_s"]
    cold, reopen, tui, queries = r["cold"], r["reopen"], r["tui"], r["queries"]
    if "error" in cold:
        rows.append(f"| cold load → findings ready | failed | | {cold['error']} |")
    else:
        cold_s, rss = _median(cold["wall_s"]), max(cold["max_rss_mb"])
        rss_target = TARGET_RSS_BASE_MB + TARGET_RSS_RATIO * size / 2**20
        mb_s = size / 2**20 / cold_s
        rows += [
            f"| cold load → findings ready (`npu-tui report`, empty cache) | {cold_s:.2f} s | "
            f"{_runs(cold['wall_s'])} | ≤ {target:g} s: {_ok(cold_s, target)} |",
            f"| input read per second, cold | {mb_s:,.0f} MiB/s | | ≥ {TARGET_MB_S:g}: "
            f"{'ok' if mb_s >= TARGET_MB_S else '**under**'} |",
            f"| CPU (user + sys), cold | {_median(cold['cpu_s']):.2f} s | {_runs(cold['cpu_s'])} | |",
            f"| peak RSS, cold | {rss:,.0f} MiB{_over_base(rss, size)} | "
            f"{_runs(cold['max_rss_mb'], '{:.0f}')} | ≤ {rss_target:,.0f} MiB: {_ok(rss, rss_target)} |"]
    rows += _timed_rows("TUI cold → findings on screen (populated Overview, empty cache)",
                        r.get("tui_cold", {"error": "not measured"}), "overview", target,
                        "peak RSS, TUI cold (the trace loading behind)")
    rows += _timed_rows("reopen from cache → findings (`npu-tui report`)", reopen, "wall_s",
                        TARGET_REOPEN_S, "peak RSS, reopen")
    if "error" in tui:
        rows.append(f"| TUI (scripts/measure_tui.py) | failed | | {tui['error']} |")
    else:
        for key, label, target, unit in (
                ("first_frame", "TUI first frame (from interpreter start)", TARGET_FIRST_FRAME_S, "s"),
                ("tables_loaded", "TUI tables loaded, grids filling, cache warm", None, "s"),
                ("overview", "TUI populated Overview, cache warm", TARGET_REOPEN_S, "s"),
                ("grid_ready", "TUI grid over every kernel ready", None, "s"),
                ("page_down_ms", "CPU per page-down in that grid", TARGET_PAGE_DOWN_MS, "ms")):
            v = _median(tui[key])
            tgt = f"≤ {target:g} {unit}: {_ok(v, target)}" if target else ""
            rows.append(f"| {label} | {v:.{1 if unit == 'ms' else 2}f} {unit} | {_runs(tui[key])} | {tgt} |")
        rows.append(f"| peak RSS, TUI | {max(tui['max_rss_mb']):,.0f} MiB | "
                    f"{_runs(tui['max_rss_mb'], '{:.0f}')} | |")
    if "error" in queries:
        rows.append(f"| view queries | failed | | {queries['error']} |")
    else:
        for q in queries["queries"]:
            rows.append(f"| query: {q['query']}, {q['rows']:,} rows | {1e3 * q['median_s']:.0f} ms | "
                        f"{q['runs']} in one process, first {1e3 * q['first_s']:.0f} ms | ≤ {1e3 * TARGET_QUERY_S:g} ms: "
                        f"{_ok(q['median_s'], TARGET_QUERY_S)} |")
    tl = r.get("timeline", {"error": "not measured"})
    if "error" in tl:
        rows.append(f"| Timeline | failed | | {tl['error']} |")
    else:
        rows.append(f"| Timeline first open ({tl['lanes']} lanes: the drawing table) | {tl['build_s']:.2f} s | 1 | |")
        rows.append(f"| Timeline fit, {tl['columns']} columns | {1e3 * tl['fit_s']:.0f} ms | 1 | |")
        for key, label in (("zoom_in", "zoom in (a new level each time)"), ("pan", "pan zoomed in (new columns)"),
                           ("zoom_out", "zoom out (levels computed before)"),
                           ("pan_half", "pan half-way zoomed out (the dearest)")):
            worst = max(tl[key])
            rows.append(f"| Timeline redraw: {label}, median (max) | {1e3 * _median(tl[key]):.0f} ms "
                        f"({1e3 * worst:.0f}) | {len(tl[key])} | ≤ {1e3 * TARGET_REDRAW_S:g} ms: "
                        f"{_ok(worst, TARGET_REDRAW_S)} |")
    adv = r.get("advisor")
    if adv and adv["rc"] != 0:
        rows.append(f"| `msprof-analyze advisor all` | failed (exit {adv['rc']}) after {adv['wall_s']:.1f} s | 1 | |")
    elif adv:
        compare = ""
        if "error" not in cold:
            ratio = adv["wall_s"] / _median(cold["wall_s"])
            cpu_ratio = adv["cpu_s"] / _median(cold["cpu_s"])
            compare = (f"≥ {TARGET_ADVISOR_RATIO:g}× the cold load: {ratio:.1f}× wall, {cpu_ratio:.1f}× CPU "
                       f"{'ok' if ratio >= TARGET_ADVISOR_RATIO else '**under**'}")
        rows.append(f"| `msprof-analyze advisor all` | {adv['wall_s']:.1f} s wall, {adv['cpu_s']:.1f} s CPU, "
                    f"RSS {adv['max_rss_mb']:,.0f} MiB | 1 | {compare} |")
    return rows


def _case_notes(r: Dict) -> List[str]:
    notes = []
    b = r["breakdown"]
    if "error" not in b:
        notes.append(f"Cold path, step by step (one run): load {b['load_s']:.2f} s, install_views "
                     f"{b['install_views_s']:.2f} s, cache write {b['cache_write_s']:.2f} s, build_report "
                     f"{b['build_report_s']:.2f} s; "
                     f"process {b['wall_s']:.2f} s, RSS {b['max_rss_mb']:,.0f} MiB.")
        slow = b["files"][:4]
        notes.append("Slowest files: " + "; ".join(
            f"{f['rank_dir'][-12:]}/{f['file']} ({f['rows']:,} rows) {f['seconds']:.2f} s" for f in slow) + ".")
    else:
        notes.append(f"Cold path step by step: {b['error']}")
    q = r["queries"]
    if "error" not in q:
        notes.append(f"Reopen in the query probe: load_profile(cache=True) {q['open_s']:.2f} s, "
                     f"ensure_views {q['install_views_s']:.2f} s.")
    return notes


def summarize(results: Dict) -> str:
    lines = [f"machine: {results['machine']}",
             f"code: {results['code']}",
             f"load average at start {results['load_start']}, at end {results['load_end']}", ""]
    for r in results["cases"]:
        kernels = sum(x["kernel_count"] for x in r["truth_ranks"])
        size = r["input_bytes"]
        lines += [f"### {r['label']}: {len(r['truth_ranks'])} rank(s), {kernels:,} kernels, "
                  f"input {size['total'] / 2**20:,.0f} MiB (" + ", ".join(
                      f"{name} {n / 2**20:,.0f} MiB" for name, n in size.items() if name != "total") + ")",
                  "", "| figure | median | runs | target |", "|---|---|---|---|"]
        lines += _case_rows(r)
        lines.append("")
        lines += _case_notes(r)
        lines.append("")
    return "\n".join(lines)


def code_version() -> str:
    """The commit measured, and whether the working tree differed from it."""
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "npu_tui")
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes in npu_tui/" if dirty else "")


def _load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one rank of 100k kernels (regression check)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help=f"generated data, caches and results (default {DEFAULT_OUT})")
    ap.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported")
    ap.add_argument("--case", action="append", metavar="LABEL",
                    help="only this case (repeatable): " + ", ".join(c.label for c in cases(False)))
    ap.add_argument("--no-advisor", action="store_true",
                    help="skip msprof-analyze (14 min at 1M kernels; its time does not depend on npu-tui)")
    ap.add_argument("--generate", metavar="LABEL", help=argparse.SUPPRESS)  # ensure_profile's child
    args = ap.parse_args()
    data, work = args.out / "data", args.out / ("work-quick" if args.quick else "work")
    if args.generate:
        _generate(data, args.generate)
        return 0
    results = {"machine": machine(), "code": code_version(), "load_start": _load_avg(), "quick": args.quick, "cases": []}
    for case in [c for c in cases(args.quick) if not args.case or c.label in args.case]:
        path, gen = ensure_profile(data, case)
        print(f"{case.label}: measuring (load average {_load_avg()})", file=sys.stderr, flush=True)
        w = work / case.label
        shutil.rmtree(w / "warm-cache", ignore_errors=True)
        w.mkdir(parents=True, exist_ok=True)
        r = {"label": case.label, "path": str(path), "generated_s": gen["generated_s"], "cold_target_s": case.cold_target_s,
             "truth_ranks": gen["truth"]["ranks"], "input_bytes": input_bytes(path)}
        cache = w / "warm-cache"
        steps = (("cold", lambda: measure_cold(path, w, args.runs)),
                 ("tui_cold", lambda: measure_tui_cold(path, w, args.runs)),
                 ("breakdown", lambda: measure_breakdown(path, w)),
                 ("warm", lambda: warm_cache(path, cache)),
                 ("reopen", lambda: measure_reopen(path, cache, args.runs)),
                 ("queries", lambda: measure_queries(path, cache)),
                 ("timeline", lambda: measure_timeline(path, cache)),
                 ("tui", lambda: measure_tui(path, cache, args.runs)))
        for key, step in steps:
            print(f"{case.label}: {key}", file=sys.stderr, flush=True)
            try:
                r[key] = step()
            except Failed as e:
                r[key] = {"error": str(e)}
                print(f"  failed: {e}", file=sys.stderr, flush=True)
        exe = advisor_exe(args.out) if case.advisor and not args.no_advisor else None
        if exe:
            print(f"{case.label}: msprof-analyze advisor all", file=sys.stderr, flush=True)
            r["advisor"] = measure_advisor(exe, path, w)
        results["cases"].append(r)
    results["load_end"] = _load_avg()
    text = summarize(results)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "results-quick" if args.quick else "results"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
