"""The diagnosis on real samples: where the comm time goes and the direction that follows from it,
device idle, time between steps and warm-up steps, findings merged and ordered by what fixing them
buys, docs a user can follow; expected numbers read from the profiler's files here."""

import gzip
import json
from pathlib import Path

import pytest

from npu_tui.analysis import load_rules
from npu_tui.analysis.render import render
from npu_tui.cli import main
from npu_tui.demo import PATH as DEMO
from npu_tui.session import open_session
from npu_tui.tui.panes.findings import finding_line

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"
LEVEL1 = REAL / "msinsight-pt-2rank-levels" / "text" / "level1"
MSPROF = REAL / "mindinsight-msprof-2dev-hccl"
ALEXNET = REAL / "kineto" / "hta-alexnet-1gpu"
FEATURE_DOCS = ROOT.parent / "shared" / "feature-docs.md"


def _rule(rule: str) -> dict:
    return next(f for f in load_rules().findings if f["rule"] == rule)


def _finding(s, rule: str) -> dict:
    found = [f for f in s.findings if f["rule"] == rule]
    assert len(found) == 1, [f["rule"] for f in s.findings]
    return found[0]


def test_level1_exposed_comm_is_idle_and_the_direction_says_so():
    doc = json.loads((LEVEL1 / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
    ops = [op["Communication Time Info"] for kinds in doc.values() for ops in kinds.values()
           for key, op in ops.items() if key != "Total Op Info"]
    idle = sum(t["Idle Time(ms)"] for t in ops)
    transit = sum(t["Transit Time(ms)"] for t in ops)
    assert idle == pytest.approx(96.4, abs=0.05) and transit < 4  # PROVENANCE's sample, as the issue reads it
    s = open_session(LEVEL1, cache=False)
    # The Comm pane's view carries the idle time, per op and in total.
    (shown,) = s.con.execute("SELECT sum(idle_ms) FROM comm_op_times WHERE rank = 0").fetchone()
    assert shown == pytest.approx(idle, rel=1e-9)
    f = _finding(s, "comm_exposed_high")
    causes = {r["rank"]: r["cause"] for r in f["per_rank"]}
    assert causes[0] == "idle"
    rule = _rule("comm_exposed_high")
    assert f["direction"] == rule["causes"]["idle"]["direction"] != rule["direction"]  # not masking
    assert [d["path"] for d in f["docs"]] == [f"docs/zh/features/{d['page']}" for d in rule["causes"]["idle"]["docs"]]
    # The step account splits the exposed time the same way: most of it idle.
    split = dict(s.con.execute("SELECT detail, sum(us_per_step) FROM step_account_mean WHERE rank = 0 "
                               "AND part = 'comm_exposed' GROUP BY detail").fetchall())
    assert max(split, key=split.get) == "idle"


def _gpu_union_and_span(events) -> tuple:
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    busy, end = 0.0, float("-inf")
    for a, b in spans:
        if b > end:
            busy += b - max(a, end)
            end = b
    return busy, spans[-1][1] - spans[0][0] if spans else 0.0


def test_alexnet_the_idle_device_is_a_finding():
    (path,) = ALEXNET.glob("*.json*")
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as fh:
        busy, span = _gpu_union_and_span(json.load(fh)["traceEvents"])
    assert 1 - busy / span > 0.99  # the 12.9 s step with ~10 ms of work on the GPU
    s = open_session(ALEXNET, cache=False)
    f = _finding(s, "device_idle_high")
    assert f["value"] == pytest.approx(1 - busy / span, abs=0.005)
    assert f["direction"] == _rule("device_idle_high")["direction"]
    gaps = f["evidence"]["idle_gaps"]
    assert gaps and gaps == sorted(gaps, key=lambda g: -g["gap_us"])
    assert gaps[0]["gap_us"] > 0.5 * span  # the longest gap, found and listed first
    assert any(g["host_range"] for g in gaps)  # what the host ran meanwhile, from its events
    # no ProfilerStep: the "step" is the whole trace, start-up included, and the account says so
    assert [r["per"] for r in s.report["ranks"]] == ["profile"]  # one source for the account and findings
    # where it had read "12,920.244 ms per step, mean of 1 step(s)"
    from npu_tui.tui.panes.overview import account_text
    assert f"rank 0: {span / 1e3:,.3f} ms (whole profile, no steps)" in s.render("text")
    assert "12.920s (whole profile, no steps)" in account_text(s.report).plain
    # nor does any table or heading of the report, the Overview's account or the Comm pane say "per step"
    from npu_tui.tui.panes.comm import exposure_text
    for text in (s.render("text"), s.render("md"), account_text(s.report).plain, exposure_text(s.report).plain):
        assert "per step" not in text and "whole profile, no steps" in text
    # and so is its saving: over the whole profile, not "per step"
    assert f["per"] == "profile" and f"Saves about {f['saving_us'] / 1e3:,.3f} ms over the whole profile" in s.render("text")
    assert "/profile" in finding_line(f).plain and "/step" not in finding_line(f).plain
    msprof = open_session(MSPROF, cache=False)
    assert {g["per"] for g in msprof.findings} == {"step"} and {r["per"] for r in msprof.report["ranks"]} == {"step"}


def _iterations():
    out = {}
    for path in MSPROF.glob("*/device_*/timeline/step_trace_*.json"):
        device = int(path.parent.parent.name.split("_")[1])
        for e in json.loads(path.read_text()):
            if e.get("cat") == "Iteration Time":
                out[device, e["args"]["Iteration ID"]] = (e["ts"], e["dur"])
    return out


def test_msprof_time_between_steps_and_the_warm_up_step():
    its = _iterations()
    s = open_session(MSPROF, cache=False)
    for rank in (0, 1):
        mine = sorted((i, ts, dur) for (d, i), (ts, dur) in its.items() if d == rank)
        assert len(mine) == 10
        # The warm-up: msprof's first iteration is ~3x the median; flagged and left out of the means.
        durs = sorted(d for _, _, d in mine)
        assert mine[0][2] > 2.5 * durs[5]
        flags = dict(s.con.execute("SELECT step, outlier FROM step_flags WHERE rank = ?", [rank]).fetchall())
        assert flags == {i: i == 1 for i, _, _ in mine}
        steps, left_out = s.con.execute("SELECT DISTINCT steps, left_out FROM step_account_mean WHERE rank = ?",
                                        [rank]).fetchone()
        assert (steps, left_out) == (9, 1)
        # The account covers the whole run: within the steps and between them, first start to last end.
        (total,) = s.con.execute("SELECT sum(us) FROM step_account WHERE rank = ?", [rank]).fetchone()
        run = mine[-1][1] + mine[-1][2] - mine[0][1]
        assert total == pytest.approx(run, rel=0.005)
        # Time between the steps: msprof's gaps between one iteration's end and the next one's start,
        # and more (a step's kernels start after its iteration does), none of it lost.
        between = sum(b[1] - (a[1] + a[2]) for a, b in zip(mine[1:], mine[2:]))  # the means' steps 2..10
        (mean_between,) = s.con.execute("SELECT sum(us_per_step) FROM step_account_mean WHERE rank = ? "
                                        "AND part = 'between'", [rank]).fetchone()
        assert mean_between * 9 >= between
        (mean_in,) = s.con.execute("SELECT sum(us_per_step) FROM step_account_mean WHERE rank = ? "
                                   "AND part <> 'between'", [rank]).fetchone()
        assert mean_in == pytest.approx(sum(d for i, _, d in mine if i > 1) / 9, rel=0.005)
    assert [st["outlier"] for st in s.report["steps"] if st["rank"] == 0] == [True] + [False] * 9
    assert "warm-up" in render(s.report, "text")


def test_msprof_exposed_comm_is_one_share_per_step_everywhere():
    """The finding had said 62.7 % while the Comm pane and the report's section said 38.9 % "of
    wall" for the same rank and stage: the one rank-wide window holds the time between the steps
    and the warm-up step. By hand from msprof's own files: the Communication(Not Overlapped) lane
    and the iterations, steps 2-10 (the first is the warm-up), a share of the step."""
    from npu_tui.tui.panes.comm import exposure_text

    its = _iterations()
    s = open_session(MSPROF, cache=False)
    comm = {c["rank"]: c for c in s.report["comm"]}
    (f,) = [f for f in s.findings if f["rule"] == "comm_exposed_high"]
    for rank in (0, 1):
        lane = {}
        for path in MSPROF.glob(f"*/device_{rank}/timeline/msprof_{rank}_*_*.json"):
            iteration = int(path.stem.rsplit("_", 1)[1])
            lane[iteration] = sum(e["dur"] for e in json.loads(path.read_text())
                                  if e.get("ph") == "X" and e.get("name") == "Communication(Not Overlapped)")
        exposed = sum(lane[i] for i in range(2, 11)) / 9
        step = sum(its[rank, i][1] for i in range(2, 11)) / 9
        c = comm[rank]
        assert c["steps"] == 9 and c["exposed_us_per_step"] == pytest.approx(exposed, rel=1e-9)
        assert c["stage_us_per_step"] == pytest.approx(step, rel=0.005)
        assert c["exposed_share"] == pytest.approx(exposed / step, rel=0.005)
        # the totals stay the whole profile's, warm-up included
        assert c["exposed_us"] == pytest.approx(sum(lane.values()), rel=1e-9)
        # one figure: the finding's, the report's section's, the Comm pane's
        (r,) = [r for r in f["per_rank"] if r["rank"] == rank]
        assert r["value"] == c["exposed_share"]
        assert f"{c['exposed_share'] * 100:.1f}% of stage" in exposure_text(s.report).plain
        assert f"{c['exposed_share'] * 100:.1f}%" in render(s.report, "text").split("\nExposed communication\n")[1]


def test_the_slow_rank_is_not_the_one_that_waits_for_it():
    """Level0's two ranks: rank 0's step is 14 % longer, yet both compute alike; rank 0 starts its
    step first and waits for rank 1 at the all-reduce. rank_step_imbalance had named rank 0 ("the
    slow rank sets every step") beside rank_comm_imbalance naming rank 1. By hand from the files:
    each rank's first kernel (kernel_details.csv) and its step's parts (step_trace_time.csv)."""
    import csv

    level0 = REAL / "msinsight-pt-2rank-levels" / "text" / "level0"
    start, step, own = {}, {}, {}
    for rank in (0, 1):
        out = level0 / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        with (out / "kernel_details.csv").open() as fh:
            start[rank] = min(float(r["Start Time(us)"].strip()) for r in csv.DictReader(fh))
        (row,) = csv.DictReader((out / "step_trace_time.csv").open())
        step[rank] = float(row["Stage"])
        own[rank] = float(row["Computing"]) + float(row["Free"])
    assert step[0] > 1.1 * step[1] and start[1] - start[0] > 15_000  # rank 1 starts 15.6 ms late
    spread = abs(own[0] - own[1]) / ((own[0] + own[1]) / 2)
    assert spread < 0.05  # their own time alike: no rank to rebalance by its step
    s = open_session(level0, cache=False)
    got = {m["measure"]: m for m in s.report["cluster"]["spread"]}
    assert got["own_time"]["spread"] == pytest.approx(spread)
    assert got["own_time"]["slow_rank"] == max(own, key=own.get) == 1
    assert [(f["rule"], f["rank"]) for f in s.findings if f["metric"] == "spread"] == [("rank_comm_imbalance", 1)]
    # Level0 writes no communication.json: that the others wait for rank 1 is inferred (its exposed
    # comm is the least), and said as such, not as measured
    (f,) = [f for f in s.findings if f["rule"] == "rank_comm_imbalance"]
    assert f["cause"] == "least_exposed" and "no wait measured" in f["direction"]
    assert "The other ranks likely wait for rank 1 (its exposed comm is the least" in s.render("text")
    from npu_tui.tui.panes.findings import finding_detail
    shown = " ".join(finding_detail(f).plain.split())
    assert "slow rank the other ranks likely wait for rank 1" in shown
    assert f"value {f['value'] * 100:.1f}% across the ranks, (max - min) / mean" in shown  # not rank 1's own
    # its drill puts the ranks side by side: the waits at the collectives are not measured (all "-")
    from npu_tui.tui.grids import findings_drill
    assert findings_drill(f).child({"rank": 1}).query.view == "rank_times"
    level1 = open_session(REAL / "msinsight-pt-2rank-levels" / "text" / "level1", cache=False)
    (f,) = [f for f in level1.findings if f["rule"] == "rank_comm_imbalance"]
    assert f["cause"] == "waits" and "The other ranks wait for rank 1." in level1.render("text")
    assert findings_drill(f).child({"rank": 1}).query.view == "rank_waits"


def test_a_finding_says_which_of_its_ranks_were_not_loaded_whole(tmp_path):
    """Rank 0's kernel_details.csv cut in half: its exposed share still passes the threshold, and
    its row in the finding's drill had stood above the worst rank (1) with nothing to say it is not
    compared."""
    import shutil

    from npu_tui.analysis.render import finding_detail
    from npu_tui.tui.grids import findings_drill

    job = tmp_path / "level1"
    shutil.copytree(REAL / "msinsight-pt-2rank-levels" / "text" / "level1", job)
    kernels = job / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    kernels.write_bytes(kernels.read_bytes()[:kernels.stat().st_size // 2])
    s = open_session(job, cache=False)
    (f,) = [f for f in s.findings if f["rule"] == "comm_exposed_high"]
    assert f["rank"] == 1 and {r["rank"]: r["apart"] for r in f["per_rank"]} == {0: "not loaded whole", 1: None}
    assert "(not compared: not loaded whole)" in " ".join(finding_detail(f))
    grid = findings_drill(f).query
    assert "apart" in [c.key for c in grid.columns]
    sql, params = grid.effective()
    assert dict(s.con.execute(f"SELECT rank, apart FROM ({sql})", params).fetchall()) == {0: "not loaded whole", 1: None}
    # the Comm pane marks the rank whose figures lack what is missing, as the Ranks pane does
    from npu_tui.tui.panes.comm import exposure_text
    shown = exposure_text(s.report).plain
    assert "rank 0✕  All" in shown and "✕ rank 0: not loaded whole (h says why)" in shown
    # a finding of such ranks alone says what it rests on
    alone = {**f, "ranks": [0], "rank": 0, "per_rank": [r for r in f["per_rank"] if r["rank"] == 0]}
    assert ("Only on rank 0 (not loaded whole), not compared with the other ranks: it rests on what of that rank "
            "loaded."
            in finding_detail(alone))
    from npu_tui.tui.panes.findings import finding_detail as shown
    assert "it rests on what of that rank loaded" in " ".join(shown(alone).plain.split())
    # another run's ranks are whole: no word of what they lost; the ranks in order, each reason once
    other = [{"rank": r, "apart": "separate run", "value": 0.5, "saving_us": 1.0} for r in (3, 2)]
    assert ("Only on ranks 2, 3 (separate run), not compared with the other ranks."
            in finding_detail({**alone, "per_rank": other}))


def test_demo_findings_merged_and_ordered_by_saving():
    s = open_session(DEMO, cache=False)
    findings = s.findings
    assert findings and len({(f["rule"], f["stage"]) for f in findings}) == len(findings)
    assert [f["saving_us"] for f in findings] == sorted((f["saving_us"] for f in findings), reverse=True)
    for f in findings:
        per_rank = {r["rank"]: r for r in f["per_rank"]}
        assert f["ranks"] == [r["rank"] for r in f["per_rank"]] and set(f["ranks"]) <= set(s.ranks)
        worst = per_rank[f["rank"]]
        assert (f["value"], f["saving_us"]) == (worst["value"], worst["saving_us"])
        assert f["value"] == max(r["value"] for r in f["per_rank"])
        assert f["saving_us"] >= 0 and f["docs"]
    # Several ranks, one line: the DiT's comm fires on both ranks of the demo.
    assert any(len(f["ranks"]) == 2 for f in findings)
    text = render(s.report, "text")
    for f in findings:
        assert sum(line.startswith(f"* {f['rule']} ") for line in text.splitlines()) == 1


def test_ranks_that_tie_give_one_worst_rank_every_field_from_its_row():
    """64 ranks of one job often tie (the same forwards): the worst is the highest value, then the
    largest saving, then the lowest rank, and every field is that rank's. arg_max over the ties
    took each field from whichever row came first, which changed from one load to the next."""
    import duckdb

    from npu_tui.analysis.views import view_sql

    con = duckdb.connect()
    con.execute("""CREATE TABLE finding_ranks AS SELECT * FROM (VALUES
        (1, 'step_cache', 5, 'DiT', 'forwards', NULL, 'five', 50.0, 2.0, 'cache', ['a'], 'x', NULL, 0.0, 10.0, NULL),
        (1, 'step_cache', 1, 'DiT', 'forwards', NULL, 'one', 50.0, 2.0, 'cache', ['a'], 'x', NULL, 0.0, 20.0, NULL),
        (1, 'step_cache', 0, 'DiT', 'forwards', NULL, 'zero', 50.0, 2.0, 'cache', ['a'], 'x', NULL, 0.0, 20.0, NULL),
        (1, 'step_cache', 2, 'DiT', 'forwards', NULL, 'two', 40.0, 2.0, 'cache', ['a'], 'x', NULL, 0.0, 90.0, NULL))
        t(ord, rule, rank, stage, metric, category, cause, value, threshold, direction, docs, estimate,
          waited_for, basis_us, saving_us, apart)""")
    con.execute("CREATE TABLE rank_summary (rank INTEGER, per VARCHAR)")
    (row,) = con.execute(view_sql("findings")).fetchall()
    cols = [d[0] for d in con.description]
    f = dict(zip(cols, row))
    assert (f["ranks"], f["rank"], f["cause"], f["value"], f["saving_us"]) == ([0, 1, 5, 2], 0, "zero", 50.0, 20.0)


def test_spreads_and_shares_print_as_percentages_everywhere():
    s = open_session(DEMO, cache=False)
    text = render(s.report, "text")
    for f in s.findings:
        shown = f"{f['value'] * 100:.1f}%"
        assert shown in finding_line(f).plain and shown in text, f["rule"]


def test_every_doc_is_a_page_of_the_feature_docs_with_an_action():
    rules = load_rules()
    pages = FEATURE_DOCS.read_text(encoding="utf-8")
    for f in rules.findings:
        for cause in [f] + list(f.get("causes", {}).values()):
            for doc in cause["docs"]:
                assert f"`{doc['page']}`" in pages, doc["page"]
                assert len(doc["action"]) > 20
    for path in (DEMO, LEVEL1, MSPROF, ALEXNET):
        for f in open_session(path).findings:
            assert f["docs"] and all(set(d) == {"repository", "path", "action"} and
                                     d["repository"] == "Ascend/MindIE-SD" and d["path"].startswith("docs/zh/features/")
                                     for d in f["docs"])


def test_fail_on_a_rule_that_does_not_exist_is_an_error(capsys):
    assert main(["report", str(DEMO), "--fail-on", "fa_hihg"]) == 2
    err = capsys.readouterr().err
    assert "fa_hihg" in err and all(f["rule"] in err for f in load_rules().findings)


def test_a_partial_rules_file_changes_only_what_it_names(tmp_path, capsys):
    shipped = {f["rule"] for f in open_session(DEMO).findings}
    assert "fa_high" in shipped
    path = tmp_path / "rules.toml"
    path.write_text('[[finding]]\nrule = "fa_high"\nthreshold = 0.95\n')
    assert main(["report", str(DEMO), "--rules", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {f["rule"] for f in doc["findings"]} == shipped - {"fa_high"}
    # A rule id the shipped file lacks is a new rule, and must say what it measures.
    path.write_text('[[finding]]\nrule = "fa_hihg"\nthreshold = 0.95\n')
    assert main(["report", str(DEMO), "--rules", str(path)]) == 2
    assert "fa_hihg" in capsys.readouterr().err


@pytest.mark.parametrize("text, said", [
    ('[[finding]]\nrule = "fa_high"\nthreshold = "abc"\n', "finding fa_high: threshold = 'abc' is not a number"),
    ("[steps]\nwarmup_factor = true\n", "[steps]: warmup_factor = True is not a number"),
    ("[stages.signature]\nblock_min_kernels = 2.5\n", "block_min_kernels = 2.5 is not a whole number"),
    ('[[category]]\nname = "X"\npattern = "(("\n', "category X: pattern '(('"),
    ('[stages.markers]\nown = "[a-"\n', "[stages.markers] own: pattern '[a-'"),
    ('[stages.markers]\nignore = "("\n', "[stages.markers] ignore: pattern '('"),
    ("[compute]\ncopies = '('\n", "[compute] copies: pattern '('"),
    ("[stages]\nmarkers = 5\n", "[stages.markers] is not a table"),
], ids=["threshold-text", "factor-bool", "count-fraction", "category-regex", "marker-regex", "ignore-regex",
        "copies-regex", "markers-not-a-table"])
def test_a_rules_value_of_the_wrong_kind_is_said_not_a_traceback(tmp_path, capsys, text, said):
    """Exit 1 is a finding that fired under --fail-on: a traceback's 1 read as one."""
    path = tmp_path / "rules.toml"
    path.write_text(text)
    assert main(["report", str(DEMO), "--rules", str(path), "--fail-on", "any"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize("option, said", [
    ("DiT=0-1e20", "within ±2.3e+15 us"), ("DiT=0-inf", "within"), ("7:DiT=0-100", "no rank 7; the ranks are 0"),
])
def test_a_stage_window_out_of_range_or_of_no_rank_is_said(capsys, option, said):
    assert main(["report", str(DEMO), "--stage", option]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize("sync", [True, False], ids=["before-the-transfer", "during-it"])
def test_the_rank_the_others_wait_for_is_named_and_the_direction_is_balance(sync):
    """Rank 0 computes 100 µs and waits 80 at the allReduce for rank 1, which computes 180: the
    exposed comm of rank 0 is waiting (not transfer), so the direction is balance, naming rank 1,
    and the imbalance across ranks names rank 1 too (its peers wait for it). Waiting before any
    data moves is synchronization (the peer's compute before the collective is late); waiting
    after the first transfer is wait."""
    from analysis_support import make_profile

    us = 1000
    kernels, comm = [], []
    for rank, compute in ((0, 100), (1, 180)):
        for step in (1, 2, 3):
            t0 = (step - 1) * 300 * us
            kernels.append((rank, step, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", t0, compute * us, None))
            name = f"hcom_allReduce__586_{step}_1"
            wait = 180 - compute  # µs until the other rank arrives
            kernels.append((rank, step, name, "hcom_allReduce_", "HCCL", t0 + compute * us, (wait + 10) * us, None))
            comm.append((rank, step, name, (t0 + compute * us) / 1e3, (wait + 10) / 1e3, 0.01, wait / 1e3,
                         wait / 1e3 if sync else 0.0, 0.0))
    p = make_profile(kernels, comm=comm)
    from npu_tui.analysis import build_report
    report = build_report(p, load_rules())
    cause = "synchronization" if sync else "wait"
    (exposed,) = [f for f in report["findings"] if f["rule"] == "comm_exposed_high"]
    assert (exposed["ranks"], exposed["cause"], exposed["waited_for"]) == ([0], cause, 1)
    assert exposed["direction"] == _rule("comm_exposed_high")["causes"][cause]["direction"]
    # rank 0's allReduce (80 µs waiting, 10 moving data) is all exposed: 90 of its 190 µs step.
    assert exposed["value"] == pytest.approx(90 / 190)
    assert exposed["evidence"]["exposed_split"] == {cause: pytest.approx(80), "transit": pytest.approx(10)}
    (spread,) = [f for f in report["findings"] if f["rule"] == "rank_comm_imbalance"]
    assert (spread["rank"], spread["waited_for"]) == (1, 1)
    assert "on the ranks that wait for it" in render(report, "text")
    waits = {w["rank"]: w for w in report["cluster"]["waits"]}
    assert waits[1]["waited_for"] and not waits[0]["waited_for"]
    assert (waits[0]["wait_ms"], waits[0]["peers_wait_ms"]) == (pytest.approx(0.24), pytest.approx(0.0))
    assert (waits[1]["wait_ms"], waits[1]["peers_wait_ms"], waits[1]["times_last"]) == (0.0, pytest.approx(0.24), 3)


@pytest.mark.parametrize("transit, wait, sync, split, cause", [
    (40, 40, 0, {"transit": 40, "wait": 40}, "transit"),
    (10, 80, 40, {"transit": 10, "wait": 40, "synchronization": 40}, "synchronization"),
], ids=["transfer-or-waiting", "wait-or-synchronization"])
def test_an_exposed_comm_whose_causes_tie_names_the_first_by_name(transit, wait, sync, split, cause):
    """The cause is the largest of transfer, waiting and idle, and waiting is named by its larger
    part; of equal ones the first by name (transit before waiting, synchronization before wait),
    not whichever row the aggregate met first."""
    from analysis_support import make_profile

    us = 1000
    kernels, comm = [], []
    for step in (1, 2, 3):
        t0 = (step - 1) * 300 * us
        kernels.append((0, step, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", t0, 100 * us, None))
        name = f"hcom_allReduce__586_{step}_1"
        kernels.append((0, step, name, "hcom_allReduce_", "HCCL", t0 + 100 * us, (wait + transit) * us, None))
        comm.append((0, step, name, (t0 + 100 * us) / 1e3, (wait + transit) / 1e3, transit / 1e3, wait / 1e3,
                     sync / 1e3, 0.0))
    p = make_profile(kernels, comm=comm)
    got = dict(p.con.execute("SELECT detail, us_per_step FROM step_account_mean WHERE part = 'comm_exposed'").fetchall())
    assert got == split  # exactly: a tie
    assert p.con.execute("SELECT cause FROM stage_metrics WHERE metric = 'exposed_share'").fetchall() == [(cause,)]
