"""Before / after: compare two profiles' reports, step times and operators (``npu-tui diff``).

Every time is per profiled step, so runs with different step counts compare fairly. The verdict
compares mean step times against the noise the profiled steps themselves show: the difference of
the means must exceed ``NOISE_SIGMAS`` standard errors to count as faster or slower.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

SCHEMA_VERSION = 1
# Two standard errors of the difference of means: about a 95% two-sided interval.
NOISE_SIGMAS = 2.0
TOP_OPERATORS = 10

# One duration per profiled step: the slowest rank's ProfilerStep#N range.
STEP_TIMES_SQL = """
SELECT CAST(regexp_extract(name, '#([0-9]+)$', 1) AS BIGINT) AS step, max(dur_ns) / 1e3 AS us
FROM host_events
WHERE regexp_matches(name, '^ProfilerStep#[0-9]+$') AND dur_ns > 0
GROUP BY step
ORDER BY step
"""

OPERATOR_TIMES_SQL = """
SELECT name, sum(dur_ns) / 1e3 AS us, count(*) AS n
FROM kernels
GROUP BY name
"""


@dataclass
class RunData:
    """What the comparison needs from one profile."""

    path: str
    report: dict
    step_us: List[float]  # one per profiled step; empty when the profile has no step ranges
    step_source: str  # "ProfilerStep", "step_trace" or "none"
    operators: Dict[str, Tuple[float, int]]  # kernel name -> (total µs, count)
    profile: Optional[object] = None  # the loaded profile, when load_run made it

    @property
    def steps(self) -> int:
        """How many steps the totals cover (1 when unknown, so totals stay as they are)."""
        return max(len(self.step_us), 1)


def run_data(profile, report: dict) -> RunData:
    """Gather a loaded profile's step times and operator totals next to its report."""
    con = profile.con
    step_us = [us for _, us in con.execute(STEP_TIMES_SQL).fetchall()]
    source = "ProfilerStep"
    if not step_us:
        step_us, source = _report_step_times(report), "step_trace"
    if not step_us:
        source = "none"
    ops = {name: (float(us), int(n)) for name, us, n in con.execute(OPERATOR_TIMES_SQL).fetchall()}
    return RunData(str(profile.path), report, step_us, source, ops)


def load_run(path, rules) -> RunData:
    """Load a profile, build its report and gather what a comparison needs."""
    from ..profile import load_profile
    from . import build_report, install_views

    profile = load_profile(Path(path))
    install_views(profile.con, rules)
    data = run_data(profile, build_report(profile, rules))
    data.profile = profile
    return data


def diff_paths(base, new, rules, top: int = TOP_OPERATORS) -> dict:
    return compare(load_run(base, rules), load_run(new, rules), top)


def _report_step_times(report: dict) -> List[float]:
    """Step durations the profiler itself reported (step_trace ``stage``), slowest rank per step."""
    per_step: Dict[int, float] = {}
    for s in report.get("steps", []):
        if s.get("step") is not None and s.get("stage_us"):
            per_step[s["step"]] = max(per_step.get(s["step"], 0.0), float(s["stage_us"]))
    return [per_step[k] for k in sorted(per_step)]


def _pct(base: float, new: float) -> Optional[float]:
    return (new - base) / base if base else None


def verdict(base: List[float], new: List[float]) -> dict:
    """Faster, slower or within noise, from the per-step times of both runs."""
    if len(base) < 2 or len(new) < 2:
        return {"verdict": "undetermined", "reason": "fewer than 2 profiled steps in a run",
                "base_step_us": statistics.fmean(base) if base else None,
                "new_step_us": statistics.fmean(new) if new else None,
                "delta_us": None, "delta_pct": None, "noise_us": None}
    mb, mn = statistics.fmean(base), statistics.fmean(new)
    noise = NOISE_SIGMAS * math.sqrt(statistics.variance(base) / len(base)
                                     + statistics.variance(new) / len(new))
    delta = mn - mb
    word = "faster" if delta < -noise else "slower" if delta > noise else "within noise"
    return {"verdict": word, "base_step_us": mb, "new_step_us": mn, "delta_us": delta,
            "delta_pct": _pct(mb, mn), "noise_us": noise}


def _rows_by(rows: List[dict], key: Tuple[str, ...]) -> Dict[tuple, dict]:
    return {tuple(r[k] for k in key): r for r in rows}


def _stage_deltas(base: RunData, new: RunData) -> List[dict]:
    b = _rows_by(base.report.get("stages", []), ("rank", "stage"))
    n = _rows_by(new.report.get("stages", []), ("rank", "stage"))
    out = []
    for key in sorted(set(b) | set(n), key=str):
        rb, rn = b.get(key, {}), n.get(key, {})
        bt = float(rb.get("kernel_time_us") or 0.0) / base.steps
        nt = float(rn.get("kernel_time_us") or 0.0) / new.steps
        out.append({"rank": key[0], "stage": key[1], "base_us": bt, "new_us": nt,
                    "delta_us": nt - bt, "delta_pct": _pct(bt, nt),
                    "base_wall_us": float(rb.get("wall_us") or 0.0) / base.steps,
                    "new_wall_us": float(rn.get("wall_us") or 0.0) / new.steps,
                    "base_method": rb.get("method"), "new_method": rn.get("method")})
    return out


def _category_deltas(base: RunData, new: RunData) -> List[dict]:
    key = ("rank", "stage", "category")
    b = _rows_by(base.report.get("categories", []), key)
    n = _rows_by(new.report.get("categories", []), key)
    out = []
    for k in sorted(set(b) | set(n), key=str):
        rb, rn = b.get(k, {}), n.get(k, {})
        bt = float(rb.get("time_us") or 0.0) / base.steps
        nt = float(rn.get("time_us") or 0.0) / new.steps
        out.append({"rank": k[0], "stage": k[1], "category": k[2], "base_us": bt, "new_us": nt,
                    "delta_us": nt - bt, "delta_pct": _pct(bt, nt),
                    "base_share": float(rb.get("share") or 0.0),
                    "new_share": float(rn.get("share") or 0.0)})
    return out


def _finding_changes(base: RunData, new: RunData) -> dict:
    key = ("rule", "rank", "stage")
    b = _rows_by(base.report.get("findings", []), key)
    n = _rows_by(new.report.get("findings", []), key)
    return {
        "appeared": [n[k] for k in sorted(set(n) - set(b), key=str)],
        "cleared": [b[k] for k in sorted(set(b) - set(n), key=str)],
        "remaining": [{"rule": k[0], "rank": k[1], "stage": k[2], "base_value": b[k].get("value"),
                       "new_value": n[k].get("value"), "threshold": n[k].get("threshold")}
                      for k in sorted(set(b) & set(n), key=str)],
    }


def _operator_moves(base: RunData, new: RunData, top: int) -> List[dict]:
    rows = []
    for name in set(base.operators) | set(new.operators):
        bt, bc = base.operators.get(name, (0.0, 0))
        nt, nc = new.operators.get(name, (0.0, 0))
        bt, nt = bt / base.steps, nt / new.steps
        rows.append({"name": name, "base_us": bt, "new_us": nt, "delta_us": nt - bt,
                     "base_count": bc / base.steps, "new_count": nc / new.steps})
    rows.sort(key=lambda r: (-abs(r["delta_us"]), r["name"]))
    return rows[:top]


def compare(base: RunData, new: RunData, top: int = TOP_OPERATORS) -> dict:
    """The comparison document (``npu-tui diff --format json``); times in µs per profiled step."""
    v = verdict(base.step_us, new.step_us)
    v["source"] = base.step_source if base.step_source == new.step_source else (
        f"{base.step_source} / {new.step_source}")
    return {
        "schema_version": SCHEMA_VERSION,
        "base": {"path": base.path, "steps": len(base.step_us)},
        "new": {"path": new.path, "steps": len(new.step_us)},
        "verdict": v,
        "stages": _stage_deltas(base, new),
        "categories": _category_deltas(base, new),
        "findings": _finding_changes(base, new),
        "operators": _operator_moves(base, new, top),
    }


def _ms(us: Optional[float]) -> str:
    return "-" if us is None else f"{us / 1e3:.3f}"


def _signed_ms(us: Optional[float]) -> str:
    return "-" if us is None else f"{us / 1e3:+.3f}"


def _signed_pct(p: Optional[float]) -> str:
    return "-" if p is None else f"{p * 100:+.1f}%"


def _table(headers: List[str], rows: List[List[str]], md: bool, labels: int) -> List[str]:
    """A table; the first ``labels`` columns are text (left-aligned), the rest numbers."""
    if md:
        return (["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
                + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: List[str]) -> str:
        return "  ".join(c.ljust(w) if i < labels else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def verdict_line(d: dict) -> str:
    v = d["verdict"]
    if v["verdict"] == "undetermined":
        return f"undetermined: {v['reason']}"
    return (f"{v['verdict']}: step {_ms(v['base_step_us'])} ms -> {_ms(v['new_step_us'])} ms "
            f"({_signed_ms(v['delta_us'])} ms, {_signed_pct(v['delta_pct'])}), "
            f"noise ±{_ms(v['noise_us'])} ms from {d['base']['steps']}+{d['new']['steps']} "
            f"steps ({v['source']})")


def _finding_text(f: dict) -> str:
    value = f.get("value")
    shown = f"{value:.3f}" if isinstance(value, (int, float)) else str(value)
    text = f"{f['rule']} (rank {f['rank']}, {f['stage']}): {f.get('metric') or 'value'} {shown}"
    text += f" > {f['threshold']}" if f.get("threshold") is not None else ""
    return text + (f" -> {f['direction']}" if f.get("direction") else "")


def render(d: dict, fmt: str = "text") -> str:
    """The comparison for people: ``text`` for the terminal, ``md`` for a pull request."""
    md = fmt == "md"
    head = (lambda s: f"## {s}") if md else (lambda s: s)
    lines = [("# " if md else "") + "npu-tui diff",
             f"base: {d['base']['path']} ({d['base']['steps']} steps)",
             f"new:  {d['new']['path']} ({d['new']['steps']} steps)",
             "", ("**Verdict:** " if md else "Verdict: ") + verdict_line(d), ""]
    lines.append(head("Stages (kernel time per step)"))
    lines += _table(["rank", "stage", "base ms", "new ms", "delta ms", "delta %"],
                    [[str(r["rank"]), r["stage"], _ms(r["base_us"]), _ms(r["new_us"]),
                      _signed_ms(r["delta_us"]), _signed_pct(r["delta_pct"])]
                     for r in d["stages"]], md, labels=2)
    lines += ["", head("Categories (per step)")]
    lines += _table(["rank", "stage", "category", "base ms", "new ms", "delta ms", "base share",
                     "new share"],
                    [[str(r["rank"]), r["stage"], r["category"], _ms(r["base_us"]),
                      _ms(r["new_us"]), _signed_ms(r["delta_us"]), f"{r['base_share']:.3f}",
                      f"{r['new_share']:.3f}"]
                     for r in d["categories"] if r["base_us"] or r["new_us"]], md, labels=3)
    lines += ["", head("Findings")]
    f = d["findings"]
    lines += [f"- appeared: {_finding_text(x)}" for x in f["appeared"]]
    lines += [f"- cleared: {_finding_text(x)}" for x in f["cleared"]]
    lines += [f"- still: {x['rule']} (rank {x['rank']}, {x['stage']}): "
              f"{x['base_value']:.3f} -> {x['new_value']:.3f}" for x in f["remaining"]]
    if not any(f.values()):
        lines.append("- none in either run")
    lines += ["", head("Operators that moved most (per step)")]
    lines += _table(["operator", "base ms", "new ms", "delta ms", "base n", "new n"],
                    [[r["name"], _ms(r["base_us"]), _ms(r["new_us"]), _signed_ms(r["delta_us"]),
                      f"{r['base_count']:g}", f"{r['new_count']:g}"] for r in d["operators"]], md,
                    labels=1)
    return "\n".join(lines) + "\n"
