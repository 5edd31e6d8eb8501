"""`npu-tui report`: the §7 JSON shape on every fixture, --fail-on exit codes, readable Markdown."""

import json
from pathlib import Path

import pytest

from npu_tui.cli import main

ROOT = Path(__file__).resolve().parents[1]
# the generated profiles (each with its truth file beside it), not the cluster outputs kept there
FIXTURES = sorted(p for p in (ROOT / "fixtures").iterdir() if p.is_dir() and p.with_name(p.name + ".truth.json").exists())
REAL = ["msinsight-pt-2rank-levels/text/level1", "msinsight-pt-2rank-levels/text/level0",
        "msinsight-pt-2rank-levels/db/level1",
        "mstt-advisor-fixtures/ut/advisor/compute_advice/data/kernel_details.csv",
        "mindinsight-msprof-2dev-hccl", "kineto/hta-sampled-2rank", "kineto/hta-alexnet-1gpu"]

NUM = (int, float)
STR = (str, type(None))
SHAPE = {
    "ranks": {"rank": int, "device_id": (int, type(None)), "kernel_count": int, "kernel_time_us": NUM,
              "per": (str, type(None))},
    "steps": {"rank": int, "step": (int, type(None)), "computing_us": NUM, "comm_not_overlapped_us": NUM,
              "overlapped_us": NUM, "free_us": NUM, "stage_us": NUM, "bubble_us": (int, float, type(None)),
              "step_us": NUM, "source": str, "outlier": bool},
    "health": {"severity": str, "rank": (int, type(None)), "file": str, "what": str, "fix": str, "lost": int},
    "step_account_check": {"rank": int, "source": str, "steps": int, "deviation": (int, float, type(None)),
                           "differs": bool, "kernels": int},
    "step_account": {"rank": int, "stage": STR, "part": str, "detail": STR, "us_per_step": NUM, "share": NUM,
                     "steps": int, "left_out": int},
    "stages": {"rank": int, "stage": str, "start_us": NUM, "end_us": NUM, "wall_us": NUM,
               "kernel_time_us": NUM, "kernel_count": int, "method": str, "forwards": (int, type(None))},
    "categories": {"rank": int, "stage": str, "category": str, "time_us": NUM, "count": int, "share": NUM},
    "comm": {"rank": int, "stage": str, "wall_us": NUM, "comm_us": NUM, "exposed_us": NUM, "steps": int,
             "stage_us_per_step": NUM, "comm_us_per_step": NUM, "exposed_us_per_step": NUM, "exposed_share": NUM,
             "source": str},
    "findings": {"rule": str, "stage": STR, "ranks": list, "rank": int, "metric": str, "category": STR,
                 "cause": STR, "value": NUM, "threshold": NUM, "direction": str, "docs": list, "estimate": str,
                 "waited_for": (int, type(None)), "saving_us": NUM, "per": str, "per_rank": list, "evidence": dict},
}


def _report(capsys, path, *args):
    code = main(["report", str(path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def check_shape(doc):
    assert doc["schema_version"] == 3 and isinstance(doc["complete"], bool)
    assert set(doc["profile"]) == {"path", "format", "ranks"}
    assert all(isinstance(r, int) for r in doc["profile"]["ranks"])
    for key, fields in SHAPE.items():
        assert isinstance(doc[key], list), key
        for entry in doc[key]:
            assert set(entry) == set(fields), (key, set(entry) ^ set(fields))
            for name, kind in fields.items():
                assert isinstance(entry[name], kind) and (kind is bool or not isinstance(entry[name], bool)), \
                    (key, name, entry[name])
    for c in doc["categories"]:
        assert 0.0 <= c["share"] <= 1.0 + 1e-9
    for c in doc["comm"]:
        assert 0.0 <= c["exposed_share"] <= 1.0 + 1e-9 and c["source"] in ("overlap_lanes", "kernels")
    savings = [f["saving_us"] for f in doc["findings"]]
    assert savings == sorted(savings, reverse=True)  # largest saving per step first
    for f in doc["findings"]:
        assert isinstance(f["evidence"]["sql"], str)
        assert isinstance(f["evidence"].get("top_operators", f["evidence"].get("idle_gaps")), list)
        assert f["rank"] == f["ranks"][0] and len(set(f["ranks"])) == len(f["ranks"])
        assert {r["rank"] for r in f["per_rank"]} == set(f["ranks"])
        assert f["docs"] and all(set(d) == {"repository", "path", "action"} and d["action"] for d in f["docs"])
    # one finding per rule and stage
    assert len({(f["rule"], f["stage"]) for f in doc["findings"]}) == len(doc["findings"])
    # the six shares of every stage sum to 1
    sums = {}
    for c in doc["categories"]:
        sums[(c["rank"], c["stage"])] = sums.get((c["rank"], c["stage"]), 0.0) + c["share"]
    assert all(s == pytest.approx(1.0) for s in sums.values())


@pytest.mark.parametrize("path", FIXTURES + REAL, ids=lambda p: str(p).split("fixtures/")[-1])
def test_json_report_has_the_documented_shape(capsys, real, path):
    path = path if isinstance(path, Path) else real / path
    code, out, err = _report(capsys, path, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)  # stdout holds the JSON document and nothing else
    check_shape(doc)
    assert [line.split(":")[0].strip() for line in out.splitlines()[1:-1]] == [json.dumps(k) for k in doc]
    assert doc["ranks"] and doc["stages"]


def test_fail_on_exit_codes(capsys):
    # The 2-rank fixture's DiT exposes comm (truth: 12.86 of 60.97 ms is 21%) and is FA/MatMul-light;
    # which rules fire is read from the JSON, then each --fail-on is checked against it.
    fixture = ROOT / "fixtures" / "diffusion_2rank"
    fired = {f["rule"] for f in json.loads(_report(capsys, fixture, "--format", "json")[1])["findings"]}
    assert fired  # at least one fires, so "any" can be tested both ways below
    some = sorted(fired)[0]
    assert _report(capsys, fixture, "--fail-on", some)[0] == 1
    assert _report(capsys, fixture, "--fail-on", "any")[0] == 1
    unfired = {"matmul_high", "fa_high", "vector_high", "comm_exposed_high"} - fired
    assert unfired and _report(capsys, fixture, "--fail-on", sorted(unfired)[0])[0] == 0
    code, out, err = _report(capsys, ROOT / "no-such-profile", "--fail-on", "any")
    assert code == 2 and out == "" and "no such file" in err


def test_a_folder_with_one_profile_below_it_opens_that_one(capsys, tmp_path, monkeypatch):
    """Copied in with its parents (prof/job/run/…): "no profile here; profiles were found under"
    the one, and exit 2. Of two or more, which is meant is the user's to say."""
    import shutil

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    fixture = ROOT / "fixtures" / "diffusion_2rank"
    shutil.copytree(fixture, tmp_path / "prof" / "job" / "run")
    code, out, err = _report(capsys, tmp_path / "prof", "--format", "json")
    assert code == 0 and json.loads(out)["profile"]["path"] == str(tmp_path / "prof" / "job" / "run")
    assert err == f"npu-tui: {tmp_path / 'prof'}: no profile here itself; opened the one below it, " \
                  f"{tmp_path / 'prof' / 'job' / 'run'}\n"
    assert json.loads(out)["findings"] == json.loads(_report(capsys, fixture, "--format", "json")[1])["findings"]
    shutil.copytree(fixture, tmp_path / "prof" / "other")
    code, out, err = _report(capsys, tmp_path / "prof")
    assert code == 2 and out == "" and "profiles were found under" in err


def test_rules_override_changes_findings(capsys, tmp_path):
    rules = (ROOT / "npu_tui" / "analysis" / "rules.toml").read_text()
    rules = rules.replace("threshold = 0.50", "threshold = 0.01", 1)  # matmul_high at 1%
    path = tmp_path / "rules.toml"
    path.write_text(rules)
    fixture = ROOT / "fixtures" / "diffusion_2rank"
    assert _report(capsys, fixture, "--fail-on", "matmul_high")[0] == 0
    assert _report(capsys, fixture, "--rules", str(path), "--fail-on", "matmul_high")[0] == 1
    path.write_text("not toml [")
    code, _, err = _report(capsys, fixture, "--rules", str(path))
    assert code == 2 and "rules" in err


def test_markdown_is_a_readable_page(capsys):
    code, out, _ = _report(capsys, ROOT / "fixtures" / "diffusion_2rank", "--format", "md")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "# npu-tui report"
    heads = [l for l in lines if l.startswith("## ")]
    for h in ("## Findings", "## Step account (per step)", "## Step breakdown (us, per step)", "## Stages", "## Stage x category",
              "## Exposed communication", "## Ranks"):
        assert h in heads
    # every table: header, separator, rows with the same number of cells, blank line around it
    i = 0
    tables = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            cells = {b.count(" | ") for b in block[:1] + block[2:]}
            assert len(cells) == 1 and set(block[1].strip("|").split("|")) <= {"---", "---:"}, block[:3]
            assert i == len(lines) or lines[i] == ""
            tables += 1
        i += 1
    assert tables >= 6
    assert "```sql" in out  # evidence queries are fenced
    # one line a rank: a list, not a paragraph Markdown runs together
    account = out[out.index("## Step account"):out.index("## Step breakdown")].splitlines()
    ranks = [line for line in account if "ms per step" in line]
    assert len(ranks) == 2 and all(line.startswith("- rank ") for line in ranks)
    assert account[account.index(ranks[-1]) + 1] == ""


def test_text_report_fits_a_terminal(capsys):
    code, out, _ = _report(capsys, ROOT / "fixtures" / "diffusion_1rank")
    assert code == 0 and out.startswith("npu-tui report\n")
    assert max(len(l) for l in out.splitlines()) <= 160


def test_stage_detection_lists_the_windows_unless_left_out():
    from npu_tui.analysis import build_report, ensure_views, load_rules
    from npu_tui.profile import load_profile

    fixture = ROOT / "fixtures" / "diffusion_2rank"
    truth = json.loads((ROOT / "fixtures" / "diffusion_2rank.truth.json").read_text())
    profile, rules = load_profile(fixture), load_rules()
    ensure_views(profile.con, rules)
    full = build_report(profile, rules)
    for det, tr in zip(full["stage_detection"], truth["ranks"]):
        assert det["rank"] == tr["rank"]
        want = sorted((s, a / 1e3, b / 1e3) for s, v in tr["stages"].items() for a, b in v["windows"])
        got = sorted((w["stage"], w["start_us"], w["end_us"]) for w in det["windows"])
        assert got == [(s, pytest.approx(a), pytest.approx(b)) for s, a, b in want]
    light = build_report(profile, rules, windows=False)
    assert light["stage_detection"] == [{k: v for k, v in d.items() if k != "windows"}
                                        for d in full["stage_detection"]]
    # DuckDB sums doubles in parallel, in no fixed order: two builds may differ in the last digits.
    assert _rounded({k: v for k, v in light.items() if k != "stage_detection"}) == \
           _rounded({k: v for k, v in full.items() if k != "stage_detection"})


@pytest.mark.parametrize("path", ["npu_tui/demo/diffusion_demo", "fixtures/diffusion_2rank"])
def test_the_json_of_encoded_rows_is_the_json_of_python_rows(path):
    """The CLI's report keeps the stage windows and the memory per forward as DuckDB encoded
    them: the document it prints reads back as the one Python's encoder writes, value for value,
    and the text and Markdown (which show neither) are the same to the byte."""
    from npu_tui.analysis import build_report, ensure_views, load_rules, render
    from npu_tui.analysis.render import Encoded
    from npu_tui.profile import load_profile

    profile, rules = load_profile(ROOT / path), load_rules()
    ensure_views(profile.con, rules)
    plain = build_report(profile, rules)
    encoded = build_report(profile, rules, encoded=True)
    assert isinstance(encoded["memory"]["windows"], Encoded)
    assert all(isinstance(d["windows"], Encoded) for d in encoded["stage_detection"])
    assert plain["memory"]["windows"] and all(d["windows"] for d in plain["stage_detection"])
    doc = json.loads(render(encoded, "json"))
    assert doc == json.loads(render(plain, "json"))
    # the same keys in the same order as Python's rows
    assert list(doc["memory"]["windows"][0]) == list(plain["memory"]["windows"][0])
    assert list(doc["stage_detection"][0]["windows"][0]) == list(plain["stage_detection"][0]["windows"][0])
    bare = build_report(profile, rules, windows=False, encoded=True)
    for fmt in ("text", "md"):
        assert render(bare, fmt) == render(plain, fmt)


def test_the_json_report_is_ascii_whatever_the_names(capsys):
    """A stage named outside ASCII comes out escaped in the windows as everywhere else: the report
    prints on any stdout. DuckDB's JSON writes such text as it is."""
    from npu_tui.session import open_session

    s = open_session(ROOT / "fixtures" / "diffusion_2rank", cache=False)
    s.add_stage_window(None, "去噪", 0.0, 1e12)
    s.analyse(encoded=True)
    text = s.render("json")
    assert text.isascii()
    assert {w["stage"] for d in json.loads(text)["stage_detection"] for w in d["windows"]} == {"去噪"}


def _rounded(v):
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    return v


def _damaged(real, tmp_path):
    """A real rank whose communication.json is damaged: it exists and cannot be loaded."""
    import shutil

    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt", rank)
    (rank / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text('{"step50": {broken')
    return tmp_path


def test_a_file_that_could_not_be_loaded_makes_the_report_incomplete(real, tmp_path, capsys):
    path = _damaged(real, tmp_path)
    code, out, err = _report(capsys, path)
    assert code == 2 and "--partial" in err and "communication.json" in err
    lines = out.splitlines()
    # Said first, before any figure.
    assert lines[5].startswith("INCOMPLETE: 1 file could not be loaded")
    assert lines.index("Data health") < lines.index("Findings")
    code, out, _ = _report(capsys, path, "--format", "json")
    doc = json.loads(out)
    assert code == 2 and doc["complete"] is False
    (error,) = [h for h in doc["health"] if h["severity"] == "error"]
    assert error["file"].endswith("communication.json") and error["rank"] == 0
    assert _report(capsys, path, "--partial")[0] == 0
    # The session's list, the one the Overview and the health screen show.
    from dataclasses import asdict

    from npu_tui.session import open_session

    s = open_session(path, cache=False)
    assert s.report["health"] == [asdict(i) for i in s.health] and len(s.health) >= 2
    # --partial keeps the gate: a finding still fails it.
    assert _report(capsys, path, "--partial", "--fail-on", "any")[0] == 1
    # A notebook is told as well: a warning, and the session's repr.
    import warnings

    import npu_tui

    with pytest.warns(npu_tui.IncompleteProfile, match=r"^1 file could not be loaded whole \(.*communication\.json\)"):
        p = npu_tui.open(path, cache=False)
    assert repr(p).endswith("incomplete: 1 not loaded whole>") and p.not_whole == [error["file"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "incomplete" not in repr(npu_tui.open(ROOT.parent / "shared/real/msinsight-pt-2rank-levels/text/level1"))
    # The intact rank is complete, its skipped-by-design notes do not count.
    code, out, _ = _report(capsys, ROOT.parent / "shared/real/msinsight-pt-2rank-levels/text/level1", "--format", "json")
    assert code == 0 and json.loads(out)["complete"] is True


def test_a_rank_not_loaded_whole_is_left_out_of_the_comparisons(real, rank1_cut, capsys):
    """Whole, the two ranks' exposed comm differs by 5.7% and the others wait for rank 1. With
    rank 1's kernel_details.csv cut mid-row, its steps' account lost an unknown part: it is not
    compared, so nothing is said across ranks, in the report or in the Ranks pane."""
    from npu_tui.session import open_session
    from npu_tui.tui.panes.memory import memory_plots
    from npu_tui.tui.panes.ranks import rank_plots

    whole = open_session(real / "msinsight-pt-2rank-levels/text/level1").report
    assert [f["rank"] for f in whole["findings"] if f["rule"] == "rank_comm_imbalance"] == [1]
    for cache in (True, False):  # the cached analysis is the one made with the health
        for _ in range(2):
            s = open_session(rank1_cut, cache=cache)
            assert not s.report["complete"]
            assert [(r["rank"], r["apart"]) for r in s.report["cluster"]["ranks"]] == [(0, None), (1, "not loaded whole")]
            assert s.report["cluster"]["spread"] == []
            assert [f for f in s.report["findings"] if f["metric"] == "spread"] == []
            assert s.con.execute("SELECT rank, vs_mean, slow, apart FROM rank_times ORDER BY rank").fetchall() == [
                (0, 1.0, False, None), (1, None, False, "not loaded whole")]
            # its comm ops' elapse is communication.json's whole, their exposed time of the kernels
            # left: not known (it read as 40% of the all-reduce hidden behind compute)
            ops = {r["rank"]: r for r in s.report["cluster"]["comm_ops"]}
            assert ops[0]["exposed_ms"] > 0 and ops[1]["elapse_ms"] > 0 and ops[1]["exposed_ms"] is None
            assert "rank 1   " in rank_plots(s.report).plain
            plots = rank_plots(s.report).plain
            assert " ✕ not loaded whole\n" in plots and "✕ not compared with the other ranks" in plots
            # its memory files loaded whole, but its peaks are placed in stages by the kernels it lost
            memory = memory_plots(s.report).plain.splitlines()
            assert memory[1].startswith("rank 0") and "✕" not in memory[1]
            assert memory[2].startswith("rank 1") and memory[2].endswith(" ✕ not loaded whole")
            assert memory[-1] == "✕ not compared with the other ranks (h says why)"
    code, out, _ = _report(capsys, rank1_cut)
    assert code == 2 and "Not compared: rank 1 (not loaded whole); see Data health." in out.splitlines()
    # its step account and stage lines marked where they stand beside rank 0's
    lines = [line for line in out.splitlines() if line.startswith(("rank 0: ", "rank 1: "))]
    assert len(lines) == 4 and [line.endswith(" ✕ not loaded whole") for line in lines] == [False, True] * 2


def test_a_rank_whose_other_file_failed_keeps_its_kernels_figures(real, tmp_path):
    """Rank 1's communication_matrix.json cut in half: the rank is not compared, and says which
    file; its kernels and trace are whole, so its comm ops' exposed time and its exposed comm by
    stage (by its lanes) stand, as they did before it was cut (they were hidden as unknown)."""
    import shutil

    from npu_tui.session import open_session

    level1 = real / "msinsight-pt-2rank-levels/text/level1"
    job = shutil.copytree(level1, tmp_path / "job")
    matrix = job / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/communication_matrix.json"
    matrix.write_bytes(matrix.read_bytes()[: matrix.stat().st_size // 2])
    whole, s = open_session(level1), open_session(job)
    assert not s.report["complete"]
    assert [(r["rank"], r["apart"]) for r in s.report["cluster"]["ranks"]] == [
        (0, None), (1, "communication_matrix.json not loaded whole")]
    for q in ("SELECT rank, op_type, exposed_ms FROM comm_op_times ORDER BY ALL",
              "SELECT rank, stage, exposed_us, source FROM comm_exposure ORDER BY ALL"):
        assert s.con.execute(q).fetchall() == whole.con.execute(q).fetchall()


def test_the_same_profile_gives_the_same_report_byte_for_byte(capsys):
    # Sums of floating-point times depend on the order they are added in, and DuckDB's threads add
    # rows in whatever order they finish: every such sum in the report's views has an order of its
    # own, and so does every list in it. (Before that, the demo's JSON differed in the last digits
    # on each of 6 fresh loads.)
    from npu_tui.demo import PATH
    from npu_tui.session import open_session

    first, *others = [open_session(PATH, cache=False).render("json") for _ in range(4)]
    for text in others:
        at = next((i for i, (x, y) in enumerate(zip(first, text)) if x != y), None)
        assert text == first, f"differs at {at}: {first[at - 80:at + 80]!r} / {text[at - 80:at + 80]!r}"


def test_a_report_query_that_fails_stops_the_others():
    """The report's queries run side by side: one that fails is the report's error, and the
    others are interrupted then, not left to run to the end (nor is Ctrl-C made to wait)."""
    import threading

    import duckdb

    from npu_tui.analysis.report import _side_by_side

    started, outcome = threading.Event(), []

    def slow(cur):
        started.set()
        try:
            cur.execute("SELECT sum(hash(i)) FROM range(10000000000) t(i)").fetchall()
            outcome.append("finished")
        except duckdb.InterruptException:
            outcome.append("interrupted")

    def failing(cur):
        started.wait(10)
        raise ZeroDivisionError("a part that fails")

    with pytest.raises(ZeroDivisionError):
        _side_by_side(duckdb.connect(), {"slow": slow, "failing": failing})
    assert outcome == ["interrupted"]
    assert _side_by_side(duckdb.connect(), {"a": lambda cur: cur.execute("SELECT 1").fetchall(),
                                            "b": lambda cur: 2}) == {"a": [(1,)], "b": 2}


def test_a_report_without_a_path_is_the_demos_as_the_app_opens_it(capsys):
    from npu_tui.demo import PATH as DEMO

    assert main(["report", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_shape(doc)
    assert doc["profile"]["path"] == str(DEMO) and doc["findings"]


def test_exposed_comm_totals_and_per_step_figures_say_which_steps_each_covers(capsys, real):
    """The msprof sample runs a warm-up iteration (41.5 ms of AllReduce): the totals hold it, the
    per-step figures leave it out, so total / steps is not the per-step figure; the table says so."""
    code, out, _ = _report(capsys, real / "mindinsight-msprof-2dev-hccl", "--format", "json")
    comm = json.loads(out)["comm"]
    assert code == 0 and any(abs(c["comm_us"] / c["steps"] - c["comm_us_per_step"]) > 1 for c in comm)
    _, text, _ = _report(capsys, real / "mindinsight-msprof-2dev-hccl")
    table = text[text.index("\nExposed communication\n"):text.index("\nRanks\n")]
    assert "Totals: all of the stage's time, warm-up steps included. Per step: the mean over the\nsteps counted, " \
           "warm-up steps left out" in table
