"""The report for people (text, Markdown) and machines (JSON); one layout, two table styles."""

from __future__ import annotations

import json
import re
import secrets
import textwrap
from typing import Any, Dict, List, Sequence, Tuple

from ..text import (UNMARKED, account_check, apart_line, apart_mark, apart_ranks, exposed_parts, finding_where, literal,
                    lost_phrase, markdown, metric_value, no_findings, per_step, per_what, rank_list, saving_place,
                    steps_unmarked, table, waited_for_text)

FORMATS = ("text", "md", "json")

Column = Tuple[str, str]  # (key, header)
# Input shapes of fused ops run to hundreds of characters; the JSON keeps them whole.
MAX_CELL = 48
TEXT_WIDTH = 110  # the text report's prose lines, wrapped for a terminal


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) >= 1 or v == 0 else f"{v:.3f}"
    text = ", ".join(literal(x) for x in v) if isinstance(v, (list, tuple)) else literal(v)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."


def percent(v: Any) -> str:
    """A share (0..1) as a percentage; every share and spread a report prints goes through it."""
    return "-" if v is None else f"{100 * v:.1f}%"


def _table(rows: List[Dict[str, Any]], cols: Sequence[Column], md: bool,
           pct: Sequence[str] = ()) -> List[str]:
    if not rows:
        return ["(none)", ""]
    cells = [[(percent(r.get(k)) if k in pct else _cell(r.get(k))) for k, _ in cols] for r in rows]
    return table([h for _, h in cols], cells, md) + [""]


def _heading(title: str, md: bool, level: int = 2) -> List[str]:
    if md:
        return ["#" * level + " " + title, ""]
    return [title, "=" * len(title) if level == 1 else "-" * len(title)]


def _text(v: Any, md: bool) -> str:
    """Profile or rules text outside the tables: literal, and not Markdown markup in md."""
    return markdown(v) if md else literal(v)


def _ms(us: Any) -> str:
    return "-" if us is None else f"{us / 1e3:,.3f} ms"


def finding_title(f: Dict[str, Any]) -> str:
    """rule (stage, ranks ...): metric value > threshold — the same words on every output."""
    return (f"{f['rule']} ({finding_where(f)}): {f['metric']} {metric_value(f['metric'], f['value'])} > "
            f"{metric_value(f['metric'], f['threshold'])}")


def finding_detail(f: Dict[str, Any]) -> List[str]:
    """What a finding says beyond its title, one line each, in plain words."""
    lines = [f"Direction: {f['direction']}"]
    split = f["evidence"].get("exposed_split")
    if split:
        lines.append(f"Exposed on rank {f['rank']}, {per_step(f)}: " + ", ".join(
            f"{d} {_ms(us)}" for d, us in exposed_parts(split)))
    if f.get("waited_for") is not None:
        said = waited_for_text(f)
        lines.append(said[0].upper() + said[1:] + ".")
    for d in f["docs"]:
        lines.append(f"Do: {d['action']} (see {d['repository']}: {d['path']})")
    lines.append(f"Saves about {_ms(f['saving_us'])} {per_step(f)} {saving_place(f)}, with {f['estimate']}")
    if f["per_rank"] and all(r.get("apart") for r in f["per_rank"]):
        lines.append(apart_line(f["per_rank"]))
    if len(f["per_rank"]) > 1:
        lines.append("Per rank: " + "; ".join(
            f"rank {r['rank']} {metric_value(f['metric'], r['value'])}, {_ms(r['saving_us'])} {per_step(f)}"
            + (f" (not compared: {r['apart']})" if r.get("apart") else "")
            for r in f["per_rank"]))
    return lines


def _findings(report: Dict[str, Any], md: bool) -> List[str]:
    out: List[str] = []
    if not report["findings"]:
        return [f"No findings: {no_findings(report)}.", ""]
    for f in report["findings"]:
        title = _text(finding_title(f), md)
        body = [_text(line, md) for line in finding_detail(f)]
        sql = "\n".join(literal(line) for line in f["evidence"]["sql"].splitlines())
        if md:
            out += [f"### {title}", ""] + [f"- {b}" for b in body]
            out += ["", "Evidence:", "", "```sql", sql.replace("```", "` ` `"), "```", ""]
        else:
            out += [f"* {title}"] + [w for b in body for w in textwrap.wrap(
                b, TEXT_WIDTH, initial_indent="    ", subsequent_indent="        ")] + [f"    Evidence: {sql}"]
        top = f["evidence"].get("top_operators")
        gaps = f["evidence"].get("idle_gaps")
        if top:
            # A finding of one stage lists that stage's operators; a spread across ranks, all of the rank's.
            scope = () if f["stage"] else (("stage", "stage"), ("category", "category"))
            cols = scope + (("type", "type"), ("op", "operator"), ("input_shapes", "input shapes"),
                            ("count", "count"), ("time_us", "time, total (us)"), ("share", "share"))
            lines = _table(top, cols, md, pct=("share",))
        elif gaps:
            lines = _table(gaps, (("step", "step"), ("between_steps", "between steps"), ("stage", "stage"),
                                  ("start_us", "at (us from the first kernel)"),
                                  ("gap_us", "idle (us)"), ("host_range", "the host meanwhile")), md)
        else:
            lines = [""]
        out += lines if md else ["    " + t for t in lines]
    return out


def _account(report: Dict[str, Any], md: bool) -> List[str]:
    rows = report.get("step_account", [])
    if not rows:
        return ["(none)", ""]
    out = []
    apart = apart_ranks(report)
    for rank in sorted({r["rank"] for r in rows}):
        first = next(r for r in rows if r["rank"] == rank)
        mark = apart_mark(apart, rank)
        left = f"; {first['left_out']} warm-up step(s) left out" if first["left_out"] else ""
        step = sum(r["us_per_step"] for r in rows if r["rank"] == rank and r["part"] != "between")
        gap = sum(r["us_per_step"] for r in rows if r["rank"] == rank and r["part"] == "between")
        between = f" + {_ms(gap)} between steps" if gap else ""
        bullet = "- " if md else ""  # (one line a rank: in Markdown a list, not one paragraph)
        if steps_unmarked(report, rank):
            out.append(f"{bullet}rank {rank}: {_ms(step)}{between} ({UNMARKED}){mark}")
        else:
            out.append(f"{bullet}rank {rank}: {_ms(step)} per step{between}, mean of {first['steps']} step(s){left}"
                       f"{mark}")
    check = account_check(report.get("step_account_check", []))
    if check:
        line = _text("The account " + check[0], md)
        out += [""] if md else []
        out.append(f"**{line}**" if md and check[1] else line)
    out.append("")
    return out + _table(rows, [("rank", "rank"), ("stage", "stage"), ("part", "part"), ("detail", "of it"),
                               ("us_per_step", "time (us)" if steps_unmarked(report) else "per step (us)"),
                               ("share", "share")], md, pct=("share",))


def _health(report: Dict[str, Any], md: bool) -> List[str]:
    """First, when the load skipped something: an incomplete run says so before any figure."""
    items = [h for h in report.get("health", []) if h["severity"] != "info"]
    if not items:
        return []
    out: List[str] = []
    errors = [h for h in items if h["severity"] == "error"]
    if errors:
        head = (f"INCOMPLETE: {lost_phrase([h['file'] for h in errors])} could not be loaded whole; every "
                "figure below lacks what is missing.")
        out += [f"**{head}**" if md else head, ""]
    out += _heading("Data health", md)
    for h in items:  # in health's order
        where = f"rank {h['rank']}: " if h["rank"] is not None else ""
        line = f"{h['severity']}: {where}{h['what']}" + (f" ({h['fix']})" if h["fix"] else "")
        out.append(("- " if md else "") + _text(line, md))
    return out + [""]


def stand_ins(report: Dict[str, Any]) -> List[int]:
    """The ranks not loaded that msprof-analyze's cluster step trace stands in for (compared by its
    figures beside the loaded ranks)."""
    return [r["rank"] for r in report.get("cluster", {}).get("ranks", [])
            if r.get("step_source") == "cluster_step_trace"]


def _document(report: Dict[str, Any], md: bool) -> str:
    p = report["profile"]
    out = _heading("npu-tui report", md, 1)
    if not md:
        out.append("")
    cluster = report.get("cluster", {})
    stand_in = stand_ins(report)
    out += [f"Profile: {_text(p['path'], md)} ({_text(p['format'], md)}, "
            f"ranks {', '.join(map(str, p['ranks'])) or '-'}"
            f"{f'; {rank_list(stand_in)} by the cluster step trace' if stand_in else ''})", ""]
    out += _health(report, md)

    out += _heading("Findings", md)
    out += _findings(report, md)

    # A profile that numbers no steps: its tables are of the whole profile, and say so.
    unmarked, each = steps_unmarked(report), per_what(report)
    per = "" if unmarked else ", per step"
    out += _heading(f"Step account ({each})", md)
    out += _account(report, md)

    out += _heading(f"Step breakdown (us, {each})", md)
    # A pipeline's bubble (its receives), which Stage leaves out of the step: said where there is one.
    bubble = [("bubble_us", "bubble"), ("step_us", "step")] if any(s.get("bubble_us") for s in report["steps"]) else []
    out += _table(report["steps"], [("rank", "rank"), ("step", "step"), ("computing_us", "computing"),
                                    ("comm_not_overlapped_us", "comm not overlapped"),
                                    ("overlapped_us", "overlapped"), ("free_us", "free"),
                                    ("stage_us", "stage"), *bubble, ("source", "source"), ("outlier", "warm-up")], md)

    out += _heading("Stages", md)
    det = {d["rank"]: d for d in report.get("stage_detection", [])}
    apart = apart_ranks(report)
    out += [("- " if md else "") + f"rank {r}: {_text(d['summary'], md)}{apart_mark(apart, r)}"
            for r, d in sorted(det.items())] + [""]
    rows = [dict(s, confidence=det.get(s["rank"], {}).get("confidence")) for s in report["stages"]]
    out += _table(rows, [("rank", "rank"), ("stage", "stage"), ("wall_us", "wall, total (us)"),
                         ("kernel_time_us", "kernel time, total (us)"), ("kernel_count", "kernels"),
                         ("forwards", "forwards a call"), ("method", "method"), ("confidence", "confidence")], md,
                  pct=("confidence",))

    out += _heading("Stage x category", md)
    cats = [c for c in report["categories"] if c["count"]]
    out += _table(cats, [("rank", "rank"), ("stage", "stage"), ("category", "category"),
                         ("time_us", "time, total (us)"), ("count", "kernels"), ("share", "share")], md,
                  pct=("share",))

    out += _heading("Exposed communication", md)
    steps = [] if unmarked else [("steps", "steps"), ("comm_us_per_step", "comm, per step (us)"),
                                 ("exposed_us_per_step", "exposed, per step (us)")]
    out += _table(report["comm"], [("rank", "rank"), ("stage", "stage"), ("comm_us", "comm, total (us)"),
                                   ("exposed_us", "exposed, total (us)"), *steps,
                                   ("exposed_share", f"of the stage{per}"), ("source", "source")],
                  md, pct=("exposed_share",))
    if steps and report["comm"]:  # (total / steps is not the per-step figure where a warm-up step ran)
        out += ["Totals: all of the stage's time, warm-up steps included. Per step: the mean over the",
                "steps counted, warm-up steps left out, as in every per-step figure.", ""]

    peaks = report.get("memory", {}).get("peaks", [])
    if peaks:
        out += _heading("Memory peaks (MB)", md)
        out += _table(peaks, [("rank", "rank"), ("stage", "stage"), ("peak_allocated_mb", "allocated"),
                              ("peak_reserved_mb", "reserved"), ("peak_stage", "reserved peak in"),
                              ("idle_reserved_share", "reserved idle at it"), ("growth", "DiT forwards' growth")],
                      md, pct=("idle_reserved_share", "growth"))

    if len(cluster.get("ranks", [])) > 1:  # (with the ranks the cluster step trace gives)
        out += _heading("Ranks", md)
        out += _table(cluster.get("ranks", []), [("rank", "rank"), ("steps", "steps"), ("outliers", "warm-up"),
                                                 ("step_time_us", f"step time{per} (us)"),
                                                 ("exposed_comm_us", f"exposed comm{per} (us)"),
                                                 ("own_us", f"own time{per} (us)"),
                                                 ("step_source", "from")], md)
        out += _table(cluster.get("spread", []), [("measure", "measure" if unmarked else "measure (per step)"),
                                                  ("min_us", "min (us)"),
                                                  ("max_us", "max (us)"), ("mean_us", "mean (us)"),
                                                  ("spread", "(max-min)/mean"), ("slow_rank", "slow rank")],
                      md, pct=("spread",))
        apart = [f"rank {r['rank']} ({r['apart']})" for r in cluster.get("ranks", []) if r.get("apart")]
        if apart:
            out += [f"Not compared: {', '.join(apart)}; see Data health.", ""]
    if cluster.get("comm_ops"):
        out += _heading("Communication ops (ms, total)", md)
        out += _table(cluster["comm_ops"], [("rank", "rank"), ("op_type", "op"), ("ops", "count"),
                                            ("elapse_ms", "elapse"), ("transit_ms", "transit"),
                                            ("wait_ms", "wait"), ("sync_ms", "of it sync"), ("idle_ms", "idle"),
                                            ("wait_ratio", "wait share"), ("exposed_ms", "exposed")], md,
                      pct=("wait_ratio",))
    if any(w.get("collectives") for w in cluster.get("waits", [])):
        out += _heading("Waiting at the collectives (ms, total)", md)
        out += _table([w for w in cluster["waits"] if w.get("collectives")],
                      [("rank", "rank"), ("collectives", "collectives"), ("wait_ms", "own wait"),
                       ("peers_wait_ms", "peers' wait"), ("times_last", "came last"),
                       ("waited_for", "waited for")], md)
    if cluster.get("links"):
        out += _heading("Links (total)", md)
        out += _table(cluster["links"], [("src_rank", "src"), ("dst_rank", "dst"), ("transport", "link"),
                                         ("size_mb", "MB"), ("time_ms", "ms"), ("gbps", "GB/s"),
                                         ("median_gbps", "median GB/s"), ("slow", "slow"),
                                         ("reported_by", "reported by"), ("dst_local", "dst in group"),
                                         ("comm_group", "group")], md)
    if cluster.get("step_trace"):
        out += _heading("Cluster step trace (msprof-analyze, us)", md)
        out += _table(cluster["step_trace"], [("step", "step"), ("type", "type"), ("rank", "rank"), ("ranks", "ranks"),
                                              ("computing_us", "computing"), ("comm_not_overlapped_us", "comm not overlapped"),
                                              ("free_us", "free"), ("stage_us", "stage")], md)
    if cluster.get("bandwidth"):
        out += _heading("Bandwidth per link type (total)", md)
        out += _table(cluster["bandwidth"], [("rank", "rank"), ("transport", "link"), ("part_of", "part of"),
                                             ("size_mb", "MB"), ("time_ms", "ms"),
                                             ("bandwidth_gbps", "GB/s")], md)
    return "\n".join(out).rstrip() + "\n"


class Encoded:
    """Rows that DuckDB wrote as a JSON array, written out as they are. For the report's biggest
    arrays (64 ranks: 74k stage windows, 74k forwards) building them in Python and encoding them
    again took half a reopened report's time."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


# Compact, as DuckDB writes the Encoded arrays: one spacing for the whole document.
SEPARATORS = (",", ":")


def _json(report: Dict[str, Any]) -> str:
    """One top-level key a line, each value compact (an indenting json.dumps runs the pure-Python
    encoder, 3x the C encoder's time). Each Encoded value goes in as a token, then its text
    replaces the token in one pass."""
    texts: List[str] = []
    token = f"encoded-{secrets.token_hex(8)}-"

    def encode(o: Any) -> str:
        if not isinstance(o, Encoded):
            raise TypeError(f"{type(o).__name__} is not JSON serializable")
        # DuckDB writes text outside ASCII as it is; the document escapes it, so that it prints
        # on any stdout (rare: a stage or name outside ASCII).
        texts.append(o.text if o.text.isascii() else json.dumps(json.loads(o.text), separators=SEPARATORS))
        return f"{token}{len(texts) - 1}"

    out = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, default=encode, separators=SEPARATORS)}"
                              for k, v in report.items()) + "\n}"
    if not texts:
        return out
    return re.sub(f'"{token}(\\d+)"', lambda m: texts[int(m.group(1))], out)


def render(report: Dict[str, Any], fmt: str) -> str:
    """The report as "text", "md" or "json" (the §7 document, nothing else on stdout)."""
    if fmt == "json":
        return _json(report) + "\n"
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return _document(report, md=(fmt == "md"))
