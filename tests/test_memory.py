"""Memory as the analysis reads it: operator_memory.csv and npu_module_mem.csv whole, the peaks
per stage and per DiT forward (does memory grow?), the reserved memory held idle, Kineto's
[memory] events, and the Memory pane; checked against the files read here and the generator's
own record of what it wrote."""

import csv
import json
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from npu_tui.demo import PATH as DEMO
from npu_tui.session import open_session
from npu_tui.synth import Spec, generate
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.drill import DrillScreen
from tui_support import async_test, screen_text, settle

LEVEL1 = ("msinsight-pt-2rank-levels", "text", "level1")
ROOT = Path(__file__).resolve().parents[1]


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_operator_and_module_memory_hold_every_row_of_their_files(real, level):
    folder = real.joinpath(*LEVEL1[:2], level)
    s = open_session(folder)
    for rank in (0, 1):
        out = folder / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        ops = _rows(out / "operator_memory.csv")
        got = s.con.execute("SELECT count(*), sum(size_bytes), max(alloc_ns) FROM operator_memory WHERE rank = ?",
                            [rank]).fetchone()
        assert got[0] == len(ops)
        assert got[1] == round(sum(float(r["Size(KB)"]) * 1024 for r in ops))
        assert got[2] == max(int(Decimal(r["Allocation Time(us)"].strip()) * 1000) for r in ops)
        modules = _rows(out / "npu_module_mem.csv")
        got = s.con.execute("SELECT count(*), max(reserved_bytes) FROM npu_module_mem WHERE rank = ?", [rank]).fetchone()
        assert got == (len(modules), round(max(float(r["Total Reserved(MB)"]) for r in modules) * 2**20))
        # the peak the analysis reports is the file's maximum for the framework's allocators:
        # PTA+GE (PyTorch and the graph engine) where the file has it, else PTA
        records = _rows(out / "memory_record.csv")
        component = next(c for c in ("PTA+GE", "PTA") if any(r["Component"] == c for r in records))
        framework = [r for r in records if r["Component"] == component]
        peak = next(p for p in s.report["memory"]["peaks"] if p["rank"] == rank and p["stage"] is None)
        assert peak["peak_allocated_mb"] == max(float(r["Total Allocated(MB)"]) for r in framework)
        assert peak["peak_reserved_mb"] == max(float(r["Total Reserved(MB)"]) for r in framework)


def test_a_sample_lands_where_the_last_kernel_launched_before_it_runs(real):
    """A host op launches several kernels at one moment (the real level1 ranks: 850 launches at
    674 moments): a memory sample or allocation after it is placed at the device start of the last
    of them, worked out here from the flows, on any DuckDB (an ASOF join among rows of one key
    picks any: 1.4 and 2.0 picked differently, and drew the Timeline's memory lane differently)."""
    import bisect

    s = open_session(real.joinpath(*LEVEL1))
    last = {}  # (rank, host moment) -> the latest device start launched then
    for rank, host, device in s.con.execute("SELECT rank, host_ts_ns, device_ts_ns FROM flows "
                                            "WHERE device_ts_ns IS NOT NULL").fetchall():
        last[rank, host] = max(device, last.get((rank, host), device))
    moments = {r: sorted(h for rank, h in last if rank == r) for r, _ in last}

    def placed(rank, ts):
        i = bisect.bisect_right(moments[rank], ts)
        return last[rank, moments[rank][i - 1]] if i else ts

    tied = s.con.execute("SELECT count(*) FROM (SELECT rank, host_ts_ns FROM flows WHERE device_ts_ns IS NOT NULL "
                         "GROUP BY ALL HAVING count(*) > 1)").fetchone()[0]
    samples = s.con.execute("SELECT rank, ts_ns, at_ns FROM memory_series").fetchall()
    assert tied > 0 and len(samples) > 100
    assert [at for _, _, at in samples] == [placed(rank, ts) for rank, ts, _ in samples]
    # an allocation's stage is that of the window its placed moment falls in
    windows = s.con.execute("SELECT rank, start_ns, end_ns, stage FROM stage_windows ORDER BY rank, start_ns").fetchall()

    def stage(rank, ts):
        at = placed(rank, ts)
        inside = [w for w in windows if w[0] == rank and w[1] <= at]
        return inside[-1][3] if inside and at < inside[-1][2] else None

    want = Counter((rank, name, size / 1048576.0, stage(rank, ts)) for rank, name, size, ts in
                   s.con.execute("SELECT rank, name, size_bytes, alloc_ns FROM operator_memory").fetchall())
    got = Counter(s.con.execute("SELECT rank, name, size_mb, stage FROM memory_allocations").fetchall())
    assert got == want and sum(n for (_, _, _, st), n in got.items() if st is not None) > 100


def test_the_generated_peak_is_found_in_the_vae():
    truth = json.loads(DEMO.with_name(DEMO.name + ".truth.json").read_text())
    s = open_session(DEMO)
    for r in truth["ranks"]:
        want = r["memory"]
        assert want["stage"] == "VAE"
        whole = next(p for p in s.report["memory"]["peaks"] if p["rank"] == r["rank"] and p["stage"] is None)
        assert (whole["peak_allocated_mb"], whole["peak_reserved_mb"], whole["peak_stage"]) == \
            (pytest.approx(want["allocated_mb"]), want["reserved_mb"], "VAE")
        vae = next(p for p in s.report["memory"]["peaks"] if p["rank"] == r["rank"] and p["stage"] == "VAE")
        dit = next(p for p in s.report["memory"]["peaks"] if p["rank"] == r["rank"] and p["stage"] == "DiT")
        assert vae["peak_allocated_mb"] == pytest.approx(want["allocated_mb"])
        assert vae["peak_allocated_mb"] > dit["peak_allocated_mb"]
        assert abs(whole["growth"]) < 0.05  # no leak: the forwards peak alike
        rows = _rows(sorted(DEMO.glob("*/ASCEND_PROFILER_OUTPUT/operator_memory.csv"))[r["rank"]])  # rank order
        got = s.con.execute("SELECT sum(allocations), sum(total_mb) FROM memory_operators WHERE rank = ?",
                            [r["rank"]]).fetchone()
        assert got == (len(rows), pytest.approx(sum(float(x["Size(KB)"]) for x in rows) / 1024))
    assert not [f for f in s.findings if f["rule"].startswith("memory_")]


def _halves(peaks):
    half = len(peaks) // 2
    return (sum(peaks[len(peaks) - half:]) / half) / (sum(peaks[:half]) / half) - 1


def test_memory_that_grows_forward_after_forward_is_found(tmp_path):
    """The generator stamps each sample at the host's launch of its task, ahead of the device: the
    analysis places it by the flows, so each forward's peak is the generator's own for it."""
    out = tmp_path / "leak"
    truth = generate(out, Spec(ranks=1, profiler_steps=2, denoise_steps=4, blocks=1, memory_leak_mb=80.0, seed=5))
    s = open_session(out, cache=False)
    peaks = truth["ranks"][0]["memory"]["dit_forward_peaks"]
    assert len(peaks) == 8 and peaks[-1] > peaks[0]
    forwards = [w["peak_allocated_mb"] for w in s.report["memory"]["windows"] if w["stage"] == "DiT"]
    assert forwards == pytest.approx(peaks)
    (f,) = [f for f in s.findings if f["rule"] == "memory_growth"]
    assert (f["stage"], f["rank"]) == ("DiT", 0)
    assert f["value"] == pytest.approx(_halves(peaks))


def test_reserved_far_above_allocated_is_fragmentation(tmp_path):
    src = next(DEMO.glob("*/ASCEND_PROFILER_OUTPUT"))
    shutil.copy(src / "kernel_details.csv", tmp_path / "kernel_details.csv")
    t0 = open_session(tmp_path, cache=False).con.execute("SELECT min(start_ns) FROM kernels").fetchone()[0] // 1000
    lines = ["Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type"]
    for i, (allocated, reserved) in enumerate([(1000, 1500), (2000, 4000), (1200, 4000)]):
        lines.append(f"PTA,{t0 + 1000 * i}.000\t,{allocated},{reserved},{allocated},0,NPU:0")
    (tmp_path / "memory_record.csv").write_text("\n".join(lines) + "\n")
    s = open_session(tmp_path, cache=False)
    (f,) = [f for f in s.findings if f["rule"] == "memory_idle_reserved"]
    assert f["value"] == pytest.approx(0.5)  # at the 4000 MB reserved peak, 2000 allocated
    assert "expandable_segments" in f["direction"] and f["docs"][0]["path"].endswith("cpu_offload.md")


def test_a_kineto_trace_with_memory_events_loads_them(tmp_path):
    import torch
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64))
    kept = []  # outputs still held when the profile ends: allocations never released
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(3):
            kept.append(model(torch.randn(32, 128)))
            kept[-1].sum()
    trace = tmp_path / "worker.1700000000000.pt.trace.json"
    prof.export_chrome_trace(str(trace))
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("name") == "[memory]"]
    assert events
    s = open_session(tmp_path, cache=False)
    got = s.con.execute("SELECT count(*), max(allocated_bytes), min(component) FROM memory_record").fetchone()
    assert got == (len(events), max(e["args"]["Total Allocated"] for e in events), "CPU")
    whole = next(p for p in s.report["memory"]["peaks"] if p["stage"] is None)
    assert whole["peak_allocated_mb"] == pytest.approx(got[1] / 2**20)

    # Each allocation is the innermost op's around it on its thread, released by the next event
    # at its address, worked out here by brute force over the file.
    doc = json.loads(trace.read_text())["traceEvents"]
    ops = [(i, e) for i, e in enumerate(doc) if e.get("cat") == "cpu_op" and e.get("ph") == "X" and e["dur"] > 0]
    expected = []
    for n, m in enumerate(events):
        if m["args"]["Bytes"] <= 0:
            continue
        around = [(e["ts"], -e["dur"], i, e["name"]) for i, e in ops
                  if (e["pid"], e["tid"]) == (m["pid"], m["tid"]) and e["ts"] <= m["ts"] < e["ts"] + e["dur"]]
        if not around:
            continue
        after = next((x for x in events[n + 1:] if x["args"]["Addr"] == m["args"]["Addr"]), None)
        release = after["ts"] if after is not None and after["args"]["Bytes"] < 0 else None
        expected.append((max(around)[3], m["args"]["Bytes"], None if release is None else release - m["ts"]))
    assert len(expected) > 10 and any(e[2] is None for e in expected) and any(e[2] for e in expected)
    got = s.con.execute("SELECT name, size_bytes, duration_ns / 1e3 FROM operator_memory ORDER BY alloc_ns").fetchall()
    assert [g[:2] for g in got] == [e[:2] for e in expected]
    assert [g[2] for g in got] == [None if e[2] is None else pytest.approx(e[2], abs=0.002) for e in expected]  # µs
    assert {r["name"] for r in s.con.execute("FROM memory_operators").df().to_dict("records")} == {e[0] for e in expected}
    # the CPU records no reserve: none is shown, not 0 MB
    assert s.con.execute("SELECT count(reserved_mb), count(allocated_mb) FROM memory_allocations").fetchone() == (0, len(got))


def test_torchs_python_exporter_writes_memory_events_as_complete_ones(tmp_path):
    """torch 2.13's Python exporter (use_python_export=True, also tensorboard_trace_handler's)
    writes [memory] as "ph": "X": they had been passed over, and the trace had no memory."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(3):
            model(torch.randn(32, 128)).sum()
    got = {}
    for python in (False, True):
        folder = tmp_path / f"python={python}"
        folder.mkdir()
        trace = folder / "worker.1700000000000.pt.trace.json"
        prof.export_chrome_trace(str(trace), use_python_export=python)
        phases = {e["ph"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("name") == "[memory]"}
        assert phases == ({"X"} if python else {"i"})
        s = open_session(folder, cache=False)
        got[python] = (s.con.execute("SELECT count(*), max(allocated_bytes) FROM memory_record").fetchone(),
                       s.con.execute("SELECT name, size_bytes FROM operator_memory ORDER BY ALL").fetchall())
    assert got[True] == got[False] and got[True][0][0] > 10 and len(got[True][1]) > 10


def test_memory_events_without_the_allocators_totals_are_said(tmp_path):
    """torch 1.9's [memory] events give each block's bytes alone (pytorch/kineto's tb_plugin
    samples): what is allocated at a moment cannot be told, and the trace had passed for one
    without memory, the advice being to turn profile_memory on."""
    from npu_tui.profile.health import failed, health

    mem = [{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 100 + i,
            "args": {"Device Type": 0, "Device Id": -1, "Bytes": 4 if i % 2 == 0 else -4}} for i in range(6)]
    ops = [{"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 1, "tid": 1, "ts": 90, "dur": 30}]
    (tmp_path / "worker0.pt.trace.json").write_text(json.dumps({"traceEvents": ops + mem}))
    s = open_session(tmp_path, cache=False)
    assert s.con.execute("SELECT count(*) FROM memory_record").fetchone() == (0,)
    (item,) = [i for i in health(s.profile) if i.file.endswith("worker0.pt.trace.json")]
    assert (item.severity, item.what, item.lost) == (
        "warning", "worker0.pt.trace.json: its [memory] events give no allocator totals (an older torch recorded "
        "none): not loaded, the memory figures are missing; 6 events skipped", 6)
    assert item.fix == "profile with a newer torch, whose [memory] events give the totals" and not failed([item])


def test_a_gpu_traces_operator_memory_is_the_devices(tmp_path):
    """Where a trace records the device's allocations, an op's CPU allocations are not its memory
    (as the memory series takes the device's); a release is the next event at the same address."""
    def mem(ts, dtype, addr, size):
        return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "s": "t", "pid": 1, "tid": 1, "ts": ts,
                "args": {"Total Reserved": 2**30, "Total Allocated": 2**20, "Bytes": size, "Device Id": 0,
                         "Device Type": dtype, "Addr": addr}}
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
              {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 110, "dur": 5},
              mem(112, 1, 7, 4096), mem(120, 0, 7, 64), mem(130, 1, 8, 512), mem(200, 1, 7, -4096),
              {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 140, "dur": 30,
               "args": {"device": 0, "stream": 7, "correlation": 1}}]
    (tmp_path / "worker.1700000000000.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    s = open_session(tmp_path, cache=False)
    assert s.con.execute("SELECT device, name, size_bytes, duration_ns FROM operator_memory ORDER BY alloc_ns").fetchall() == \
        [("device:0", "aten::empty", 4096, 88_000), ("device:0", "aten::mm", 512, None)]


@async_test
async def test_the_memory_pane_and_overview_line_at_80x24(real):
    app = NpuTuiApp(real.joinpath(*LEVEL1))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, rounds=4)
        overview = app.query_one("#overview-memory")
        assert "rank 0   reserved   1.49 GB in All, allocated   1.23 GB" in str(overview.render())  # PTA+GE
        await pilot.press("0")
        await settle(app, pilot)
        text = screen_text(app)
        assert "Memory peaks per stage" in text and "aten::mm" in text
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DrillScreen)
        assert "aten::mm · rank 0 · allocations" in screen_text(app)


def _gpu_trace(path, reserved_bytes):
    """A small CUDA Kineto trace: one 1 GiB device in deviceProperties, a few kernels, and the
    allocator's [memory] events climbing to ``reserved_bytes``."""
    events = []
    for i in range(4):
        events.append({"ph": "X", "cat": "kernel", "name": f"gemm_{i}", "pid": 0, "tid": 7, "ts": 1000 + 200 * i,
                       "dur": 150, "args": {"device": 0, "stream": 7, "correlation": i + 1}})
        events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "s": "t", "pid": 1, "tid": 1,
                       "ts": 990 + 200 * i, "args": {"Total Reserved": reserved_bytes * (i + 1) // 4,
                                                     "Total Allocated": reserved_bytes * (i + 1) // 5, "Bytes": 1,
                                                     "Device Id": 0, "Device Type": 1, "Addr": i}})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 2**30}],
           "traceEvents": events}
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("reserved_gib, fires", [(0.95, True), (0.5, False)])
def test_a_peak_near_the_devices_capacity_is_found(tmp_path, reserved_gib, fires):
    _gpu_trace(tmp_path / "worker.1700000000000.pt.trace.json", int(reserved_gib * 2**30))
    s = open_session(tmp_path, cache=False)
    assert s.con.execute("SELECT device_id, name, capacity_mb FROM device_memory").fetchall() == [(0, "Test GPU", 1024.0)]
    whole = next(p for p in s.report["memory"]["peaks"] if p["stage"] is None)
    assert whole["capacity_mb"] == 1024.0
    assert whole["capacity_share"] == pytest.approx(int(reserved_gib * 2**30) / 2**30)
    near = [f for f in s.findings if f["rule"] == "memory_near_capacity"]
    assert bool(near) == fires
    if fires:
        assert near[0]["value"] == pytest.approx(reserved_gib, abs=1e-6)
        assert near[0]["docs"][0]["path"].endswith("cpu_offload.md")


def test_the_capacity_of_a_real_traces_device_is_read(real):
    s = open_session(real / "kineto" / "hta-alexnet-1gpu")
    assert s.con.execute("SELECT device_id, capacity_mb FROM device_memory").fetchall() == [(0, 42297524224 / 2**20)]


def test_static_op_mem_loads_each_operator_and_leaves_the_total_out(tmp_path):
    """Graph mode's static_op_mem.csv in its documented layout (no sample of it is at hand): every
    operator row, sizes as bytes, the end index that means "until the graph ends" as NULL, and
    the closing TOTAL row (the file's own sum) neither loaded nor counted as skipped."""
    shutil.copy(next(DEMO.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv")), tmp_path / "kernel_details.csv")
    rows = [("MatMul_1", 3, 9, 1024.0), ("Add_2", 4, 4294967295, 512.5), ("Conv2D_3", 5, 11, 2048.0)]
    lines = ["Device_id,Op Name,Model Name,Graph ID,Node Index Start,Node Index End,Size(KB)"]
    lines += [f"0,{n},0,1,{a},{b},{kb}" for n, a, b, kb in rows]
    lines.append(f"0,TOTAL,0,1,,,{sum(kb for *_, kb in rows)}")
    (tmp_path / "static_op_mem_20250101.csv").write_text("\n".join(lines) + "\n")
    s = open_session(tmp_path, cache=False)
    got = s.con.execute("SELECT op_name, node_start, node_end, size_bytes FROM static_op_mem ORDER BY node_start").fetchall()
    assert got == [(n, a, None if b == 4294967295 else b, round(kb * 1024)) for n, a, b, kb in rows]
    assert s.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'static_op_mem'").fetchall() == \
        [(3, 0, "")]


@pytest.mark.parametrize("order", [1, -1], ids=["as-listed", "reversed"])
def test_an_operators_stage_is_that_of_its_largest_allocation_the_first_of_equal_ones(order):
    """aten::add allocates 8 MB in the VAE, then 8 MB in the DiT, then 2 MB in Other: its stage is
    the VAE's, the first of its two largest, whatever order the rows come in."""
    import duckdb

    from npu_tui.analysis.views import MACROS_SQL, view_sql

    con = duckdb.connect()
    con.execute(MACROS_SQL)
    rows = [(0, "VAE", "aten::add", 8.0, 10.0, 1.0, False), (0, "DiT", "aten::add", 8.0, 20.0, 1.0, False),
            (0, "Other", "aten::add", 2.0, 5.0, 1.0, False)]
    con.execute("CREATE TABLE memory_allocations (rank INTEGER, stage VARCHAR, name VARCHAR, size_mb DOUBLE, "
                "at_us DOUBLE, held_to_end_ms DOUBLE, kept BOOLEAN)")
    con.executemany("INSERT INTO memory_allocations VALUES (?, ?, ?, ?, ?, ?, ?)", rows[::order])
    got = con.execute(f"SELECT name, allocations, total_mb, max_mb, stage FROM ({view_sql('memory_operators')})").fetchall()
    assert got == [("aten::add", 3, 18.0, 8.0, "VAE")]


def test_a_cpu_run_s_megabytes_are_shown_in_mb_and_a_reserve_not_recorded_is_said():
    """A CPU run's peaks of a few MB read "0.00 GB", and its reserve, which the CPU's allocator
    does not record (0, below the allocated peak), "0.00 GB" too: said as not recorded."""
    from npu_tui.tui.panes.memory import memory_plots
    from npu_tui.tui.panes.overview import memory_text

    peaks = [{"rank": 0, "stage": None, "peak_stage": "DiT", "peak_reserved_mb": 0.0, "peak_allocated_mb": 1.8},
             {"rank": 0, "stage": "DiT", "peak_reserved_mb": 0.0, "peak_allocated_mb": 1.8}]
    report = {"memory": {"peaks": peaks, "windows": []}}
    assert memory_text(report).plain == "Memory, peak\nrank 0   reserved not recorded in DiT, allocated   1.80 MB"
    assert memory_plots(report).plain == "Memory peaks per stage, MB allocated / reserved\nrank 0   DiT 1.80/-"
    for p in peaks:
        p.update(peak_reserved_mb=4608.0, peak_allocated_mb=4198.4)
    assert memory_text(report).plain.endswith("reserved   4.50 GB in DiT, allocated   4.10 GB")


def test_the_dit_forwards_growth_is_one_figure_on_both_panes():
    """memory_growth measures the later half of the DiT forwards' peaks over the earlier half; the
    Overview said "peak -1.6% over 15" and the Memory pane drew first → last (2.93 → 2.93 GB),
    the README the last over the first: three stories for one figure."""
    from npu_tui.demo import PATH as DEMO
    from npu_tui.session import open_session
    from npu_tui.tui.panes.memory import memory_plots
    from npu_tui.tui.panes.overview import memory_text

    report = open_session(DEMO).report
    whole = {p["rank"]: p for p in report["memory"]["peaks"] if p["stage"] is None}
    assert all(p["growth"] is not None for p in whole.values())
    overview, pane = memory_text(report).plain, memory_plots(report).plain
    for rank, p in whole.items():
        growth = f"{p['growth'] * 100:+.1f}%"
        assert f"DiT forwards' later/earlier half {growth}" in overview.splitlines()[1 + rank]
        assert f"later/earlier half {growth}" in pane


def test_a_cut_trace_leaves_the_samples_after_its_last_launch_where_they_were_taken(tmp_path):
    """A trace cut half way beside a whole memory_record.csv: every sample after the last launch
    the trace kept was placed on that launch's device start, one instant, so the later stages lost
    their peaks and half the DiT forwards theirs (DiT 3.0 GB reserved for 4.5, 3 forwards of 6).
    Past the cut they stay at their own time (the host's clock, the device's too), and the peaks per
    stage are the whole trace's."""
    from npu_tui.profile.health import failed

    path = shutil.copytree(ROOT / "fixtures" / "diffusion_2rank", tmp_path / "cut")
    (trace,) = path.glob("*3096504*/ASCEND_PROFILER_OUTPUT/trace_view.json")
    data = trace.read_bytes()
    trace.write_bytes(data[:len(data) // 2])
    q = "SELECT rank, stage, peak_allocated_mb, peak_reserved_mb, forwards FROM memory_peaks ORDER BY ALL"
    cut, whole = open_session(path, cache=False), open_session(ROOT / "fixtures" / "diffusion_2rank", cache=False)
    assert failed(cut.health)  # the trace is said to be cut
    assert cut.con.execute(q).fetchall() == whole.con.execute(q).fetchall()
