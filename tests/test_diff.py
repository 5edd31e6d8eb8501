"""The before/after comparison, on hand-made runs with hand-computed answers."""

import pytest

from npu_tui.analysis import build_report, load_rules
from npu_tui.analysis.diff import RunData, compare, render, run_data, verdict

from analysis_support import make_profile

BASE_STEPS = [100.0, 102.0, 98.0, 101.0, 99.0]  # mean 100, sample variance 2.5


def test_verdict_faster_with_noise_from_the_steps():
    # new: mean 90, variance 2.5; noise = 2 * sqrt(2.5/5 + 2.5/5) = 2
    v = verdict(BASE_STEPS, [90.0, 91.0, 89.0, 92.0, 88.0])
    assert v["verdict"] == "faster"
    assert v["base_step_us"] == pytest.approx(100.0) and v["new_step_us"] == pytest.approx(90.0)
    assert v["delta_us"] == pytest.approx(-10.0) and v["delta_pct"] == pytest.approx(-0.1)
    assert v["noise_us"] == pytest.approx(2.0)


def test_verdict_within_noise_and_slower():
    # new: mean 101, variance 5; noise = 2 * sqrt(0.5 + 1.0) = 2.449 > 1
    within = verdict(BASE_STEPS, [102.0, 100.0, 101.0, 104.0, 98.0])
    assert within["verdict"] == "within noise"
    assert within["noise_us"] == pytest.approx(2 * 1.5 ** 0.5)
    assert verdict(BASE_STEPS, [110.0, 112.0, 108.0, 111.0, 109.0])["verdict"] == "slower"


def test_verdict_needs_two_steps_a_side():
    v = verdict([100.0], BASE_STEPS)
    assert v["verdict"] == "undetermined" and v["noise_us"] is None


def test_run_data_reads_the_reports_step_times_and_pairs_operators_by_identity():
    prof = make_profile(
        kernels=[(0, 1, "hcom_allReduce__586_0_1", "hcom_allReduce_", "HCCL", 0, 3_000, None),
                 (0, 2, "hcom_allReduce__586_1_1", "hcom_allReduce_", "HCCL", 20_000, 5_000, None),
                 (1, 1, "trans_TransData_17", "TransData", "AI_CORE", 0, 1_000, "1,2"),
                 (1, 2, "trans_TransData_18", "TransData", "AI_CORE", 20_000, 1_000, "1,2")],
        # (rank, step, computing, comm not overlapped, overlapped, free, stage), µs
        step_trace=[(0, 1, 1.0, 0.0, 0.0, 0.0, 10.0), (0, 2, 1.0, 0.0, 0.0, 0.0, 12.0),
                    (1, 1, 1.0, 0.0, 0.0, 0.0, 11.0), (1, 2, 1.0, 0.0, 0.0, 0.0, 9.0)])
    report = build_report(prof, load_rules())
    rd = run_data(prof.con, "/runs/a", report)
    # One time per step, the slowest rank's, as the report's steps give them.
    assert rd.step_us == [11.0, 12.0]
    assert rd.step_us == [max(s["step_us"] for s in report["steps"] if s["step"] == n) for n in (1, 2)]
    assert rd.step_source == "step_trace_time.csv"
    # The run ids and instance numbers are not part of an operator's identity.
    assert rd.operators == {"hcom_allReduce": (8.0, 2), "trans_TransData": (2.0, 2)}
    assert rd.path == "/runs/a"


def test_the_warm_up_step_is_left_out_of_the_verdict():
    # Step 1 takes 30 µs, the rest 10-11: more than 1.5x the median (rules.toml [steps]), so a warm-up.
    times = {1: 30.0, 2: 10.0, 3: 11.0, 4: 10.0}
    prof = make_profile(
        kernels=[(0, n, "trans_TransData_1", "TransData", "AI_CORE", n * 100_000, 1_000, None) for n in times],
        step_trace=[(0, n, 1.0, 0.0, 0.0, 0.0, us) for n, us in times.items()])
    rd = run_data(prof.con, "/runs/a", build_report(prof, load_rules()))
    assert rd.step_us == [10.0, 11.0, 10.0] and rd.left_out == 1 and rd.steps == 4
    d = compare(rd, rd)
    assert d["base"] == {"path": "/runs/a", "steps": 3, "left_out": 1, "complete": True, "failed": []}
    assert d["verdict"]["base_step_us"] == pytest.approx(31 / 3)
    assert "2 warm-up steps left out" in render(d, "text")


def _finding(rule, ranks, value, threshold):
    return {"rule": rule, "stage": "DiT", "ranks": ranks, "rank": ranks[0], "metric": "share", "value": value,
            "threshold": threshold, "saving_us": value * 10}


def _runs():
    base = RunData("/runs/base", {
        "stages": [{"rank": 0, "stage": "DiT", "kernel_time_us": 500.0, "wall_us": 600.0,
                    "method": "markers"}],
        "categories": [{"rank": 0, "stage": "DiT", "category": "MatMul", "time_us": 300.0,
                        "share": 0.6}],
        "findings": [_finding("matmul_high", [0], 0.6, 0.5), _finding("fa_high", [1, 0], 0.4, 0.3)],
        "health": [],
    }, BASE_STEPS, "ProfilerStep", {"A": (500.0, 5), "B": (100.0, 5)})
    new = RunData("/runs/new", {
        "stages": [{"rank": 0, "stage": "DiT", "kernel_time_us": 360.0, "wall_us": 400.0,
                    "method": "markers"},
                   {"rank": 0, "stage": "VAE", "kernel_time_us": 40.0, "wall_us": 48.0,
                    "method": "markers"}],
        "categories": [{"rank": 0, "stage": "DiT", "category": "MatMul", "time_us": 200.0,
                        "share": 0.55}],
        "findings": [_finding("matmul_high", [0, 1], 0.55, 0.5), _finding("vector_high", [0], 0.25, 0.2)],
        "health": [{"severity": "warning", "file": "/runs/new/a.csv"}],
    }, [90.0, 91.0, 89.0, 92.0], "ProfilerStep", {"A": (200.0, 4), "C": (80.0, 4)})
    return base, new


def test_compare_per_step_deltas_findings_and_operators():
    d = compare(*_runs(), top=2)
    assert (d["base"]["steps"], d["new"]["steps"]) == (5, 4)
    dit, vae = d["stages"]
    # DiT: 500/5 = 100 µs per step before, 360/4 = 90 after.
    assert (dit["stage"], dit["base_us"], dit["new_us"]) == ("DiT", 100.0, 90.0)
    assert dit["delta_us"] == pytest.approx(-10.0) and dit["delta_pct"] == pytest.approx(-0.1)
    assert (dit["base_wall_us"], dit["new_wall_us"]) == (120.0, 100.0)
    assert (vae["stage"], vae["base_us"], vae["new_us"], vae["delta_pct"]) == ("VAE", 0.0, 10.0, None)
    (mm,) = d["categories"]
    assert (mm["base_us"], mm["new_us"], mm["base_share"], mm["new_share"]) == (60.0, 50.0, 0.6, 0.55)

    f = d["findings"]
    assert [x["rule"] for x in f["appeared"]] == ["vector_high"]
    assert [(x["rule"], x["ranks"], x["untested"]) for x in f["cleared"]] == [("fa_high", [1, 0], "")]
    # One finding per rule and stage: the same one, now on a second rank too.
    assert f["remaining"] == [{"rule": "matmul_high", "stage": "DiT", "metric": "share", "base_ranks": [0],
                               "new_ranks": [0, 1], "base_value": 0.6, "new_value": 0.55, "base_rank": 0,
                               "new_rank": 0, "threshold": 0.5,
                               "base_saving_us": 6.0, "new_saving_us": 5.5}]
    # Per step: A 100 -> 50, B 20 -> 0, C 0 -> 20; the two largest moves, ties by name.
    assert [(o["op"], o["delta_us"]) for o in d["operators"]] == [("A", -50.0), ("B", -20.0)]
    assert d["operators"][0]["base_count"] == 1 and d["operators"][0]["new_count"] == 1


def test_render_text_and_markdown():
    base, new = _runs()
    new.step_us = [90.0, 91.0, 89.0, 92.0, 88.0]  # mean 90, noise 2 (as above)
    d = compare(base, new)
    text = render(d, "text")
    assert ("Verdict: faster: step 0.100 ms -> 0.090 ms (-0.010 ms, -10.0%), noise ±0.002 ms "
            "from 5+5 steps (ProfilerStep)") in text
    assert "- appeared: vector_high (DiT, rank 0): share 25.0% > 20.0%" in text
    assert "- cleared: fa_high (DiT, ranks 0, 1, worst 1): share 40.0% > 30.0%" in text
    assert "- still: matmul_high (DiT, ranks 0, 1, worst 0): 60.0% -> 55.0%" in text
    # Its worst rank another in the new run: the two values are two ranks', and say so (they had
    # read as one rank's change).
    new.report["findings"][0] = _finding("matmul_high", [1, 0], 0.55, 0.5)
    assert ("- still: matmul_high (DiT, ranks 0, 1, worst 1): 60.0% (rank 0) -> 55.0% (rank 1)"
            in render(compare(base, new), "text"))
    md = render(d, "md")
    assert "| rank | stage | base ms | new ms | delta ms | delta % |" in md
    assert "|---:|---|---:|---:|---:|---:|" in md
    # DiT kernel time 360 µs over 5 steps now: 72 µs per step.
    assert "| 0 | DiT | 0.100 | 0.072 | -0.028 | -28.0% |" in md


def test_a_run_whose_load_lost_a_file_is_said_incomplete():
    base, new = _runs()
    assert "INCOMPLETE" not in render(compare(base, new), "text")
    new.report["health"].append({"severity": "error", "file": "/runs/new/trace_view.json"})
    d = compare(base, new)
    assert (d["base"]["complete"], d["new"]["complete"]) == (True, False)
    assert d["new"]["failed"] == ["/runs/new/trace_view.json"]
    lines = render(d, "text").splitlines()
    assert lines[3] == "INCOMPLETE: the new run: 1 file could not be loaded whole; its figures lack what is missing"


def test_the_rows_of_a_rank_a_run_leaves_out_are_marked():
    """The new run's rank 0 was not loaded whole: its stage and category rows compare figures that
    lack what is missing, marked as the Ranks pane marks it, with why below them."""
    from rich.console import Console

    from npu_tui.tui.panes.diff import diff_renderable

    base, new = _runs()
    assert "✕" not in render(compare(base, new), "text")
    new.report["cluster"] = {"ranks": [{"rank": 0, "apart": "not loaded whole"}]}
    d = compare(base, new)
    assert {r["apart"] for r in d["stages"] + d["categories"]} == {"not loaded whole in the new run"}
    md = render(d, "md")
    assert "| 0✕ | DiT | 0.100 | 0.090 | -0.010 | -10.0% |" in md
    assert "- ✕ rank 0: not loaded whole in the new run" in md
    console = Console(width=120, record=True, color_system=None)
    console.print(diff_renderable(d))
    shown = console.export_text()
    assert "0✕" in shown and "✕ rank 0: not loaded whole in the new run" in shown


def test_a_finding_gone_with_a_rank_left_out_may_only_be_untested():
    """The new run's rank 1 was not loaded whole, so it is compared with no other rank: a finding
    across ranks, or one of rank 1's, gone from it had read as cleared."""
    base, new = _runs()
    base.report["findings"].append({**_finding("rank_comm_imbalance", [0], 0.06, 0.05), "stage": None,
                                    "metric": "spread"})
    new.report["cluster"] = {"ranks": [{"rank": 0, "apart": None}, {"rank": 1, "apart": "not loaded whole"}]}
    d = compare(base, new)
    cleared = {x["rule"]: x["untested"] for x in d["findings"]["cleared"]}
    assert cleared == {"fa_high": "rank 1, not loaded whole", "rank_comm_imbalance": "rank 1, not loaded whole"}
    assert ("- cleared: rank_comm_imbalance (rank 0): spread 6.0% > 5.0% (maybe only untested: the new run "
            "leaves out rank 1, not loaded whole)") in render(d, "text")
