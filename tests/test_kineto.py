"""Kineto (PyTorch profiler) traces: real CUDA traces, and a CPU trace written here by real torch.

Expected values come from parsing the JSON with Python's json module in the test, never from the loader.
"""

import gzip
import json
import re
import shutil
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path, PurePath

import pytest

from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.health import failed, health
from npu_tui.profile.schema import connect
from npu_tui.profile.sources import kineto
from npu_tui.profile.sources.base import HEAD_BYTES, read_head
from npu_tui.profile.sources.chrome_trace import stage_trace

SAMPLED = "kineto/hta-sampled-2rank"
ALEXNET = "kineto/hta-alexnet-1gpu/benchmark_result_2869224_1695835535_trace.json.gz"
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
HOST_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}


def ns(us) -> int:
    return int((Decimal(str(us)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def trace(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal)


def launching_ops(evs):
    """correlation -> the name of the innermost cpu_op enclosing its runtime call."""
    return {corr: op["name"] for corr, op in launching_op_events(evs).items()}


def launching_op_events(evs):
    """correlation -> the innermost cpu_op enclosing its runtime call, by brute force."""
    ops = defaultdict(list)
    for i, e in enumerate(evs):
        if e.get("cat") == "cpu_op" and e.get("dur", 0) > 0:
            ops[(e["pid"], e["tid"])].append((i, e))
    out = {}
    for r in evs:
        if r.get("cat") != "cuda_runtime":
            continue
        enclosing = [(i, o) for i, o in ops[(r["pid"], r["tid"])] if o["ts"] <= r["ts"] < o["ts"] + o["dur"]]
        if enclosing:
            # The latest to start; on a tie the shorter, then the later in the file (a child).
            _, inner = max(enclosing, key=lambda io: (io[1]["ts"], -io[1]["dur"], io[0]))
            out[r["args"]["correlation"]] = inner
    return out


def expected(doc: dict):
    evs = doc["traceEvents"]
    runtime = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "cuda_runtime"}
    ops = launching_ops(evs)
    device = [e for e in evs if e.get("cat") in DEVICE_CATS]
    kernels = Counter((e["name"], ns(e["ts"]), ns(e["dur"]),
                       ops.get(e["args"].get("correlation"), e["name"])) for e in device)
    flows = Counter((ns(runtime[e["args"]["correlation"]]["ts"]), ns(e["ts"])) for e in device
                    if e["args"].get("correlation") in runtime)
    host = Counter(e["cat"] for e in evs if e.get("cat") in HOST_CATS)
    return kernels, flows, host


def test_two_rank_folder_loads_each_trace_as_its_rank(real, tmp_path):
    # Names sort against the ranks, so the ranks can only come from distributedInfo.
    for rank, name in ((0, "b_trace.json.gz"), (1, "a_trace.json.gz")):
        shutil.copy(real / SAMPLED / f"sampled_rank-{rank}.json.gz", tmp_path / name)
    p = load_profile(tmp_path)
    assert p.ranks == [0, 1] and p.formats == ["kineto"]
    q = p.con.execute
    for rank in (0, 1):
        doc = trace(real / SAMPLED / f"sampled_rank-{rank}.json.gz")
        assert doc["distributedInfo"]["rank"] == rank
        kernels, flows, host = expected(doc)
        got = Counter(q("SELECT name, start_ns, dur_ns, type FROM kernels WHERE rank = ?", [rank]).fetchall())
        assert got == kernels
        nccl = sum(n for (name, *_), n in kernels.items() if name.startswith("nccl"))
        assert nccl > 0
        assert q("SELECT count(*) FROM kernels WHERE rank = ? AND name LIKE 'nccl%' AND core = 'CUDA'",
                 [rank]).fetchone()[0] == nccl
        assert Counter(q("SELECT host_ts_ns, device_ts_ns FROM flows WHERE rank = ?", [rank]).fetchall()) == flows
        assert dict(q("SELECT cat, count(*) FROM host_events WHERE rank = ? GROUP BY cat", [rank]).fetchall()) == host
        devices = {e["args"]["device"] for e in doc["traceEvents"] if e.get("cat") in DEVICE_CATS}
        assert q("SELECT device_id FROM ranks WHERE rank = ?", [rank]).fetchall() == [(min(devices),)]
        assert q("SELECT world_size FROM ranks WHERE rank = ?", [rank]).fetchone() == (doc["distributedInfo"]["world_size"],)
    # The sampled job ran on 128 ranks, and 2 are here: a partial rank set.

    (partial,) = health(p)
    assert partial.severity == "warning" and partial.what.startswith("partial rank set: the traces give the job 128 ranks")


def spelt(values, item):
    """A list of inputs as npu-tui spells it: items joined by ';', NULL when that is empty."""
    return ";".join(item(v) for v in values) or None


def test_kernels_carry_the_shapes_and_types_of_their_launching_op(real):
    """Input Dims / Input type of the op that launched each kernel, spelt out: 'unsigned char' keeps
    its space, a scalar's [] is an empty item, and a kernel whose op has no shapes has none."""
    doc = trace(real / SAMPLED / "sampled_rank-0.json.gz")
    ops = launching_op_events(doc["traceEvents"])
    want = Counter()
    for e in doc["traceEvents"]:
        if e.get("cat") in DEVICE_CATS:
            args = ops.get(e["args"].get("correlation"), {}).get("args", {})
            want[(e["name"], ns(e["ts"]),
                  spelt(args.get("Input Dims", []), lambda d: ",".join(map(str, d))),
                  spelt(args.get("Input type", []), str))] += 1
    assert sum(n for (_, _, shapes, _), n in want.items() if shapes) > 100
    assert any(types and "unsigned char" in types for _, _, _, types in want)
    got = load_profile(real / SAMPLED / "sampled_rank-0.json.gz").con.execute(
        "SELECT name, start_ns, input_shapes, input_dtypes FROM kernels").fetchall()
    assert Counter(got) == want


def test_alexnet_trace_flows_match_its_ac2g_arrows(real):
    doc = trace(real / ALEXNET)
    evs = doc["traceEvents"]
    kernels, flows, host = expected(doc)
    p = load_profile(real / ALEXNET)
    q = p.con.execute
    assert Counter(q("SELECT name, start_ns, dur_ns, type FROM kernels").fetchall()) == kernels
    assert dict(q("SELECT core, count(*) FROM kernels GROUP BY core").fetchall()) == dict(
        Counter("CUDA" if e["cat"] == "kernel" else e["cat"] for e in evs if e.get("cat") in DEVICE_CATS))
    # Every arrow Kineto drew from a launch to a kernel, copy or set is one of the flows (its other
    # arrows end on cuda_sync events, which are not device work).
    starts = {e["id"]: e for e in evs if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    device = {(e["pid"], e["tid"], e["ts"]) for e in evs if e.get("cat") in DEVICE_CATS}
    arrows = Counter((ns(starts[e["id"]]["ts"]), ns(e["ts"])) for e in evs
                     if e.get("ph") == "f" and e.get("cat") == "ac2g" and e["id"] in starts
                     and (e["pid"], e["tid"], e["ts"]) in device)
    got = Counter(q("SELECT host_ts_ns, device_ts_ns FROM flows").fetchall())
    assert sum(arrows.values()) > 0 and arrows - got == Counter()
    assert got == flows


def test_cpu_only_trace_from_real_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="the CPU trace is written by torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    a = torch.randn(16, 16)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with record_function("tiny_matmul"):
                a @ a
            prof.step()
    out = tmp_path / "cpu.pt.trace.json"
    prof.export_chrome_trace(str(out))

    doc = trace(out)
    base = int(doc.get("baseTimeNanoseconds", 0))
    evs = [e for e in doc["traceEvents"] if e.get("cat") in HOST_CATS]
    assert not any(e.get("cat") in DEVICE_CATS for e in doc["traceEvents"])
    p = load_profile(tmp_path)
    q = p.con.execute
    # No device events: the outermost cpu ops of each thread stand in for kernels.
    ops = sorted((e for e in evs if e["cat"] == "cpu_op" and e.get("dur", 0) > 0),
                 key=lambda e: (e["tid"], ns(e["ts"]), -ns(e["dur"])))
    outer, end = [], {}
    for e in ops:
        if ns(e["ts"]) >= end.get(e["tid"], -1):
            outer.append((e["name"], base + ns(e["ts"]), ns(e["dur"])))
        end[e["tid"]] = max(end.get(e["tid"], -1), ns(e["ts"]) + ns(e["dur"]))
    kernels = q("SELECT name, start_ns, dur_ns FROM kernels WHERE core = 'CPU' AND type = name")
    assert sorted(kernels.fetchall()) == sorted(outer) and len(outer) >= 2
    got = Counter(q("SELECT name, cat, start_ns FROM host_events").fetchall())
    assert got == Counter((e["name"], e["cat"], base + ns(e["ts"])) for e in evs)
    names = {n for n, _, _ in got}
    assert "tiny_matmul" in names and any(n.startswith("aten::") for n in names)


def _cpu_trace(path: Path, torch) -> Path:
    """A CPU-only trace of a small training step (real torch): forward and backward ops."""
    from torch.profiler import ProfilerActivity, profile, schedule

    conv, w = torch.nn.Conv2d(4, 4, 3, padding=1), torch.randn(32, 32, requires_grad=True)
    x, a = torch.randn(1, 4, 16, 16), torch.randn(8, 32, 32)
    path.parent.mkdir(parents=True, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=schedule(wait=0, warmup=1, active=3),
                 on_trace_ready=lambda done: done.export_chrome_trace(str(path))) as prof:
        for _ in range(4):
            (conv(x).sum() + torch.bmm(a, w.expand(8, 32, 32)).sum() + (a[0] @ w).sum()).backward()
            torch.empty(256, 256).to(torch.float64)  # ops of the Other category
            prof.step()
    return path


def test_a_cpu_run_s_backward_ops_are_typed_and_categorised_by_their_autograd_function(tmp_path):
    """On the CPU, the backward pass's outermost ops are autograd's wrappers,
    `autograd::engine::evaluate_function: ConvolutionBackward0`: the Conv and MatMul patterns did
    not match them (a space before the name), so conv and matmul gradients were Vector."""
    torch = pytest.importorskip("torch", reason="the CPU trace is written by torch")
    from npu_tui.session import Session

    p = Session.load(_cpu_trace(tmp_path / "cpu.pt.trace.json", torch))
    p.analyse()
    got = dict(p.con.execute("SELECT DISTINCT type, category FROM kernel_categories WHERE type LIKE '%Backward%'")
               .fetchall())
    assert {t: got.get(t) for t in ("ConvolutionBackward0", "BmmBackward0", "MmBackward0", "SumBackward0")} == {
        "ConvolutionBackward0": "Conv", "BmmBackward0": "MatMul", "MmBackward0": "MatMul", "SumBackward0": "Vector"}
    assert p.con.execute("SELECT count(*) FROM kernels WHERE type = 'ConvolutionBackward0' AND name = "
                         "'autograd::engine::evaluate_function: ConvolutionBackward0'").fetchone()[0] == 3
    # Every op is the CPU at work: each step's compute is the time its ops cover, from the trace
    # itself (aten::empty, aten::to and other "Other" ops read as free time before).
    doc = trace(tmp_path / "cpu.pt.trace.json")
    base, evs = int(doc.get("baseTimeNanoseconds", 0)), doc["traceEvents"]
    steps = {int(e["name"].split("#")[1]): (base + ns(e["ts"]), base + ns(e["ts"]) + ns(e["dur"]))
             for e in evs if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X"}
    assert len(steps) == 3
    ops = sorted((base + ns(e["ts"]), base + ns(e["ts"]) + ns(e["dur"])) for e in evs
                 if e.get("cat") == "cpu_op" and e.get("ph") == "X" and e.get("dur", 0) > 0)
    for step, (lo, hi) in steps.items():
        covered, end = 0, lo
        for a, b in ops:
            a, b = max(a, end), min(b, hi)
            if b > a:
                covered, end = covered + b - a, b
        got = p.con.execute("SELECT sum(us) FROM step_account WHERE rank = 0 AND step = ? AND part = 'compute'",
                            [step]).fetchone()[0]
        assert got == pytest.approx(covered / 1e3, abs=1e-3), step


def test_the_legacy_autograd_profilers_export_is_a_cpu_run(tmp_path):
    """The legacy profiler (torch.autograd.profiler_legacy, or a torch built without Kineto)
    writes its events without a category, in a process named "CPU functions": it had read as no
    profiler file at all. Its outermost ops (named in a namespace: aten::, autograd::) are the
    work, ProfilerStep#N its steps, and record_function's other ranges are ranges, not ops (one
    named Communication had made it pass for an msprof timeline)."""
    torch = pytest.importorskip("torch", reason="the legacy trace is written by torch")
    from torch.autograd import profiler, profiler_legacy

    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    with profiler_legacy.profile() as prof:
        for i in range(3):
            with profiler.record_function(f"ProfilerStep#{i}"):
                with profiler.record_function("model_forward"):
                    y = m(torch.randn(16, 64))
                with profiler.record_function("Communication"):
                    y.sum().backward()
    path = tmp_path / "legacy.json"  # a name of one's own: told by its content
    prof.export_chrome_trace(str(path))
    evs = json.loads(path.read_text())
    assert {e["pid"] for e in evs} == {"CPU functions"} and not any("cat" in e for e in evs if e["ph"] == "X")
    assert {"model_forward", "Communication"} <= {e["name"] for e in evs}
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in evs if e["name"].startswith("ProfilerStep#"))
    ops = sorted(((ns(e["ts"]), -ns(e["dur"]), e["tid"], e["name"]) for e in evs
                  if e["ph"] == "X" and "::" in e["name"] and e["dur"] > 0))
    outer, ends = [], {}
    for t, d, tid, name in ops:
        if t >= ends.get(tid, 0):
            outer.append((name, t, -d))
            ends[tid] = t - d
    p = load_profile(path)
    assert p.formats == ["kineto"] and len(steps) == 3
    got = p.con.execute("SELECT name, start_ns, dur_ns FROM kernels WHERE core = 'CPU' ORDER BY start_ns").fetchall()
    assert got == sorted(outer, key=lambda o: o[1]) and len(got) >= 6
    per_step = p.con.execute("SELECT step, min(start_ns) FROM kernels GROUP BY step ORDER BY step").fetchall()
    assert [s for s, _ in per_step] == [0, 1, 2]
    assert all(lo <= t < hi for (_, t), (lo, hi) in zip(per_step, steps))


def test_a_cut_cpu_only_trace_keeps_its_cpu_ops_as_kernels(tmp_path):
    """A cut trace may have lost device events still to come, so its CPU ops do not pass for
    kernels; but a trace whose deviceProperties lists no device had none to lose. It lost its
    every figure ("no kernels", with advice to profile CUDA)."""
    torch = pytest.importorskip("torch", reason="the CPU trace is written by torch")
    whole = _cpu_trace(tmp_path / "whole" / "cpu.pt.trace.json", torch)
    data = whole.read_bytes()
    assert kineto.devices(stage_trace(connect(), whole, "stg").devices) == []
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "cpu.pt.trace.json").write_bytes(data[:len(data) * 2 // 3])
    q = "SELECT name, start_ns, dur_ns FROM kernels"
    full = set(load_profile(whole).con.execute(q).fetchall())
    cut = load_profile(tmp_path / "cut")
    kept = set(cut.con.execute(q).fetchall())
    assert kept and len(kept) < len(full)
    # The outermost ops the cut kept are the whole trace's, but the one the cut fell in.
    assert len(kept - full) <= 1
    assert [i.what for i in health(cut) if "no kernels" in i.what] == []


def test_lists_after_the_events_are_each_read_past_once(tmp_path, monkeypatch):
    """Where the events' list ends is found by trying each ']' after it, and for each, every event
    boundary before it: each boundary read all the events after it again, to the list's end (a
    trace of 1,000 events and 22 lists after them: 14 million JSON values decoded, a minute for
    the 300 KB of a real one). Counted, not timed: about 60 values an event now."""
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "pid": 0, "tid": 7, "ts": 1000 + 10 * i, "dur": 5,
               "args": {"device": 0, "stream": 7}} for i in range(1000)]
    doc = {"schemaVersion": 1, "traceEvents": events, "traceName": "t",
           "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 1 << 34}],
           "distributedInfo": {"rank": 1, "world_size": 2,
                               "pg_config": [{"pg_name": str(i), "ranks": [0, 1]} for i in range(20)]}}
    (tmp_path / "w.1700000000001.pt.trace.json").write_text(json.dumps(doc))
    decoded = Counter()
    raw_decode = json.JSONDecoder.raw_decode

    def counted(self, *args, **kwargs):
        decoded["values"] += 1
        return raw_decode(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    p = load_profile(tmp_path, cache=False)
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone() == (1000,)
    assert p.ranks == [1]
    assert decoded["values"] <= 100 * len(events)


def test_device_properties_tell_no_device_from_devices_not_read():
    """Only an empty list is a run without a device: entries not read here (no totalGlobalMem)
    let a cut trace's CPU ops pass for kernels."""
    assert kineto.devices([]) == []
    assert kineto.devices([{"id": 0, "name": "Xeon", "maxComputeUnits": 448}]) is None
    assert kineto.devices([{"totalGlobalMem": 1024, "name": "H200", "id": 1}]) == [(1, "H200", 1024)]
    assert kineto.devices(None) is None
    # Of several, the ones read keep their capacity.
    assert kineto.devices([{"id": 0, "name": "Xeon"}, {"id": 1, "name": "H200", "totalGlobalMem": 1024}]) == [
        (1, "H200", 1024)]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_keys_after_the_events_are_read_as_well_as_before(real, tmp_path, gz):
    """A tool that rewrites a trace may put deviceProperties and distributedInfo after the
    events: valid JSON, and the same trace. (Once the list after the events was taken for their
    end, its devices for 8 malformed events, and the rank fell back on file order; then more
    than 15 ']' after the events read as a cut.)"""
    doc = json.loads(gzip.open(real / ALEXNET).read())
    devices = doc.pop("deviceProperties")
    doc.pop("distributedInfo")
    # (torch writes a list of ranks per process group: a ']' each, here 20)
    doc.update(deviceProperties=devices, distributedInfo={"rank": 3, "backend": "nccl", "world_size": 4, "pg_config": [
        {"pg_name": str(i), "ranks": [0, 1, 2, 3]} for i in range(20)]})
    assert list(doc)[-3:] == ["traceName", "deviceProperties", "distributedInfo"]
    path = tmp_path / "w.1700000000001.pt.trace.json"
    text = json.dumps(doc).encode()
    if gz:
        path = path.with_suffix(".json.gz")
        text = gzip.compress(text)
    path.write_bytes(text)
    p = load_profile(tmp_path)
    assert [i.what for i in health(p)] == ["partial rank set: the traces give the job 4 ranks (its world size); "
                                           "1 of them here"]
    # Discovery reads a plain file's end for the rank; a gzip stream's end is the whole stream
    # away, which it does not read: there the rank comes from the files' order.
    assert p.ranks == ([0] if gz else [3])
    want = load_profile(real / ALEXNET).con.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone()
    assert p.con.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone() == want
    assert p.con.execute("SELECT device_id, capacity_mb FROM device_memory").fetchall() == [
        (0, devices[0]["totalGlobalMem"] / 2**20)]
    assert p.con.execute("SELECT max(world_size) FROM ranks").fetchone() == (4,)


@pytest.mark.parametrize("runtime,copies,core", [
    ("xpu_runtime", {}, "XPU"), ("privateuse1_runtime", {}, "PrivateUse1"),
    ("mlu_runtime", {"gpu_memcpy": "mlu_memcpy", "gpu_memset": "mlu_memset"}, "MLU")])
def test_other_devices_runtimes_launch_their_kernels(real, tmp_path, runtime, copies, core):
    """Kineto writes an XPU's or a PrivateUse1 backend's launches under their own category
    (ActivityType.h), and Cambricon's fork its copies too: the same links from op to kernel. They
    had been lost without a word: no kernel linked to its op (Conv 31 kernels to 0), no flow, every
    kernel called CUDA, and MLU copies (84 % of the device time here) dropped."""
    doc = json.loads(gzip.open(real / ALEXNET).read())
    for e in doc["traceEvents"]:
        if e.get("cat") == "cuda_runtime":
            e["cat"], e["name"] = runtime, e["name"].replace("cuda", "rt")
        e["cat"] = copies.get(e.get("cat"), e.get("cat"))
    (tmp_path / "w.1700000000001.pt.trace.json").write_text(json.dumps(doc))
    p, base = load_profile(tmp_path), load_profile(real / ALEXNET)
    q = "SELECT name, type, start_ns, dur_ns, input_shapes FROM kernels ORDER BY ALL"
    assert p.con.execute(q).fetchall() == base.con.execute(q).fetchall()
    q = "SELECT count(*) FROM flows"
    assert p.con.execute(q).fetchone() == base.con.execute(q).fetchone() == (98,)
    q = "SELECT core, count(*) FROM kernels GROUP BY core ORDER BY core"
    assert p.con.execute(q).fetchall() == [(core, 79), *sorted((copies.get(c, c), n) for c, n in [
        ("gpu_memcpy", 16), ("gpu_memset", 3)])]
    assert base.con.execute(q).fetchall() == [("CUDA", 79), ("gpu_memcpy", 16), ("gpu_memset", 3)]
    q = "SELECT count(*) FROM host_events WHERE cat = ?"
    assert p.con.execute(q, [runtime]).fetchone() == base.con.execute(q, ["cuda_runtime"]).fetchone() != (0,)


def test_torch_1_8s_spelling_of_the_input_shapes(real, tmp_path):
    """torch 1.8 wrote the shapes as ``Input dims`` (the samples in pytorch/kineto's tb_plugin):
    every kernel's shapes had been lost, on the device and in a CPU-only run alike."""
    torch = pytest.importorskip("torch", reason="the CPU trace is written by torch")
    doc = json.loads(gzip.open(real / ALEXNET).read())
    for e in doc["traceEvents"]:  # the device trace's ops, given shapes of their own
        if e.get("cat") == "cpu_op":
            e.setdefault("args", {}).update({"Input Dims": [[len(e["name"]), 3], []], "Input type": ["float", ""]})
    cpu = json.loads(_cpu_trace(tmp_path / "cpu.pt.trace.json", torch).read_text())
    for name, d in (("device", doc), ("cpu", cpu)):
        for spelling in ("Input Dims", "Input dims"):
            for e in d["traceEvents"]:
                args = e.get("args", {})
                args.update({spelling: args.pop(k) for k in ("Input Dims", "Input dims") if k in args})
            (tmp_path / spelling / name).mkdir(parents=True)
            (tmp_path / spelling / name / "w.1700000000001.pt.trace.json").write_text(json.dumps(d))
        q = "SELECT name, start_ns, input_shapes, input_dtypes FROM kernels ORDER BY ALL"
        got = load_profile(tmp_path / "Input dims" / name).con.execute(q).fetchall()
        assert got == load_profile(tmp_path / "Input Dims" / name).con.execute(q).fetchall()
        assert sum(1 for *_, shapes, _ in got if shapes) > 10, name


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_text_appended_after_a_whole_trace_is_set_aside_not_taken_for_a_cut(real, tmp_path, gz):
    """A log line appended to a trace (`>> trace.json`) follows a whole document: every event
    loads and the run is complete. It had read as a cut ("1 event skipped", the run incomplete,
    exit 2) though nothing was lost."""
    data = gzip.open(real / ALEXNET).read()
    text = data + b"\nINFO profiler: trace written\r\n"
    path = tmp_path / ("w.1700000000001.pt.trace.json" + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(text) if gz else text)
    p = load_profile(tmp_path)
    want = load_profile(real / ALEXNET).con.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone()
    assert p.con.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone() == want
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert skipped == 0 and note == ("30 bytes after the trace's end, starting 'INFO profiler: trace written': "
                                     'not part of it (text appended to the file?), ignored')
    items = health(p)
    assert not failed(items) and [i.severity for i in items if i.file == str(path)] == ["warning"]


@pytest.mark.parametrize("shape", ["array", "object"])
def test_a_bracket_in_the_last_event_is_not_taken_for_the_end_before_appended_text(tmp_path, shape):
    """A ']' inside the last event (its args' list, or a string such as "[6]") can make a document
    that ends early too: the events' own ']' is the end. The same file cut just after such a ']'
    is cut, not whole with text after it (nor whole, with its last event malformed). Text after the end in another encoding (a GBK log line)
    is text after the end all the same."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0,
            "args": {"grid": [1, 2, {"x": [3]}], "Concrete Inputs": "[6]"}} for i in range(4)]
    doc = json.dumps(evs if shape == "array" else {"traceEvents": evs, "displayTimeUnit": "ms"}).encode()
    path = tmp_path / "w.1700000000001.pt.trace.json"
    for tail, note in ((b"\nlast line [1] of a log\n", "23 bytes after the trace's end, starting 'last line [1] of a log'"),
                       ("\n日志 [1]\n".encode("gbk"), "9 bytes after the trace's end, starting ")):
        path.write_bytes(doc + tail)
        staged = stage_trace(connect(), path, "stg_after", phases=kineto.PHASES)
        assert (staged.events, staged.lost, staged.cut) == (4, 0, False)
        assert staged.note.startswith(note) and staged.note.endswith(": not part of it (text appended to the file?), ignored")
    # Cut inside the last event, just after a ']' of a string or a list of its args (after a '}'
    # too, of a list of objects; an object's there had read as one whose closing brace alone is
    # missing):
    for end in (b'"[6]', b'"[6]"', b'[3]', b'[3]}]'):
        path.write_bytes(doc[:doc.rindex(end) + len(end)] + b"\n")
        staged = stage_trace(connect(), path, "stg_cut", phases=kineto.PHASES)
        assert (staged.events, staged.lost, staged.cut) == (3, 1, True) and staged.note.startswith("file cut short"), end


def test_a_gpu_trace_cut_before_its_device_events_says_so_not_to_profile_the_device(real, tmp_path, capsys):
    """torch writes a trace's device events after its CPU ops: cut early, a GPU trace holds none.
    The advice was to profile with ProfilerActivity.CUDA, and the report said "No rule fired"."""
    from npu_tui.cli import main

    data = gzip.decompress((real / SAMPLED / "sampled_rank-0.json.gz").read_bytes())
    assert kineto.devices(data[:65536]) != []  # not a run that had no device
    (tmp_path / "r0.pt.trace.json").write_bytes(data[:len(data) // 4])
    (item,) = [i for i in health(load_profile(tmp_path)) if "no kernels" in i.what]
    assert item.what.startswith("no kernels: its trace was cut before the device's tasks")
    assert "ProfilerActivity" not in item.fix and "stopped cleanly" in item.fix
    main(["report", str(tmp_path)])
    assert "No findings: no kernels were loaded, so no rule could be tested" in capsys.readouterr().out


GLOO = """
import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity, schedule, tensorboard_trace_handler

def work(rank, world, out, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", port
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    a = torch.randn(200, 200)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=3),
                 on_trace_ready=tensorboard_trace_handler(out)) as prof:
        for _ in range(4):
            for _ in range(3):
                a = (a @ a) / a.norm()
            if rank == 1:  # comes 50 ms late to each collective: a sleep, as compute would race the
                time.sleep(0.05)  # test run's other processes for the cores and lose by chance

            dist.all_reduce(torch.ones(1 << 16))
            prof.step()
    # The traces are written: leave without the teardown, where gloo's threads aborted a worker now
    # and then under load ("terminate called without an active exception", SIGABRT).
    dist.barrier()
    os._exit(0)

if __name__ == "__main__":
    mp.spawn(work, args=(2, sys.argv[1], sys.argv[2]), nprocs=2)
"""


def test_a_cpu_run_s_gloo_collectives_are_its_communication_and_name_the_slow_rank(tmp_path):
    """gloo runs a collective on a thread of its own, as a record_function span (`gloo:all_reduce`);
    the op that queued it returns at once. Only that op counted as communication, so the fast
    rank's wait read as free time, and the fast rank was named as the one the others wait for."""
    pytest.importorskip("torch", reason="the traces are written by torch")
    import socket
    import subprocess
    import sys

    from npu_tui.session import Session

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    script = tmp_path / "gloo.py"
    script.write_text(GLOO)
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, str(script), str(out), port], capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    session = Session.load(out)
    session.analyse()
    con = session.con
    for f in sorted(out.iterdir()):
        doc = trace(f)
        rank = doc["distributedInfo"]["rank"]
        spans = [ns(e["dur"]) for e in doc["traceEvents"] if e.get("name") == "gloo:all_reduce" and e.get("ph") == "X"]
        got = con.execute("SELECT count(*), sum(dur_ns), any_value(category) FROM kernel_categories "
                          "WHERE rank = ? AND type = 'gloo:all_reduce'", [rank]).fetchone()
        assert got == (len(spans), sum(spans), "Comm") and len(spans) >= 3
    exposed = dict(con.execute("SELECT rank, exposed_comm_us FROM rank_waits").fetchall())
    # The fast rank waits in its collectives, 50 ms a step for the late one (half of it, at least,
    # whatever the load)
    assert exposed[0] > exposed[1] + 25_000, exposed
    (finding,) = [f for f in session.report["findings"] if f["rule"] == "rank_comm_imbalance"]
    assert (finding["rank"], finding["waited_for"]) == (1, 1)
    # Without communication.json no rank is said to be, or not to be, waited for by its calls.
    assert [w["waited_for"] for w in session.report["cluster"]["waits"]] == [None, None]


def test_sniff_and_rank_hint(real):
    head = read_head(real / SAMPLED / "sampled_rank-1.json.gz")
    assert kineto.sniff(head) and kineto.rank_hint(head) == 1
    tv = real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
    assert not kineto.sniff(read_head(tv / "trace_view.json"))
    assert not kineto.sniff(read_head(tv / "communication.json"))


@pytest.mark.parametrize("cut", [False, True])
def test_the_rank_of_a_distributed_info_whose_keys_are_sorted(real, tmp_path, cut):
    """A trace saved again with sorted keys (json.dump(sort_keys=True), jq -S) puts pg_config, a list
    of objects, before distributedInfo's rank: it was not found, the ranks came from the names (so
    swapped) and each trace was said "not a distributed run". Where the head cuts the object, its
    rank is still read from what is there."""
    for rank, name in ((1, "a_worker.json"), (0, "b_worker.json")):
        doc = json.loads(gzip.decompress((real / SAMPLED / f"sampled_rank-{rank}.json.gz").read_bytes()))
        doc["distributedInfo"]["pg_config"] = [{"backend_config": "cuda:nccl", "pg_name": "0", "pg_size": 128}]
        text = json.dumps(doc, sort_keys=True).encode()
        info = text.index(b'"distributedInfo"')
        assert text.index(b'"pg_config"', info) < text.index(b'"rank"', info)
        (tmp_path / name).write_bytes(text)
        head = text[:text.index(b'"rank"', info) + 12] if cut else read_head(tmp_path / name)
        assert kineto.rank_hint(head) == rank
    p = load_profile(tmp_path)
    assert p.con.execute("SELECT rank, regexp_extract(file, '[^/]*$') FROM load_log ORDER BY rank").fetchall() == [
        (0, "b_worker.json"), (1, "a_worker.json")]
    assert not any("not a distributed run" in i.what for i in health(p))


def _kinds_and_kernels(path):
    p = load_profile(path)
    return ({k for (k,) in p.con.execute("SELECT DISTINCT kind FROM load_log WHERE kind <> 'discovery'").fetchall()},
            p.con.execute("SELECT count(*), count(*) FILTER (core = 'CPU') FROM kernels").fetchone())


def test_the_writer_not_the_shape_decides_what_a_trace_is(real, tmp_path):
    """torch's legacy export writes Kineto's events as a bare array, and a trace_view may come
    wrapped in an object: each loads as what it holds, the same as in its usual shape (before, the
    array took its host events for a torch_npu trace with no device, and the wrapped trace_view its
    ProfilerSteps for CPU kernels)."""
    from npu_tui.demo import PATH as DEMO

    original = real / SAMPLED / "sampled_rank-0.json.gz"
    bare = tmp_path / "trace.json"
    bare.write_text(json.dumps(json.loads(gzip.decompress(original.read_bytes()))["traceEvents"]))
    kinds, kernels = _kinds_and_kernels(original)
    assert kinds == {"kineto"} and kernels[0] > 1000
    assert _kinds_and_kernels(bare) == (kinds, kernels)

    array = next(DEMO.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"))
    wrapped = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    wrapped.parent.mkdir(parents=True)
    wrapped.write_bytes(b'{"traceEvents": ' + array.read_bytes() + b"}")
    kinds, kernels = _kinds_and_kernels(array)
    assert kinds == {"trace_view"} and kernels == (930, 0)
    assert _kinds_and_kernels(wrapped) == (kinds, kernels)


def test_cut_gzip_trace_keeps_complete_events(real, tmp_path):
    raw = (real / SAMPLED / "sampled_rank-0.json.gz").read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(raw[: len(raw) // 2])
    text = gzip.decompress(raw).decode("utf-8")
    total = len(json.loads(text)["traceEvents"])
    staged = stage_trace(connect(), cut, "stg_cut")
    assert 0 < staged.events < total and staged.lost == 1
    assert staged.distributed_info["rank"] == 0
    # The kept events are the file's first ones, in order.
    con = connect()
    stage_trace(con, cut, "stg_cut")
    first = json.loads(text)["traceEvents"][: staged.events]
    assert con.execute("SELECT name FROM stg_cut").fetchall() == [(e.get("name"),) for e in first]


@pytest.mark.parametrize("keep", [120, 200])
def test_a_gzip_trace_cut_before_its_events_is_said_cut_short(real, tmp_path, keep):
    """Cut in its first blocks, the trace inflates to a head that ends among the keys before the
    events: it was said to be "a JSON object without a traceEvents list" (the file damaged), where
    it was cut (the collection stopped, or the copy)."""
    from npu_tui.profile.errors import SourceError

    raw = (real / SAMPLED / "sampled_rank-0.json.gz").read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(raw[:keep])
    with pytest.raises(SourceError, match=r"^file cut short: it ends after [\d,]+ bytes, before its traceEvents list$"):
        stage_trace(connect(), cut, "stg_cut")


def test_a_damaged_gzip_keeps_what_comes_before_the_damage_and_is_an_error(real, tmp_path):

    raw = (real / SAMPLED / "sampled_rank-0.json.gz").read_bytes()
    at = len(raw) // 3
    damaged = tmp_path / "damaged.json.gz"
    damaged.write_bytes(raw[:at] + bytes(b ^ 0xFF for b in raw[at:at + 100]) + raw[at + 100:])
    events = json.loads(gzip.decompress(raw))["traceEvents"]
    con = connect()
    staged = stage_trace(con, damaged, "stg_damaged", salvage=True)
    assert 0 < staged.events < len(events) and staged.note.startswith("gzip stream damaged (zlib noticed at byte")
    first = con.execute("SELECT name FROM stg_damaged ORDER BY seq LIMIT 100").fetchall()
    assert first == [(e.get("name"),) for e in events[:100]]
    (item,) = [h for h in health(load_profile(damaged)) if h.severity == "error"]
    assert "gzip stream damaged" in item.what and "copy it again" in item.fix


def test_damage_only_in_the_gzip_trailer_loses_no_event(real, tmp_path):
    raw = (real / SAMPLED / "sampled_rank-0.json.gz").read_bytes()
    bad_crc = tmp_path / "crc.json.gz"
    bad_crc.write_bytes(raw[:-8] + bytes(b ^ 0xFF for b in raw[-8:-4]) + raw[-4:])
    events = json.loads(gzip.decompress(raw))["traceEvents"]
    staged = stage_trace(connect(), bad_crc, "stg_crc")
    assert staged.events == len(events) and staged.note.startswith("gzip stream damaged")


def test_a_gzip_of_several_members_loads_them_all(real, tmp_path):
    """``cat a.gz b.gz`` is a valid gzip: its content is both files' run together."""
    text = gzip.decompress((real / SAMPLED / "sampled_rank-0.json.gz").read_bytes())
    half = text.index(b"}, {", len(text) // 2) + 1
    joined = tmp_path / "joined.json.gz"
    joined.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    staged = stage_trace(connect(), joined, "stg_joined")
    assert staged.events == len(json.loads(text)["traceEvents"]) and staged.note == ""


def test_a_trace_whose_gzip_breaks_in_its_first_bytes_is_said(real, tmp_path):
    """Its name says nothing (no .pt.trace.json), its head does not decompress: it is still a
    trace that failed, not a file passed over."""

    for rank in (0, 1):
        shutil.copy(real / SAMPLED / f"sampled_rank-{rank}.json.gz", tmp_path / f"r{rank}.json.gz")
    raw = (tmp_path / "r0.json.gz").read_bytes()
    (tmp_path / "r0.json.gz").write_bytes(raw[:200] + bytes(b ^ 0xFF for b in raw[200:260]) + raw[260:])
    items = health(load_profile(tmp_path))
    (item,) = [h for h in items if h.severity == "error"]
    assert item.file.endswith("r0.json.gz") and "gzip stream damaged" in item.what


def test_a_schedule_that_cycles_is_one_rank_and_its_empty_cycle_a_note(tmp_path):
    """tensorboard_trace_handler with a cycling schedule writes a trace per cycle, named for one
    worker; the loop ending at a cycle's start leaves a last trace holding one empty ProfilerStep."""
    torch = pytest.importorskip("torch", reason="the traces are written by torch")
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    m, x = torch.nn.Linear(32, 32), torch.randn(4, 32)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=0),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path), worker_name="host_1234")) as prof:
        for _ in range(4):
            m(x).relu()
            prof.step()
    full, empty = sorted(tmp_path.glob("host_1234.*.pt.trace.json"))
    assert not any(e.get("cat") == "cpu_op" for e in trace(empty)["traceEvents"])
    steps = {int(e["name"].split("#")[1]) for e in trace(full)["traceEvents"]
             if e.get("name", "").startswith("ProfilerStep#")}
    p = load_profile(tmp_path)
    assert p.ranks == [0]
    assert {s for (s,) in p.con.execute("SELECT DISTINCT step FROM kernels").fetchall()} == steps
    log = dict(p.con.execute("SELECT file, note FROM load_log").fetchall())
    assert log[str(full)] == "" and "empty profiling cycle" in log[str(empty)]
    # A cycle written with no events at all is the same empty cycle, not a file that failed.
    empty.write_text(json.dumps({**trace(empty), "traceEvents": []}))
    p = load_profile(tmp_path)
    assert p.ranks == [0] and not failed(health(p))
    assert "empty profiling cycle" in dict(p.con.execute("SELECT file, note FROM load_log").fetchall())[str(empty)]
    # Alone, it is a trace that holds nothing.
    with pytest.raises(ProfileError, match="no events"):
        load_profile(empty)


def test_a_trace_beside_its_gzip_copy_loads_once(real, tmp_path):
    """`gzip -k` keeps the trace and writes its copy beside it: both loaded, every kernel and step
    counted twice, with nothing said. The copy is left out, and said."""
    for src in ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz"):
        (tmp_path / src[:-3]).write_bytes(gzip.decompress((real / SAMPLED / src).read_bytes()))
        shutil.copy(real / SAMPLED / src, tmp_path / src)
    q = "SELECT rank, count(*), sum(dur_ns) FROM kernels GROUP BY rank ORDER BY rank"
    p = load_profile(tmp_path)
    assert p.con.execute(q).fetchall() == load_profile(real / SAMPLED).con.execute(q).fetchall()
    said = [(h.severity, h.rank, h.what) for h in health(p) if "compressed copy" in h.what]
    assert said == [("warning", None, f"{n}.gz: a compressed copy of {n} beside it: not loaded, "
                                "or every event would count twice") for n in ("sampled_rank-0.json", "sampled_rank-1.json")]


def _later(raw: bytes, seconds: int = 60) -> bytes:
    """A trace's bytes as if taken ``seconds`` later (every ts moved on): another run or cycle,
    not a copy, which is left out as one."""
    return re.sub(rb'"ts": (\d+)', lambda m: b'"ts": %d' % (int(m[1]) + seconds * 10**6), raw)


def test_a_trace_copied_under_another_name_loads_once(real, tmp_path):
    """A second download or an unzipped copy (``sampled_rank-1 (1).json``) was merged into its
    rank as another cycle: every kernel of the rank twice, with nothing said."""
    for src in ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz"):
        shutil.copy(real / SAMPLED / src, tmp_path / src)
    (tmp_path / "sampled_rank-1 (1).json").write_bytes(gzip.decompress((real / SAMPLED / "sampled_rank-1.json.gz").read_bytes()))
    shutil.copy(real / SAMPLED / "sampled_rank-0.json.gz", tmp_path / "sampled_rank-0.json.gz~")
    q = "SELECT rank, count(*), sum(dur_ns) FROM kernels GROUP BY rank ORDER BY rank"
    p = load_profile(tmp_path)
    assert p.con.execute(q).fetchall() == load_profile(real / SAMPLED).con.execute(q).fetchall()
    said = sorted((h.severity, h.what) for h in health(p) if "a copy of" in h.what)
    assert said == [("info", f"{copy}: a copy of {n} beside it (the same content): not loaded, "
                             "or its rows would count twice")
                    for copy, n in (("sampled_rank-0.json.gz~", "sampled_rank-0.json.gz"),
                                    ("sampled_rank-1 (1).json", "sampled_rank-1.json.gz"))]
    assert not failed(health(p))

    # Not copies: a trace the same as another in size and head but not at its end (a cycle that
    # ran on), and empty files (each fails on its own, not one left out as the other's copy).
    for f in tmp_path.glob("sampled_rank-*"):
        f.unlink()
    raw = gzip.decompress((real / SAMPLED / "sampled_rank-1.json.gz").read_bytes())
    end = raw.rindex(b'"ts": ')
    (tmp_path / "a.json").write_bytes(raw)
    (tmp_path / "b.json").write_bytes(raw[:end] + raw[end:].replace(b'"ts": 1', b'"ts": 2', 1))
    assert len(raw) > 2 * HEAD_BYTES and (tmp_path / "b.json").read_bytes() != raw
    (tmp_path / "c.pt.trace.json").write_bytes(b"")
    (tmp_path / "d.pt.trace.json").write_bytes(b"")
    p = load_profile(tmp_path)
    assert not [h for h in health(p) if "the same content" in h.what]
    assert sorted(PurePath(h.file).name for h in failed(health(p))) == ["c.pt.trace.json", "d.pt.trace.json"]
    # (b.json, the same process over the same time but for its last event, is another export of
    # that trace: test_another_export_of_a_cycle_loads_once)
    assert p.con.execute("SELECT count(*) FROM load_log WHERE parse_filename(file) IN ('a.json', 'b.json') "
                         "AND rows > 0").fetchone()[0] == 1


def test_another_export_of_a_cycle_loads_once(real, tmp_path):
    """The same trace written again by another writer (re-saved pretty-printed, or
    export_chrome_trace beside the handler's file): not a copy byte for byte, but the same
    process over the same time, which no two cycles of a worker are. It was merged in as a second
    cycle, every kernel twice, with nothing said; it is left out, and said. Two real cycles of one
    process, one after the other, still load together."""
    with gzip.open(real / ALEXNET) as f:
        doc = json.load(f)
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    (tmp_path / "trace_pretty.json").write_text(json.dumps(doc, indent=1))
    q = "SELECT rank, count(*), sum(dur_ns) FROM kernels GROUP BY rank ORDER BY rank"
    once = load_profile(real / ALEXNET).con.execute(q).fetchall()
    p = load_profile(tmp_path)
    assert p.con.execute(q).fetchall() == once
    said = [(h.severity, h.what) for h in health(p) if "trace_pretty.json" in h.what]
    assert said == [("info", "trace_pretty.json: a copy of trace.json's events (the same process "
                             "over the same time: another export of that trace): not loaded, or they would "
                             "count twice")]
    assert not failed(health(p))

    (tmp_path / "trace_pretty.json").write_bytes(_later((tmp_path / "trace.json").read_bytes()))
    p = load_profile(tmp_path)
    assert p.ranks == [0] and not health(p)
    ((_, kernels, total),) = once
    assert p.con.execute(q).fetchall() == [(0, 2 * kernels, 2 * total)]


def test_a_second_profiling_session_of_one_process_is_another_run(tmp_path):
    """Two `with profile(...)` blocks one after the other in one process (a notebook cell run
    again) into one handler's folder: each session numbers its steps from 0, and the two were
    merged as cycles of one worker, each step spanning both sessions (the time between them free).
    The later session loads; the earlier is said and left out."""
    torch = pytest.importorskip("torch", reason="the traces are written by torch")
    import time

    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    a = torch.randn(64, 64)
    # the first session two cycles (steps 1-2, 4-5), the second one (1-2): the first's later cycle
    # shares no step with the second, and was merged into it
    for size, repeat, calls in ((1, 2, 6), (3, 1, 3)):
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=repeat),
                     on_trace_ready=tensorboard_trace_handler(str(tmp_path), worker_name="host_1")) as prof:
            for _ in range(calls):
                for _ in range(size):
                    a @ a
                prof.step()
        time.sleep(0.05)
    *earlier, first, second = sorted(tmp_path.glob("host_1.*.pt.trace.json"), key=lambda f: int(f.name.split(".")[1]))
    assert len(earlier) == 1

    def steps(f):
        evs = trace(f)["traceEvents"]
        ops = [e for e in evs if e.get("cat") == "cpu_op"]
        return {int(e["name"].split("#")[1]): e["dur"] for e in evs if e.get("name", "").startswith("ProfilerStep#")
                and any(e["ts"] <= o["ts"] < e["ts"] + e["dur"] for o in ops)}

    assert set(steps(earlier[0])) == set(steps(second)) and not set(steps(first)) & set(steps(second))
    p = load_profile(tmp_path)
    got = dict(p.con.execute("SELECT step, (max(start_ns + dur_ns) - min(start_ns)) / 1e3 FROM kernels "
                             "GROUP BY step").fetchall())
    assert set(got) == set(steps(second)) and all(got[st] <= steps(second)[st] for st in got)
    for f in (*earlier, first):
        (item,) = [h for h in health(p) if f.name in h.what.split(":")[0]]
        assert item.severity == "warning" and "another profiling session" in item.what
    assert not failed(health(p))


def test_one_file_of_two_processes_steps_is_said_to_be_loaded_as_one_rank(real, tmp_path):
    """Two ranks' traces merged into one file (to view them side by side): their kernels and steps
    were one rank's, with nothing said. Said now, as one rank of two processes' figures."""
    docs = [json.loads(gzip.decompress((real / SAMPLED / f"sampled_rank-{r}.json.gz").read_bytes())) for r in (0, 1)]
    merged = {k: v for k, v in docs[0].items() if k != "distributedInfo"}
    merged["traceEvents"] = docs[0]["traceEvents"] + docs[1]["traceEvents"]
    (tmp_path / "merged.json").write_text(json.dumps(merged))
    pids = sorted({e["pid"] for d in docs for e in d["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")})
    p = load_profile(tmp_path / "merged.json")
    (item,) = [h for h in health(p) if "one rank" in h.what]
    assert item.severity == "warning"
    assert item.what == (f"merged.json: loaded as one rank: a trace of the steps of {len(pids)} processes (pids "
                         f"{', '.join(map(str, pids))}: traces merged into one file?), not told apart here; its "
                         "figures are the processes' together")
    assert not [h for h in health(load_profile(real / SAMPLED)) if "one rank" in h.what]
    # torch 2 on a GPU copies each step onto the device's timeline, under the device's pid: one process
    doc = docs[0]
    copies = [dict(e, cat="gpu_user_annotation", pid=0, tid=7) for e in doc["traceEvents"]
              if str(e.get("name", "")).startswith("ProfilerStep#")]
    (tmp_path / "one.json").write_text(json.dumps({**doc, "traceEvents": doc["traceEvents"] + copies}))
    assert not [h for h in health(load_profile(tmp_path / "one.json")) if "one rank" in h.what]


def test_traces_of_processes_not_of_one_job_are_said_to_be_separate_runs(tmp_path):
    """A script run twice into one tensorboard_trace_handler folder: two processes, no
    distributedInfo. Loaded as two ranks, whose cross-rank findings compared two runs unsaid; said,
    and not compared (its steps 3 and 4 us long: a 29% spread)."""
    for i, pid in enumerate((101, 202)):
        events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": pid, "ts": 10 + i, "dur": 5},
                  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 12 + i, "dur": 3 + i,
                   "args": {"device": 0, "stream": 7, "correlation": 1}}]
        (tmp_path / f"host_{pid}.{1700000000000 + i}.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    p = load_profile(tmp_path)
    assert p.ranks == [0, 1]
    said = [(h.severity, h.what) for h in health(p) if "not a distributed run" in h.what]
    assert said == [("warning", f"host_{pid}.{1700000000000 + i}.pt.trace.json: not a distributed run (no "
                                "distributedInfo): the 2 processes whose traces are here carry none: separate runs, "
                                "loaded side by side as ranks in file order, none compared with the others")
                    for i, pid in enumerate((101, 202))]
    # Neither is compared with the other: no spread, no slow rank across two runs.
    from npu_tui.session import Session

    session = Session.load(tmp_path, cache=False)
    session.analyse()
    assert [(r["rank"], r["apart"]) for r in session.report["cluster"]["ranks"]] == [(0, "separate run"), (1, "separate run")]
    assert session.report["cluster"]["spread"] == []
    session.close()
    # One worker's cycles are one rank, and nothing is said.
    (tmp_path / "host_202.1700000000001.pt.trace.json").unlink()
    (tmp_path / "host_101.1700000000009.pt.trace.json").write_text(
        (tmp_path / "host_101.1700000000000.pt.trace.json").read_text().replace('"ts": 1', '"ts": 9'))
    p = load_profile(tmp_path)
    assert p.ranks == [0] and not [h for h in health(p) if "distributed" in h.what]


def test_traces_of_one_rank_by_distributed_info_are_one_rank(real, tmp_path):
    # Two cycles of rank 1 (different file names, one distributedInfo rank) and rank 0: two ranks.
    # The second cycle is rank 1's trace a minute later, its steps numbered on (a copy as it is
    # would be left out as one; with the same steps, it is another profiling session).
    for i, src in enumerate(["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"]):
        shutil.copy(real / SAMPLED / src, tmp_path / f"w{i}.json.gz")
    later = re.sub(rb"ProfilerStep#(\d+)", lambda m: b"ProfilerStep#%d" % (int(m[1]) + 10),
                   _later(gzip.decompress((real / SAMPLED / "sampled_rank-1.json.gz").read_bytes())))
    (tmp_path / "w2.json.gz").write_bytes(gzip.compress(later))
    p = load_profile(tmp_path)
    assert p.ranks == [0, 1]
    per_rank = dict(p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank").fetchall())
    one = load_profile(real / SAMPLED).con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank").fetchall()
    assert per_rank == {r: n * (2 if r == 1 else 1) for r, n in one}


def test_cycles_a_handler_of_ones_own_names_are_one_worker(tmp_path):
    """torch.profiler's documented handler exports each cycle as trace_<step>.json: the files carry
    no worker name and, on one device, no distributedInfo; each was a rank of its own."""
    torch = pytest.importorskip("torch", reason="the traces are written by torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    def handler(prof):
        prof.export_chrome_trace(str(tmp_path / f"trace_{prof.step_num}.json"))

    m, x = torch.nn.Linear(32, 32), torch.randn(4, 32)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=2),
                 on_trace_ready=handler) as prof:
        for _ in range(7):
            m(x).relu()
            prof.step()
    files = sorted(tmp_path.glob("trace_*.json"))
    assert len(files) == 2
    alone = [load_profile(f).con.execute("SELECT count(*) FROM kernels").fetchone()[0] for f in files]
    p = load_profile(tmp_path)
    assert p.ranks == [0] and health(p) == []
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == sum(alone) > 0


def test_two_runs_of_one_rank_under_names_of_ones_own_are_two(real, tmp_path):
    """The same rank's traces from two processes (a job run twice), named by hand: merged, every
    kernel counted twice in one rank; they are the rank claimed twice, as worker-named traces are:
    the first loaded, the other said. Without a rank, a pid is a process only with its host
    (torch 2.x writes host_name)."""
    raw = gzip.decompress((real / SAMPLED / "sampled_rank-0.json.gz").read_bytes())
    (tmp_path / "first.json").write_bytes(raw)
    (tmp_path / "second.json").write_bytes(raw.replace(b'"pid": 4037,', b'"pid": 5123,'))
    p = load_profile(tmp_path)
    one = load_profile(tmp_path / "first.json").con.execute("SELECT count(*) FROM kernels").fetchone()[0]
    assert p.ranks == [0]
    assert p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank ORDER BY rank").fetchall() == [(0, one)]
    assert [h.what for h in health(p) if "claimed twice" in h.what] == [
        f"{tmp_path.name}/second.json: rank 0 claimed twice, by first.json too: not loaded"]

    # No rank: two single-device runs whose processes share a pid (1, in two containers) stay
    # two, unless their hosts are written and the same (the cycles of one run).
    alone = raw.replace(b'"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 128}, ', b"")
    assert alone != raw
    (tmp_path / "first.json").write_bytes(alone)
    (tmp_path / "second.json").write_bytes(_later(alone))
    assert load_profile(tmp_path).ranks == [0, 1]
    hosted = alone.replace(b'{"schemaVersion": 1,', b'{"schemaVersion": 1, "host_name": "node1",', 1)
    assert hosted != alone
    (tmp_path / "first.json").write_bytes(hosted)
    (tmp_path / "second.json").write_bytes(_later(hosted))
    assert load_profile(tmp_path).ranks == [0]


def test_two_workers_of_one_rank_are_two_runs_not_one(real, tmp_path):
    """A job run twice into one folder: two workers (host_pid) whose traces carry the same
    distributedInfo rank. Merged, each step spanned both runs; they are the rank claimed twice."""

    raw = gzip.decompress((real / SAMPLED / "sampled_rank-0.json.gz").read_bytes())
    for worker, data in (("node1_1111", raw), ("node1_2222", _later(raw, 3600))):
        (tmp_path / f"{worker}.1682725898000.pt.trace.json.gz").write_bytes(gzip.compress(data))
    p = load_profile(tmp_path)
    assert p.ranks == [0]
    one = load_profile(real / SAMPLED / "sampled_rank-0.json.gz").con.execute("SELECT count(*) FROM kernels").fetchone()[0]
    assert p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank ORDER BY rank").fetchall() == [(0, one)]
    (dup,) = [h for h in health(p) if "claimed twice" in h.what]
    assert dup.severity == "warning" and "two runs side by side" in dup.fix
    (partial,) = [h for h in health(p) if h.what.startswith("partial rank set")]
    assert partial.what.endswith("128 ranks (its world size); 1 of them here")


# (ids: gzip writes the time into its header, and xdist's workers must collect the same names)
@pytest.mark.parametrize("content", [b"", b"not a trace at all", gzip.compress(b"", mtime=0)],
                         ids=["empty", "text", "empty-gzip"])
def test_a_file_named_as_the_traces_beside_it_that_holds_none_is_a_failed_trace(real, tmp_path, capsys, content):
    """Kineto traces are told by content where their names are their maker's (sampled_rank-N.json.gz):
    one of them empty or damaged in its head was passed over, the report clean but for a partial
    rank set. Named as the traces beside it, it is one of them, failed: said, the run incomplete
    (exit 2, as for a trace under torch's own name). A JSON file named otherwise is none."""
    from npu_tui.cli import main

    folder = shutil.copytree(real / SAMPLED, tmp_path / "job")
    (folder / "sampled_rank-1.json.gz").write_bytes(content)
    (folder / "settings.json").write_text('{"lr": 0.1}')
    p = load_profile(folder)
    (bad,) = failed(health(p))
    assert PurePath(bad.file).name == "sampled_rank-1.json.gz" and bad.severity == "error"
    assert "settings.json" not in " ".join(h.file or "" for h in health(p))
    # (two of the job's ranks here, not "loaded": the one above failed)
    assert any(h.what.endswith("128 ranks (its world size); 2 of them here") for h in health(p))
    assert main(["report", str(folder)]) == 2
    assert "sampled_rank-1.json.gz could not be read" in capsys.readouterr().out


def test_one_trace_opened_alone_is_the_rank_its_distributed_info_says(real):
    """sampled_rank-1.json.gz says rank 1 (distributedInfo), as in its folder; opened alone it had
    been rank 0."""
    p = load_profile(real / SAMPLED / "sampled_rank-1.json.gz")
    assert p.ranks == [1] and p.con.execute("SELECT DISTINCT rank FROM kernels").fetchall() == [(1,)]


def test_ranks_under_one_worker_name_and_pid_stay_apart(real, tmp_path):
    """worker_name="trainer" on every rank, each in a container of its own (every pid the same, no
    host written): the ranks' traces were merged into one rank by name and process."""
    raw = [gzip.decompress((real / SAMPLED / f"sampled_rank-{r}.json.gz").read_bytes()) for r in (0, 1)]
    pid = re.search(rb'"pid": (\d+),', raw[0]).group(1)
    (tmp_path / "trainer.1000.pt.trace.json").write_bytes(raw[0])
    (tmp_path / "trainer.2000.pt.trace.json").write_bytes(re.sub(rb'"pid": \d+,', b'"pid": ' + pid + b",", raw[1]))
    q = "SELECT rank, count(*), sum(dur_ns) FROM kernels GROUP BY rank ORDER BY rank"
    assert load_profile(tmp_path).con.execute(q).fetchall() == load_profile(real / SAMPLED).con.execute(q).fetchall()


def test_a_worker_name_run_twice_is_one_worker_and_the_other_run_said(real, tmp_path):
    """tensorboard_trace_handler(worker_name="rank0") in a job run twice into one folder: by the
    name alone, both runs' traces were one worker, each step spanning the two. By the process
    that took them, they are two runs: of rank 0 (distributedInfo), the rank claimed twice; with
    no rank, the worker claimed twice. Either way the run written later (by the time the handler
    puts in the names) loads, as a torch_npu rank's run that ended later does, and the other is said."""
    raw = gzip.decompress((real / SAMPLED / "sampled_rank-0.json.gz").read_bytes())
    alone = raw.replace(b'"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 128}, ', b"")
    assert alone != raw
    q = "SELECT rank, count(*), sum(dur_ns), count(DISTINCT step) FROM kernels GROUP BY rank ORDER BY rank"
    for data, said in ((raw, "rank 0 claimed twice"), (alone, "worker rank0 claimed twice")):
        for old in tmp_path.iterdir():
            old.unlink()
        first, second = tmp_path / "rank0.1000.pt.trace.json", tmp_path / "rank0.3000.pt.trace.json"
        first.write_bytes(data)
        (tmp_path / "rank0.2000.pt.trace.json").write_bytes(_later(data))  # its next cycle
        second.write_bytes(_later(data.replace(b'"pid": 4037,', b'"pid": 5123,'), 3600))
        p = load_profile(tmp_path)
        assert p.ranks == [0]
        assert p.con.execute(q).fetchall() == load_profile(second).con.execute(q).fetchall()
        (dup,) = [h for h in health(p) if "claimed twice" in h.what]
        assert (dup.rank, dup.what) == (None, f"{tmp_path.name}/{first.name}: {said}, by {second.name} too, whose "
                                              "run ended later: not loaded, nor its 1 other trace")


def test_a_big_kineto_trace_loads_whole(tmp_path):
    """A GPU trace of a few hundred MB (the size a diffusers pipeline writes), generated: every
    kernel, flow and step comes through, none lost to the memory cap (the trace is read in pieces,
    never as one JSON value)."""
    from npu_tui.synth.kineto import write_kineto

    path = tmp_path / "host_1.1700000000000.pt.trace.json"
    truth = write_kineto(path, 400_000)
    assert path.stat().st_size > 250e6
    p = load_profile(tmp_path, cache=False)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert (skipped, note) == (0, "")
    q = p.con.execute
    assert q("SELECT count(*) FROM kernels").fetchone() == (truth["kernels"],)
    assert q("SELECT count(*) FROM flows").fetchone() == (truth["flows"],)
    assert q("SELECT count(*) FROM kernels WHERE input_shapes IS NULL").fetchone() == (0,)
    from npu_tui.analysis import install_views, load_rules
    install_views(p.con, load_rules())
    spans = dict(q("SELECT step, (end_ns - start_ns) / 1e3 FROM step_windows").fetchall())
    assert spans == truth["steps"]


def _events_file(path: Path, events: list) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_a_kernel_s_step_is_the_highest_whose_range_holds_its_launch(tmp_path):
    """Kineto copies each ProfilerStep#N onto the device's timeline (gpu_user_annotation), where
    it runs on into step N+1's host range: a launch inside both belongs to the higher step; a
    kernel without a runtime call is placed by its own start; one outside every range has none."""
    def ev(cat, name, ts, dur, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    events = [ev("user_annotation", "ProfilerStep#1", 0, 100), ev("user_annotation", "ProfilerStep#2", 100, 100),
              {**ev("gpu_user_annotation", "ProfilerStep#1", 30, 150), "pid": 0, "tid": 7}]
    launches = {"k_in_1": 10, "k_in_both": 120, "k_on_edge": 100, "k_at_end": 200, "k_after": 250}
    for corr, (name, at) in enumerate(launches.items()):
        events.append(ev("cuda_runtime", "cudaLaunchKernel", at, 1, correlation=corr))
        events.append({**ev("kernel", name, at + 5, 2, correlation=corr, device=0, stream=7), "pid": 0, "tid": 7})
    events.append({**ev("kernel", "k_no_launch", 40, 2, device=0, stream=7), "pid": 0, "tid": 7})
    p = load_profile(_events_file(tmp_path / "trace.json", events), cache=False)
    got = dict(p.con.execute("SELECT name, step FROM kernels").fetchall())
    assert got == {"k_in_1": 1, "k_in_both": 2, "k_on_edge": 2, "k_at_end": 2, "k_after": None, "k_no_launch": 1}


def test_only_the_phases_a_loader_reads_are_staged_and_an_empty_list_is_still_an_error(tmp_path):
    """Kineto stages complete and instant events alone: its flow arrows are neither loaded nor
    counted as skipped, even untimed (an entry without a ph is no event: counted). Filtering must
    not turn an empty event list into a clean load, nor a trace of other events into an error."""
    from npu_tui.profile.errors import SourceError

    events = [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
              {"ph": "s", "name": "ac2g", "cat": "ac2g", "pid": 1, "tid": 1, "ts": 11, "id": 7},
              {"ph": "f", "name": "ac2g", "cat": "ac2g", "pid": 0, "tid": 7, "id": 7},  # untimed
              {"name": "no phase", "pid": 1, "tid": 1, "ts": 12},
              {"ph": "i", "name": "[memory]", "cat": "cpu_instant_event", "pid": 1, "tid": 1, "ts": 13}]
    con = connect()
    staged = stage_trace(con, _events_file(tmp_path / "a.json", events), "stg_a", phases=kineto.PHASES)
    assert (staged.events, staged.untimed, staged.lost) == (2, 0, 1)
    assert con.execute("SELECT ph, name FROM stg_a ORDER BY seq").fetchall() == [("X", "aten::mm"), ("i", "[memory]")]
    assert stage_trace(connect(), tmp_path / "a.json", "stg_all").untimed == 1  # unfiltered: the f counts

    (tmp_path / "empty.json").write_text('{"traceEvents": [\n   \n]}')
    with pytest.raises(SourceError, match="no events"):
        stage_trace(connect(), tmp_path / "empty.json", "stg_e", phases=kineto.PHASES)
    flows_only = _events_file(tmp_path / "flows.json", events[1:3])
    assert stage_trace(connect(), flows_only, "stg_f", phases=kineto.PHASES).events == 0
    # Nothing with a ph is no event, read whole or salvaged; salvage reads the values after the
    # event on its line (no event boundary between them), which does not parse: an error all the same.
    no_phase = _events_file(tmp_path / "no_phase.json", [events[3], 1, "a"])
    for salvage, said in ((False, "its 3 entries are none"), (True, "no event could be read \\(1 of 1 do not parse\\)")):
        with pytest.raises(SourceError, match=said):
            stage_trace(connect(), no_phase, "stg_n", salvage=salvage, phases=kineto.PHASES)
    objects = _events_file(tmp_path / "objects.json", [events[3], {"name": "no phase either"}])
    with pytest.raises(SourceError, match="no events"):
        stage_trace(connect(), objects, "stg_o", salvage=True, phases=kineto.PHASES)


def test_salvage_counts_what_does_not_parse_among_every_event_then_keeps_the_phases_read(tmp_path):
    """In salvage mode the count of events that do not parse is of all of them (the lines
    written against the rows read), so the phases are picked after it."""
    good = [{"ph": "X", "name": f"op{i}", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5} for i in range(3)]
    flow = {"ph": "s", "name": "ac2g", "cat": "ac2g", "pid": 1, "tid": 1, "ts": 11, "id": 7}
    text = json.dumps({"traceEvents": good + [flow]})
    broken = text.replace('"name": "op1"', '"name": "op1\\q"')  # an escape JSON does not have
    path = tmp_path / "broken.json"
    path.write_text(broken)
    con = connect()
    staged = stage_trace(con, path, "stg_s", salvage=True, phases=kineto.PHASES)
    assert staged.lost == 1 and "1 event(s) that do not parse" in staged.note
    assert con.execute("SELECT name FROM stg_s ORDER BY seq").fetchall() == [("op0",), ("op2",)]


def test_a_rank_past_32_bits_is_ranked_by_folder_order(real, tmp_path):
    """A rank number the ranks table cannot hold (2^31 and past), in a Kineto trace's
    distributedInfo (its world size too) or a torch_npu profiler_info file's name: a traceback from
    the load log's insert. The trace is ranked as one without a rank; the torch_npu folder by folder order,
    with a warning that names the file."""
    from npu_tui.demo import PATH as DEMO

    with gzip.open(real / SAMPLED / "sampled_rank-0.json.gz", "rt") as f:
        text = f.read().replace('"rank": 0, "world_size": 128', '"rank": 2147483648, "world_size": 4294967296', 1)
    kineto = tmp_path / "kineto"
    kineto.mkdir()
    (kineto / "w.pt.trace.json").write_text(text)
    assert load_profile(kineto).ranks == [0]

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (info,) = demo.glob("*_ascend_pt/profiler_info_0.json")
    info.rename(info.with_name("profiler_info_2147483648.json"))
    p = load_profile(demo)
    assert p.ranks == [0, 1]
    (said,) = [h for h in health(p) if "2147483648" in h.what]
    assert said.severity == "warning" and "the first rank no other folder claims" in said.what


def test_begin_and_end_events_are_paired_into_complete_ones(tmp_path):
    """The Chrome trace format gives a duration as 'B' and 'E' as well as 'X': they were passed
    over unsaid (a step written so was lost, its ops in no step). Paired per thread as a viewer
    does, nested, an end at the same time as the next begin; an end without its begin counted."""
    ev = [{"ph": "B", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 90},
          {"ph": "B", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "args": {"a": 1}},
          {"ph": "E", "pid": 1, "tid": 1, "ts": 150},
          {"ph": "B", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 150},
          {"ph": "B", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 2, "ts": 155},
          {"ph": "E", "pid": 1, "tid": 1, "ts": 170},
          {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 200, "dur": 10},
          {"ph": "E", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 300},
          {"ph": "E", "pid": 1, "tid": 3, "ts": 310}]
    (tmp_path / "t.pt.trace.json").write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [],
                                                           "traceEvents": ev}))
    p = load_profile(tmp_path)
    q = p.con.execute
    assert q("SELECT name, start_ns, dur_ns, args->>'a' FROM host_events ORDER BY start_ns").fetchall() == [
        ("ProfilerStep#1", 90_000, 210_000, None), ("aten::mm", 100_000, 50_000, "1"),
        ("aten::mm", 150_000, 20_000, None), ("aten::add", 200_000, 10_000, None)]
    assert q("SELECT name, step FROM kernels ORDER BY start_ns").fetchall() == [
        ("aten::mm", 1), ("aten::mm", 1), ("aten::add", 1)]
    assert q("SELECT skipped_rows, note FROM load_log").fetchall() == [
        (2, "2 begin or end events ('B', 'E') without the other half of their pair: dropped")]
    staged = stage_trace(connect(), tmp_path / "t.pt.trace.json", "stg", phases=kineto.PHASES)
    assert (staged.events, staged.untimed) == (len(ev) - 3, 2)  # (three pairs, each one event)


@pytest.mark.parametrize("name", ["t.pt.trace.json", "trace_view.json"])
def test_entries_of_the_events_list_that_are_no_event_are_counted(tmp_path, name):
    """A number, a string, null, a list or an object without a ph among the events vanished
    uncounted; a list of nothing else was said to be an empty list."""
    good = [{"ph": "X", "cat": "cpu_op", "name": f"aten::{n}", "pid": 1, "tid": 1, "ts": t, "dur": 5}
            for n, t in (("a", 10), ("b", 20))]
    junk = [5, "s", None, [1], {"name": "no ph", "ts": 30}]
    if name == "trace_view.json":
        good = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
                *[dict(e, ts=f"{e['ts']}.000") for e in good]]
    (tmp_path / name).write_text(json.dumps({"schemaVersion": 1, "traceEvents": good + junk} if "pt" in name
                                            else good + junk))
    p = load_profile(tmp_path)
    assert p.con.execute("SELECT name FROM host_events ORDER BY start_ns").fetchall() == [("aten::a",), ("aten::b",)]
    if "pt" in name:  # a CPU run: its ops are its kernels (they were dropped, the entries taken for damage)
        assert p.con.execute("SELECT name FROM kernels ORDER BY start_ns").fetchall() == [("aten::a",), ("aten::b",)]
    assert p.con.execute("SELECT skipped_rows, note FROM load_log").fetchall() == [(5, (
        "5 entries of its events list that are no event (no ph: a number, a string, an object without one): "
        "skipped"))]
    (tmp_path / name).write_text(json.dumps({"schemaVersion": 1, "traceEvents": junk} if "pt" in name else junk))
    with pytest.raises(ProfileError, match="5 entries of its events list that are no event|its 5 entries are none"):
        load_profile(tmp_path)
