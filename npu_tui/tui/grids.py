"""What each table on screen shows: an analysis view, its columns, and the drill-down from a row to
the next level. Specs only: the views are ``analysis/sql/*.sql``, the SQL around them is GridQuery's.
Times are µs unless a column says ms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from ..text import COUNT_METRICS
from .cells import Column, literal
from .grid import GridQuery

Row = Dict[str, Any]


@dataclass(frozen=True)
class Drill:
    """A level: its query, and how a row of it opens the next level (None: the bottom)."""

    query: GridQuery
    child: Optional[Callable[[Row], "Drill"]] = None


STATS = (Column("count", "count", "int"), Column("total_us", "total", "us"),
         Column("mean_us", "mean", "us"), Column("max_us", "max", "us"),
         Column("share", "share", "share"))
TYPE_COLUMNS = (Column("type", "type"),) + STATS
OP_COLUMNS = (Column("op", "operator", identity=True), Column("input_shapes", "input shapes", "list")) + STATS
INSTANCE_COLUMNS = (Column("rank", "rank", "int"), Column("step", "step", "int"),
                    Column("start_us", "start", "us"), Column("dur_us", "dur", "us"),
                    Column("wait_us", "wait", "us"), Column("block_dim", "blocks", "int"),
                    Column("stream_id", "stream", "int"), Column("name", "name"),
                    Column("input_shapes", "input shapes", "list"), Column("input_dtypes", "dtypes", "list"))
RANK_COLUMNS = (Column("rank", "rank", "int"), Column("device_id", "device", "int"),
                Column("kernels", "kernels", "int"), Column("kernel_time_us", "kernel time", "us"),
                Column("span_us", "span", "us"), Column("step_time_us", "step", "us"),
                Column("own_us", "own/step", "us"), Column("vs_mean", "own vs mean", "float"),
                Column("exposed_comm_us", "exposed/step", "us"), Column("free_us", "free+copy", "us"),
                Column("source_format", "format"),
                Column("profiler_level", "level"))
# Exposed beside elapse: what the step pays for is the part no compute covers. Wait as
# communication.json gives it, synchronization part of it (the Overview splits them apart).
COMM_OP_COLUMNS = (Column("rank", "rank", "int"), Column("op_type", "op"), Column("ops", "count", "int"),
                   Column("elapse_ms", "elapse ms", "ms"), Column("exposed_ms", "exposed ms", "ms"),
                   Column("transit_ms", "transit ms", "ms"), Column("wait_ms", "wait ms", "ms"),
                   Column("sync_ms", "of it sync ms", "ms"), Column("idle_ms", "idle ms", "ms"),
                   Column("wait_ratio", "wait", "share"), Column("sync_ratio", "sync", "share"),
                   Column("groups", "group"))
COMM_LINK_COLUMNS = (Column("src_rank", "src", "int"), Column("dst_rank", "dst", "int"),
                     Column("transport", "transport"), Column("ops", "ops", "int"),
                     Column("size_mb", "MB", "float"), Column("time_ms", "time ms", "ms"),
                     Column("gbps", "GB/s", "float"), Column("median_gbps", "median GB/s", "float"),
                     Column("slow", "slow", "flag"), Column("dst_local", "dst in group", "int"),
                     Column("comm_group", "group"))
FINDING_COLUMNS = (Column("type", "type"),) + OP_COLUMNS

RANKS = GridQuery("Ranks (kernel time, span: totals; the rest: mean per step)", "rank_times",
                  RANK_COLUMNS, sort="rank", descending=False, highlight="slow")
COMM_OPS = GridQuery("Comm operators (totals over the profile)", "comm_op_times", COMM_OP_COLUMNS, sort="elapse_ms")
COMM_LINKS = GridQuery("Bandwidth per link (slow links highlighted)", "comm_links", COMM_LINK_COLUMNS,
                       sort="size_mb", highlight="slow")


# -- the operator hierarchy: type → operators by input shapes → kernel instances ----------------


def instances(row: Row, view: str = "kernel_instances", args: Tuple[Any, ...] = (), **scope: Any) -> Drill:
    """The kernels of one (type, operator, input shapes) group, within ``scope`` (rank, stage); of
    ``view`` called with ``args`` (a time range's kernels) where given."""
    shapes = row.get("input_shapes")
    title = literal(row["op"]) + (f" [{literal(shapes)}]" if shapes else "")
    where = (("type", row["type"]), ("op", row["op"]), ("input_shapes", shapes)) + tuple(scope.items())
    return Drill(GridQuery(title, view, INSTANCE_COLUMNS, where=where, sort="dur_us", filter_also=("core",),
                           args=args))


def operators_of_type(row: Row) -> Drill:
    return Drill(GridQuery(literal(row["type"]), "operator_shapes", OP_COLUMNS, where=(("type", row["type"]),),
                           sort="total_us"), instances)


def operator_types() -> Drill:
    return Drill(GridQuery("Operators", "operator_types", TYPE_COLUMNS, sort="total_us", filter_also=("operators",)), operators_of_type)


def rank_operators(row: Row) -> Drill:
    """A rank's operators, then their kernels on that rank."""
    rank = row["rank"]
    return Drill(GridQuery(f"rank {rank} · operators", "rank_operators", (Column("type", "type"),) + OP_COLUMNS,
                           where=(("rank", rank),), sort="total_us"),
                 lambda op: instances(op, rank=rank))


def range_operators(args: Tuple[int, int, int], label: str) -> Drill:
    """A Timeline range's operators (time inside the range), then their kernels in it; ``args``:
    rank and [t0, t1) ns on the profile's clock."""
    columns = (Column("type", "type"), Column("category", "category")) + OP_COLUMNS
    return Drill(GridQuery(f"rank {args[0]} · {label} · operators (time inside the range)", "range_operators",
                           columns, sort="total_us", args=args),
                 lambda op: instances(op, view="range_kernels", args=args))


MEMORY_OP_COLUMNS = (Column("rank", "rank", "int"), Column("name", "operator"),
                     Column("allocations", "allocs", "int"), Column("total_mb", "total MB", "float"),
                     Column("max_mb", "largest MB", "float"), Column("mean_held_ms", "held ms", "ms"),
                     Column("held_mb_s", "MB·s held", "float"), Column("never_released", "kept", "int"),
                     Column("stage", "stage"))
ALLOCATION_COLUMNS = (Column("rank", "rank", "int"), Column("stage", "stage"), Column("size_mb", "MB", "float"),
                      Column("at_us", "at", "us"), Column("held_ms", "held ms", "ms"),
                      Column("allocated_mb", "allocated MB", "float"), Column("reserved_mb", "reserved MB", "float"),
                      Column("name", "operator"))


def memory_operators() -> Drill:
    """The operators that allocate most, then one's allocations on its rank."""
    def allocations(row: Row) -> Drill:
        return Drill(GridQuery(f"{literal(row['name'])} · rank {row['rank']} · allocations", "memory_allocations",
                               ALLOCATION_COLUMNS, where=(("rank", row["rank"]), ("name", row["name"])),
                               sort="size_mb"))

    return Drill(GridQuery("Operators by memory allocated", "memory_operators",
                           MEMORY_OP_COLUMNS, sort="total_mb"), allocations)


def ranks() -> Drill:
    return Drill(RANKS, rank_operators)


FIND = GridQuery("Find a kernel or operator", "kernel_names",
                 (Column("type", "type"), *OP_COLUMNS[:2], Column("name", "kernel name"),
                  Column("kernels", "kernels", "int"), Column("total_us", "total", "us")), sort="total_us")


def found(row: Row) -> Tuple[Tuple[Tuple[str, ...], Drill], ...]:
    """The drill levels a found row opens, as (crumbs above, level): its type's operators, then
    the kernels of its operator and shapes."""
    return ((("Operators",), operators_of_type(row)),
            (("Operators", literal(row["type"])), instances(row)))


# -- a finding → its ranks (finding_ranks) → on one, the operators behind it (finding_operators) or,
# for device idle, its longest idle gaps (idle_gaps) → the operators' kernels, of that rank and stage --

GAP_COLUMNS = (Column("step", "step", "int"), Column("between_steps", "between steps", "flag"), Column("stage", "stage"),
               Column("start_us", "at (from first kernel)", "us"),
               Column("gap_us", "idle", "us"), Column("host_range", "the host meanwhile"))


WAIT_COLUMNS = (Column("rank", "rank", "int"), Column("collectives", "collectives", "int"),
                Column("wait_ms", "own wait ms", "ms"), Column("peers_wait_ms", "peers' wait ms", "ms"),
                Column("caused_wait_ms", "caused ms", "ms"), Column("times_last", "came last", "int"),
                Column("step_time_us", "step", "us"), Column("exposed_comm_us", "exposed/step", "us"))
RANK_WAITS = GridQuery("ranks side by side at the collectives (the rank waited for highlighted)", "rank_waits",
                       WAIT_COLUMNS, sort="caused_wait_ms", highlight="waited_for")


def _rank_columns(metric: str) -> Tuple[Column, ...]:
    kind = "float" if metric in COUNT_METRICS else "share"
    # (a rank not compared, its file cut, can top the list: said beside it, not left to pass for the worst)
    return (Column("rank", "rank", "int"), Column("value", metric, kind), Column("apart", "not compared"),
            Column("cause", "cause"), Column("saving_us", "saves per step", "us"), Column("direction", "direction"))


def findings_drill(f: Row) -> Drill:
    title = f"{f['rule']}" + (f" · {f['stage']}" if f.get("stage") else "")

    def behind(row: Row) -> Drill:
        where = f"rank {row['rank']}"
        # who waits for whom: every rank, not the slow one's operators (where waits are measured)
        if f["metric"] == "spread" and f.get("category") == "exposed_comm" and f.get("cause") != "least_exposed":
            return Drill(RANK_WAITS)
        if f["metric"] == "spread":
            # the ranks side by side: a rank by the cluster step trace has no operators, and an
            # inferred waited-for rank no waits to show
            return ranks()
        if f["metric"] == "idle_share":
            return Drill(GridQuery(f"idle gaps · {where}", "idle_gaps", GAP_COLUMNS, where=(("rank", row["rank"]),),
                                   sort="gap_us"))

        def kernels(op: Row) -> Drill:
            return instances(op, rank=row["rank"], stage=op["kernel_stage"])

        return Drill(GridQuery(f"operators · {where}", "finding_operators", FINDING_COLUMNS,
                               where=(("rule", f["rule"]), ("rank", row["rank"]), ("stage", f.get("stage"))),
                               sort="total_us"), kernels)

    return Drill(GridQuery(title, "finding_ranks", _rank_columns(f["metric"]),
                           where=(("rule", f["rule"]), ("stage", f.get("stage"))), sort="value"), behind)
