"""Before / after: compare two profiles' reports, step times and operators (``npu-tui diff``).

Every time is per profiled step, so runs with different step counts compare fairly. The verdict
compares mean step times against the noise the profiled steps themselves show: the difference of
the means must exceed ``NOISE_SIGMAS`` standard errors to count as faster or slower.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..text import apart_ranks, finding_where, literal, lost_phrase, markdown, metric_value, table
from .render import percent

SCHEMA_VERSION = 1
# Two standard errors of the difference of means: about a 95% two-sided interval.
NOISE_SIGMAS = 2.0
TOP_OPERATORS = 10

# The report's own step times (step_breakdown), one per profiled step: the slowest rank's, with
# whether it is a warm-up outlier (left out of the verdict as out of every mean).
STEP_TIMES_SQL = "SELECT step_us, outlier FROM step_times ORDER BY step"
STEP_SOURCE_SQL = "SELECT string_agg(DISTINCT source, ', ' ORDER BY source) FROM step_breakdown"
# Operators by identity (per-call suffixes and HCCL run ids stripped), so runs pair them up.
OPERATOR_TIMES_SQL = "SELECT op, total_us, count FROM operator_totals"


@dataclass
class RunData:
    """What the comparison needs from one profile."""

    path: str
    report: dict
    step_us: List[float]  # one per profiled step but the warm-up outliers; empty without step data
    step_source: str  # where the step times come from (step_breakdown's source), or "none"
    operators: Dict[str, Tuple[float, int]]  # operator -> (total µs, count)
    left_out: int = 0  # warm-up outlier steps, not in step_us

    @property
    def steps(self) -> int:
        """How many steps the totals cover, outliers too (1 when unknown, so totals stay as they are)."""
        return max(len(self.step_us) + self.left_out, 1)


def run_data(con, path: str, report: dict) -> RunData:
    """A loaded, analysed profile's step times and operator totals next to its report."""
    steps = con.execute(STEP_TIMES_SQL).fetchall()
    step_us = [float(us) for us, outlier in steps if not outlier]
    source = con.execute(STEP_SOURCE_SQL).fetchone()[0] if steps else None
    ops = {op: (float(us), int(n)) for op, us, n in con.execute(OPERATOR_TIMES_SQL).fetchall()}
    return RunData(path, report, step_us, source or "none", ops, left_out=len(steps) - len(step_us))


def relative_change(base: float, new: float) -> Optional[float]:
    """(new - base) / base; None when there is no base to compare with."""
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
            "delta_pct": relative_change(mb, mn), "noise_us": noise}


def _rows_by(rows: List[dict], key: Tuple[str, ...]) -> Dict[tuple, dict]:
    return {tuple(r[k] for k in key): r for r in rows}


def _apart(base: RunData, new: RunData) -> Dict[int, str]:
    """Per rank that either run leaves out of its comparisons (a file cut, another run's), why and
    in which run: its rows compare figures that lack what is missing."""
    b, n = apart_ranks(base.report), apart_ranks(new.report)
    return {r: "; ".join(f"{why[r]} in the {side} run" for side, why in (("base", b), ("new", n)) if r in why)
            for r in sorted(set(b) | set(n))}


def _stage_deltas(base: RunData, new: RunData, apart: Dict[int, str]) -> List[dict]:
    b = _rows_by(base.report.get("stages", []), ("rank", "stage"))
    n = _rows_by(new.report.get("stages", []), ("rank", "stage"))
    out = []
    for key in sorted(set(b) | set(n), key=str):
        rb, rn = b.get(key, {}), n.get(key, {})
        bt = float(rb.get("kernel_time_us") or 0.0) / base.steps
        nt = float(rn.get("kernel_time_us") or 0.0) / new.steps
        out.append({"rank": key[0], "apart": apart.get(key[0]), "stage": key[1], "base_us": bt, "new_us": nt,
                    "delta_us": nt - bt, "delta_pct": relative_change(bt, nt),
                    "base_wall_us": float(rb.get("wall_us") or 0.0) / base.steps,
                    "new_wall_us": float(rn.get("wall_us") or 0.0) / new.steps,
                    "base_method": rb.get("method"), "new_method": rn.get("method")})
    return out


def _category_deltas(base: RunData, new: RunData, apart: Dict[int, str]) -> List[dict]:
    key = ("rank", "stage", "category")
    b = _rows_by(base.report.get("categories", []), key)
    n = _rows_by(new.report.get("categories", []), key)
    out = []
    for k in sorted(set(b) | set(n), key=str):
        rb, rn = b.get(k, {}), n.get(k, {})
        bt = float(rb.get("time_us") or 0.0) / base.steps
        nt = float(rn.get("time_us") or 0.0) / new.steps
        out.append({"rank": k[0], "apart": apart.get(k[0]), "stage": k[1], "category": k[2], "base_us": bt, "new_us": nt,
                    "delta_us": nt - bt, "delta_pct": relative_change(bt, nt),
                    "base_share": float(rb.get("share") or 0.0),
                    "new_share": float(rn.get("share") or 0.0)})
    return out


def _untested(f: dict, apart: Dict[int, str]) -> str:
    """Why a finding gone from the new run may only not have been tested there: its ranks, or for a
    rule across ranks any rank, left out of the comparisons in it (a file cut, another run's)."""
    ranks = sorted(r for r in apart if r in f.get("ranks", []) or f.get("metric") == "spread")
    return "; ".join(f"rank {r}, {apart[r]}" for r in ranks)


def _finding_changes(base: RunData, new: RunData) -> dict:
    key = ("rule", "stage")  # a finding is one per rule and stage, listing its ranks
    b = _rows_by(base.report.get("findings", []), key)
    n = _rows_by(new.report.get("findings", []), key)
    apart = apart_ranks(new.report)
    return {
        "appeared": [n[k] for k in sorted(set(n) - set(b), key=str)],
        # untested: the new run's ranks apart that the finding needed ("" when none)
        "cleared": [{**b[k], "untested": _untested(b[k], apart)} for k in sorted(set(b) - set(n), key=str)],
        "remaining": [{"rule": k[0], "stage": k[1], "metric": n[k].get("metric"),
                       "base_ranks": b[k].get("ranks"), "new_ranks": n[k].get("ranks"),
                       "base_value": b[k].get("value"), "new_value": n[k].get("value"),
                       "base_rank": b[k].get("rank"), "new_rank": n[k].get("rank"),
                       "threshold": n[k].get("threshold"),
                       "base_saving_us": b[k].get("saving_us"), "new_saving_us": n[k].get("saving_us")}
                      for k in sorted(set(b) & set(n), key=str)],
    }


def _operator_moves(base: RunData, new: RunData, top: int) -> List[dict]:
    rows = []
    for op in set(base.operators) | set(new.operators):
        bt, bc = base.operators.get(op, (0.0, 0))
        nt, nc = new.operators.get(op, (0.0, 0))
        bt, nt = bt / base.steps, nt / new.steps
        rows.append({"op": op, "base_us": bt, "new_us": nt, "delta_us": nt - bt,
                     "base_count": bc / base.steps, "new_count": nc / new.steps})
    rows.sort(key=lambda r: (-abs(r["delta_us"]), str(r["op"])))
    return rows[:top]


def compare(base: RunData, new: RunData, top: int = TOP_OPERATORS) -> dict:
    """The comparison document (``npu-tui diff --format json``); times in µs per profiled step."""
    v = verdict(base.step_us, new.step_us)
    v["source"] = base.step_source if base.step_source == new.step_source else (
        f"{base.step_source} / {new.step_source}")
    apart = _apart(base, new)
    return {
        "schema_version": SCHEMA_VERSION,
        "base": _run_head(base),
        "new": _run_head(new),
        "verdict": v,
        "stages": _stage_deltas(base, new, apart),
        "categories": _category_deltas(base, new, apart),
        "findings": _finding_changes(base, new),
        "operators": _operator_moves(base, new, top),
    }


def _run_head(run: RunData) -> dict:
    """Where a run came from, and the files its load lost: a run that is incomplete compares
    figures that leave them out."""
    failed = [h["file"] for h in run.report["health"] if h["severity"] == "error"]
    return {"path": run.path, "steps": len(run.step_us), "left_out": run.left_out,
            "complete": not failed, "failed": failed}


def value_change(x: dict, arrow: str) -> str:
    """A finding's worst value before and after; each with its rank where the worst rank changed
    (the two values are then not one rank's)."""
    before, after = metric_value(x["metric"], x["base_value"]), metric_value(x["metric"], x["new_value"])
    if x.get("base_rank") != x.get("new_rank"):
        before, after = f"{before} (rank {x['base_rank']})", f"{after} (rank {x['new_rank']})"
    return f"{before} {arrow} {after}"


def incomplete_lines(d: dict) -> List[str]:
    """One line for each run whose load lost a file (none when both are complete)."""
    return [f"INCOMPLETE: the {side} run: {lost_phrase(d[side]['failed'])} could not be loaded whole; its "
            "figures lack what is missing"
            for side in ("base", "new") if not d[side]["complete"]]


def rank_cell(row: dict) -> str:
    """A stage or category row's rank, marked where a run leaves it out of its comparisons."""
    return f"{row['rank']}{'✕' if row.get('apart') else ''}"


def apart_lines(d: dict) -> List[str]:
    """The footnote to the ✕ of rank_cell: each such rank and why."""
    apart = {r["rank"]: r["apart"] for r in d["stages"] + d["categories"] if r.get("apart")}
    return [f"✕ rank {r}: {why}" for r, why in sorted(apart.items())]


def _steps(n: int) -> str:
    return f"{n} step{'' if n == 1 else 's'}"


def _ms(us: Optional[float]) -> str:
    return "-" if us is None else f"{us / 1e3:.3f}"


def _signed_ms(us: Optional[float]) -> str:
    return "-" if us is None else f"{us / 1e3:+.3f}"


def signed_percent(p: Optional[float]) -> str:
    """A relative change as a signed percentage; "new" when there was nothing before it."""
    return "new" if p is None else f"{p * 100:+.1f}%"


def verdict_line(d: dict) -> str:
    v = d["verdict"]
    if v["verdict"] == "undetermined":
        return f"undetermined: {v['reason']}"
    return (f"{v['verdict']}: step {_ms(v['base_step_us'])} ms -> {_ms(v['new_step_us'])} ms "
            f"({_signed_ms(v['delta_us'])} ms, {signed_percent(v['delta_pct'])}), "
            f"noise ±{_ms(v['noise_us'])} ms from {d['base']['steps']}+{d['new']['steps']} "
            f"steps ({v['source']}){_left_out(d)}")


def _left_out(d: dict) -> str:
    n = d["base"].get("left_out", 0) + d["new"].get("left_out", 0)
    return f", {n} warm-up step{'s' if n > 1 else ''} left out" if n else ""


def _finding_text(f: dict, esc) -> str:
    metric = f.get("metric")
    text = f"{esc(f['rule'])} ({esc(finding_where(f))}): {esc(metric or 'value')} {metric_value(metric, f.get('value'))}"
    text += f" > {metric_value(metric, f['threshold'])}" if f.get("threshold") is not None else ""
    return text + (f" -> {esc(f['direction'])}" if f.get("direction") else "")


_NAMES = ("stage", "category", "operator")


def _table(headers: List[str], rows: List[list], md: bool) -> List[str]:
    """Names left, numbers (rank included) right, whatever a cell holds ("new", "-")."""
    return table(headers, rows, md, right=[h not in _NAMES for h in headers])


def render(d: dict, fmt: str = "text") -> str:
    """The comparison for people: ``text`` for the terminal, ``md`` for a pull request. Profile
    text (paths, stages, operators) is escaped as in the report."""
    md = fmt == "md"
    esc = markdown if md else literal
    head = (lambda s: f"## {s}") if md else (lambda s: s)
    lines = [("# " if md else "") + "npu-tui diff",
             f"base: {esc(d['base']['path'])} ({_steps(d['base']['steps'])})",
             f"new:  {esc(d['new']['path'])} ({_steps(d['new']['steps'])})",
             *incomplete_lines(d),
             "", ("**Verdict:** " if md else "Verdict: ") + verdict_line(d), ""]
    lines.append(head("Stages (kernel time per step)"))
    lines += _table(["rank", "stage", "base ms", "new ms", "delta ms", "delta %"],
                   [[rank_cell(r), r["stage"], _ms(r["base_us"]), _ms(r["new_us"]),
                     _signed_ms(r["delta_us"]), signed_percent(r["delta_pct"])]
                    for r in d["stages"]], md)
    lines += ["", head("Categories (per step)")]
    lines += _table(["rank", "stage", "category", "base ms", "new ms", "delta ms", "base share",
                    "new share"],
                   [[rank_cell(r), r["stage"], r["category"], _ms(r["base_us"]), _ms(r["new_us"]),
                     _signed_ms(r["delta_us"]), percent(r["base_share"]), percent(r["new_share"])]
                    for r in d["categories"] if r["base_us"] or r["new_us"]], md)
    apart = apart_lines(d)
    lines += ["", *(f"- {line}" if md else line for line in apart)] if apart else []
    lines += ["", head("Findings")]
    f = d["findings"]
    lines += [f"- appeared: {_finding_text(x, esc)}" for x in f["appeared"]]
    lines += [f"- cleared: {_finding_text(x, esc)}" + (f" (maybe only untested: the new run leaves out {x['untested']})"
                                                       if x["untested"] else "") for x in f["cleared"]]
    lines += [f"- still: {esc(x['rule'])} ({esc(finding_where({**x, 'ranks': x['new_ranks']}))}): "
              f"{value_change(x, '->')}" for x in f["remaining"]]
    if not any(f.values()):
        lines.append("- none in either run")
    lines += ["", head("Operators that moved most (per step, all ranks)")]
    lines += _table(["operator", "base ms", "new ms", "delta ms", "base n", "new n"],
                   [[r["op"], _ms(r["base_us"]), _ms(r["new_us"]), _signed_ms(r["delta_us"]),
                     f"{r['base_count']:g}", f"{r['new_count']:g}"] for r in d["operators"]], md)
    return "\n".join(lines) + "\n"
