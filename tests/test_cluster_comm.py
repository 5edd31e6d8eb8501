"""Communication across ranks: per op type and rank as communication.json has it, the rank the
others wait for (not the one with the most comm time), slow links, and the ranks × ranks matrix,
on the real 2-rank Level1 sample and on generated 4-rank profiles with a deliberately slow rank or
link."""

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from npu_tui.session import open_session
from npu_tui.synth import Spec, generate
from npu_tui.tui.app import NpuTuiApp
from tui_support import async_test, screen_text, settle

TEXT = Path("msinsight-pt-2rank-levels") / "text"
SMALL = dict(ranks=4, profiler_steps=2, denoise_steps=2, blocks=1, seq_len=4096, comm_gbps=10.0)


@pytest.fixture(scope="module")
def slow_rank(tmp_path_factory):
    """Rank 1 computes 1.5× as long before every collective; the link 2 → 3 moves 4× slower."""
    out = tmp_path_factory.mktemp("slow_rank") / "prof"
    generate(out, Spec(**SMALL, slow_rank=1, slow_link=(2, 3), seed=11))
    return out


@pytest.fixture(scope="module")
def slow_link(tmp_path_factory):
    out = tmp_path_factory.mktemp("slow_link") / "prof"
    generate(out, Spec(**SMALL, slow_link=(0, 1), seed=12))
    return out


def test_per_op_type_and_rank_as_communication_json_has_it(real):
    level1 = real / TEXT / "level1"
    s = open_session(level1)
    for rank in (0, 1):
        doc = json.loads((level1 / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
        want = defaultdict(lambda: defaultdict(float))
        for kinds in doc.values():
            for ops in kinds.values():
                for key, op in ops.items():
                    if key == "Total Op Info":
                        continue
                    t = op["Communication Time Info"]
                    # the operation: its name without the run id and call index
                    op_type = re.sub(r"(_+[0-9]+)+$", "", key.rsplit("@", 1)[0])
                    w = want[op_type]
                    w["ops"] += 1
                    for field, col in (("Elapse", "elapse_ms"), ("Transit", "transit_ms"), ("Wait", "wait_ms"),
                                       ("Synchronization", "sync_ms"), ("Idle", "idle_ms")):
                        w[col] += t[f"{field} Time(ms)"]
                    w["group"] = key.rsplit("@", 1)[1]
        rows = s.con.execute("SELECT op_type, ops, elapse_ms, transit_ms, wait_ms, sync_ms, idle_ms, wait_ratio, "
                             "sync_ratio, groups FROM comm_op_times WHERE rank = ?", [rank]).fetchall()
        assert {r[0] for r in rows} == set(want)
        for op_type, ops, elapse, transit, wait, sync, idle, wait_ratio, sync_ratio, groups in rows:
            w = want[op_type]
            assert ops == w["ops"] and groups == w["group"]
            assert (elapse, transit, wait, sync, idle) == tuple(pytest.approx(w[c]) for c in (
                "elapse_ms", "transit_ms", "wait_ms", "sync_ms", "idle_ms"))
            assert elapse == pytest.approx(transit + wait + idle, abs=1e-6)  # as the profiler splits it
            assert wait_ratio == pytest.approx(wait / (wait + transit))
            assert sync_ratio == pytest.approx(sync / (sync + transit))


def test_the_slow_rank_is_the_one_waited_for_not_the_one_with_most_comm(slow_rank):
    s = open_session(slow_rank, cache=False)
    waits = {r["rank"]: r for r in s.report["cluster"]["waits"]}
    assert [r for r, w in waits.items() if w["waited_for"]] == [1]
    assert waits[1]["times_last"] == waits[1]["collectives"] > 0  # it comes last to every collective
    assert all(waits[r]["wait_ms"] > waits[1]["wait_ms"] for r in (0, 2, 3))
    # The naive pick, the rank with the most comm time, is a waiting rank.
    most = s.con.execute("SELECT rank FROM comm_op_times GROUP BY rank ORDER BY sum(elapse_ms) DESC LIMIT 1").fetchone()[0]
    assert most != 1
    spread = {x["measure"]: x["slow_rank"] for x in s.report["cluster"]["spread"]}
    assert spread == {"step_time": 1, "own_time": 1, "exposed_comm": 1}
    (imbalance,) = [f for f in s.findings if f["rule"] == "rank_comm_imbalance"]
    assert (imbalance["rank"], imbalance["waited_for"]) == (1, 1)
    # Its drill compares the ranks side by side, the rank waited for highlighted.
    from npu_tui.tui.grids import findings_drill

    level = findings_drill(imbalance)
    behind = level.child({"rank": 1})
    assert behind.query.view == "rank_waits" and behind.query.highlight == "waited_for"


def test_a_slow_link_is_flagged_and_named_as_the_cause(slow_rank, slow_link):
    s = open_session(slow_rank, cache=False)
    slow = [(x["src_rank"], x["dst_rank"]) for x in s.report["cluster"]["links"] if x["slow"]]
    assert slow == [(2, 3)]
    link = next(x for x in s.report["cluster"]["links"] if (x["src_rank"], x["dst_rank"]) == (2, 3))
    assert link["gbps"] == pytest.approx(link["median_gbps"] / 4, rel=0.01)
    s = open_session(slow_link, cache=False)
    assert [(x["src_rank"], x["dst_rank"]) for x in s.report["cluster"]["links"] if x["slow"]] == [(0, 1)]
    (exposed,) = [f for f in s.findings if f["rule"] == "comm_exposed_high"]
    assert (exposed["rank"], exposed["cause"]) == (0, "slow_link") and "slow link" in exposed["direction"]
    # only the rank whose own link is slow has it as the cause; the others' is the transfer
    causes = dict(s.con.execute("SELECT rank, cause FROM finding_ranks WHERE rule = 'comm_exposed_high'").fetchall())
    assert causes == {0: "slow_link", 1: "transit", 2: "transit", 3: "transit"}


@async_test
async def test_the_matrix_renders_at_80x24(slow_rank):
    app = NpuTuiApp(slow_rank)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, rounds=4)
        await pilot.press("4", "m")
        await settle(app, pilot)
        text = screen_text(app)
        assert "Links: bandwidth, GB/s" in text
        rows = [line for line in text.splitlines() if line.strip().startswith("rank ") and "!" in line or
                re.match(r"^\s*rank [0-3]\s+[-\d]", line)]
        assert len(rows) == 4
        assert "0.6!" in rows[2]  # 2 -> 3, the slow one, in its row
        await pilot.press("m")
        await settle(app, pilot)
        assert "Links: transit time, ms" in screen_text(app)
        await pilot.press("m")
        await settle(app, pilot)
        assert "Exposed communication per stage" in screen_text(app)


# ---- msprof-analyze's cluster outputs ---------------------------------------------------------

ADVISOR = Path("mstt-advisor-fixtures") / "resource" / "advisor" / "cluster_analysis_output"
LEVEL1_CLUSTER = Path(__file__).resolve().parents[1] / "fixtures" / "level1_cluster" / "cluster_analysis_output"


def _cluster_ops(doc):
    """(group, step, op, group name, rank) -> time info, as the file has them."""
    out = {}
    for group, steps in doc.items():
        for step, ops in steps.items():
            for key, ranks in ops.items():
                if key.startswith("Total Op Info"):
                    continue
                name, gname = key.rsplit("@", 1)
                for rank, op in ranks.items():
                    number = int(step[len("step"):]) if step[len("step"):] else None  # "step": no number
                    out[(group, number, name, gname, int(rank))] = op["Communication Time Info"]
    return out


def test_a_folder_of_cluster_outputs_alone_loads_them_and_says_what_it_lacks(real, capsys):
    import csv

    from npu_tui.cli import main

    folder = real / ADVISOR
    s = open_session(folder, cache=False)
    assert s.ranks == []
    rows = list(csv.DictReader((folder / "cluster_step_trace_time.csv").open()))
    got = s.con.execute("SELECT type, rank, ranks, computing_us, free_us, stage_us FROM cluster_step_trace "
                        "ORDER BY type, rank").fetchall()
    assert got == sorted([(r["Type"], int(r["Index"]) if r["Type"] == "rank" else None,
                           r["Index"] if r["Type"] != "rank" else None, float(r["Computing"]),
                           float(r["Free"]), float(r["Stage"])) for r in rows], key=lambda t: (t[0], t[1] or 0))
    want = _cluster_ops(json.loads((folder / "cluster_communication.json").read_text()))
    got = {r[:5]: r[5:] for r in s.con.execute(
        "SELECT group_ranks, step, op_name, group_name, rank, elapse_ms, transit_ms, wait_ms, sync_ms, idle_ms "
        "FROM cluster_comm_ops").fetchall()}
    assert got == {k: (t["Elapse Time(ms)"], t["Transit Time(ms)"], t["Wait Time(ms)"],
                       t["Synchronization Time(ms)"], t["Idle Time(ms)"]) for k, t in want.items()}
    # Shown: the comm ops and who waits for whom come from them; the report says first what is missing.
    assert {r["source"] for r in s.report["cluster"]["comm_ops"]} == {"cluster_communication.json"}
    assert [w["rank"] for w in s.report["cluster"]["waits"] if w["waited_for"]] == [1]
    assert s.report["health"][0]["what"].startswith("only msprof-analyze's cluster outputs here")
    assert main(["report", str(folder)]) == 0
    text = capsys.readouterr().out
    assert text.index("only msprof-analyze's cluster outputs") < text.index("Findings")
    assert "Cluster step trace (msprof-analyze, us)" in text


def _cluster_steps(folder):
    """Per rank, (step time, exposed comm, own time) by hand from cluster_step_trace_time.csv: its
    step is Computing + Communication(Not Overlapped) + Free (Stage + Bubble in torch_npu's, for
    which MindSpore writes its HCCL span), its own time Computing + Free."""
    import csv

    rows = [r for r in csv.DictReader((folder / "cluster_step_trace_time.csv").open()) if r["Type"] == "rank"]
    return {int(r["Index"]): (float(r["Computing"]) + float(r["Communication(Not Overlapped)"]) + float(r["Free"]),
                              float(r["Communication(Not Overlapped)"]) - float(r["Bubble"] or 0),
                              float(r["Computing"]) + float(r["Free"])) for r in rows}


@pytest.mark.parametrize("damage", ["given twice", "device", "rank2"])
def test_a_ranks_row_given_twice_in_the_cluster_step_trace_counts_once(real, tmp_path, damage):
    """Rank 2's row copied with other figures: the rank had two "steps", its step time their mean,
    and the spreads across ranks moved, unsaid. Its first row stays, the copy is counted. A copy of
    another Type, or whose Index is no rank number, had been kept in no comparison: counted too."""
    folder = shutil.copytree(real / ADVISOR, tmp_path / "cluster_analysis_output")
    trace = folder / "cluster_step_trace_time.csv"
    lines = trace.read_text().splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith(",rank,2,"))
    cells = lines[row].split(",")
    cells[3] = str(float(cells[3]) * 3)  # Computing
    if damage == "device":
        cells[1] = "device"
    elif damage == "rank2":
        cells[2] = "rank2"
    lines.insert(row + 1, ",".join(cells))
    trace.write_text("".join(lines))
    want = {r[0]: r[1:] for r in open_session(real / ADVISOR, cache=False).con.execute(
        "SELECT rank, step_time_us, exposed_comm_us FROM rank_summary").fetchall()}
    s = open_session(folder, cache=False)
    got = {r[0]: r[1:] for r in s.con.execute("SELECT rank, step_time_us, exposed_comm_us FROM rank_summary").fetchall()}
    assert got == want
    assert s.con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'cluster_step_trace'").fetchone()[1] == 1


def test_the_cluster_step_trace_alone_compares_the_ranks(real, capsys):
    """Without the ranks' own files, msprof-analyze's copy of each rank's step trace still tells
    which rank the others wait for: the comparisons across ranks read it, the other rules need kernels."""
    from npu_tui.cli import main

    folder = real / ADVISOR
    want = _cluster_steps(folder)
    s = open_session(folder, cache=False)
    got = {r[0]: r[1:] for r in s.con.execute(
        "SELECT rank, step_time_us, exposed_comm_us, step_source, kernel_count, compared FROM rank_summary").fetchall()}
    assert got.keys() == want.keys() == set(range(8))
    for rank, (step, exposed, _) in want.items():
        assert got[rank][0] == pytest.approx(step, abs=1e-6) and got[rank][1] == pytest.approx(exposed, abs=1e-6)
        assert got[rank][2:] == ("cluster_step_trace", None, True)  # its kernels not known: not 0
    spread = {m["measure"]: m for m in s.report["cluster"]["spread"]}
    for measure, i in (("step_time", 0), ("exposed_comm", 1), ("own_time", 2)):
        values = [v[i] for v in want.values()]
        assert spread[measure]["ranks"] == 8
        assert spread[measure]["spread"] == pytest.approx((max(values) - min(values)) / (sum(values) / 8))
    # Exposed comm 133-756 ms a step: the others wait for rank 1 (it waits least, and comes last to
    # the broadcasts of cluster_communication.json). Their steps are within 5 % of each other, as the
    # collectives hold them together; rank 1's own time (computing and free) is what they wait for.
    assert spread["exposed_comm"]["slow_rank"] == spread["own_time"]["slow_rank"] == 1
    assert spread["step_time"]["spread"] < 0.05 < spread["own_time"]["spread"]
    # its drill puts the ranks side by side (a rank by the cluster step trace has no operators)
    from npu_tui.tui.grids import findings_drill
    (own,) = [f for f in s.report["findings"] if f["rule"] == "rank_step_imbalance"]
    assert findings_drill(own).child({"rank": 1}).query.view == "rank_times"
    assert sorted((f["rule"], f["rank"]) for f in s.report["findings"]) == [
        ("rank_comm_imbalance", 1), ("rank_step_imbalance", 1)]
    assert s.report["ranks"] == []  # the ranks loaded: none
    # how much of each comm op no compute covers is not known without kernels: not 0
    from npu_tui.tui.panes.comm import exposure_text
    assert {o["exposed_ms"] for o in s.report["cluster"]["comm_ops"]} == {None}
    assert "no kernels to place the comm ops among" in exposure_text(s.report).plain
    formats = s.con.execute("SELECT DISTINCT source_format FROM rank_times").fetchall()
    assert formats == [("cluster step trace",)]
    assert main(["report", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "rank_comm_imbalance (rank 1)" in text and "of the findings only those across ranks" in text
    assert f"Profile: {folder} (msprof-analyze cluster, ranks -; ranks 0–7 by the cluster step trace)" in text
    # the ranks side by side, though none is loaded
    ranks = text[text.index("\nRanks\n"):]
    assert "slow rank" in ranks and ranks.count("cluster_step_trace") == 8


def test_the_cluster_step_trace_stands_in_for_a_rank_not_copied(real, level1_job, tmp_path):
    """Rank 1's folder left behind, the cluster outputs beside rank 0's: rank 1's step times come
    from the cluster step trace, and the comparisons cover both ranks, as the warning says."""
    job = tmp_path / "job"
    shutil.copytree(level1_job, job)
    shutil.rmtree(job / "rank1_ascend_pt")
    want = _cluster_steps(job / "cluster_analysis_output")
    s = open_session(job, cache=False)
    assert s.ranks == [0]
    got = {r[0]: r[1:] for r in s.con.execute(
        "SELECT rank, step_source, kernel_count > 0, step_time_us FROM rank_summary").fetchall()}
    assert got[0][:2] == ("step_trace_time.csv", True) and got[1][:2] == ("cluster_step_trace", None)
    assert got[1][2] == pytest.approx(want[1][0], abs=1e-6)
    # its comm ops from cluster_communication.json, rank 0's from its own communication.json
    assert {(o["rank"], o["source"]) for o in s.report["cluster"]["comm_ops"]} == {
        (0, "communication.json"), (1, "cluster_communication.json")}
    assert [m["ranks"] for m in s.report["cluster"]["spread"]] == [2, 2, 2]
    assert [r["rank"] for r in s.report["ranks"]] == [0]
    partial = [i for i in s.health if i.what.startswith("partial rank set")]
    assert len(partial) == 1 and partial[0].fix.endswith(
        "cover the loaded ranks and, by msprof-analyze's cluster step trace, the step times of rank 1")
    # rank 1 waits per call from cluster_communication.json, its own file not here: rank 0 waits
    # for it at the collectives
    waits = {w["rank"]: w for w in s.report["cluster"]["waits"]}
    assert waits.keys() == {0, 1} and waits[1]["waited_for"] and waits[0]["wait_ms"] > waits[1]["wait_ms"]
    # Without a step (msprof-analyze's rows of msprof ranks: the whole profile summed), rank 1 is
    # not set beside rank 0's mean step: said, not compared.
    trace = job / "cluster_analysis_output" / "cluster_step_trace_time.csv"
    text = trace.read_text()
    trace.write_text(text.replace("\n50,rank,1,", "\n,rank,1,"))
    s = open_session(job, cache=False)
    assert s.con.execute("SELECT rank, apart, compared FROM rank_summary ORDER BY rank").fetchall() == [
        (0, None, True), (1, "other steps", False)]
    assert s.report["cluster"]["spread"] == []
    assert s.con.execute("SELECT step, ranks FROM step_times").fetchall() == [(50, 1)]
    from npu_tui.tui.panes.ranks import rank_plots
    said = [(i.what, i.fix) for i in s.health if "other steps" in i.what or "partial rank set" in i.what]
    assert said[0] == ("cluster_step_trace_time.csv gives rank 1, not loaded, other steps than the loaded ranks' (a row "
                       "without a step sums the whole profile): not compared with them",
                       "copy their rank folders beside these, to compare them step by step")
    assert said[1][1].endswith("cover the loaded ranks only")
    # its bar-less rank named beside the mark
    assert "✕ not compared with the other ranks: rank 1 (other steps) (h says why)" in rank_plots(s.report).plain
    trace.write_text(text)
    # Changed for rank 0, the cluster output is another run's: rank 1's copy is not compared.
    trace = job / "cluster_analysis_output" / "cluster_step_trace_time.csv"
    trace.write_text(trace.read_text().replace(",8873.756", ",9873.756"))
    s = open_session(job, cache=False)
    assert s.con.execute("SELECT rank, apart, compared FROM rank_summary ORDER BY rank").fetchall() == [
        (0, None, True), (1, "another run", False)]
    assert s.report["cluster"]["spread"] == []
    partial = [i for i in s.health if i.what.startswith("partial rank set")]
    assert partial[0].fix.endswith("cover the loaded ranks only")


@async_test
async def test_the_app_counts_the_stand_ins_and_has_no_timeline_for_them(real, level1_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(level1_job, job)
    shutil.rmtree(job / "rank1_ascend_pt")
    app = NpuTuiApp(job)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot, rounds=4)
        assert app.sub_title.startswith("1 rank(s) + 1 by the cluster step trace · ")
        findings = [(f["rule"], f["rank"]) for f in app.report["findings"]]
        await pilot.press("2", *["down"] * findings.index(("rank_comm_imbalance", 1)), "t")
        await settle(app, pilot)
        # rank 1's figures are the cluster's: its finding's timeline is rank 0's, and it says so
        assert [n.message for n in app._notifications][-1] == (
            "Rank 1 has no events to draw (no kernels or lanes loaded for it); rank 0 is shown.")
        assert app.panes.active == "timeline"
    app = NpuTuiApp(real / ADVISOR)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, rounds=4)
        assert app.sub_title.startswith("8 rank(s) by the cluster step trace · msprof-analyze cluster · ")
        # no rank's files: no memory for that reason, not for want of profile_memory=True
        assert "no rank's own files here, so no memory records" in screen_text(app)
        await pilot.press("6")
        await settle(app, pilot)
        assert screen_text(app).count("no kernels to draw") == 1  # (the header had said it too)


def test_a_loaded_rank_of_another_run_is_no_mismatch_of_the_cluster_output(real, level1_job, tmp_path):
    """A rank folder of another run beside the job's (said, not compared): the cluster output, the
    job's, does not match it, and is no other run's for that; the ranks it stands in for are compared."""
    job = tmp_path / "job"
    shutil.copytree(level1_job, job)
    late = job / "rank1_ascend_pt"
    # rank 1 copied as rank 2 (the cluster output's rank 2: the same figures); rank 1 another run's
    shutil.copytree(late, job / "rank2_ascend_pt")
    info = job / "rank2_ascend_pt" / "profiler_info_1.json"
    doc = json.loads(info.read_text())
    doc["rank_id"] = 2
    info.unlink()
    (job / "rank2_ascend_pt" / "profiler_info_2.json").write_text(json.dumps(doc))
    kernels = late / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    kernels.write_text(re.sub(r",(17\d{14})\.", lambda m: f",{int(m[1]) + 120_000_000}.", kernels.read_text()))
    trace = job / "cluster_analysis_output" / "cluster_step_trace_time.csv"
    rows = trace.read_text().splitlines()
    rank1 = next(r for r in rows if r.startswith("50,rank,1,"))
    stand_in = rank1.replace("50,rank,1,", "50,rank,3,")
    trace.write_text("\n".join(rows[:2] + [rank1.replace("8878.295", "8000.0"), rank1.replace(",rank,1,", ",rank,2,"),
                                           stand_in]) + "\n")
    s = open_session(job, cache=False)
    assert [i.what for i in s.health if "does not match" in i.what] == []
    assert [i.rank for i in s.health if "another run's" in i.what] == [1]
    apart = dict(s.con.execute("SELECT rank, apart FROM rank_summary").fetchall())
    assert apart == {0: None, 1: "another run", 2: None, 3: None}


@pytest.fixture(scope="module")
def level1_job(real, tmp_path_factory):
    """The real Level1 ranks with the cluster outputs msprof-analyze wrote for them beside."""
    import shutil

    job = tmp_path_factory.mktemp("job") / "level1"
    shutil.copytree(real / TEXT / "level1", job)
    shutil.copytree(LEVEL1_CLUSTER, job / "cluster_analysis_output")
    return job


def test_cluster_outputs_agree_with_the_ranks_own_files(level1_job):
    s = open_session(level1_job, cache=False)
    assert s.ranks == [0, 1]
    con = s.con
    logged = {k for (k,) in con.execute("SELECT kind FROM load_log WHERE rank IS NULL").fetchall()}
    assert logged == {"cluster_step_trace", "cluster_communication", "cluster_communication_matrix"}
    # every rank's op in the cluster file is the same op in the rank's communication.json
    ops = con.execute("""SELECT count(*), count(o.rank) FROM cluster_comm_ops x LEFT JOIN comm_ops o
                         ON o.rank = x.rank AND o.step = x.step AND o.op_name = x.op_name AND o.start_us = x.start_us
                         AND o.elapse_ms = x.elapse_ms AND o.transit_ms = x.transit_ms AND o.wait_ms = x.wait_ms
                         AND o.sync_ms = x.sync_ms AND o.idle_ms = x.idle_ms""").fetchone()
    assert ops == (8, 8) and con.execute("SELECT count(*) FROM comm_ops").fetchone()[0] == 8
    steps = con.execute("""SELECT count(*), count(s.rank) FROM cluster_step_trace x LEFT JOIN step_trace s
                           ON s.rank = x.rank AND s.step = x.step AND s.computing_us = x.computing_us
                           AND s.comm_not_overlapped_us = x.comm_not_overlapped_us AND s.free_us = x.free_us
                           AND s.stage_us = x.stage_us AND s.preparing_us = x.preparing_us""").fetchone()
    assert steps == (2, 2)
    # each link of each op key, as the ranks' matrices have it (msprof-analyze's own total aside)
    links = con.execute("""SELECT count(*), count(m.rank) FROM cluster_comm_matrix x LEFT JOIN comm_matrix m
                           ON m.op_key = x.op_key AND m.src_rank = x.src_rank AND m.dst_rank = x.dst_rank
                           AND m.transit_size_mb = x.transit_size_mb AND m.transit_time_ms = x.transit_time_ms
                           WHERE x.op_key NOT LIKE 'Total Op Info@%'""").fetchone()
    assert links[0] > 0 and links == (links[0], links[0])
    # with the ranks' own files there, the views read them, not the summary
    assert {r["source"] for r in s.report["cluster"]["comm_ops"]} == {"communication.json"}


def test_a_rank_whose_step_trace_has_no_kernels_beside_it_is_compared(real, tmp_path):
    """Rank 1 copied without its kernel files: step_trace_time.csv measured its steps all the same,
    as the cluster step trace's copy of them does for a rank not loaded; it had been left out of
    the spreads as a rank without kernels (whose steps only the host marked)."""
    job = tmp_path / "job"
    shutil.copytree(real / TEXT / "level1", job)
    for name in ("kernel_details.csv", "trace_view.json"):
        (job / "rank1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / name).unlink()
    s = open_session(job, cache=False)
    got = s.con.execute("SELECT rank, kernel_count > 0, step_source, compared FROM rank_summary ORDER BY rank").fetchall()
    assert got == [(0, True, "step_trace_time.csv", True), (1, False, "step_trace_time.csv", True)]
    assert [m["ranks"] for m in s.report["cluster"]["spread"]] == [2, 2, 2]


def test_msprof_ranks_take_no_stand_ins_from_the_cluster_step_trace(real, tmp_path):
    """msprof-analyze numbers msprof's ranks without a rank id in order, npu-tui by their device: its
    rank 1 may be a device loaded here under another number. Beside msprof's ranks its step trace
    stands in for none (they were compared as ranks not loaded, the same device twice)."""
    prof = "PROF_000001_20230818142704322_COJGGGCANRMICFBC"
    job = tmp_path / "job"
    shutil.copytree(real / "mindinsight-msprof-2dev-hccl" / prof, job / prof)
    shutil.copytree(LEVEL1_CLUSTER, job / "cluster_analysis_output")
    s = open_session(job, cache=False)
    assert s.con.execute("SELECT DISTINCT source_format FROM ranks").fetchall() == [("msprof",)]
    assert s.con.execute("SELECT count(*) FROM cluster_step_trace WHERE type = 'rank'").fetchone() == (2,)
    assert s.con.execute("SELECT list(rank ORDER BY rank) FROM rank_summary").fetchone()[0] == s.ranks
    assert "cluster_step_trace" not in {r["step_source"] for r in s.report["cluster"]["ranks"]}


def test_cluster_outputs_of_another_run_are_said(real, level1_job, tmp_path):
    """msprof-analyze's outputs left from another run (a job run again into the folder) were shown
    beside the ranks' own figures, 13x apart, in a report without a warning. Its step trace copies
    each rank's step_trace_time rows: the ones written for these ranks agree, and say nothing."""
    import shutil

    def mismatch(job):
        return [(i.severity, i.what) for i in open_session(job, cache=False).health if "does not match" in i.what]

    assert mismatch(level1_job) == []
    job = tmp_path / "level1"
    shutil.copytree(real / TEXT / "level1", job)
    shutil.copytree(real / ADVISOR, job / "cluster_analysis_output")
    assert mismatch(job) == [("warning", "cluster_step_trace_time.csv does not match the ranks loaded: rank 0, its "
                                         "row without a step: not among its own files' steps (and 1 more); "
                                         "msprof-analyze's output of another run?")]
    # Its ranks 2-7 are not compared with these two either.
    apart = open_session(job, cache=False).con.execute(
        "SELECT list(rank ORDER BY rank) FROM rank_summary WHERE apart = 'another run'").fetchone()[0]
    assert apart == [2, 3, 4, 5, 6, 7]
    # Same steps, other figures: the step trace of the ranks' own files, one figure changed.
    shutil.rmtree(job / "cluster_analysis_output")
    shutil.copytree(LEVEL1_CLUSTER, job / "cluster_analysis_output")
    trace = job / "cluster_analysis_output" / "cluster_step_trace_time.csv"
    text = trace.read_text()
    assert text.count(",8878.295") == 1
    trace.write_text(text.replace(",8878.295", ",9878.295"))
    assert mismatch(job) == [("warning", "cluster_step_trace_time.csv does not match the ranks loaded: rank 1, "
                                         "step 50: Computing 9,878.30 us there, 8,878.30 us in its own files; "
                                         "msprof-analyze's output of another run?")]
    # MindSpore's ranks: msprof-analyze copies their Stage, the span of their HCCL tasks, which
    # is not their step; their other figures agree.
    trace.write_text(text.replace("131912.5", "96359.047"))
    for rank in (0, 1):
        (job / f"rank{rank}_ascend_pt").rename(job / f"rank{rank}_ascend_ms")
    assert mismatch(job) == []


def test_sdma_is_the_total_of_the_on_chip_links_not_one_more(real):
    """communication.json's SDMA is what HCCS, PCIE and SIO moved together (the real files add up):
    listed beside them as one more link type, it read as twice the traffic."""
    s = open_session(real / TEXT / "level1")
    rows = s.report["cluster"]["bandwidth"]
    for rank in (0, 1):
        mine = [r for r in rows if r["rank"] == rank]
        assert [r["transport"] for r in mine][:1] == ["SDMA"]  # the total first, its parts after it
        sdma = mine[0]
        parts = [r for r in mine if r["part_of"] == "SDMA"]
        assert {r["transport"] for r in parts} == {"HCCS", "PCIE", "SIO"}
        assert sdma["size_mb"] == pytest.approx(sum(r["size_mb"] for r in parts))
        assert sdma["time_ms"] == pytest.approx(sum(r["time_ms"] for r in parts))
        assert [r["part_of"] for r in mine if r["transport"] == "RDMA"] == [None]
    assert "rank  link  part of       MB" in s.render("text")


def test_without_a_matrix_the_links_per_transport_leave_sdma_out(real, tmp_path):
    """communication.json alone gives each rank's bandwidth per transport: SDMA, the total of its
    HCCS, PCIE and SIO, had been listed as one link more beside them."""
    job = tmp_path / "level1"
    shutil.copytree(real / TEXT / "level1", job)
    for rank in (0, 1):
        (job / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").unlink()
    s = open_session(job, cache=False)
    links = s.con.execute("SELECT reported_by, transport, size_mb FROM comm_links ORDER BY ALL").fetchall()
    assert {t for _, t, _ in links} == {"HCCS", "PCIE", "RDMA", "SIO"}
    sdma = dict(s.con.execute("SELECT rank, size_mb FROM link_bandwidth WHERE transport = 'SDMA'").fetchall())
    for rank in (0, 1):  # what the links of the rank moved is its SDMA total once
        assert sum(mb for r, t, mb in links if r == rank and t != "RDMA") == pytest.approx(sdma[rank])


def test_links_count_each_kinds_total_once(real):
    """communication_matrix.json keeps sample ops of a kind (top1, middle, bottom1..3) and their
    -total: a link's traffic is the total's, not the sum of all of them."""
    level1 = real / TEXT / "level1"
    s = open_session(level1)
    want = defaultdict(lambda: [0.0, 0.0])
    for rank in (0, 1):
        doc = json.loads((level1 / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" /
                          "communication_matrix.json").read_text())
        for kinds in doc.values():
            for ops in kinds.values():
                for key, links in ops.items():
                    if "-total@" in key:
                        for link, v in links.items():
                            src, dst = map(int, link.split("-"))
                            w = want[(rank, src, dst, v["Transport Type"])]
                            w[0] += v["Transit Size(MB)"]
                            w[1] += v["Transit Time(ms)"]
    got = {(r["reported_by"], r["src_local"], r["dst_local"], r["transport"]): r for r in s.report["cluster"]["links"]}
    assert set(got) == set(want)
    for key, (size, time_ms) in want.items():
        # to a byte and a nanosecond (the view rounds its sums so they sort the same every run)
        assert got[key]["size_mb"] == pytest.approx(size, abs=1e-6)
        assert got[key]["time_ms"] == pytest.approx(time_ms, abs=1e-6)
        assert got[key]["gbps"] == pytest.approx(size / time_ms, rel=1e-4)


def test_each_group_has_the_rank_its_others_wait_for():
    """Two groups, {0, 1} and {2, 3}: rank 1 is late to every call of the first, rank 3 to the
    second. Each waiting rank is told the rank it waits for, not one rank for the whole job."""
    from analysis_support import make_profile

    kernels, comm = [], []
    for rank, group, late in ((0, "g01", False), (1, "g01", True), (2, "g23", False), (3, "g23", True)):
        for step in (1, 2, 3):
            t0 = step * 1_000_000
            kernels.append((rank, step, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", t0, 500_000, None))
            wait = 0.0 if late else 0.3  # ms
            comm.append((rank, step, f"hcom_allReduce__9_{step}_1", (t0 + 500_000) / 1e3, wait + 0.05, 0.05, wait,
                         wait, 0.0, group))
    p = make_profile(kernels)
    p.con.executemany("INSERT INTO comm_ops (rank, step, kind, op_name, start_us, elapse_ms, transit_ms, wait_ms, "
                      "sync_ms, idle_ms, group_name) VALUES (?, ?, 'collective', ?, ?, ?, ?, ?, ?, ?, ?)", comm)
    from npu_tui.analysis import install_views, load_rules

    install_views(p.con, load_rules())
    rows = {r: (w, f) for r, w, f in p.con.execute("SELECT rank, waited_for, waits_for FROM rank_waits").fetchall()}
    assert rows == {0: (False, 1), 1: (True, None), 2: (False, 3), 3: (True, None)}


def _loaded_in_order(run: int, rows: int = 200_000):
    """The same rows each run, in another order: ranks load on parallel threads, so a table's row
    order differs from one load to the next. Values are hashes of the row number, not random()."""
    from npu_tui.analysis import install_views, load_rules
    from npu_tui.profile import connect

    con = connect()
    con.execute("SET threads = 4")
    n = f"FROM range({rows}) t(i) ORDER BY hash(i, {run})"
    v = "(hash(i, {}) % 1000000) / 1e3"
    con.execute(f"""INSERT INTO comm_bandwidth SELECT i % 4, i // 1000, 'collective', 'hcom_allReduce__' || (i % 997),
                    'HCCS', {v.format(1)}, {v.format(2)}, NULL {n}""")
    con.execute(f"""INSERT INTO comm_ops SELECT i % 4, i // 1000, 'collective', 'hcom_allReduce__' || (i % 997), 'g',
                    i, {v.format(3)}, {v.format(4)}, {v.format(5)}, {v.format(6)}, {v.format(7)} {n}""")
    con.execute(f"""INSERT INTO operator_memory (rank, name, size_bytes, alloc_ns, duration_ns)
                    SELECT i % 4, 'aten::add', hash(i, 8) % 1000000000, i * 1000, hash(i, 9) % 1000000000 {n}""")
    con.execute("INSERT INTO kernels (rank, name, type, start_ns, dur_ns) SELECT r, 'k', 'K', 0, 1 FROM range(4) t(r)")
    install_views(con, load_rules())
    return con


@pytest.fixture(scope="module")
def loads():
    return [_loaded_in_order(run) for run in range(3)]


@pytest.mark.parametrize("view", ["link_bandwidth", "comm_links", "comm_op_times", "memory_operators"])
def test_sums_of_doubles_are_the_same_on_every_load(loads, view):
    """Floating-point sums depend on the order rows are added in, which neither the load (ranks
    on parallel threads) nor DuckDB's threads keep: each sum over a big table has an order of its
    own. (At 64 ranks the report's comm, bandwidth and memory figures differed load to load.)"""
    runs = {tuple(sorted(con.execute(f"SELECT * FROM {view}").fetchall(), key=str)) for con in loads}
    assert len(runs) == 1 and len(next(iter(runs))) >= 4


def test_ranks_that_tie_name_the_lower_rank():
    """Identical ranks (one job, the same work) tie on every measure: the slow rank is the lower
    one whatever order the rows come in, not the one arg_max met first on that run."""
    import duckdb

    from npu_tui.analysis.views import view_sql

    con = duckdb.connect()
    con.execute("""CREATE TABLE rank_summary AS SELECT * FROM (VALUES (3, 10.0, 2.0, 8.0, true, NULL), (1, 10.0, 2.0, 8.0, true, NULL),
                   (2, 10.0, 2.0, 8.0, true, NULL)) t(rank, step_time_us, exposed_comm_us, own_us, compared, apart)""")
    con.execute("CREATE TABLE rank_waits (rank INTEGER, waited_for BOOLEAN, caused_wait_ms DOUBLE)")
    con.execute("""CREATE TABLE step_breakdown AS SELECT * FROM (VALUES (3, 7, 10.0), (1, 7, 10.0), (2, 7, 10.0))
                   t(rank, step, step_us)""")
    con.execute("CREATE TABLE step_flags (rank INTEGER, step INTEGER, outlier BOOLEAN)")
    con.execute("CREATE TABLE ranks_apart (rank INTEGER, why VARCHAR)")
    spread = con.execute(f"SELECT measure, slow_rank FROM ({view_sql('rank_spread')})").fetchall()
    assert sorted(spread) == [("exposed_comm", 1), ("own_time", 1), ("step_time", 1)]
    assert con.execute(f"SELECT step, longest_rank FROM ({view_sql('step_times')})").fetchall() == [(7, 1)]


@pytest.mark.parametrize("order", [1, -1], ids=["as-listed", "reversed"])
def test_waits_that_tie_name_the_lower_rank(order):
    """Group {0, 1, 2}: ranks 1 and 2 both come last to every call, and rank 0 waits for them; it
    also waits as long in group {0, 3} for rank 3. Each tie goes to the lower rank: rank 1 is
    the one group {0, 1, 2} waits for, and the one rank 0 is said to wait for, whatever order
    the calls were loaded in. Rank 2, which never waits, waits for no one."""
    from analysis_support import make_profile
    from npu_tui.analysis import install_views, load_rules

    kernels, comm = [], []
    for rank, group, wait in ((0, "g012", 0.3), (1, "g012", 0.0), (2, "g012", 0.0), (0, "g03", 0.3), (3, "g03", 0.0)):
        for step in (1, 2, 3):
            t0 = step * 1_000_000
            kernels.append((rank, step, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", t0, 500_000, None))
            comm.append((rank, step, f"hcom_allReduce__{group}_{step}", (t0 + 500_000) / 1e3, wait + 0.05, 0.05,
                         wait, wait, 0.0, group))
    p = make_profile(kernels[::order])
    p.con.executemany("INSERT INTO comm_ops (rank, step, kind, op_name, start_us, elapse_ms, transit_ms, wait_ms, "
                      "sync_ms, idle_ms, group_name) VALUES (?, ?, 'collective', ?, ?, ?, ?, ?, ?, ?, ?)", comm[::order])
    install_views(p.con, load_rules())
    rows = {r: (w, f) for r, w, f in p.con.execute("SELECT rank, waited_for, waits_for FROM rank_waits").fetchall()}
    assert rows == {0: (False, 1), 1: (True, None), 2: (False, None), 3: (True, None)}


def test_a_rank_without_kernels_is_not_compared_with_the_others(real, tmp_path):
    """A Kineto rank whose trace was cut before its device events has host steps and no comm: its
    0 exposed comm made a 200 % spread, and it was named as the rank the others wait for."""
    sampled = real / "kineto/hta-sampled-2rank"
    shutil.copy(sampled / "sampled_rank-0.json.gz", tmp_path)
    cut = (sampled / "sampled_rank-1.json.gz").read_bytes()
    (tmp_path / "sampled_rank-1.json.gz").write_bytes(cut[: len(cut) // 3])
    s = open_session(tmp_path, cache=False)
    summary = {r["rank"]: r for r in s.report["ranks"]}
    assert summary[1]["kernel_count"] == 0 and summary[0]["kernel_count"] > 0
    assert s.con.execute("SELECT count(*) FROM rank_spread").fetchone()[0] == 0
    assert not [f for f in s.report["findings"] if f["rule"].startswith("rank_")]
    # The intact pair is compared as before.
    intact = open_session(sampled, cache=False)
    assert {r["measure"] for r in intact.report["cluster"]["spread"]} == {"step_time", "own_time", "exposed_comm"}


ADVISOR_CLUSTER = Path("mstt-advisor-fixtures") / "resource" / "advisor" / "cluster_analysis_output"


def _cluster_db(src: Path, path: Path, time_table: str = "ClusterCommunicationTime") -> None:
    """The fixture's csv and json written as msprof-analyze's cluster_analysis.db, each group's
    "Total Op Info" rows included as msprof-analyze writes them, and one link of a matrix."""
    import csv
    import sqlite3

    db = sqlite3.connect(path)
    names = ["step", "type", "index", "computing", "communication_not_overlapped", "overlapped", "communication",
             "free", "stage", "bubble", "communication_not_overlapped_and_exclude_receive", "preparing"]
    db.execute(f"CREATE TABLE ClusterStepTraceTime ({', '.join(f'[{n}]' for n in names)})")
    with open(src / "cluster_step_trace_time.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]
    db.executemany(f"INSERT INTO ClusterStepTraceTime VALUES ({', '.join('?' * len(names))})",
                   [r + [None] * (len(names) - len(r)) for r in rows])
    db.execute(f"CREATE TABLE {time_table} (step, rank_id, hccl_op_name, group_name, start_timestamp, "
               "elapsed_time, transit_time, wait_time, synchronization_time, idle_time)")
    db.execute("CREATE TABLE CommunicationGroupMapping (type, rank_set, group_name, group_id, pg_name)")
    groups = set()
    for ranks, steps in json.loads((src / "cluster_communication.json").read_text()).items():
        for step, ops in steps.items():
            for key, by_rank in ops.items():
                op, group = key.rsplit("@", 1)  # (the json's "Total Op Info@group" too)
                groups.add((ranks, group))
                for rank, info in by_rank.items():
                    t = info["Communication Time Info"]
                    db.execute(f"INSERT INTO {time_table} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                        step, int(rank), op, group, t["Start Timestamp(us)"], t["Elapse Time(ms)"],
                        t["Transit Time(ms)"], t["Wait Time(ms)"], t["Synchronization Time(ms)"], t["Idle Time(ms)"]])
    db.executemany("INSERT INTO CommunicationGroupMapping VALUES ('collective', ?, ?, NULL, NULL)", sorted(groups))
    db.execute("CREATE TABLE ClusterCommunicationMatrix (step, hccl_op_name, group_name, src_rank, dst_rank, "
               "transit_size, transit_time, bandwidth, transport_type, op_name)")
    db.executemany("INSERT INTO ClusterCommunicationMatrix VALUES ('step', ?, 'g1', '0', '1', 28.5, 1.8, 15.83, "
                   "'HCCS', 'hcom_allReduce__586_0_1')", [("allreduce-top1",), ("Total Op Info",)])
    db.commit()
    db.close()
    assert len(groups) > 0


@pytest.mark.parametrize("time_table", ["ClusterCommunicationTime", "ClusterCommAnalyzerTime"])
def test_msprof_analyzes_cluster_db_gives_what_its_csv_and_json_give(real, tmp_path, time_table):
    """For db-format profiles msprof-analyze writes cluster_analysis.db in place of the csv and json
    (ClusterStepTraceTime, ClusterCommunicationTime, ClusterCommunicationMatrix; older versions
    ClusterCommAnalyzer*): it had been refused alone ("SQLite file without profiler tables") and
    passed over beside rank folders. Here the real fixture's csv and json are written as its
    tables and read back the same, "Total Op Info" rows left out, opened at its folder's parent or
    at the folder itself (where it had also been taken for a rank's db export)."""
    from npu_tui.profile import load_profile
    from npu_tui.profile.health import health

    src = real / ADVISOR_CLUSTER
    out = tmp_path / "db" / "cluster_analysis_output"
    out.mkdir(parents=True)
    _cluster_db(src, out / "cluster_analysis.db", time_table)
    want = load_profile(src)
    for opened in (tmp_path / "db", out):
        p = load_profile(opened)
        assert p.layout == want.layout == "cluster_output" and p.ranks == []
        for q in ("SELECT * FROM cluster_step_trace ORDER BY ALL", "SELECT * FROM cluster_comm_ops ORDER BY ALL"):
            got = p.con.execute(q).fetchall()
            assert got == want.con.execute(q).fetchall() and len(got) >= 4, q
        assert p.con.execute("SELECT * FROM cluster_comm_matrix").fetchall() == [
            (None, None, "allreduce-top1@g1", "hcom_allReduce__586_0_1", 0, 1, "HCCS", 28.5, 1.8, 15.83)]
        assert [i.what for i in health(p) if i.severity != "info"] == [
            i.what for i in health(want) if i.severity != "info"]
        assert p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'cluster_db'").fetchall() == [
            (9 + 4 + 1, 0, "")]
    # The report names the file the comm ops came from.
    assert {r["source"] for r in open_session(tmp_path / "db", cache=False).report["cluster"]["comm_ops"]} == {
        "cluster_analysis.db"}


def test_a_cluster_db_beside_its_csv_and_json_adds_nothing_twice(real, tmp_path):
    """Beside the csv and json, which load first, the db fills only what they left empty: every
    row had loaded twice."""
    import sqlite3

    from npu_tui.profile import load_profile
    from npu_tui.profile.health import health

    out = tmp_path / "cluster_analysis_output"
    shutil.copytree(real / ADVISOR_CLUSTER, out)
    _cluster_db(out, out / "cluster_analysis.db")
    p, want = load_profile(out), load_profile(real / ADVISOR_CLUSTER)
    for table in ("cluster_step_trace", "cluster_comm_ops"):
        q = f"SELECT * FROM {table} ORDER BY ALL"
        assert p.con.execute(q).fetchall() == want.con.execute(q).fetchall(), table
    # the matrix, which the json beside it lacks, comes from it
    assert p.con.execute("SELECT count(*) FROM cluster_comm_matrix").fetchone() == (1,)
    assert [i for i in health(p) if i.file.endswith(".db")] == []  # it gave rows (the matrix): nothing to say
    (out / "cluster_analysis.db").unlink()
    _cluster_db(out, out / "cluster_analysis.db")
    w = sqlite3.connect(out / "cluster_analysis.db")
    w.execute("DROP TABLE ClusterCommunicationMatrix")
    w.commit()
    w.close()
    (db,) = [i for i in health(load_profile(out)) if i.file.endswith(".db")]
    assert (db.severity, db.what) == ("info", "cluster_analysis.db not loaded: the text export beside it is used")


def test_a_cluster_db_without_the_columns_it_needs_says_so(real, tmp_path):
    """A table without a column npu-tui reads (another version's) loses that column's figures,
    not the file: DuckDB's binder errors had been the message, and one table sank the others."""
    import sqlite3

    from npu_tui.profile import load_profile

    out = tmp_path / "cluster_analysis_output"
    out.mkdir()
    _cluster_db(real / ADVISOR_CLUSTER, out / "cluster_analysis.db")
    w = sqlite3.connect(out / "cluster_analysis.db")
    w.execute("ALTER TABLE CommunicationGroupMapping DROP COLUMN group_name")
    w.execute("ALTER TABLE ClusterCommunicationTime DROP COLUMN rank_id")
    w.commit()
    w.close()
    p = load_profile(out)
    assert p.con.execute("SELECT count(*) FROM cluster_step_trace").fetchone() == (9,)
    assert p.con.execute("SELECT count(*) FROM cluster_comm_ops").fetchone() == (0,)
    ((rows, skipped),) = p.con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'cluster_db'").fetchall()
    assert (rows, skipped) == (9 + 1, 4)


# Two tensor-parallel groups {0, 1}, {2, 3} over fast links, and two sequence-parallel groups
# {0, 2}, {1, 3} over slow ones: each group numbers its ranks 0 and 1, as the files do.
GROUPS = {"tp01": (0, 1), "tp23": (2, 3), "sp02": (0, 2), "sp13": (1, 3)}
KERNELS = ("Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us)\r\n"
           "1,{r},aclnnMatmul_MatMulV3Common_MatMulV3,MatMulV3,AI_CORE,1736408883700000.000\t,300.000,0\r\n")


def _parallel_job(root: Path, ranks, metadata: bool, groups=GROUPS) -> Path:
    """Rank folders of a job in ``groups`` (a name starting "pp": a pipeline's pair, the first
    sending to the second over RDMA, without self links), each group a comm name of its own."""
    from npu_tui.profile.sources.profiler_metadata import group_hash

    def link(transport, ms):
        return {"Transport Type": transport, "Transit Size(MB)": 8.0, "Transit Time(ms)": ms,
                "Bandwidth(GB/s)": round(8.0 / ms, 4)}

    for r in ranks:
        folder = root / f"node_{r}_ascend_pt"
        out = folder / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        (folder / f"profiler_info_{r}.json").write_text(json.dumps({"rank_id": r}))
        (out / "kernel_details.csv").write_text(KERNELS.format(r=r))
        ops, p2p, info = {}, {}, {}
        for name, members in groups.items():
            if r not in members:
                continue
            comm = f"10.0.0.1%eth0_6000{members[0]}{members[1]}_0_1700000000"
            me, ms = members.index(r), (0.05 if name.startswith("tp") else 0.8)
            if name.startswith("pp"):
                p2p[f"{'send' if me == 0 else 'receive'}-total@{group_hash(comm)}"] = {"0-1": link("RDMA", 2.0)}
            else:
                ops[f"allreduce-total@{group_hash(comm)}"] = {f"{me}-{me}": link("LOCAL", 0.001),
                                                              f"{me}-{1 - me}": link("HCCS", ms)}
            info[comm] = {"group_name": name, "group_rank": me, "global_ranks": list(members)}
        (out / "communication_matrix.json").write_text(json.dumps({"step1": {"collective": ops, "p2p": p2p}}))
        if metadata:
            (folder / "profiler_metadata.json").write_text(json.dumps({"parallel_group_info": info}))
    return root


@pytest.mark.parametrize("metadata", [False, True], ids=["self-links", "metadata"])
def test_a_groups_ranks_are_the_jobs(tmp_path, metadata):
    """communication_matrix.json numbers a link's ranks within its group: rank 2's "0-1" in its
    sequence-parallel group is its link to rank 0. The numbers had been read as the job's: rank 0's
    link to rank 2 (slow) was added to its link to rank 1 (fast) as one "0 → 1", and the slow link
    was lost. The job's ranks come from profiler_metadata.json's groups, else from the rank whose
    own file holds the group's link to itself, as msprof-analyze reads them."""
    s = open_session(_parallel_job(tmp_path / "job", range(4), metadata), cache=False)
    links = s.con.execute("SELECT src_rank, dst_rank, comm_group, round(gbps, 1), slow FROM comm_links "
                          "WHERE transport <> 'LOCAL' ORDER BY ALL").fetchall()
    assert [(src, dst, gbps, slow) for src, dst, _, gbps, slow in links] == [
        (0, 1, 160.0, False), (0, 2, 10.0, True), (1, 0, 160.0, False), (1, 3, 10.0, True),
        (2, 0, 10.0, True), (2, 3, 160.0, False), (3, 1, 10.0, True), (3, 2, 160.0, False)]
    # a group by the name the job gave it, where its metadata says; else as the files name it
    named = {(src, dst): group for src, dst, group, *_ in links}
    assert named[(0, 2)] == ("sp02" if metadata else next(g for (a, b), g in named.items() if (a, b) == (2, 0)))
    assert all((g in GROUPS) == metadata and (g.isdigit() != metadata) for g in named.values())
    assert [i for i in s.health if "partial rank set" in i.what] == []


@pytest.mark.parametrize("metadata", [False, True], ids=["self-links", "metadata"])
def test_the_ranks_a_group_links_to_that_are_not_loaded(tmp_path, metadata):
    """Ranks 2 and 3 alone: their tensor-parallel group is whole; their sequence-parallel groups
    link each to a rank not loaded, numbered 0 within the group. Without metadata which of the
    job's ranks that is, no file says: counted, not named (it had been named "rank 0, 1", the
    group's numbers read as the job's, and so a rank that is loaded); with it, named."""
    s = open_session(_parallel_job(tmp_path / "job", (2, 3), metadata), cache=False)
    (item,) = [i for i in s.health if "partial rank set" in i.what]
    if metadata:
        assert "links to ranks 0, 1, not loaded (2 of 4 ranks loaded)" in item.what
    else:
        # at least: the two groups' missing ranks may be one
        assert "links to at least 1 rank, not loaded (2 of at least 3 ranks loaded)" in item.what
    told = s.con.execute("SELECT src_rank, dst_rank FROM comm_links WHERE transport = 'HCCS' ORDER BY ALL").fetchall()
    assert told == ([(2, 0), (2, 3), (3, 1), (3, 2)] if metadata else [(2, 3), (2, None), (3, 2), (3, None)])


def test_a_loaded_rank_without_comm_data_is_no_rank_missing(real, tmp_path):
    """A loaded rank whose communication_matrix.json was not copied may be one of the numbers its
    groups' links leave untold: it had been counted as a rank not loaded besides (the real job's
    group of 8 with both ranks loaded read "2 of at least 9")."""
    job = _parallel_job(tmp_path / "job", range(4), False)
    (job / "node_3_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").unlink()
    s = open_session(job, cache=False)
    assert [i for i in s.health if "partial rank set" in i.what] == []
    assert [i.what for i in s.health if i.rank == 3] == [
        "no communication_matrix.json, which 3 other ranks have: its figures that need it are missing"]
    level1 = tmp_path / "level1"
    shutil.copytree(real / TEXT / "level1", level1)
    for name in ("communication.json", "communication_matrix.json"):
        (level1 / "rank1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / name).unlink()
    (item,) = [i for i in open_session(level1, cache=False).health if "partial rank set" in i.what]
    assert "links to at least 6 ranks, not loaded (2 of at least 8 ranks loaded)" in item.what


def test_a_pipelines_send_and_receive_number_its_pair(tmp_path):
    """A pipeline's groups (a pair each, send and receive) hold no self link: the ranks had been read
    as the file numbers them, rank 0's send to rank 2 drawn as "0 -> 1", and added to the tensor-
    parallel link there. A send's src and a receive's dst are the reporting rank's. In the matrix
    the link both ends report counts once."""
    from npu_tui.tui.panes.comm import matrix_text

    groups = {"tp01": (0, 1), "tp23": (2, 3), "pp02": (0, 2), "pp13": (1, 3)}
    s = open_session(_parallel_job(tmp_path / "job", range(4), False, groups), cache=False)
    rdma = s.con.execute("SELECT reported_by, src_rank, dst_rank FROM comm_links WHERE transport = 'RDMA' "
                         "ORDER BY ALL").fetchall()
    assert rdma == [(0, 0, 2), (1, 1, 3), (2, 0, 2), (3, 1, 3)]
    cells = matrix_text(s.report, "time_ms").plain
    assert "rank 0    -    0.1   2.0    -" in cells  # 2.0 ms once, not 4.0 (sent and received)


def test_a_batchsendrecv_claims_neither_end_of_its_links(tmp_path):
    """A batchsendrecv's links go both ways ("0-1" and "1-0" in one op): read as sends, both its
    ends were the reporting rank's, and its links drawn from rank 1 to itself."""
    job = _parallel_job(tmp_path / "job", (1,), False, {"pp13": (1, 3)})
    (matrix,) = job.rglob("communication_matrix.json")
    doc = json.loads(matrix.read_text())
    (key,) = doc["step1"]["p2p"]
    link = doc["step1"]["p2p"][key]["0-1"]
    doc["step1"]["p2p"] = {key.replace("send", "batchsendrecv"): {"0-1": link, "1-0": link}}
    matrix.write_text(json.dumps(doc))
    s = open_session(job, cache=False)
    links = s.con.execute("SELECT src_rank, dst_rank FROM comm_links WHERE transport = 'RDMA'").fetchall()
    assert links and not [(a, b) for a, b in links if a == b]


def test_the_matrix_of_a_rank_whose_peers_are_not_loaded_says_so(real, tmp_path):
    """One rank of the real 8-rank job: each of its links leads to a rank not loaded (numbered
    within the group alone). The matrix had said there was no communication_matrix.json."""
    from npu_tui.tui.panes.comm import matrix_text

    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / TEXT / "level1" / "rank0_ascend_pt", rank)
    text = matrix_text(open_session(rank, cache=False).report, "gbps").plain
    assert "no communication_matrix.json" not in text
    assert "no link between the ranks loaded" in text and "7 links to ranks not loaded" in text


@pytest.mark.parametrize("damage", ["{broken", '{"parallel_group_info": [1, 2]}'])
def test_a_damaged_profiler_metadata_costs_the_group_names_alone(tmp_path, damage):
    """profiler_metadata.json names the groups' ranks, nothing else: damaged, it is a warning, not
    a run made incomplete (exit 2); its rank's groups are read from the comm files, as without it."""
    job = _parallel_job(tmp_path / "job", range(4), True)
    (job / "node_3_ascend_pt" / "profiler_metadata.json").write_text(damage)
    s = open_session(job, cache=False)
    (item,) = [i for i in s.health if "profiler_metadata.json" in i.file]
    assert item.severity == "warning" and s.not_whole == []
    assert s.con.execute("SELECT count(*) FROM comm_links WHERE dst_rank IS NULL").fetchone() == (0,)
