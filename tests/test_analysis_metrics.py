"""Categories, shares, exposed comm, step breakdown and findings on hand-made kernels, with the
expected numbers worked out by hand below each input."""

import pytest

from npu_tui.analysis import build_report, install_views, load_rules

from analysis_support import make_profile, rows

US = 1000  # ns per µs: inputs are written in µs for readability

# One rank, no step ids, no diffusion pipeline (so one stage, All). Timeline (µs):
#   FA [0,300)  MatMul [300,700)  Conv [700,800)  Vector [800,900)     compute union [0,900)
#   comm [850,1150)  memcpy [1150,1200) (neither)  AI_CPU [1200,1300) (compute, category Other)
KERNELS = [
    (0, None, "aclnnFlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "AI_CORE", 0, 300, "1,2"),
    (0, None, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 300, 400, "3,4"),
    (0, None, "aclnnConvolution_Conv2D_Conv2D", "Conv2D", "AI_CORE", 700, 100, "5"),
    (0, None, "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 800, 100, "6"),
    (0, None, "hcom_allReduce__586_0_1", "hcom_allReduce_", "HCCL", 850, 300, None),
    (0, None, "MemcpyAsync", "MEMCPY_ASYNC", "", 1150, 50, None),
    (0, None, "NonZero", "NonZero", "AI_CPU", 1200, 100, None),
]
TOTAL = 300 + 400 + 100 + 100 + 300 + 50 + 100  # 1350
# Exposed: comm [850,1150) minus compute [0,900) ∪ [1200,1300) = [900,1150) = 250.
# Wall: first start 0 to last end 1300. Busy (comm ∪ compute) = [0,1150) ∪ [1200,1300) = 1250.
LANES = [
    (0, "Computing", 0, 900), (0, "Computing", 1200, 100), (0, "Communication", 850, 300),
    (0, "Communication(Not Overlapped)", 900, 250), (0, "Free", 1150, 50),
]


def _us(rows_in):
    return [r[:5] + (r[5] * US, r[6] * US) + r[7:] for r in rows_in]


def _lanes_us(lanes):
    return [(r, lane, s * US, d * US) for r, lane, s, d in lanes]


def test_categories_and_shares():
    p = make_profile(_us(KERNELS))
    got = {c: (t, n, s) for c, t, n, s in rows(
        p, "SELECT category, time_us, count, share FROM stage_categories WHERE rank = 0 AND stage = 'All'")}
    expected = {"FA": 300, "MatMul": 400, "Conv": 100, "Vector": 100, "Comm": 300, "Other": 150}
    for cat, t in expected.items():
        assert got[cat][0] == pytest.approx(t)
        assert got[cat][2] == pytest.approx(t / TOTAL)
    assert got["Other"][1] == 2
    assert sum(v[2] for v in got.values()) == pytest.approx(1.0)
    compute = dict(rows(p, "SELECT type, is_compute FROM kernel_categories"))
    assert compute["NonZero"] and not compute["MEMCPY_ASYNC"] and not compute["hcom_allReduce_"]


@pytest.mark.parametrize("op,category", [
    ("aten::conv_transpose2d", "Conv"), ("aten::conv_transpose3d", "Conv"), ("aten::baddbmm", "MatMul"),
    ("aten::addbmm", "MatMul"), ("aten::mv", "MatMul"), ("aten::addmv", "MatMul"), ("aten::tensordot", "MatMul"),
    ("aten::conv2d", "Conv"), ("aten::bmm", "MatMul"), ("aten::add", "Vector"), ("aten::move", "Vector"),
    # (an einsum may only permute, as a DiT's unpatchify does: no product to count)
    ("aten::einsum", "Vector"),
])
def test_a_cpu_runs_ops_are_categorised_by_what_they_compute(op, category):
    """A transposed convolution (a VAE's upsampling on some models) read as Vector, and the
    batched products diffusers' classic attention uses for its scores (baddbmm) as Vector too."""
    p = make_profile([(0, None, op, op, "CPU", 0, 100, None)])
    assert rows(p, "SELECT category FROM kernel_categories") == [(category,)]


def test_exposed_comm_from_kernels_and_lanes_agree():
    k_only = make_profile(_us(KERNELS))
    with_lanes = make_profile(_us(KERNELS), lanes=_lanes_us(LANES))
    for p, source in ((k_only, "kernels"), (with_lanes, "overlap_lanes")):
        (wall, comm, exposed, share, src, by_kernels), = rows(
            p, "SELECT wall_us, comm_us, exposed_us, exposed_share, source, exposed_kernels_us "
               "FROM comm_exposure WHERE rank = 0 AND stage = 'All'")
        assert src == source
        assert (wall, comm, exposed, by_kernels) == pytest.approx((1300, 300, 250, 250))
        assert share == pytest.approx(250 / 1300)


def test_step_breakdown_from_kernels_and_from_lanes():
    expected = (1000, 250, 50, 50, 1300)  # computing, comm not overlapped, overlapped, free, stage
    cols = "computing_us, comm_not_overlapped_us, overlapped_us, free_us, stage_us, source"
    p = make_profile(_us(KERNELS))
    (*vals, source), = rows(p, f"SELECT {cols} FROM step_breakdown")
    assert source == "kernels" and tuple(vals) == pytest.approx(expected)
    p = make_profile(_us(KERNELS), lanes=_lanes_us(LANES))
    (*vals, source), = rows(p, f"SELECT {cols} FROM step_breakdown")
    assert source == "overlap_lanes" and tuple(vals) == pytest.approx(expected)
    # the profiler's own values win when present
    p = make_profile(_us(KERNELS), lanes=_lanes_us(LANES), step_trace=[(0, 7, 1.0, 2.0, 3.0, 4.0, 7.0)])
    (*vals, source), = rows(p, f"SELECT {cols} FROM step_breakdown")
    assert source == "step_trace_time.csv" and tuple(vals) == (1.0, 2.0, 3.0, 4.0, 7.0)


def test_no_attention_means_single_stage():
    # Conv-heavy, no FA: a ResNet, not a diffusion pipeline.
    ks = [(0, None, f"Conv2D{i}", "Conv2D", "AI_CORE", i * 10 * US, 10 * US, "1") for i in range(20)]
    p = make_profile(ks)
    assert rows(p, "SELECT stage, method, confidence, start_us, end_us, kernel_count FROM stage_summary") == [
        ("All", "single", None, 0.0, 200.0, 20)]


def _rules_with(tmp_path, **thresholds):
    text = load_rules().data and (
        __import__("importlib.resources", fromlist=["files"]).files("npu_tui.analysis")
        .joinpath("rules.toml").read_text())
    for rule, (old, new) in thresholds.items():
        marker = f'rule = "{rule}"'
        head, _, tail = text.partition(marker)
        tail = tail.replace(f"threshold = {old}", f"threshold = {new}", 1)
        text = head + marker + tail
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return load_rules(path)


def test_findings_fire_with_evidence_and_estimate(tmp_path):
    # MatMul share 400/1350 = 0.296 and exposed share 250/1300 = 0.192: lower the thresholds to fire.
    rules = _rules_with(tmp_path, matmul_high=("0.50", "0.25"), comm_exposed_high=("0.30", "0.15"))
    p = make_profile(_us(KERNELS), rules=rules)
    report = build_report(p, rules)
    by_rule = {f["rule"]: f for f in report["findings"]}
    assert set(by_rule) == {"matmul_high", "comm_exposed_high"}
    mm = by_rule["matmul_high"]
    # The DiT's rules apply to a rank without diffusion stages: its one stage, All.
    assert (mm["rank"], mm["stage"], mm["metric"], mm["threshold"]) == (0, "All", "share", 0.25)
    assert mm["value"] == pytest.approx(400 / TOTAL)
    # one step: MatMul 1.5x faster saves a third of its 400 µs
    assert mm["saving_us"] == pytest.approx(400 / 3)
    assert mm["ranks"] == [0] and mm["per_rank"] == [{"rank": 0, "value": mm["value"], "cause": None,
                                                        "saving_us": mm["saving_us"], "apart": None}]
    assert mm["evidence"]["top_operators"][0]["type"] == "MatMulV3"
    assert "stage_categories" in mm["evidence"]["sql"]
    assert p.con.execute(mm["evidence"]["sql"]).fetchall()  # the evidence query runs as shown
    (doc,) = mm["docs"]
    assert (doc["repository"], doc["path"]) == ("Ascend/MindIE-SD", "docs/zh/features/quantization.md")
    assert "Quantize" in doc["action"]
    cx = by_rule["comm_exposed_high"]
    assert cx["value"] == pytest.approx(250 / 1300)
    # No communication.json: what the exposed comm is stays unknown, and the direction says so.
    assert cx["cause"] == "unsplit" and "masking" not in cx["direction"].lower()
    assert cx["saving_us"] == pytest.approx(250 / 2)  # half hidden
    assert cx["evidence"]["top_operators"][0]["type"] == "hcom_allReduce_"
    assert build_report(make_profile(_us(KERNELS)), load_rules())["findings"] == []


def test_the_step_account_adds_up_to_the_step():
    p = make_profile(_us(KERNELS))
    got = {(part, detail): us for part, detail, us in rows(
        p, "SELECT part, detail, us FROM step_account WHERE rank = 0 AND stage = 'All'")}
    # compute [0,900) and [1200,1300), split by the kernels' own time; comm [900,1150) exposed;
    # the memcpy [1150,1200) with nothing else running; no idle time: 1300 µs in all.
    assert got == {("compute", "FA"): pytest.approx(300), ("compute", "MatMul"): pytest.approx(400),
                   ("compute", "Conv"): pytest.approx(100), ("compute", "Vector"): pytest.approx(100),
                   ("compute", "Other"): pytest.approx(100), ("comm_exposed", "unsplit"): pytest.approx(250),
                   ("copy", None): pytest.approx(50)}
    assert sum(got.values()) == pytest.approx(1300)


def test_rank_spread_finding_names_the_slow_rank():
    # own time (computing + free) 80 vs 90 µs: (90 - 80) / 85 = 11.8% > 5%; exposed comm equal: no
    # finding.
    p = make_profile(_us(KERNELS) + [(1,) + k[1:] for k in _us(KERNELS)],
                     step_trace=[(0, 1, 50.0, 20.0, 0.0, 30.0, 100.0), (1, 1, 50.0, 20.0, 0.0, 40.0, 110.0)])
    report = build_report(p, load_rules())
    spread = [f for f in report["findings"] if f["metric"] == "spread"]
    assert [(f["rule"], f["rank"], f["stage"]) for f in spread] == [("rank_step_imbalance", 1, None)]
    assert spread[0]["value"] == pytest.approx(10 / 85)
    assert spread[0]["saving_us"] == pytest.approx(5.0)
    assert spread[0]["ranks"] == [1] and spread[0]["per_rank"][0]["saving_us"] == pytest.approx(5.0)
    measures = {s["measure"]: s for s in report["cluster"]["spread"]}
    assert measures["exposed_comm"]["spread"] == 0.0


def test_a_rank_not_loaded_whole_is_not_compared():
    """Steps 100, 110 and 60 µs: rank 2 would be the fast one (and rank 1's lead 47%), but a file
    of it was cut, so what it lost is unknown: the ranks compared are 0 and 1."""
    steps = [(0, 1, 50.0, 20.0, 0.0, 30.0, 100.0), (1, 1, 50.0, 20.0, 0.0, 40.0, 110.0),
             (2, 1, 30.0, 10.0, 0.0, 20.0, 60.0)]
    kernels = [(r,) + k[1:] for r in range(3) for k in _us(KERNELS)]
    p = make_profile(kernels, step_trace=steps)
    install_views(p.con, load_rules(), apart={2: "not loaded whole"})
    spread = dict(rows(p, "SELECT measure, (ranks, min_us, max_us, slow_rank) FROM rank_spread"))
    assert spread["step_time"] == (2, 100.0, 110.0, 1)
    assert spread["own_time"] == (2, 80.0, 90.0, 1)  # computing + free
    assert dict(rows(p, "SELECT rank, vs_mean FROM rank_times")) == {
        0: pytest.approx(80 / 85), 1: pytest.approx(90 / 85), 2: None}


def test_stage_override_replaces_detection():
    from npu_tui.analysis import set_stage_windows

    p = make_profile(_us(KERNELS))
    set_stage_windows(p.con, [(0, "VAE", 700 * US, 1000 * US)])
    got = rows(p, "SELECT stage, method, start_us, end_us, kernel_count FROM stage_windows ORDER BY start_ns")
    # Conv, Add, allReduce start inside [700, 1000); the rest falls outside every window.
    assert got == [("Other", "override", 0.0, 700.0, 2), ("VAE", "override", 700.0, 1150.0, 3),
                   ("Other", "override", 1150.0, 1300.0, 2)]


def test_a_dit_window_set_by_hand_holds_forwards_not_known():
    """A window set by hand says nothing of how many forwards it holds (one around a whole loop
    read "1 forwards a call"): no count, and step_cache does not test one."""
    from npu_tui.analysis import set_stage_windows

    p = make_profile(_us(KERNELS))
    set_stage_windows(p.con, [(0, "DiT", 0, 700 * US)])
    assert rows(p, "SELECT forwards FROM stage_windows WHERE stage = 'DiT'") == [(None,)]
    assert rows(p, "SELECT value FROM stage_metrics WHERE metric = 'forwards'") == [(None,)]


def test_forwards_are_counted_per_step_where_each_step_is_a_call(tmp_path):
    """Two ProfilerSteps, each a call of six marked DiT forwards after a short text encoder and no
    VAE in the profile: the forwards of both steps read as one call's (12, step_cache fired)."""
    import json

    from npu_tui.session import open_session

    events, t = [], 0

    def kernel(name, ts, dur):
        corr = len(events)
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                       "dur": 1, "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts + 2, "dur": dur,
                       "args": {"correlation": corr, "device": 0, "stream": 7}})

    for step in (1, 2):
        start = t
        kernel("t5_gemm_encoder", t + 5, 20_000)
        t += 20_010
        for _ in range(6):
            events.append({"ph": "X", "cat": "user_annotation", "name": "npu_tui:stage:DiT", "pid": 1, "tid": 1,
                           "ts": t, "dur": 100_000})
            for b in range(4):
                kernel(f"dit_block_gemm_{b}", t + 5 + b * 25_000, 24_000)
            t += 100_010
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": start, "dur": t - start + 5})
        t += 50
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": events}))
    s = open_session(tmp_path / "trace.json", cache=False)
    assert s.con.execute("SELECT value FROM stage_metrics WHERE metric = 'forwards'").fetchall() == [(6,)]
    assert "step_cache" not in {f["rule"] for f in s.findings}
