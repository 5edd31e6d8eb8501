"""communication.json and communication_matrix.json loaders, checked against the files parsed here
with Python's json module."""

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from npu_tui.profile import load_profile
from npu_tui.profile.discover import discover
from npu_tui.profile.health import health
from npu_tui.profile.sources import communication, communication_matrix, step_trace_time
from npu_tui.profile.sources.base import read_head

TEXT = Path("msinsight-pt-2rank-levels") / "text"
CLUSTER_OUT = Path("mstt-advisor-fixtures") / "resource" / "advisor" / "cluster_analysis_output"
SAMPLES = [(lv, r) for lv in ("level1", "level2") for r in (0, 1)]
TOTAL = "Total Op Info"


def output_dir(real: Path, level: str, rank: int) -> Path:
    return real / TEXT / level / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"


@pytest.fixture(scope="module")
def levels(real):
    return {lv: load_profile(real / TEXT / lv) for lv in ("level1", "level2")}


def entries(doc):
    """(step number, kind, key, value) for every op of every step and kind."""
    for step_key, kinds in doc.items():
        for kind, ops in kinds.items():
            for key, value in ops.items():
                yield int(step_key[len("step"):]), kind, key, value


@pytest.mark.parametrize("level, rank", SAMPLES)
def test_comm_ops_equal_file(levels, real, level, rank):
    doc = json.loads((output_dir(real, level, rank) / "communication.json").read_text())
    want = {}
    for step, kind, key, op in entries(doc):
        if key == TOTAL:
            continue
        t = op["Communication Time Info"]
        name, group = key.rsplit("@", 1)
        want[name] = (step, kind, group, Decimal(repr(t["Start Timestamp(us)"])),
                      t["Elapse Time(ms)"], t["Transit Time(ms)"], t["Wait Time(ms)"],
                      t["Synchronization Time(ms)"], t["Idle Time(ms)"])
    got = {r[0]: r[1:] for r in levels[level].con.execute(
        "SELECT op_name, step, kind, group_name, start_us, elapse_ms, transit_ms, wait_ms, sync_ms, "
        "idle_ms FROM comm_ops WHERE rank = ?", [rank]).fetchall()}
    assert len(want) == 4
    assert got == want


@pytest.mark.parametrize("level, rank", SAMPLES)
def test_comm_bandwidth_equals_file(levels, real, level, rank):
    doc = json.loads((output_dir(real, level, rank) / "communication.json").read_text())
    want = sorted(
        (key.rsplit("@", 1)[0], transport, b["Transit Size(MB)"], b["Transit Time(ms)"], b["Bandwidth(GB/s)"])
        for _, _, key, op in entries(doc) if key != TOTAL
        for transport, b in op["Communication Bandwidth Info"].items()
    )
    got = levels[level].con.execute(
        "SELECT op_name, transport, transit_size_mb, transit_time_ms, bandwidth_gbps "
        "FROM comm_bandwidth WHERE rank = ? ORDER BY ALL", [rank]).fetchall()
    assert len(want) == 4 * 5  # four ops, each over RDMA, HCCS, PCIE, SDMA, SIO
    assert got == want


@pytest.mark.parametrize("level, rank", SAMPLES)
def test_comm_matrix_equals_file(levels, real, level, rank):
    doc = json.loads((output_dir(real, level, rank) / "communication_matrix.json").read_text())
    want = [
        (step, kind, key, link.get("Op Name"), int(pair.split("-")[0]), int(pair.split("-")[1]),
         link["Transport Type"], link["Transit Size(MB)"], link["Transit Time(ms)"],
         link["Bandwidth(GB/s)"])
        for step, kind, key, links in entries(doc) for pair, link in links.items()
    ]
    got = levels[level].con.execute(
        "SELECT step, kind, op_key, op_name, src_rank, dst_rank, transport, transit_size_mb, "
        "transit_time_ms, bandwidth_gbps FROM comm_matrix WHERE rank = ?", [rank]).fetchall()
    assert len(want) == 48  # six op groups (top1, middle, bottom1-3, total), eight links each
    assert sorted(got, key=repr) == sorted(want, key=repr)


def test_comm_values_by_hand(levels):
    """Figures read off level1 rank 0's files by eye."""
    con = levels["level1"].con
    assert con.execute(
        "SELECT start_us, elapse_ms, group_name FROM comm_ops "
        "WHERE rank = 0 AND op_name = 'hcom_allReduce__586_0_1'").fetchone() == (
        Decimal("1736408883732241.5"), 79.08952021875, "17522688603477080586")
    assert con.execute(
        "SELECT transit_size_mb, bandwidth_gbps FROM comm_bandwidth "
        "WHERE rank = 0 AND op_name = 'hcom_allReduce__586_0_1' AND transport = 'HCCS'").fetchone() == (
        28.647232000000002, 15.7676)
    assert con.execute(
        "SELECT transport, transit_size_mb, bandwidth_gbps, op_name FROM comm_matrix WHERE rank = 0 "
        "AND op_key = 'allreduce-top1@17522688603477080586' AND src_rank = 0 AND dst_rank = 1"
    ).fetchone() == ("HCCS", 37.781504, 17.5452, "hcom_allReduce__586_2_1")


def test_sniffers_tell_the_files_apart(real):
    files = sorted((real / TEXT).glob("level*/rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/*"))
    files += sorted((real / "mstt-advisor-fixtures").rglob("*.json"))
    files += sorted((real / "mstt-advisor-fixtures").rglob("*.csv"))
    own = {communication: "communication.json", communication_matrix: "communication_matrix.json"}
    for f in files:
        head = read_head(f)
        for module, name in own.items():
            assert module.sniff(head) == (f.name == name), (module.KIND, f)


def test_cluster_outputs_are_not_taken_for_a_ranks_own(real, tmp_path):
    """The peer analyser's cluster outputs sum every rank's figures: no rank loader claims them;
    they load job-wide, into tables of their own (tests/test_cluster_comm.py)."""
    out = real / CLUSTER_OUT
    for f in ("cluster_communication.json", "cluster_step_trace_time.csv"):
        head = read_head(out / f)
        for module in (communication, communication_matrix, step_trace_time):
            assert not module.sniff(head), (module.KIND, f)
    disc = discover(out)
    assert (disc.layout, disc.ranks) == ("cluster_output", [])
    assert set(disc.cluster) == {"cluster_step_trace", "cluster_communication"}
    # Beside a rank folder, as msprof-analyze writes it: the rank's own step_trace is its file's.
    job = tmp_path / "job"
    shutil.copytree(output_dir(real, "level1", 0).parent, job / "rank0_ascend_pt")
    shutil.copytree(out, job / "cluster_analysis_output")
    prof = load_profile(job)
    assert prof.ranks == [0]
    assert prof.con.execute("SELECT rank, step, stage_us FROM step_trace").fetchall() == [(0, 50, 136581.0)]
    assert prof.con.execute("SELECT count(*) FROM cluster_step_trace").fetchone()[0] == 9


OP = ('{"Communication Time Info": {"Start Timestamp(us)": 1700000000000001.5, "Elapse Time(ms)": 2.5,'
      ' "Transit Time(ms)": 1, "Wait Time(ms)": 0.5, "Synchronization Time(ms)": 0.25, "Idle Time(ms)": 1},'
      ' "Communication Bandwidth Info": {"HCCS": {"Transit Size(MB)": 8, "Transit Time(ms)": 1,'
      ' "Bandwidth(GB/s)": 8, "Size Distribution": {}}}}')
GOOD_COMM = ('{"step3": {"p2p": {"hcom_send__1_0@9": ' + OP + '}, "collective": {"hcom_allReduce__1_0@9": '
             + OP + ', "hcom_broadcast__1_0@9": {"Communication Time Info": 5}}}}')
GOOD_MATRIX = ('{"step3": {"p2p": {}, "collective": {"allreduce-total@9": {"0-1": {"Transport Type": "HCCS",'
               ' "Transit Size(MB)": 4, "Transit Time(ms)": 2, "Bandwidth(GB/s)": 2}, "x-y": {"Transport Type":'
               ' "HCCS", "Transit Size(MB)": 4, "Transit Time(ms)": 2, "Bandwidth(GB/s)": 2}}}}}')


def test_hand_made_comm_files(tmp_path):
    """An op whose time info is not an object, a link key that is not "src-dst": counted, skipped."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "communication.json").write_text(GOOD_COMM)
    (out / "communication_matrix.json").write_text(GOOD_MATRIX)
    con = load_profile(tmp_path).con
    assert con.execute("SELECT kind, rows, skipped_rows, note FROM load_log WHERE rank = 0 AND kind <> 'discovery' ORDER BY kind").fetchall() == [
        ("communication", 2, 1, ""), ("communication_matrix", 1, 1, "")]
    assert con.execute("SELECT step, kind, op_name, group_name, start_us, sync_ms FROM comm_ops ORDER BY kind"
                       ).fetchall() == [
        (3, "collective", "hcom_allReduce__1_0", "9", Decimal("1700000000000001.5"), 0.25),
        (3, "p2p", "hcom_send__1_0", "9", Decimal("1700000000000001.5"), 0.25)]
    assert con.execute("SELECT count(*), sum(transit_size_mb) FROM comm_bandwidth").fetchone() == (2, 16.0)
    assert con.execute("SELECT step, op_key, op_name, src_rank, dst_rank, bandwidth_gbps FROM comm_matrix"
                       ).fetchall() == [(3, "allreduce-total@9", None, 0, 1, 2.0)]


@pytest.mark.parametrize("name, good", [("communication.json", GOOD_COMM),
                                        ("communication_matrix.json", GOOD_MATRIX)])
def test_bad_json_is_noted_not_raised(tmp_path, name, good):
    cases = {
        "empty": (b"", "empty file"),
        "truncated": (good.encode()[: len(good) // 2], "truncated or malformed JSON"),
        "array": (b"[1, 2]", "not a JSON object of steps"),
    }
    for case, (data, _) in cases.items():
        out = tmp_path / "job" / f"{case}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        (out / name).write_bytes(data)
    ok = tmp_path / "job" / "ok_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    ok.mkdir(parents=True)
    (ok / name).write_text(good)
    prof = load_profile(tmp_path / "job")
    log = {Path(f).parts[-3].rsplit("_ascend_pt")[0]: (rows, note) for f, rows, note in prof.con.execute(
        "SELECT file, rows, note FROM load_log WHERE rank IS NOT NULL AND kind <> 'discovery'").fetchall()}
    for case, (_, note) in cases.items():
        assert log[case][0] == 0 and log[case][1].startswith(note), (case, log[case])
        assert "\n" not in log[case][1]
    assert log["ok"] == (2 if name == "communication.json" else 1, "")


@pytest.mark.parametrize("name", ["通信组", "乗俓", "型乗"],
                         ids=["gbk", "gbk with a backslash byte", "a backslash byte after bytes that read as UTF-8"])
def test_bytes_of_another_encoding_cost_the_ops_they_are_in(tmp_path, name):
    """A group or op named on a GBK system: the ops holding those bytes (in their key, or anywhere
    within) are dropped and counted, the rest of the file loads. Before, the whole file failed;
    and so it still did where a character's second byte is a backslash (a JSON escape)."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    gbk = name.encode("gbk")
    assert (b"\\" in gbk) == (name != "通信组")
    (out / "communication.json").write_bytes(GOOD_COMM.encode().replace(b"hcom_send", gbk))
    # a second op, its link's transport named in GBK
    (out / "communication_matrix.json").write_bytes(GOOD_MATRIX.encode().replace(
        b'"p2p": {}', b'"p2p": {"send-top@9": {"0-1": {"Transport Type": "' + gbk + b'", "Transit Size(MB)": 4}}}'))
    con = load_profile(tmp_path).con
    dropped = "not UTF-8: 1 op with bytes of another encoding dropped, the rest kept"
    assert con.execute("SELECT kind, rows, skipped_rows, note FROM load_log WHERE rank = 0 AND kind <> 'discovery' ORDER BY kind").fetchall() == [
        ("communication", 1, 2, dropped), ("communication_matrix", 1, 2, dropped)]
    assert con.execute("SELECT kind, op_name FROM comm_ops").fetchall() == [("collective", "hcom_allReduce__1_0")]
    assert con.execute("SELECT count(*), sum(transit_size_mb) FROM comm_bandwidth").fetchone() == (1, 8.0)
    assert con.execute("SELECT op_key, src_rank, dst_rank FROM comm_matrix").fetchall() == [("allreduce-total@9", 0, 1)]
    said = [(i.severity, i.what) for i in health(load_profile(tmp_path)) if "not UTF-8" in i.what]
    assert said == [("warning", f"{name} holds text that is not UTF-8 (1 op with bytes of another encoding "
                                "dropped, the rest kept); 2 rows skipped") for name in ("communication.json", "communication_matrix.json")]


def test_a_file_whose_gbk_name_breaks_its_json_as_utf8_is_read_as_gbk(tmp_path):
    """Read as UTF-8 with each byte that starts no character as the first of a GBK pair, a name's
    bytes may still read as a UTF-8 character with the next (E0 A7 81: 唰 then 乗's first byte),
    and the backslash after them as an escape; such a file, GBK throughout, is read as GBK, its
    names kept. Checked on every pair of a CJK character and one whose second byte is a
    backslash (a run's length told the pairs apart before: a fifth of such names broke it)."""
    from npu_tui.profile.sources import communication as c

    def gbk(ch: str) -> bytes:
        try:
            return ch.encode("gbk")
        except UnicodeEncodeError:
            return b""

    backslash = [chr(i) for i in range(0x4E00, 0x9FA6) if gbk(chr(i))[1:] == b"\\"]
    assert len(backslash) == 116
    broke = 0
    for first in map(chr, range(0x4E00, 0x9FA6, 23)):
        for second in backslash:
            raw = b'{"' + gbk(first) + gbk(second) + b'": {"k": "a\\"b"}, "n": 1}'
            if not c._json(raw.decode("utf-8", errors=c.GBK_PAIRS)):
                broke += 1
                assert c._gbk(raw) is not None
    assert broke > 0  # the pairs alone do not always do
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "communication.json").write_bytes(GOOD_COMM.encode().replace(b"hcom_send", "唰乗".encode("gbk")))
    p = load_profile(tmp_path)
    # As the file in UTF-8 (its broadcast op, not an object, skipped), and said.
    assert p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'communication'").fetchone() == (
        2, 1, "not UTF-8: written in GBK, and read as GBK")
    assert "唰乗" in p.con.execute("SELECT string_agg(op_name, ' ') FROM comm_ops").fetchone()[0]


@pytest.mark.parametrize("value", ["1e29", "NaN", "Infinity", "-5", '"abc"', "null", "true", "false"])
@pytest.mark.parametrize("field", ["Elapse Time(ms)", "Wait Time(ms)", "Transit Size(MB)", "matrix"])
def test_a_figure_that_cannot_be_an_amount_skips_its_row_and_is_counted(tmp_path, capsys, field, value):
    """Garbage where a time or a size belongs: 1e29 MB overflowed the exact sums (a traceback in
    the report), 1e308 summed to inf, NaN was kept as NULL without a count, a negative time kept;
    text or null, typed NULL, was kept as none given (the op's wait or transit left out of the sums);
    a boolean was typed 1 or 0 (an op of 1 ms)."""
    from npu_tui.cli import main

    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    comm, matrix = GOOD_COMM, GOOD_MATRIX
    if field == "matrix":
        matrix = matrix.replace('"Transit Size(MB)": 4', f'"Transit Size(MB)": {value}', 1)
    else:  # the p2p op's
        old = {"Elapse Time(ms)": '"Elapse Time(ms)": 2.5', "Wait Time(ms)": '"Wait Time(ms)": 0.5',
               "Transit Size(MB)": '"Transit Size(MB)": 8'}[field]
        comm = comm.replace(old, old.split(": ")[0] + f": {value}", 1)
    (out / "communication.json").write_text(comm)
    (out / "communication_matrix.json").write_text(matrix)
    con = load_profile(tmp_path).con
    log = dict(con.execute("SELECT kind, skipped_rows FROM load_log WHERE rank = 0 AND kind <> 'discovery'").fetchall())
    # The hand-made files skip one row each already (an op that is not an object, a link "x-y").
    assert log == {"communication": 1 + (field != "matrix"), "communication_matrix": 1 + (field == "matrix")}
    ops = 1 if field in ("Elapse Time(ms)", "Wait Time(ms)") else 2
    assert con.execute("SELECT count(*), sum(elapse_ms) FROM comm_ops").fetchone() == (ops, 2.5 * ops)
    links = 1 if field != "matrix" else 2  # an op skipped takes its transports along
    assert con.execute("SELECT count(*), sum(transit_size_mb) FROM comm_bandwidth").fetchone() == (links, 8.0 * links)
    assert con.execute("SELECT count(*) FROM comm_matrix").fetchone()[0] == (field != "matrix")
    assert main(["report", str(tmp_path), "--format", "json", "--partial"]) == 0
    # The matrix's only other link is not "src-dst": a file whose every row is skipped gave nothing.
    assert json.loads(capsys.readouterr().out)["complete"] is (field != "matrix")


@pytest.mark.parametrize("key, step", [("step3", 3), ("Step3", 3), ("3", 3), ("step 3", 3), ("step", None)])
def test_a_step_key_gives_its_number_as_the_kernels_step_id_does(tmp_path, key, step):
    """"Step3" and "3" read as no step, unsaid: two steps of a file fell into one, NULL."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "communication.json").write_text(GOOD_COMM.replace('"step3"', f'"{key}"'))
    (out / "communication_matrix.json").write_text(GOOD_MATRIX.replace('"step3"', f'"{key}"'))
    con = load_profile(tmp_path).con
    assert con.execute("SELECT DISTINCT step FROM comm_ops").fetchall() == [(step,)]
    assert con.execute("SELECT DISTINCT step FROM comm_matrix").fetchall() == [(step,)]


@pytest.mark.parametrize("group", ["@9", ""])
def test_a_kinds_total_link_counts_alone_with_or_without_its_group(tmp_path, group):
    """The matrix's allreduce-total sums the kind's ops, top1 is a sample of them: counted by the
    total alone. Keys without "@group" were not told a total, and the link summed both."""
    from npu_tui.session import open_session

    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    link = '{"0-1": {"Transport Type": "HCCS", "Transit Size(MB)": %d, "Transit Time(ms)": 2, "Bandwidth(GB/s)": 2}}'
    (out / "communication_matrix.json").write_text(
        '{"step3": {"p2p": {}, "collective": {"allreduce-top1%s": %s, "allreduce-total%s": %s}}}'
        % (group, link % 3, group, link % 8))
    s = open_session(tmp_path, cache=False)
    assert s.con.execute("SELECT src_rank, dst_rank, ops, size_mb FROM comm_links").fetchall() == [(0, 1, 1, 8.0)]


def test_a_step_or_kind_that_is_not_an_object_is_counted(tmp_path):
    """A step given as null and a kind given as text: the ops they were to hold went without a
    count (the rank loaded 28 of 35 ops, nothing skipped). Each is one skipped entry, and named."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (path,) = demo.glob("*3096504*/ASCEND_PROFILER_OUTPUT/communication.json")
    doc = json.loads(path.read_text())
    first, second, *_ = doc
    kept = sum(len(ops) for step in list(doc)[2:] for ops in doc[step].values())
    doc[first] = None
    doc[second]["collective"] = "oops"
    kept += len(doc[second]["p2p"])
    path.write_text(json.dumps(doc))

    p = load_profile(demo)
    ((rows, skipped, note),) = p.con.execute(
        "SELECT rows, skipped_rows, note FROM load_log WHERE rank = 0 AND file LIKE '%communication.json'").fetchall()
    # Each step's "Total Op Info" entry is the file's own sum, not an op.
    totals = sum(1 for step in list(doc)[1:] for kind in (doc[step] or {}).values() if isinstance(kind, dict)
                 for key in kind if key == communication.TOTAL_KEY)
    assert (rows, skipped) == (kept - totals, 2)
    assert "2 step, kind or group entries not an object" in note


@pytest.mark.parametrize("zeros", [3, 4096])
def test_zero_bytes_that_end_a_communication_file_are_not_read(tmp_path, zeros):
    """A crash's unwritten blocks after the JSON failed the file whole; a few zeros (a writer's
    terminator) are not worth a word, a block's are said."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "communication.json").write_bytes(GOOD_COMM.encode() + b"\0" * zeros)
    logged = load_profile(tmp_path).con.execute(
        "SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'communication'").fetchone()
    said = "ends in 4,096 zero bytes where its writer stopped (a crash): not read"
    assert logged == (2, 1, said if zeros == 4096 else "")


def _in_analyze(real, tmp_path, src: Path, total: str) -> Path:
    """``src``'s step of collective ops as msprof --analyze=on writes them, in a PROF folder's
    analyze/: the ops at the top, their sum (``total``) under "Total HCCL Operators"."""
    from test_msprof import msprof_merged

    ops = json.loads(src.read_text())["step50"]["collective"]
    flat = {k: v for k, v in ops.items() if k != total}
    flat["Total HCCL Operators"] = ops[total]
    prof = msprof_merged(real, tmp_path)
    (prof / "analyze").mkdir()
    path = prof / "analyze" / src.name
    path.write_text(json.dumps(flat))
    return path


def test_msprofs_own_communication_analysis_holds_the_ops_at_the_top(real, tmp_path):
    """msprof --analyze=on writes PROF_*/analyze/communication.json with the ops at the top (no
    steps, no kinds) and their sum under "Total HCCL Operators". It was never looked for, and
    opened directly read as "every one of its rows skipped"; now its ops load as a rank's file's do,
    without a step or a kind, and in a PROF folder they are that folder's rank's."""
    src = output_dir(real, "level1", 0) / "communication.json"
    path = _in_analyze(real, tmp_path, src, TOTAL)
    q = ("SELECT op_name, group_name, start_us, elapse_ms, transit_ms, wait_ms, sync_ms, idle_ms FROM comm_ops "
         "ORDER BY ALL")
    want = load_profile(src).con.execute(q).fetchall()
    assert len(want) == 4
    for opened in (path, tmp_path):
        p = load_profile(opened)
        assert p.con.execute(q).fetchall() == want
        assert p.con.execute("SELECT DISTINCT rank, step, kind FROM comm_ops").fetchall() == [(p.ranks[0], None, None)]
        assert p.con.execute("SELECT count(*) FROM comm_bandwidth").fetchone() == \
            load_profile(src).con.execute("SELECT count(*) FROM comm_bandwidth").fetchone()
        assert [i for i in health(p) if i.file.endswith("communication.json")] == []
    assert p.ranks == [3]


def test_msprofs_own_matrix_holds_the_ops_at_the_top(real, tmp_path):
    """msprof --analyze=on writes PROF_*/analyze/communication_matrix.json as its communication.json:
    ops at the top ("<op>@<group>": links), no steps or kinds, and their sum per link under "Total
    HCCL Operators". Read as a rank's file, every link was skipped and the report failed (exit 2);
    now each op's links load without a step or a kind, and the sum is left out."""
    src = output_dir(real, "level1", 0) / "communication_matrix.json"
    ops = json.loads(src.read_text())["step50"]["collective"]
    total = next(k for k in ops if "-total@" in k)
    path = _in_analyze(real, tmp_path, src, total)
    flat = json.loads(path.read_text())
    assert communication_matrix.sniff(read_head(path))
    q = "SELECT op_key, src_rank, dst_rank, transport, transit_size_mb, transit_time_ms FROM comm_matrix ORDER BY ALL"
    want = load_profile(src).con.execute(q.replace("FROM comm_matrix", f"FROM comm_matrix WHERE op_key <> '{total}'"))
    want = want.fetchall()
    assert len(want) == sum(len(links) for links in flat.values()) - len(ops[total])
    for opened in (path, tmp_path):
        p = load_profile(opened)
        assert p.con.execute(q).fetchall() == want
        assert p.con.execute("SELECT DISTINCT step, kind FROM comm_matrix").fetchall() == [(None, None)]
        assert p.con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'communication_matrix'"
                             ).fetchall() == [(len(want), 0)]
        assert [i for i in health(p) if i.severity == "error" or i.lost] == []


def test_torch_npu_5s_matrix_of_every_op_and_their_total(real, tmp_path):
    """torch_npu 5.0 (RC3 and 5.0.0) writes communication_matrix.json with every op under its own
    name and "Total Op Info", their sum per link (its communication_parser): the sum had been added
    to the ops, every link's MB and ms twice. Here the real file's samples, each op of the step
    once, are written that way: the links are the real file's."""
    src = output_dir(real, "level1", 0)
    doc = json.loads((src / "communication_matrix.json").read_text())
    flat = {}
    for step, kinds in doc.items():
        flat[step] = {}
        for kind, ops in kinds.items():
            each = {}
            for key, links in ops.items():
                for link, v in links.items():
                    if "Op Name" in v:
                        each.setdefault(f"{v['Op Name']}@{key.rsplit('@', 1)[1]}", {})[link] = {
                            k: x for k, x in v.items() if k != "Op Name"}
            total = {}
            for links in each.values():
                for link, v in links.items():
                    t = total.setdefault(link, {"Transport Type": v["Transport Type"], "Transit Size(MB)": 0,
                                                "Transit Time(ms)": 0})
                    t["Transit Size(MB)"] += v["Transit Size(MB)"]
                    t["Transit Time(ms)"] += v["Transit Time(ms)"]
            flat[step][kind] = {**each, **({"Total Op Info": total} if total else {})}
    assert sum(len(k) for kinds in flat.values() for k in kinds.values()) == 5  # 4 ops and the total
    out = tmp_path / "ASCEND_PROFILER_OUTPUT"
    out.mkdir()
    shutil.copy(src / "kernel_details.csv", out)
    (out / "communication_matrix.json").write_text(json.dumps(flat))
    from npu_tui.session import open_session

    q = ("SELECT src_local, dst_local, transport, round(size_mb, 4), round(time_ms, 6) FROM comm_links "
         "WHERE src_local <> dst_local ORDER BY ALL")
    got = open_session(tmp_path, cache=False).con.execute(q).fetchall()
    want = open_session(src.parent, cache=False).con.execute(q).fetchall()
    assert got == want and len(got) == 7


def test_mindspores_matrix_names_its_ops_op_name(real, tmp_path):
    """MindSpore's communication_matrix.json names a link's op "op_name" (its
    ascend_communication_viewer), torch_npu's "Op Name": every link's op had been empty."""
    src = output_dir(real, "level1", 0)
    out = tmp_path / "ASCEND_PROFILER_OUTPUT"
    out.mkdir()
    text = (src / "communication_matrix.json").read_text()
    assert text.count('"Op Name"') > 10
    (out / "communication_matrix.json").write_text(text.replace('"Op Name"', '"op_name"'))
    q = "SELECT op_key, src_rank, dst_rank, op_name FROM comm_matrix ORDER BY ALL"
    got = load_profile(out).con.execute(q).fetchall()
    assert got == load_profile(src / "communication_matrix.json").con.execute(q).fetchall()
    assert sum(1 for *_, name in got if name) > 10



def test_a_key_given_twice_costs_its_second_value_not_the_object_around_it(real, tmp_path):
    """DuckDB makes no MAP of an object that gives a key twice: a second step whose kind held one op
    twice vanished whole, unsaid (4 ops loaded of 8, nothing skipped); in a one-step file, every
    op, said as "no communication ops"; a matrix op with a link twice lost its links, counted as 1.
    Each key is read once, with its first value, and the other is counted."""
    level = shutil.copytree(real / TEXT / "level1", tmp_path / "level1")
    out = level / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    doc = json.loads((out / "communication.json").read_text())
    (step, kinds), = doc.items()
    key = next(k for k in kinds["collective"] if k != TOTAL)
    again = json.dumps(kinds)
    at = again.index(json.dumps(key))
    twice = again[:at] + f"{json.dumps(key)}: {json.dumps(kinds['collective'][key])}, " + again[at:]
    (out / "communication.json").write_text(json.dumps(doc)[:-1] + f', "step51": {twice}}}')
    matrix = json.loads((out / "communication_matrix.json").read_text())
    links = next(ops[k] for ops in matrix[step].values() for k in ops if "total" not in k and len(ops[k]) > 1)
    link = next(iter(links))
    text = json.dumps(matrix)
    first = text.index(json.dumps(link))  # that link's first appearance is in the op picked
    (out / "communication_matrix.json").write_text(text[:first] + f"{json.dumps(link)}: {json.dumps(links[link])}, "
                                                   + text[first:])
    p = load_profile(level, cache=False)
    ops = len(kinds["collective"]) - 1 + len(kinds.get("p2p", {}))
    assert p.con.execute("SELECT step, count(*) FROM comm_ops WHERE rank = 0 GROUP BY step ORDER BY step").fetchall() == [
        (int(step[4:]), ops), (51, ops)]
    logged = dict(p.con.execute("SELECT kind, (rows, skipped_rows, note) FROM load_log WHERE rank = 0 "
                                "AND kind LIKE 'communication%'").fetchall())
    said = "1 key given again in the same object: the first value of each read, the other not loaded"
    assert logged["communication"] == (2 * ops, 1, said)
    whole = sum(len(v) for ops in matrix.values() for kind in ops.values() for v in kind.values())
    assert logged["communication_matrix"][1:] == (len(links) + 1, "")  # the op's links, the second copy among them
    assert logged["communication_matrix"][0] == whole - len(links)
    assert [i.severity for i in health(p) if i.rank == 0] == ["warning", "warning"]


@pytest.mark.parametrize("text", ['{"step50": {"p2p": {}, "collective": {}}}', "{}"])
def test_a_whole_communication_file_without_ops_is_a_warning_not_a_failure(real, tmp_path, capsys, text):
    """A file read whole that holds no op (a rank that ran none in its profiled steps) had made the
    run incomplete, exit 2, as a file that failed to load."""
    from npu_tui.cli import main

    level = shutil.copytree(real / TEXT / "level1", tmp_path / "level1")
    (level / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text(text)
    assert main(["report", str(level), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (item,) = [h for h in doc["health"] if h["file"].endswith("communication.json")]
    assert doc["complete"] and item["severity"] == "warning" and item["rank"] == 0
    assert item["what"] == f"communication.json: {communication.NONE_HELD} ops"


def test_a_ranks_ops_in_another_runs_cluster_file_do_not_stand_in_for_its_own(real, tmp_path, capsys):
    """A rank without its communication.json took its ops from msprof-analyze's cluster file of
    another job copied beside it (a broadcast the rank never ran, in its comm table and findings),
    while the report said its comm figures were missing. Ops of a loaded rank that ran more than a
    minute from its own kernels are another run's: left out, and said."""
    from npu_tui.cli import main

    level = shutil.copytree(real / TEXT / "level1", tmp_path / "level1")
    (level / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication.json").unlink()
    shutil.copytree(real / CLUSTER_OUT, level / "cluster_analysis_output")
    p = load_profile(level, cache=False)
    # (rank 1's stand for nothing: it has its own file)
    assert p.con.execute("SELECT count(*) FROM cluster_comm_ops WHERE rank = 0").fetchone() == (0,)
    (note,) = p.con.execute("SELECT note FROM load_log WHERE kind = 'cluster_communication'").fetchone()
    assert note.startswith("the ops of rank 0 run ") and note.endswith("from its own kernels: another run's, not loaded")
    assert " days or more from" in note  # (over a year: said in days, not as 689,238.3 min)
    main(["report", str(level), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    rank0 = {o["op_type"] for o in doc["cluster"]["comm_ops"] if o["rank"] == 0}
    assert rank0 and all(o["source"] == "kernels" for o in doc["cluster"]["comm_ops"] if o["rank"] == 0)
    assert [h["severity"] for h in doc["health"] if h["file"].endswith("cluster_communication.json")] == ["warning"]


def test_a_transport_given_twice_in_an_op_costs_its_transports_counted(tmp_path):
    """An op's bandwidth info with HCCS twice is no map: its transports were lost unsaid."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    hccs = '"HCCS": {"Transit Size(MB)": 8, "Transit Time(ms)": 1, "Bandwidth(GB/s)": 8, "Size Distribution": {}}'
    (out / "communication.json").write_text(GOOD_COMM.replace(hccs, f"{hccs}, {hccs}", 1))
    con = load_profile(tmp_path).con
    # (the hand-made file skips one op already: its time info is not an object)
    assert con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'communication'").fetchone() == (2, 1 + 2)
    assert con.execute("SELECT count(*) FROM comm_bandwidth").fetchone() == (1,)
