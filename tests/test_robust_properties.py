"""Property tests: any bytes, CSV-ish or JSON-ish text given to any loader ends in a profile or a
ProfileError, never another exception; and exposed communication, computed by the analysis views
over random kernels, equals a brute-force interval computation and stays within comm time and wall."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import List, Tuple

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_tui.analysis import install_views, load_rules
from npu_tui.analysis.stages import set_stage_windows
from npu_tui.profile import ProfileError, connect, load_profile
from npu_tui.profile.sources import SOURCE_ORDER
from npu_tui.profile.sources.chrome_trace import STEP_FROM

# The name the profiler gives each kind's file (discovery falls back to it for unrecognised content).
FILE_NAME = {
    "kernel_details": "kernel_details.csv", "op_summary": "op_summary_20250101.csv",
    "sqlite_export": "ascend_pytorch_profiler_0.db", "trace_view": "trace_view.json",
    "msprof_timeline": "msprof_20250101.json", "kineto": "w0.1700000000000.pt.trace.json",
    "step_trace_time": "step_trace_time.csv", "communication": "communication.json",
    "communication_matrix": "communication_matrix.json", "op_statistic": "op_statistic.csv",
    "operator_details": "operator_details.csv", "memory_record": "memory_record.csv",
    "operator_memory": "operator_memory.csv", "npu_module_mem": "npu_module_mem.csv",
    "static_op_mem": "static_op_mem.csv", "profiler_metadata": "profiler_metadata.json",
}
HEADERS = {
    "kernel_details": ["Step Id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)",
                       "Wait Time(us)", "Block Dim", "Input Shapes"],
    "op_summary": ["Device_id", "Op Name", "OP Type", "Task Type", "Task Start Time(us)",
                   "Task Duration(us)", "Task Wait Time(us)"],
    "step_trace_time": ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Free", "Stage"],
    "op_statistic": ["OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Ratio(%)"],
    "operator_details": ["Name", "Input Shapes", "Call Stack", "Host Self Duration(us)",
                         "Device Self Duration(us)"],
    "memory_record": ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)",
                      "Total Active(MB)", "Device Type"],
    "operator_memory": ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Duration(us)",
                        "Allocation Total Allocated(MB)", "Device Type"],
    "npu_module_mem": ["Component", "Timestamp(us)", "Total Reserved(MB)", "Device"],
    "static_op_mem": ["Device_id", "Op Name", "Model Name", "Graph ID", "Node Index Start", "Node Index End",
                      "Size(KB)"],
}
SETTINGS = settings(max_examples=50, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

cells = st.one_of(
    st.sampled_from(["", "N/A", "NaN", "inf", "-inf", "-5", "0", "1e999", "1.69512E+15",
                     "1736408883704643.212\t", "99999999999999999.5", '"1,2;3,4"', "hcom_allReduce_",
                     "aclnnMm_MatMulCommon_MatMulV2", "AI_CORE", "HCCL", "\r", "\n", '"', "a\"b"]),
    st.text(max_size=12),
    st.integers(min_value=-2**70, max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@st.composite
def csv_text(draw, kind: str) -> bytes:
    header = HEADERS[kind]
    rows = draw(st.lists(st.lists(cells, min_size=0, max_size=len(header) + 2), max_size=8))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = ",".join(header) + end + "".join(",".join(r) + draw(st.sampled_from([end, "\n", ""]))
                                            for r in rows)
    data = text.encode("utf-8", errors="surrogatepass")
    cut = draw(st.integers(min_value=0, max_value=len(data)))
    return data if draw(st.booleans()) else data[:cut]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
              st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
              st.sampled_from(["X", "M", "f", "s", "i", "1736408883704643.212", "Ascend Hardware",
                               "process_name", "hcom_allReduce_1", "cpu_op", "kernel"])),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.text(max_size=6), children, max_size=3)),
    max_leaves=12,
)
event = st.fixed_dictionaries({}, optional={
    "ph": st.sampled_from(["X", "M", "i", "s", "f", "B", "E"]) | json_values,
    "name": st.sampled_from(["process_name", "thread_name", "Ascend Hardware", "MatMulV2",
                             "hcom_allReduce_", "ProfilerStep#1"]) | json_values,
    "cat": st.sampled_from(["cpu_op", "kernel", "python_function", "cuda_runtime"]) | json_values,
    "pid": json_values, "tid": json_values, "ts": json_values, "dur": json_values, "id": json_values,
    "args": st.fixed_dictionaries({}, optional={"name": st.sampled_from(["Ascend Hardware", "HCCL",
                                                                         "Python", "Overlap Analysis"]),
                                                "Task Type": st.sampled_from(["AI_CORE", "Other"]),
                                                "correlation": json_values}) | json_values,
})


@st.composite
def json_text(draw, kind: str) -> bytes:
    if kind in ("communication", "communication_matrix"):
        doc = {f"step{draw(st.integers(0, 99))}": {draw(st.sampled_from(["collective", "p2p"])): draw(
            st.dictionaries(st.text(max_size=8), json_values, max_size=4))}}
        if draw(st.booleans()):
            doc = draw(json_values)
    elif kind == "profiler_metadata":
        group = st.fixed_dictionaries({}, optional={"group_name": json_values, "group_rank": json_values,
                                                    "global_ranks": st.lists(json_values, max_size=4) | json_values})
        doc = {"parallel_group_info": draw(st.dictionaries(st.text(max_size=8), group | json_values, max_size=3))}
    else:
        events = draw(st.lists(event, max_size=10))
        doc = {"traceEvents": events, "distributedInfo": draw(json_values)} if kind == "kineto" else events
    data = json.dumps(doc, allow_nan=True).encode()
    cut = draw(st.integers(min_value=0, max_value=len(data)))
    return data if draw(st.booleans()) else data[:cut]


def load_only_profile_or_error(kind: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="npu_tui_prop_") as tmp:
        (Path(tmp) / FILE_NAME[kind]).write_bytes(data)
        try:
            p = load_profile(tmp)
        except ProfileError as e:
            assert str(e) and "\n" not in str(e)
            return
        assert p.con.execute("SELECT count(*) FROM kernels WHERE NOT dur_ns >= 0").fetchone()[0] == 0
        for (note,) in p.con.execute("SELECT note FROM load_log").fetchall():
            assert "\n" not in note


def test_every_kind_has_a_file_name():
    assert sorted(FILE_NAME) == sorted(SOURCE_ORDER)


@SETTINGS
@given(kind=st.sampled_from(SOURCE_ORDER), data=st.binary(max_size=600))
def test_random_bytes(kind, data):
    load_only_profile_or_error(kind, data)


@SETTINGS
@given(data=st.data())
def test_random_csv(data):
    kind = data.draw(st.sampled_from(sorted(HEADERS)))
    load_only_profile_or_error(kind, data.draw(csv_text(kind)))


@SETTINGS
@given(data=st.data())
def test_random_json(data):
    kind = data.draw(st.sampled_from(["trace_view", "msprof_timeline", "kineto", "communication",
                                      "communication_matrix", "profiler_metadata"]))
    load_only_profile_or_error(kind, data.draw(json_text(kind)))


# --- exposed communication -------------------------------------------------------------------------

BASE_NS = 1_736_408_883_704_643_212  # device timestamps are this large; the arithmetic must not care
# (name, type, core, comm, compute), one per rules category that matters here.
KINDS = [
    ("hcom_allReduce__586_0_1", "hcom_allReduce_", "HCCL", True, False),
    ("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", False, True),
    ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", False, True),
    ("Conv2D1", "Conv2D", "AI_CORE", False, True),
    ("MEMCPY_ASYNC", "MEMCPY_ASYNC", "SDMA", False, False),
]
kernel = st.tuples(st.integers(0, len(KINDS) - 1), st.integers(0, 2000), st.integers(0, 400))
window = st.tuples(st.sampled_from(["DiT", "VAE"]), st.integers(0, 2400), st.integers(0, 600))


def union(intervals: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    out: List[List[int]] = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length_inside(intervals, lo: int, hi: int) -> int:
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in intervals)


def subtract(a, b):
    """Disjoint sorted intervals a minus disjoint sorted intervals b."""
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
        if cur < e:
            out.append((cur, e))
    return out


@pytest.fixture(scope="module")
def views():
    """One connection with the analysis views installed (installing them is the slow part)."""
    con = connect()
    install_views(con, load_rules())
    return con


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kernels=st.lists(kernel, min_size=1, max_size=25), windows=st.lists(window, max_size=3))
def test_exposed_comm_matches_brute_force(views, kernels, windows):
    con = views
    con.execute("DELETE FROM kernels")
    con.executemany(
        "INSERT INTO kernels (rank, name, type, core, start_ns, dur_ns, source) "
        "VALUES (0, ?, ?, ?, ?, ?, 'test')",
        [(KINDS[k][0], KINDS[k][1], KINDS[k][2], BASE_NS + s, d) for k, s, d in kernels])
    # Hand-set windows (overlapping ones too), else the detection's own; either way the stored
    # stage tables are recomputed for these kernels.
    set_stage_windows(con, [(0, stage, BASE_NS + s, BASE_NS + s + d) for stage, s, d in windows], ranks=[0])

    labels = con.execute("SELECT name, bool_or(is_comm), bool_or(is_compute) FROM kernel_categories "
                         "GROUP BY name").fetchall()
    assert sorted(labels) == sorted({(n, c, p) for n, _, _, c, p in (KINDS[k] for k, _, _ in kernels)})

    comm = union([(BASE_NS + s, BASE_NS + s + d) for k, s, d in kernels if KINDS[k][3]])
    compute = union([(BASE_NS + s, BASE_NS + s + d) for k, s, d in kernels if KINDS[k][4]])
    exposed = subtract(comm, compute)
    want = {}
    windows_now = con.execute("SELECT stage, start_ns, end_ns FROM stage_windows WHERE rank = 0").fetchall()
    for stage, lo, hi in windows_now:
        c, x, w = want.get(stage, (0, 0, 0))
        want[stage] = (c + length_inside(comm, lo, hi), x + length_inside(exposed, lo, hi), w + hi - lo)

    got = {stage: (c, x, w) for stage, c, x, w in con.execute(
        "SELECT stage, comm_us, exposed_us, wall_us FROM comm_exposure WHERE rank = 0").fetchall()}
    assert set(got) == set(want)
    for stage, (comm_us, exposed_us, wall_us) in got.items():
        c, x, w = want[stage]
        assert comm_us * 1e3 == pytest.approx(c, abs=1e-3)
        assert exposed_us * 1e3 == pytest.approx(x, abs=1e-3)
        assert wall_us * 1e3 == pytest.approx(w, abs=1e-3)
        assert 0 <= exposed_us <= comm_us + 1e-9 and exposed_us <= wall_us + 1e-9


step_range = st.tuples(st.integers(0, 5), st.integers(0, 40), st.integers(0, 20))


@settings(max_examples=50, deadline=None, derandomize=True)
@given(ranges=st.lists(step_range, max_size=6))
def test_step_of_a_moment_matches_brute_force(ranges):
    """A moment's step, looked up in the cut at range edges (STEP_FROM) with an ASOF join, is the
    highest step whose range [lo, hi] holds it, overlapping and touching ranges included."""
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE s (step INTEGER, lo BIGINT, hi BIGINT)")
    for n, lo, d in ranges:
        con.execute("INSERT INTO s VALUES (?, ?, ?)", [n, lo, lo + d])
    con.execute(STEP_FROM.format(steps="s"))
    got = dict(con.execute("SELECT t, f.step FROM range(-1, 63) r(t) ASOF LEFT JOIN s_from f ON t >= f.from_ns")
               .fetchall())
    want = {t: max((n for n, lo, d in ranges if lo <= t <= lo + d), default=None) for t in range(-1, 63)}
    assert got == want
