"""trace_view.json: alone (bare trace) and beside kernel_details.csv, on the real torch_npu samples.

Expected values come from the profiler's own files (kernel_details.csv, step_trace_time.csv) or from
parsing the JSON with Python's json module here, never from the loader.
"""

import csv
import gzip
import json
import shutil
import zlib
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.discover import discover
from npu_tui.profile.errors import MalformedTrace
from npu_tui.profile.health import health
from npu_tui.profile.schema import connect
from npu_tui.profile.sources import chrome_trace, trace_view
from npu_tui.profile.sources.base import read_head
from npu_tui.profile.sources.chrome_trace import stage_trace
from duckdb_support import BEFORE_2

LEVELS = "msinsight-pt-2rank-levels/text"
OUT = "ASCEND_PROFILER_OUTPUT"
ADVISOR = "mstt-advisor-fixtures/ut/advisor/timeline_advice/trace_view.json"


def ns(us) -> int:
    """µs text -> integer ns, rounding half up (exact decimal arithmetic)."""
    return int((Decimal(str(us).strip()) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def events(path: Path):
    return json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)


def process_names(evs):
    return {e["pid"]: e["args"]["name"] for e in evs if e.get("ph") == "M" and e["name"] == "process_name"}


def bare(tmp_path: Path, src: Path) -> Path:
    """A folder holding only a copy of ``src`` as trace_view.json (what export_chrome_trace leaves)."""
    d = tmp_path / "bare"
    d.mkdir()
    shutil.copy(src, d / "trace_view.json")
    return d


def csv_rows(path: Path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
@pytest.mark.parametrize("rank", [0, 1])
def test_bare_trace_gives_the_kernels_of_kernel_details(real, tmp_path, level, rank):
    out = real / LEVELS / level / f"rank{rank}_ascend_pt" / OUT
    kd = csv_rows(out / "kernel_details.csv")
    p = load_profile(bare(tmp_path, out / "trace_view.json"))
    assert p.layout == "output" and p.formats == ["trace_view"]
    got = p.con.execute("SELECT name, start_ns, dur_ns, step FROM kernels WHERE source = 'trace_view'").fetchall()
    assert len(got) == len(kd) == 191

    # The same device tasks: the trace events that kernel_details names, with their exact times.
    names = {r["Name"] for r in kd}
    evs = events(out / "trace_view.json")
    pn = process_names(evs)
    want = Counter((e["name"], ns(e["ts"]), ns(e["dur"])) for e in evs
                   if e.get("ph") == "X" and pn[e["pid"]] in ("Ascend Hardware", "HCCL") and e["name"] in names)
    assert Counter((n, s, d) for n, s, d, _ in got) == want

    # kernel_details.csv rounds the same times through binary floats (75.0015 -> 75.001) and truncates
    # the comm ops' starts, so it may differ by 1 ns, never more.
    assert Counter(n for n, *_ in got) == Counter(r["Name"] for r in kd)
    by_name = {}
    for n, s, d, _ in sorted(got):
        by_name.setdefault(n, []).append((s, d))
    for r in sorted(kd, key=lambda r: (r["Name"], ns(r["Start Time(us)"]))):
        s, d = by_name[r["Name"]].pop(0)
        assert abs(s - ns(r["Start Time(us)"])) <= 1 and abs(d - ns(r["Duration(us)"])) <= 1, r["Name"]
    assert Counter(st for *_, st in got) == Counter(int(r["Step Id"]) for r in kd)


def test_a_trace_view_saved_again_as_an_object_with_numbers_for_ts_is_still_torch_npus(real, tmp_path):
    """A viewer that saves the trace again writes {"traceEvents": [...]} with numbers for ts: the
    head then showed only torch's host events, and under its own name the file was read as a
    Kineto CPU run (80 host ops as kernels, ProfilerStep#50 most of them, no overlap lanes)."""
    src = real / LEVELS / "level1/rank0_ascend_pt" / OUT / "trace_view.json"
    evs = json.loads(src.read_text(encoding="utf-8"))
    for e in evs:
        if isinstance(e.get("ts"), str):
            e["ts"] = float(e["ts"])
    d = tmp_path / "saved"
    d.mkdir()
    (d / "trace_view.json").write_text(json.dumps({"traceEvents": evs, "displayTimeUnit": "ms"}))
    got, want = load_profile(d), load_profile(bare(tmp_path, src))
    assert got.formats == want.formats == ["trace_view"]
    for q in ("SELECT count(*), sum(dur_ns), count(DISTINCT core) FROM kernels", "SELECT count(*) FROM overlap_lanes",
              "SELECT count(*) FROM host_events", "SELECT count(*) FROM flows"):
        assert got.con.execute(q).fetchall() == want.con.execute(q).fetchall()
    assert got.con.execute("SELECT count(*) FROM kernels").fetchone()[0] > 100


def test_a_comm_process_named_communication_gives_the_same_kernels(real, tmp_path):
    """Newer CANN names the collective ops' process Communication (torch_npu passes msprof's
    timeline through): its hcom_* ops are kernels as under HCCL. They had been dropped without a
    word: 106 ms of comm gone, and the findings blamed an idle device."""
    out = real / LEVELS / "level1/rank0_ascend_pt" / OUT
    data = (out / "trace_view.json").read_bytes()
    assert data.count(b'"args": {"name": "HCCL"}') == 1  # the process_name metadata
    d = tmp_path / "renamed"
    d.mkdir()
    (d / "trace_view.json").write_bytes(data.replace(b'"args": {"name": "HCCL"}', b'"args": {"name": "Communication"}'))
    q = "SELECT name, start_ns, dur_ns, core, stream_id, step FROM kernels ORDER BY ALL"
    got = load_profile(d).con.execute(q).fetchall()
    assert got == load_profile(bare(tmp_path, out / "trace_view.json")).con.execute(q).fetchall()
    assert [k[3] for k in got].count("HCCL") == 4


def test_torch_npu_5s_trace_of_msprofs_timeline_first(real, tmp_path):
    """torch_npu 5.0 wrote trace_view.json as msprof's timeline with its own events after it (its
    trace_view_parser extends the list): the head reads as msprof's, and the file had loaded as an
    msprof timeline, without its flows (425 here) and its ProfilerStep steps, nothing said. Its
    end shows torch's events: it is a trace_view."""
    out = real / LEVELS / "level1/rank0_ascend_pt" / OUT
    evs = json.loads((out / "trace_view.json").read_text())
    names = process_names(evs)
    torch_pids = {pid for pid, name in names.items() if name == "Python"}
    torch = [e.get("pid") in torch_pids or e.get("cat") in ("async_npu", "async_task_queue", "fwdbwd") for e in evs]
    assert 1000 < sum(torch) < len(evs)
    d = tmp_path / "v50"
    d.mkdir()
    (d / "trace_view.json").write_text(json.dumps([e for e, t in zip(evs, torch) if not t] +
                                                  [e for e, t in zip(evs, torch) if t]))
    assert discover(d / "trace_view.json").ranks[0].files.keys() == {"trace_view"}
    p, want = load_profile(d), load_profile(bare(tmp_path, out / "trace_view.json"))
    assert p.formats == ["trace_view"]
    for q in ("SELECT count(*) FROM flows", "SELECT step, count(*) FROM kernels GROUP BY step",
              "SELECT count(*) FROM host_events", "SELECT lane, count(*) FROM overlap_lanes GROUP BY lane ORDER BY lane"):
        assert p.con.execute(q).fetchall() == want.con.execute(q).fetchall(), q
    assert p.con.execute("SELECT count(*) FROM flows").fetchone()[0] == 425


@pytest.mark.parametrize("level,rank", [("level1", 0), ("level1", 1), ("level0", 0)])
def test_overlap_lanes_sum_to_step_trace_time(real, tmp_path, level, rank):
    out = real / LEVELS / level / f"rank{rank}_ascend_pt" / OUT
    (step,) = csv_rows(out / "step_trace_time.csv")
    p = load_profile(bare(tmp_path, out / "trace_view.json"))
    lanes = dict(p.con.execute("SELECT lane, sum(dur_ns) / 1000 FROM overlap_lanes GROUP BY lane").fetchall())
    for lane in ("Computing", "Communication(Not Overlapped)", "Communication", "Free"):
        assert lanes[lane] == pytest.approx(float(step[lane]), rel=0.005), lane


def test_rank_folder_keeps_kernel_details_kernels(real):
    rank_dir = real / LEVELS / "level1/rank0_ascend_pt"
    p = load_profile(rank_dir)
    sources = dict(p.con.execute("SELECT source, count(*) FROM kernels GROUP BY source").fetchall())
    assert sources == {"kernel_details": 191}
    evs = events(rank_dir / OUT / "trace_view.json")
    pn = process_names(evs)
    lanes = sum(1 for e in evs if e.get("ph") == "X" and pn[e["pid"]] == "Overlap Analysis")
    assert p.con.execute("SELECT count(*) FROM overlap_lanes").fetchone()[0] == lanes
    notes = p.con.execute("SELECT note FROM load_log WHERE kind = 'trace_view'").fetchall()
    assert notes == [("",)]


def test_advisor_fixture_counts(real, tmp_path):
    src = real / ADVISOR
    evs = events(src)
    assert len(evs) == 3670
    pn = process_names(evs)
    labels = {e["pid"]: e["args"]["labels"] for e in evs if e.get("ph") == "M" and e["name"] == "process_labels"}
    host = {pid for pid, lab in labels.items() if lab == "CPU"}
    want_host = Counter(e.get("cat") or pn[e["pid"]] for e in evs
                        if e["pid"] in host and e.get("ph") in ("X", "i", "I"))
    want_lanes = Counter(e["name"] for e in evs if e.get("ph") == "X" and pn[e["pid"]] == "Overlap Analysis")
    starts = {(e["cat"], str(e["id"])) for e in evs if e.get("ph") == "s"}
    want_flows = Counter(e["cat"] for e in evs if e.get("ph") == "f" and e["pid"] not in host
                         and (e["cat"], str(e["id"])) in starts)
    # Here every operator the framework launched carries an async_npu flow; the two tasks without one
    # are the runtime's MEMCPY_ASYNC.
    launched = {(e["pid"], e["tid"], e["ts"]) for e in evs if e.get("ph") == "f" and e["cat"] == "async_npu"}
    hw = [e for e in evs if e.get("ph") == "X" and pn[e["pid"]] == "Ascend Hardware"]
    want_kernels = sorted((e["name"], ns(e["ts"])) for e in hw if (e["pid"], e["tid"], e["ts"]) in launched)

    p = load_profile(bare(tmp_path, src))
    q = p.con.execute
    assert sorted(q("SELECT name, start_ns FROM kernels").fetchall()) == want_kernels
    assert len(want_kernels) == len(hw) - 2
    # This older file writes Task Type "Other" for every operator: no core then, AI_CPU kept.
    want_cores = Counter(None if e["args"]["Task Type"] == "Other" else e["args"]["Task Type"]
                         for e in hw if (e["pid"], e["tid"], e["ts"]) in launched)
    assert dict(q("SELECT core, count(*) FROM kernels GROUP BY core").fetchall()) == want_cores
    assert dict(q("SELECT cat, count(*) FROM host_events GROUP BY cat").fetchall()) == want_host
    assert dict(q("SELECT lane, count(*) FROM overlap_lanes GROUP BY lane").fetchall()) == want_lanes
    assert dict(q("SELECT cat, count(*) FROM flows GROUP BY cat").fetchall()) == want_flows
    (step,) = [e for e in evs if e["name"].startswith("ProfilerStep#")]
    assert q("SELECT DISTINCT step FROM kernels").fetchall() == [(int(step["name"].split("#")[1]),)]


def test_single_file_path_loads_as_trace_view(real):
    p = load_profile(real / LEVELS / "level1/rank1_ascend_pt" / OUT / "trace_view.json")
    assert p.layout == "file" and p.formats == ["trace_view"]
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == 191


def test_sniff_tells_trace_view_from_msprof_and_kineto(real):
    assert trace_view.sniff(read_head(real / LEVELS / "level0/rank0_ascend_pt" / OUT / "trace_view.json"))
    assert trace_view.sniff(read_head(real / ADVISOR))
    msprof = next((real / "mindinsight-msprof-2dev-hccl").glob("PROF_*/device_0/timeline/msprof_0_2_1.json"))
    assert not trace_view.sniff(read_head(msprof))
    assert not trace_view.sniff(read_head(real / "kineto/hta-sampled-2rank/sampled_rank-0.json.gz"))


def test_numbers_and_strings_give_exact_ns_and_npu_label_gives_device(tmp_path):
    f = tmp_path / "trace_view.json"
    f.write_text(json.dumps([
        {"ph": "M", "name": "process_name", "pid": 18446744073709551615, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_labels", "pid": 18446744073709551615, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_labels", "pid": 7, "tid": 0, "args": {"labels": "NPU 4"}},
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 18446744073709551615, "tid": 1,
         "ts": "1736408883704643.212\t", "dur": 2},
    ])[:-1] + ', {"ph": "X", "name": "aclnnMm_MatMulCommon_MatMulV2", "pid": 7, "tid": 2, '
              '"ts": 1736408883704650.213, "dur": 75.0015, "args": {"Task Type": "AI_CORE"}}]')
    p = load_profile(f)
    q = p.con.execute
    assert q("SELECT start_ns, tid FROM host_events").fetchall() == [(1736408883704643212, "1")]
    (*kernel, start_ns, dur_ns), = q("SELECT name, type, core, start_ns, dur_ns FROM kernels").fetchall()
    assert kernel == ["aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE"] and dur_ns == 75002
    # DuckDB before 2.0 reads a JSON number through a double: 2^-3 µs is half its step at this clock.
    assert abs(start_ns - 1736408883704650213) <= (125 if BEFORE_2 else 0)
    assert q("SELECT device_id FROM ranks").fetchall() == [(4,)]


def complete_events(prefix: bytes) -> int:
    """Events of a cut JSON array that Python's decoder can read whole, one by one."""
    text = prefix.decode("utf-8", errors="ignore")
    dec = json.JSONDecoder()
    i = text.index("[") + 1
    n = 0
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        try:
            _, i = dec.raw_decode(text, i)
        except ValueError:
            return n
        n += 1


@pytest.mark.parametrize("gz", [False, True])
def test_cut_file_keeps_complete_events(real, tmp_path, gz):
    data = (real / ADVISOR).read_bytes()
    raw = gzip.compress(data) if gz else data
    cut = raw[: int(len(raw) * 0.6)]
    f = tmp_path / ("trace_view.json.gz" if gz else "trace_view.json")
    f.write_bytes(cut)
    # What the cut stream still holds (a cut gzip stream decompresses up to where it stops).
    prefix = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut) if gz else cut
    staged = stage_trace(connect(), f, "stg_cut")
    assert staged.events == complete_events(prefix) > 0
    assert staged.lost == 1 and "cut short" in staged.note


def test_a_cut_just_after_an_event_keeps_it(real, tmp_path):
    """Only the list's ']' missing, or only the object's '}': no event is cut in two, so none is
    lost; both are files that stop early (keys may follow the events, as Kineto writes them)."""
    data = (real / ADVISOR).read_bytes().rstrip()
    assert data.endswith(b"]")
    f = tmp_path / "trace_view.json"
    # The ']' alone missing, or the ', ' before the next event written and nothing after it.
    for end in (b"", b", ", b",\n"):
        f.write_bytes(data[:-1].rstrip() + end)
        staged = stage_trace(connect(), f, "stg_open")
        assert staged.events == len(events(real / ADVISOR)) and staged.lost == 0
        assert staged.note.startswith("file ends after a complete event")
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_bytes(b'{"traceEvents": ' + data + b', "traceName": "x"')  # the last '}' missing
    staged = stage_trace(connect(), wrapped, "stg_object")
    assert staged.events == len(events(real / ADVISOR)) and staged.lost == 0 and not staged.cut
    assert staged.note.startswith("file ends after its events, cut in what follows them: every event kept")


@pytest.mark.parametrize("cut", ["]", "],", '"world_size"', "}"])
def test_a_kineto_trace_cut_after_its_events_keeps_them_and_says_what_may_be_missing(tmp_path, cut):
    """Kineto writes keys after the events (traceName; distributedInfo, where a tool rewrote it):
    cut just after the events' ']', after its ',', inside those keys or before the last '}', the
    trace had read as whole (a clean report over a lost distributedInfo: rank 0 of one, not rank 5
    of 8), or as cut short with its last, complete event dropped. Every event is kept, the keys read
    up to the cut, and the run said incomplete."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
           for i in range(4)]
    doc = json.dumps({"schemaVersion": 1, "traceEvents": evs,
                      "distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8}, "traceName": "t"})
    at = doc.rindex(cut) + len(cut) if cut != "]" else doc.index("], ") + 1
    d = tmp_path / "run"
    d.mkdir()
    (d / "w.pt.trace.json").write_text(doc)
    whole = load_profile(d, cache=False).con.execute("SELECT rows FROM load_log").fetchone()[0]
    (d / "w.pt.trace.json").write_text(doc[:at] if cut != "}" else doc[:-1])
    p = load_profile(d, cache=False)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert (rows, skipped) == (whole, 0) and note.startswith("file ends after its events, cut in what follows them")
    assert p.con.execute("SELECT count(*) FROM host_events WHERE name LIKE 'aten::op%'").fetchone()[0] == 4
    assert p.ranks == ([5] if cut in ('"world_size"', "}") else [0])  # distributedInfo as far as it was read
    (item,) = [i for i in health(p) if i.severity == "error"]
    assert "every event kept" in item.what


def test_cut_trace_loads_with_a_note(real, tmp_path):
    data = (real / ADVISOR).read_bytes()
    d = tmp_path / "cut"
    d.mkdir()
    (d / "trace_view.json").write_bytes(data[: len(data) // 2])
    p = load_profile(d)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert rows > 0 and skipped == 1 and note.startswith("file cut short")


@pytest.mark.parametrize("shape", ["array", "object"])
def test_a_last_event_that_does_not_parse_is_damage_not_a_cut(real, tmp_path, shape):
    """The list closes after an event with a bad value in it: the file is whole, that event alone is
    dropped as malformed (a warning, as anywhere else in the list), not a cut that lost what came
    after. A file whose only event is bad says that none parse, not that its list is empty."""
    data = (real / ADVISOR).read_bytes().rstrip()
    whole = len(events(real / ADVISOR))
    bad = b'{"ph": "X", "name": "bad [1]" "ts": 12, "args": {"s": [[1, 2]]}}'  # no ',' after the name
    body = data[:-1].rstrip() + b",\n" + bad + b"\n]"
    d = tmp_path / "r"
    d.mkdir()
    f = d / "trace_view.json"
    f.write_bytes(body if shape == "array" else b'{"traceEvents": ' + body + b', "deviceProperties": [{"id": 0}]}')
    p = load_profile(d)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert skipped == 1 and "cut" not in note
    assert note == "malformed JSON: 1 event(s) that do not parse dropped, the rest kept"
    assert p.con.execute("SELECT count(*) FROM host_events WHERE name = 'bad [1]'").fetchone()[0] == 0
    assert rows > 0 and whole > 1

    f.write_bytes(b"[" + bad + b"]")
    with pytest.raises(ProfileError, match=r"no event could be read \(1 of 1 do not parse\)"):
        load_profile(d)
    f.write_bytes(b'[{"cat": "parses, no ph"}, ' + bad + b"]")  # one that parses is not counted with it
    with pytest.raises(ProfileError, match=r"no event could be read \(1 of 2 do not parse\)"):
        load_profile(d)


def test_event_boundaries_inside_the_last_event_do_not_decide_where_the_list_ends(tmp_path):
    """'}, {' inside an event (a list of objects in its args, JSON in a string) looks like the
    boundary between two events: read event by event, a valid trace with many of them in its last
    event is whole, a damaged last event with them is damaged, and a file cut just after a ']' of
    such a list is cut."""
    head = [json.dumps({"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}) for i in range(3)]
    event = '{"ph": "X", "name": "last", "pid": 1, "tid": 1, "ts": 50, "dur": %s, "args": %s}'
    objects = "[" + ", ".join('{"a": %d}' % i for i in range(12)) + "]"
    f = tmp_path / "trace_view.json"

    def staged(text):
        f.write_text(text)
        try:
            return stage_trace(connect(), f, "stg")
        except MalformedTrace:
            return stage_trace(connect(), f, "stg", salvage=True)

    for args in ('{"l": %s}' % objects, '{"cfg": %s}' % json.dumps(objects)):
        got = staged("[" + ",\n".join(head + [event % (1, args)]) + "]")
        assert (got.events, got.lost, got.cut, got.note) == (4, 0, False, "")
    damaged = staged("[" + ",\n".join(head + [event % ("x", '{"l": %s}' % objects)]) + "]")
    assert damaged.events == 3 and not damaged.cut and damaged.note.startswith("malformed JSON")
    whole = "[" + ",\n".join(head + [event % (1, '{"l": %s}' % objects)])
    cut = staged(whole[:whole.rindex("]") + 1])  # just after the list of objects
    assert cut.cut and cut.events == 3


def plain_event_pair(evs) -> int:
    """Where in the middle of ``evs`` a complete event without args ("ph" last, as torch_npu writes
    it) is followed by another."""
    return next(i for i in range(len(evs) // 2, len(evs) - 1)
                if evs[i].get("ph") == "X" and "args" not in evs[i] and evs[i + 1].get("ph") == "X")


@pytest.mark.parametrize("damage, skipped, said", [
    # the damaged event's '}' lost: the intact event after it shares its line, and is read
    (lambda e: e[:-1], 1, "malformed JSON: 1 event(s) that do not parse dropped, the rest kept"),
    # cut inside a string before its "ph" (torch_npu writes it last), the file going on after it
    (lambda e: e[:e.index('"ts"') + 8], 1, "malformed JSON: 1 event(s) that do not parse dropped, the rest kept"),
    # text that is no event between two whole ones: nothing lost
    (lambda e: e + ", @@@@garbage@@@@", 0, "malformed JSON: text that is no event dropped from among the "
     "events, every event kept"),
])
@pytest.mark.parametrize("lines_checked", [False, True])
def test_a_damaged_event_amid_the_trace_loses_itself_alone_and_is_counted(real, tmp_path, monkeypatch, damage,
                                                                          skipped, said, lines_checked):
    """One event damaged in the middle of the list: the events around it load, the count is of
    what was lost (a damaged event had taken the whole event after it along, counted as one). The
    same where salvage checks its lines apart, as it does on DuckDB before 2.0 (which reads a
    line's first value and passes over the rest)."""
    if lines_checked:
        monkeypatch.setattr(chrome_trace, "LINE_TAIL_PASSED_OVER", True)
    evs = json.loads((real / ADVISOR).read_text())
    at = plain_event_pair(evs)
    texts = [json.dumps(e) for e in evs]
    texts[at] = damage(texts[at])
    d, oracle = tmp_path / "r", tmp_path / "oracle"
    d.mkdir()
    oracle.mkdir()
    (d / "trace_view.json").write_text("[" + ", ".join(texts) + "]")
    # what should load: every event but the damaged one (none lost where the damage is no event)
    (oracle / "trace_view.json").write_text("[" + ", ".join(texts[:at] + texts[at + 1:] if skipped else
                                                            [json.dumps(e) for e in evs]) + "]")
    p = load_profile(d, cache=False)
    (lost, note), = p.con.execute("SELECT skipped_rows, note FROM load_log").fetchall()
    assert (lost, note) == (skipped, said)
    counts = "SELECT (SELECT count(*) FROM host_events), (SELECT count(*) FROM kernels), (SELECT count(*) FROM overlap_lanes)"
    assert p.con.execute(counts).fetchone() == load_profile(oracle, cache=False).con.execute(counts).fetchone()


@pytest.mark.parametrize("case", ["objects", "objects elsewhere", "gbk", "deep", "zeros in a name"])
def test_what_shares_a_line_with_a_damaged_event_is_read_as_the_other_events_are(real, tmp_path, case):
    """The intact event after a damaged one (its '}' lost) is read from the damaged line: one with
    a list of objects in its args (there or anywhere else), or a name in GBK, loads as it would
    anywhere; brackets nested
    past Python's limit in the damaged event are no crash; zero bytes inside a name lose nothing."""
    evs = json.loads((real / ADVISOR).read_text())
    at = plain_event_pair(evs)
    texts = [json.dumps(e) for e in evs]
    objs = {"objs": [{"name": "a", "id": 1}, {"name": "b", "id": 2}, {"name": "c", "id": 3}]}
    if case == "objects":  # (salvage splits it at each '}, {': its middle piece parses, with no ph)
        texts[at + 1] = json.dumps({**evs[at + 1], "args": objs})
    elif case == "objects elsewhere":
        texts[at - 9] = json.dumps({**evs[at - 9], "args": objs})
    elif case == "gbk":
        texts[at + 1] = json.dumps({**evs[at + 1], "name": evs[at + 1]["name"] + " MARK"})
    elif case == "deep":
        texts[at] = texts[at][:-1] + ', "args": {"x": ' + "[" * 1500 + "]" * 1499 + "}"
    oracle_texts = texts[:at] + texts[at + 1:] if case != "zeros in a name" else list(texts)
    if case == "zeros in a name":  # raw zero bytes inside a string: the JSON breaks, no event is lost
        texts[at] = texts[at].replace('"name": "', '"name": "\x00\x00\x00\x00', 1)
    else:
        texts[at] = texts[at][:-1]  # its closing brace lost
    d, oracle = tmp_path / "r", tmp_path / "oracle"
    for folder, parts in ((d, texts), (oracle, oracle_texts)):
        folder.mkdir()
        body = ("[" + ", ".join(parts) + "]").encode()
        (folder / "trace_view.json").write_bytes(body.replace(b" MARK", " 数".encode("gbk")))
    p = load_profile(d, cache=False)
    (lost,), = p.con.execute("SELECT skipped_rows FROM load_log").fetchall()
    assert lost == (0 if case == "zeros in a name" else 1)
    assert not [i for i in health(p) if i.severity == "error"]
    counts = "SELECT (SELECT count(*) FROM host_events), (SELECT count(*) FROM kernels), (SELECT count(*) FROM overlap_lanes)"
    if case != "deep":
        assert p.con.execute(counts).fetchone() == load_profile(oracle, cache=False).con.execute(counts).fetchone()


@pytest.mark.parametrize("lines_checked", [False, True])
def test_text_that_is_no_event_after_an_event_in_another_encoding_loses_nothing(real, tmp_path, monkeypatch,
                                                                                lines_checked):
    """An event named in GBK, text that is no event after it, then the next event, on one of
    salvage's lines: both events load, the GBK one read as GBK, and nothing is counted lost. The
    same where salvage checks its lines apart (DuckDB before 2.0), which leaves such a line to
    Python, its bytes not being UTF-8."""
    if lines_checked:
        monkeypatch.setattr(chrome_trace, "LINE_TAIL_PASSED_OVER", True)
    evs = json.loads((real / ADVISOR).read_text())
    at = plain_event_pair(evs)
    texts = [json.dumps(e) for e in evs]
    texts[at] = json.dumps({**evs[at], "name": evs[at]["name"] + " MARK"})
    d, oracle = tmp_path / "r", tmp_path / "oracle"
    for folder, parts in ((d, texts[:at + 1] + ["@@@@garbage@@@@"] + texts[at + 1:]), (oracle, texts)):
        folder.mkdir()
        body = ("[" + ", ".join(parts) + "]").encode()
        (folder / "trace_view.json").write_bytes(body.replace(b" MARK", " 数".encode("gbk")))
    p = load_profile(d, cache=False)
    (lost, note), = p.con.execute("SELECT skipped_rows, note FROM load_log").fetchall()
    assert lost == 0 and note.startswith("malformed JSON: text that is no event dropped") and "read as GBK" in note
    counts = "SELECT (SELECT count(*) FROM host_events), (SELECT count(*) FROM kernels), (SELECT count(*) FROM overlap_lanes)"
    assert p.con.execute(counts).fetchone() == load_profile(oracle, cache=False).con.execute(counts).fetchone()
    con = connect()
    stage_trace(con, d / "trace_view.json", "stg", salvage=True)
    assert con.execute("SELECT name FROM stg WHERE name LIKE '% 数'").fetchall() == [(evs[at]["name"] + " 数",)]


@pytest.mark.parametrize("shape", ["array", "object"])
def test_a_last_event_that_lost_its_brace_before_the_list_closes_is_damaged_not_cut(tmp_path, shape):
    """The last event's '}' lost and the list closed after it (its ']' closes nothing the event
    opened; a ']' in its args does): the file is whole, the event is dropped as one that does not
    parse, not as a file cut short; Kineto's keys after the list still read."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1,
            "args": {"Input Dims": [[i, 2]], "note": "a ] b"}} for i in range(6)]
    events = ", ".join(json.dumps(e) for e in evs)[:-1]  # the last one's '}'
    doc = (f"[{events}]" if shape == "array" else
           '{"schemaVersion": 1, "traceEvents": [%s], "baseTimeNanoseconds": 1000}' % events)
    f = tmp_path / "t.json"
    f.write_text(doc)
    with pytest.raises(MalformedTrace):
        stage_trace(connect(), f, "stg")
    staged = stage_trace(connect(), f, "stg", salvage=True)
    assert (staged.events, staged.lost, staged.cut) == (5, 1, False)
    assert staged.note == "malformed JSON: 1 event(s) that do not parse dropped, the rest kept"
    assert staged.base_ns == (1000 if shape == "object" else 0)
    # cut inside the event's list instead, just after a ']' of its own: cut
    f.write_text(doc[:doc.rindex("]]") + 2])
    cut = stage_trace(connect(), f, "stg")
    assert (cut.events, cut.lost, cut.cut) == (5, 1, True) and cut.note.startswith("file cut short")


@pytest.mark.parametrize("cut", [False, True])
def test_a_last_event_of_thousands_of_lists_whole_or_cut(tmp_path, cut):
    """An op's inputs, a list each (torch.cat of 3,000 tensors): every ']' of them is a candidate
    end of the events. Whole, the last one is the end; cut inside them, none is, and the events
    before it load (each ']' had been read from afresh: seconds a file)."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(50)]
    evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 99, "dur": 1,
                "args": {"Input Dims": [[i, 2] for i in range(3000)]}})
    doc = json.dumps({"schemaVersion": 1, "traceEvents": evs})
    f = tmp_path / "w.pt.trace.json"
    f.write_text(doc[:doc.rindex("[") - 3] if cut else doc)
    staged = stage_trace(connect(), f, "stg")
    assert (staged.events, staged.cut, staged.lost) == ((50, True, 1) if cut else (51, False, 0))


@pytest.mark.parametrize("objects", [2, 3000, 50000])
@pytest.mark.parametrize("shape", ["array", "object"])
def test_a_cut_inside_a_list_of_objects_in_the_last_events_args_loses_that_event_alone(tmp_path, shape, objects):
    """The '}, {' between the objects of the cut event's args looked like the last event boundary:
    half an event was read as the last one, and the event was counted twice (cut, then malformed).
    So it was still with an event longer than the first reach (66 kB, 1.4 MB): no event starts in it."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5,
            "args": {"Input": [{"a": i}, {"b": i}]}} for i in range(19)]
    evs.append({"ph": "X", "cat": "cpu_op", "name": "cat", "pid": 1, "tid": 1, "ts": 999, "dur": 5,
                "args": {"Input": [{"a": j, "pad": "xx"} for j in range(objects - 1)] + [{"b": 1}]}})
    doc = json.dumps({"schemaVersion": 1, "traceEvents": evs} if shape == "object" else evs)
    f = tmp_path / "w.pt.trace.json"
    cut = doc.rindex('{"b"') + 3
    f.write_text(doc[:cut])
    staged = stage_trace(connect(), f, "stg")
    assert (staged.events, staged.cut, staged.lost) == (19, True, 1)
    unfinished = cut - doc.rindex('}, {"ph"') - 1  # from the end of the last whole event
    assert staged.note == (f"file cut short: kept the complete events before the cut, dropped {unfinished} "
                           "bytes of an unfinished one")


def test_events_read_from_a_damaged_line_keep_their_place_in_the_file(tmp_path):
    """seq is the file's order (Kineto's nesting breaks ties of equal times by it): an event read
    from the line of a damaged one sits between its neighbours, not after every other event. The
    list closes after whole events: damage, not a cut (the event never closed had read as one cut
    by the end of the file, which the list's ']' then did not end)."""
    evs = [json.dumps({"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10, "dur": 5}) for i in range(6)]
    evs[2] = evs[2][:-1]  # its '}' lost: op3 shares its line
    f = tmp_path / "t.json"
    f.write_text("[" + ", ".join(evs) + "]")
    con = connect()
    staged = stage_trace(con, f, "stg", salvage=True)
    assert (staged.lost, staged.cut) == (1, False) and "cut" not in staged.note and "ends" not in staged.note
    assert [n for (n,) in con.execute("SELECT name FROM stg ORDER BY seq").fetchall()] == \
        ["op0", "op1", "op3", "op4", "op5"]


def test_a_block_of_zeros_inside_a_trace_makes_the_run_incomplete(real, tmp_path):
    """A block the disk never wrote, over events in the middle: how many events it held is unknown,
    so the run is incomplete (as a CSV with zeros inside it), not a warning of one event."""
    data = bytearray((real / ADVISOR).read_bytes())
    at = len(data) // 2
    data[at:at + 4096] = bytes(4096)
    d = tmp_path / "r"
    d.mkdir()
    (d / "trace_view.json").write_bytes(bytes(data))
    p = load_profile(d, cache=False)
    (lost, note), = p.con.execute("SELECT skipped_rows, note FROM load_log").fetchall()
    assert note.startswith("damaged: 4,096 zero bytes inside it; the events there are lost, how many unknown") and lost >= 1
    (item,) = [i for i in health(p) if i.severity == "error"]
    assert "zero bytes inside it" in item.what


def test_events_of_processes_the_trace_never_names_are_counted(real, tmp_path):
    """Host or device is told by the process_name metadata, which torch_npu writes a third of the
    way in: without it (left out, or cut off with what follows) the events cannot be placed, and
    are said and counted, not dropped without a word."""
    evs = events(real / ADVISOR)
    timed = sum(1 for e in evs if e.get("ph") in ("X", "i", "I"))
    d = tmp_path / "unnamed"
    d.mkdir()
    (d / "trace_view.json").write_text(json.dumps([e for e in evs if e.get("ph") != "M"], default=str))
    p = load_profile(d)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert skipped == timed and f"{timed:,} events of processes the trace does not name" in note

    # Labelled CPU but not named: host events, loaded and not counted.
    cpu = {e["pid"] for e in evs if e.get("name") == "process_labels" and e["args"].get("labels") == "CPU"}
    assert cpu
    (d / "trace_view.json").write_text(json.dumps(
        [e for e in evs if not (e.get("name") == "process_name" and e["pid"] in cpu)], default=str))
    p = load_profile(d)
    assert p.con.execute("SELECT skipped_rows FROM load_log").fetchone()[0] == 0
    assert p.con.execute("SELECT count(*) FROM host_events").fetchone()[0] == \
        sum(1 for e in evs if e.get("pid") in cpu and e.get("ph") in ("X", "i", "I"))

    data = (real / ADVISOR).read_bytes()
    first_name = data.index(b'"process_name"')
    cut = data[:data.rindex(b"}", 0, first_name - 200) + 1] + b", {"  # cut after an event, before the names
    before = sum(1 for e in json.loads(cut[:-3] + b"]") if e.get("ph") in ("X", "i", "I"))
    assert before > 0
    (d / "trace_view.json").write_bytes(cut)
    p = load_profile(d)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert skipped == before + 1 and "before the cut" in note and note.startswith("file cut short")


@pytest.mark.parametrize("other, shown, how", [
    ("数".encode("gbk"), "数", "read as GBK"),
    # A GBK character whose second byte is a backslash: read byte by byte, JSON would take it for
    # an escape of the "l" after it.
    ("昞".encode("gbk"), "昞", "read as GBK"),
    (b"\xff\xff", "\\xff\\xff", "kept with those bytes written as \\xNN"),  # no GBK either
])
def test_an_event_in_another_encoding_is_read_as_gbk_else_kept_as_escapes(real, tmp_path, other, shown, how):
    """A name saved on a Chinese system (a path in a call stack, a module): the event loads, as
    GBK where it reads so, else with those bytes written \\xNN, and the file says so."""
    data = (real / ADVISOR).read_bytes()
    at = data.index(b"aclnn")
    end = data.index(b'"', at)
    d = tmp_path / "bad"
    d.mkdir()
    (d / "trace_view.json").write_bytes(data[:at] + other + data[at + 2:])
    staged = stage_trace(connect(), d / "trace_view.json", "stg_gbk", salvage=True)
    assert staged.events == len(events(real / ADVISOR)) and staged.lost == 0
    p = load_profile(d)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert rows > 0 and skipped == 0
    assert note == f"not UTF-8: 1 event with bytes of another encoding, {how}"
    name = shown + data[at + 2:end].decode()
    assert p.con.execute("SELECT count(*) FROM host_events WHERE name = ?", [name]).fetchone()[0] + \
        p.con.execute("SELECT count(*) FROM kernels WHERE name = ?", [name]).fetchone()[0] == 1


def test_a_gbk_path_in_a_call_stack_reads_back_whole(tmp_path):
    """A backslash of a Windows path after a GBK character, and an escaped quote: read as GBK,
    the text is the one written; an event that neither way parses is dropped and counted, never
    kept half-read."""
    from npu_tui.profile.sources.chrome_trace import _other_locale

    for text in ("D:\\代码\\train.py", '说明"代码"', "中乗x"):
        event = json.dumps({"ph": "X", "name": text}, ensure_ascii=False).encode("gbk")
        read, as_gbk = _other_locale(event)
        assert as_gbk and json.loads(read)["name"] == text
    # A byte no encoding here reads beside them: escaped, the GBK pair after it still one character
    # (its backslash byte no escape of the "t" after it).
    read, as_gbk = _other_locale(b'{"name": "' + "乗t".encode("gbk") + b'\x80"}')
    assert not as_gbk and json.loads(read)["name"] == "乗t\\x80"
    # UTF-8 Chinese and GBK on one line: each read as it is written.
    read, _ = _other_locale(b'{"name": "' + "算子".encode() + b'", "file": "' + "D:\\\\代码".encode("gbk") + b'"}')
    assert json.loads(read) == {"name": "算子", "file": "D:\\代码"}
    assert _other_locale(b'{"name": "\xff\\q"}') == (None, False)


def _events(data: bytes) -> list:
    return json.loads(data)


def test_broken_json_among_the_events_keeps_the_rest(real, tmp_path):
    """A parser that died mid-write and went on: one event in the middle no longer parses; the
    others load, and the one dropped is counted and said."""
    data = (real / ADVISOR).read_bytes()
    events = _events(data)
    at = data.index(b'"name"', len(data) // 2)
    d = tmp_path / "broken"
    d.mkdir()
    (d / "trace_view.json").write_bytes(data[:at] + b'"oops" ' + data[at:])
    staged = stage_trace(connect(), d / "trace_view.json", "stg_broken", salvage=True)
    assert staged.events == len(events) - 1 and staged.lost == 1 and "malformed JSON" in staged.note
    p = load_profile(d)
    ((rows, skipped, note),) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log").fetchall()
    assert rows > 0 and skipped == 1 and "1 event(s) that do not parse dropped" in note
    # read, the rest of it: not said as a file that "could not be read"
    (said,) = [i.what for i in health(p) if i.file.endswith("trace_view.json")]
    assert said.startswith("trace_view.json: malformed JSON: 1 event(s) that do not parse dropped, the rest kept")


def test_control_characters_inside_strings_are_kept(real, tmp_path):
    """Raw control characters in a string are not JSON, but PyTorch has written them into traces:
    every event loads, the name as it was written."""
    data = (real / ADVISOR).read_bytes()
    intact = load_profile(real / ADVISOR)
    name = next(n for (n,) in intact.con.execute("SELECT name FROM kernels ORDER BY start_ns").fetchall()
                if n.startswith("aclnn"))
    odd = name[:3] + "\x01\t\n" + name[3:]
    d = tmp_path / "ctrl"
    d.mkdir()
    (d / "trace_view.json").write_bytes(data.replace(json.dumps(name).encode(), json.dumps(odd)[:-1].replace(
        "\\u0001\\t\\n", "\x01\t\n").encode() + b'"', 1))
    assert b"\x01\t\n" in (d / "trace_view.json").read_bytes()
    p = load_profile(d)
    q = "SELECT count(*), count(*) FILTER (WHERE name = $n) FROM kernels"
    assert p.con.execute(q, {"n": odd}).fetchone() == (intact.con.execute(q, {"n": odd}).fetchone()[0], 1)
    assert p.con.execute("SELECT skipped_rows, note FROM load_log").fetchone() == (0, "")


@pytest.mark.parametrize("inside", ["a string", "a list of objects", "a list of objects with a ph"])
def test_a_piece_is_cut_where_an_event_begins_not_at_a_boundary_inside_one(tmp_path, monkeypatch, inside):
    """'}, {' inside an event at the place a piece would be cut (the repr of a list of dicts in a
    string, objects in a list in args, each at the head of a piece's search): the cut goes to the
    next event, so the valid file reads whole, every event in order, no salvage, no note. Objects
    in args that have a "ph" look like events one at a time: the ']' after them says otherwise
    (cut there, a valid file was said damaged)."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": str(i), "dur": "1"}
           for i in range(4000)]
    for i in range(0, 4000, 50):  # (at every place a cut may be sought)
        evs[i]["args"] = ({"note": "x" * 300 + "[{'a': 1}, {'b': 2}]" * 40} if inside == "a string"
                          else {"objs": [{"name": "a", "id": j, **({"ph": "a"} if "ph" in inside else {})}
                                         for j in range(40)]})
    f = tmp_path / "trace_view.json"
    f.write_text("[" + ", ".join(json.dumps(e) for e in evs) + "]")
    monkeypatch.setattr(chrome_trace, "PIECE_BYTES", f.stat().st_size // 8)
    monkeypatch.setattr(chrome_trace.os, "cpu_count", lambda: 8)
    written = []
    real_write = chrome_trace._write_piece
    monkeypatch.setattr(chrome_trace, "_write_piece", lambda *a: (written.append(a[1]), real_write(*a)))
    con = connect()
    staged = stage_trace(con, f, "stg")
    assert (staged.events, staged.lost, staged.note) == (4000, 0, "") and len(written) == 8
    assert [n for n, in con.execute("SELECT name FROM stg ORDER BY seq").fetchall()] == [e["name"] for e in evs]


@pytest.mark.parametrize("shape", ["array", "object"])
@pytest.mark.parametrize("last", [False, True], ids=["earlier", "last"])
def test_objects_with_a_ph_in_the_last_events_args_are_no_end_of_the_trace(tmp_path, shape, last):
    """Where the events end is read back from the file's end, event by event from a start that
    parses: one between objects with a ph in an op's args passed for an event, so a valid file
    was said cut short (an event dropped) or, with such args in its last event, malformed."""
    evs = [{"ph": "X", "name": f"op{n}", "pid": 1, "tid": 1, "ts": str(n), "dur": "1",
            "args": {"sub": [{"ph": "X", "a": i} for i in range(3)]}} for n in range(4)]
    if not last:
        del evs[-1]["args"]
    f = tmp_path / "trace_view.json"
    f.write_text(json.dumps(evs if shape == "array" else {"traceEvents": evs}))
    staged = stage_trace(connect(), f, "stg")
    assert (staged.events, staged.lost, staged.note) == (4, 0, "")


def test_a_trace_read_in_pieces_holds_every_event_in_order(real, monkeypatch):
    """Cut into four pieces at event boundaries (written side by side), the events are those of
    the file read whole, in the file's order."""
    from npu_tui.profile.sources import chrome_trace
    path = real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"
    columns = "seq, ph, name, pid, tid, ts_ns, dur_ns, id, args::VARCHAR"

    def staged():
        con = connect()
        stage_trace(con, path, "stg")
        return con.execute(f"SELECT {columns} FROM stg ORDER BY seq").fetchall()

    whole = staged()
    monkeypatch.setattr(chrome_trace, "PIECE_BYTES", path.stat().st_size // 5)
    monkeypatch.setattr(chrome_trace.os, "cpu_count", lambda: 4)
    written = []
    real_write = chrome_trace._write_piece
    monkeypatch.setattr(chrome_trace, "_write_piece", lambda *a: (written.append(a[1]), real_write(*a)))
    assert staged() == whole and len(written) == 4
    assert len(whole) == len(events(path))


def test_a_host_range_written_as_begin_and_end_is_a_step(tmp_path):
    # (Paired in staging, as for any Chrome trace: test_kineto has the pairing's cases.)
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
          {"ph": "M", "name": "process_labels", "pid": 1, "tid": 0, "args": {"labels": "CPU"}},
          {"ph": "B", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": "90.000"},
          {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": "200.000", "dur": 10},
          {"ph": "E", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": "300.000"}]
    (tmp_path / "trace_view.json").write_text(json.dumps(ev))
    p = load_profile(tmp_path)
    assert p.con.execute("SELECT name, start_ns, dur_ns FROM host_events ORDER BY start_ns").fetchall() == [
        ("ProfilerStep#1", 90_000, 210_000), ("aten::add", 200_000, 10_000)]
    assert p.con.execute("SELECT skipped_rows, note FROM load_log").fetchall() == [(0, "")]
