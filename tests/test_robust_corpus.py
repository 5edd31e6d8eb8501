"""A corpus of broken inputs, made in tmp_path from the real samples and the committed fixtures:
every source kind gets every damage a crashed job, a half-copied folder or a hand edit leaves.

For each case the load either succeeds with the damaged file's problem in load_log (a note and/or
skipped rows), the intact companion file's rows untouched and no row from the damaged file that the
intact file did not have; or it stops with ProfileError and a one-line message. Nothing else.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import shutil
from collections import Counter
from decimal import Decimal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.discover import NO_INFO, discover
from npu_tui.profile.health import health
from npu_tui.profile.loader import load_discovered
from npu_tui.profile.sources import SOURCE_ORDER

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
L1 = "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
L0 = "msinsight-pt-2rank-levels/text/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
DB0 = "msinsight-pt-2rank-levels/db/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
MSPROF = "mindinsight-msprof-2dev-hccl/PROF_000001_20230818142704322_COJGGGCANRMICFBC/device_0"
KINETO = "kineto/hta-sampled-2rank"
HUGE = 10 * 1024 * 1024
KERNEL_CSV = ("kernel_details", "op_summary")


def copy(src: Path, dst: Path, data: Optional[bytes] = None) -> Path:
    """A writable copy (the samples are read-only), optionally with other content."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(src.read_bytes() if data is None else data)
    return dst


# --- the undamaged corpus: per kind, the file to damage and an intact companion file ---------------


@dataclass
class Sample:
    root: Path        # what load_profile is given
    target: Path      # the file to damage
    companion: Path   # an intact file that must load the same whatever happens to the target
    fmt: str          # csv | trace (Chrome-trace JSON) | comm (communication*.json) | json (a document) | sqlite


def _op_summary(kernel_details: Path) -> bytes:
    """msprof's op_summary columns over the rows of a real kernel_details.csv."""
    names = {"Name": "Op Name", "Type": "OP Type", "Accelerator Core": "Task Type",
             "Start Time(us)": "Task Start Time(us)", "Duration(us)": "Task Duration(us)",
             "Wait Time(us)": "Task Wait Time(us)"}
    with open(kernel_details, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows[0] = [names.get(c, c) for c in rows[0]]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def build(kind: str, real: Path, tmp: Path) -> Sample:
    rank = tmp / "run" / "node_1_20250101000000000_ascend_pt"
    out = rank / "ASCEND_PROFILER_OUTPUT"
    step = real / L1 / "step_trace_time.csv"
    if kind in ("kernel_details", "communication", "communication_matrix", "op_statistic", "memory_record",
                "operator_memory", "npu_module_mem"):
        ext = "csv" if kind.startswith(("kernel", "op_", "operator_", "memory", "npu_")) else "json"
        t = copy(real / L1 / f"{kind}.{ext}", out / f"{kind}.{ext}")
        c = copy(step, out / "step_trace_time.csv")
        return Sample(rank, t, c, "csv" if ext == "csv" else "comm")
    if kind == "static_op_mem":  # no real sample: the documented layout, a static graph's operators
        rows = [f"0,{op}_{i},0,1,{i},{4294967295 if i % 7 == 0 else i + 5},{1024.0 + 16 * i}"
                for i, op in enumerate(["MatMul", "Add", "Conv2D", "Cast", "Mul"] * 8)]
        total = sum(1024.0 + 16 * i for i in range(len(rows)))
        text = "\n".join(["Device_id,Op Name,Model Name,Graph ID,Node Index Start,Node Index End,Size(KB)",
                          *rows, f"0,TOTAL,0,1,,,{total}"]) + "\n"
        t = copy(step, out / "static_op_mem.csv", text.encode())
        return Sample(rank, t, copy(step, out / "step_trace_time.csv"), "csv")
    if kind == "profiler_metadata":  # no real sample holds its groups: the layout torch_npu writes
        groups = {f"10.0.0.1%eth0_6000{i}_0_1700000000": {"group_name": name, "group_rank": 0, "global_ranks": ranks}
                  for i, (name, ranks) in enumerate([("tp", [0, 1]), ("dp", [0, 2])])}
        doc = {"ENV_VARIABLES": {"HCCL_RDMA_TC": ""}, "parallel_group_info": groups}
        t = copy(step, rank / "profiler_metadata.json", json.dumps(doc).encode())
        return Sample(rank, t, copy(step, out / "step_trace_time.csv"), "json")
    if kind == "operator_details":
        t = copy(real / L0 / "operator_details.csv", out / "operator_details.csv")
        return Sample(rank, t, copy(step, out / "step_trace_time.csv"), "csv")
    if kind == "step_trace_time":
        t = copy(step, out / "step_trace_time.csv")
        return Sample(rank, t, copy(real / L1 / "op_statistic.csv", out / "op_statistic.csv"), "csv")
    if kind == "trace_view":  # the bare-trace recipe's file, from the generator's fixture
        t = copy(FIXTURES / "bare_trace" / "trace_view.json", out / "trace_view.json")
        return Sample(rank, t, copy(step, out / "step_trace_time.csv"), "trace")
    if kind == "sqlite_export":
        t = copy(real / DB0 / "ascend_pytorch_profiler_0.db", out / "ascend_pytorch_profiler_0.db")
        return Sample(rank, t, copy(real / DB0 / "analysis.db", out / "analysis.db"), "sqlite")
    prof = tmp / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"
    if kind == "msprof_timeline":
        dev = prof / "device_0"
        copy(real / MSPROF / "info.json.0", dev / "info.json.0")
        t = copy(real / MSPROF / "timeline" / "msprof_0_2_1.json", dev / "timeline" / "msprof_0_2_1.json")
        c = copy(real / MSPROF / "timeline" / "msprof_0_2_2.json", dev / "timeline" / "msprof_0_2_2.json")
        return Sample(dev, t, c, "trace")
    if kind == "op_summary":
        merged = prof / "mindstudio_profiler_output"
        t = copy(real / L1 / "kernel_details.csv", merged / "op_summary_20250101.csv",
                 _op_summary(real / L1 / "kernel_details.csv"))
        c = copy(real / MSPROF / "timeline" / "msprof_0_2_1.json", merged / "msprof_20250101.json")
        return Sample(prof, t, c, "csv")
    if kind == "kineto":  # one trace per rank, named as tensorboard_trace_handler names them
        runs = tmp / "kineto"
        t = copy(real / KINETO / "sampled_rank-0.json.gz", runs / "w0.1700000000000.pt.trace.json",
                 gzip.decompress((real / KINETO / "sampled_rank-0.json.gz").read_bytes()))
        c = copy(real / KINETO / "sampled_rank-1.json.gz", runs / "w1.1700000000001.pt.trace.json.gz")
        return Sample(runs, t, c, "trace")
    raise AssertionError(f"no sample for {kind}")


# Rows only the target file writes, for the inclusion check (rank left out: it may be renumbered).
TARGET_ROWS = {
    "kernel_details": ["SELECT * EXCLUDE (rank) FROM kernels WHERE source = 'kernel_details'"],
    "op_summary": ["SELECT * EXCLUDE (rank) FROM kernels WHERE source = 'op_summary'"],
    "sqlite_export": ["SELECT * EXCLUDE (rank) FROM kernels", "SELECT * EXCLUDE (rank) FROM overlap_lanes",
                      "SELECT * EXCLUDE (rank) FROM host_events", "SELECT * EXCLUDE (rank) FROM flows"],
    "trace_view": ["SELECT * EXCLUDE (rank) FROM kernels", "SELECT * EXCLUDE (rank) FROM overlap_lanes",
                   "SELECT * EXCLUDE (rank) FROM host_events", "SELECT * EXCLUDE (rank) FROM flows"],
    "msprof_timeline": [],  # target and companion fill the same tables
    "kineto": ["SELECT * EXCLUDE (rank) FROM kernels WHERE rank = $rank",
               "SELECT * EXCLUDE (rank) FROM host_events WHERE rank = $rank",
               "SELECT * EXCLUDE (rank) FROM flows WHERE rank = $rank"],
    "step_trace_time": ["SELECT * EXCLUDE (rank) FROM step_trace"],
    "communication": ["SELECT * EXCLUDE (rank) FROM comm_ops", "SELECT * EXCLUDE (rank) FROM comm_bandwidth"],
    "communication_matrix": ["SELECT * EXCLUDE (rank) FROM comm_matrix"],
    "op_statistic": ["SELECT * EXCLUDE (rank) FROM op_statistic"],
    "operator_details": ["SELECT * EXCLUDE (rank) FROM operators"],
    "memory_record": ["SELECT * EXCLUDE (rank) FROM memory_record"],
    "operator_memory": ["SELECT * EXCLUDE (rank) FROM operator_memory"],
    "npu_module_mem": ["SELECT * EXCLUDE (rank) FROM npu_module_mem"],
    "static_op_mem": ["SELECT * EXCLUDE (rank) FROM static_op_mem"],
    "profiler_metadata": ["SELECT * EXCLUDE (rank) FROM comm_groups"],
}

LOG = "SELECT rank, rows, skipped_rows, note FROM load_log WHERE file = ?"


def log_row(p, path: Path) -> Optional[Tuple]:
    rows = p.con.execute(LOG, [str(path)]).fetchall()
    assert len(rows) <= 1, rows
    return rows[0] if rows else None


def target_rows(p, kind: str, rank: int) -> List[Counter]:
    return [Counter(p.con.execute(sql, {"rank": rank} if "$rank" in sql else {}).fetchall())
            for sql in TARGET_ROWS[kind]]


@dataclass
class Baseline:
    sample: Sample
    intact: bytes
    log: Tuple
    companion_log: Tuple
    rows: List[Counter]


_BASELINES: Dict[str, Baseline] = {}


@pytest.fixture
def baseline(real, tmp_path_factory) -> Callable[[str], Baseline]:
    """The undamaged sample of a kind, loaded once per test run."""
    def get(kind: str) -> Baseline:
        if kind not in _BASELINES:
            s = build(kind, real, tmp_path_factory.mktemp(f"intact_{kind}"))
            p = load_profile(s.root)
            log = log_row(p, s.target)
            assert log and log[1] > 0 and log[3] == "", f"intact {kind} sample does not load cleanly: {log}"
            _BASELINES[kind] = Baseline(s, s.target.read_bytes(), log, log_row(p, s.companion),
                                        target_rows(p, kind, log[0]))
        return _BASELINES[kind]
    return get


# --- damages --------------------------------------------------------------------------------------


def _rng(*key) -> random.Random:
    return random.Random("/".join(map(str, key)))


def _csv_rows(data: bytes) -> Tuple[List[List[str]], str]:
    text = data.decode("utf-8")
    return list(csv.reader(io.StringIO(text, newline=""))), ("\r\n" if "\r\n" in text else "\n")


def _csv_bytes(rows: List[List[str]], end: str) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator=end).writerows(rows)
    return out.getvalue().encode("utf-8")


def _pick(rng: random.Random, n: int, k: int = 5) -> List[int]:
    return sorted(rng.sample(range(1, n), min(k, n - 1)))


NUMERIC_HINTS = ("(us)", "(ms)", "(MB)", "(KB)", "Computing", "Communication", "Free", "Stage", "Count", "Ratio")
# Not numbers at all; each damaged row gets one of them in every numeric cell.
BAD_NUMBERS = ["NaN", "inf", "-inf", "1e999", "12..5"]
# Kernel times also get a negative duration and a start past what integer ns can hold.
BAD_KERNEL_NUMBERS = ["NaN", "inf", "-5", "1e999", "99999999999999999.5"]


def csv_damage(data: bytes, damage: str, rng: random.Random, kind: str) -> bytes:
    rows, end = _csv_rows(data)
    picked = _pick(rng, len(rows))
    if damage == "ragged":
        for i in picked:
            rows[i] = rows[i][: max(1, len(rows[i]) - 3)]
    elif damage == "overlong":
        for i in picked:
            rows[i] = rows[i] + ["x", "1.5", "y"]
    elif damage == "bad_numbers":
        cols = [j for j, c in enumerate(rows[0]) if any(h in c for h in NUMERIC_HINTS)]
        bad = BAD_KERNEL_NUMBERS if kind in KERNEL_CSV else BAD_NUMBERS
        for n, i in enumerate(picked):
            for j in cols:
                rows[i][j] = bad[n % len(bad)]
    elif damage == "huge_cell":  # in a name, text wherever it is (an id given as 10 MB of text is no id)
        rows[picked[0]][next((j for j, c in enumerate(rows[0]) if "Name" in c), 0)] = "A" * HUGE
    elif damage == "non_utf8":
        body = _csv_bytes(rows, end)
        cut = body.index(end.encode(), len(body) // 2) + len(end)  # start of a middle row
        return body[:cut] + b"\xff\xfe\xc3(" + body[cut:]
    return _csv_bytes(rows, end)


def _trace_insert_at(data: bytes) -> int:
    """Just after the '[' that opens the event list."""
    key = data.find(b'"traceEvents"')
    return data.index(b"[", max(key, 0)) + 1


BAD_EVENTS = {
    # Fields missing or of the wrong type.
    "ragged": [b'{"ph": "X", "name": "no_time", "pid": 1, "tid": 1}',
               b'{"ph": "X", "name": "obj_ts", "pid": 1, "tid": 1, "ts": {"a": 1}, "dur": [1, 2]}',
               b'{"ph": "X", "name": "null_ts", "pid": null, "tid": 1, "ts": null, "dur": 1}',
               b'{"ph": "i", "name": "str_ts", "pid": 1, "tid": 1, "ts": "soon"}'],
    "overlong": [b'{"ph": "X", "name": "wide", "pid": 1, "tid": 1, "ts": "x", "dur": 1, '
                 + b", ".join(b'"k%d": [%d, {"n": null}]' % (i, i) for i in range(5000)) + b"}"],
    "bad_numbers": [b'{"ph": "X", "name": "nan", "pid": 1, "tid": 1, "ts": 1000, "dur": NaN}',
                    b'{"ph": "X", "name": "inf", "pid": 1, "tid": 1, "ts": 1000, "dur": Infinity}',
                    b'{"ph": "X", "name": "neg", "pid": 1, "tid": 1, "ts": 1000, "dur": -5}',
                    b'{"ph": "X", "name": "big", "pid": 1, "tid": 1, "ts": 1e400, "dur": 1}',
                    b'{"ph": "X", "name": "huge_ts", "pid": 1, "tid": 1, "ts": 99999999999999999.5, '
                    b'"dur": 1}',
                    b'{"ph": "X", "name": "before_zero", "pid": 1, "tid": 1, "ts": -100, "dur": 1}'],
}
BAD_OPS = {
    "communication": {
        "ragged": b'"bad@1": {"Communication Time Info": {"Elapse Time(ms)": {"a": 1}}}, '
                  b'"bad@2": {"Communication Time Info": "soon"}, "bad@3": [1, 2], ',
        "overlong": b'"bad@4": {' + b", ".join(b'"k%d": [%d]' % (i, i) for i in range(5000)) + b"}, ",
        "bad_numbers": b'"bad@5": {"Communication Time Info": {"Elapse Time(ms)": NaN, '
                       b'"Transit Time(ms)": 1}}, '
                       b'"bad@6": {"Communication Time Info": {"Elapse Time(ms)": -Infinity, '
                       b'"Wait Time(ms)": 1}, '
                       b'"Communication Bandwidth Info": {"HCCS": {"Bandwidth(GB/s)": -Infinity}}}, ',
    },
    "communication_matrix": {
        "ragged": b'"bad@1": {"0-1": {"Transit Size(MB)": {"a": 1}}}, "bad@2": {"0-1": "HCCS"}, '
                  b'"bad@3": [1, 2], ',
        "overlong": b'"bad@4": {' + b", ".join(b'"%d-%d": [%d]' % (i, i, i) for i in range(5000)) + b"}, ",
        "bad_numbers": b'"bad@5": {"9-9": {"Transport Type": "HCCS", "Transit Size(MB)": NaN, '
                       b'"Transit Time(ms)": -1e400, "Bandwidth(GB/s)": Infinity}}, ',
    },
}


def _text_at(data: bytes, fmt: str) -> int:
    """Inside a string: an event name half-way through a trace, the first op name of a comm file."""
    if fmt == "trace":
        return data.index(b'"name": "', len(data) // 2) + len(b'"name": "')
    if fmt == "json":  # the first group's comm name
        return data.index(b'"', data.index(b'"parallel_group_info"') + len(b'"parallel_group_info"')) + 1
    return data.index(b'"', data.index(b"{", data.index(b'"collective"')) + 1) + 1


def json_damage(data: bytes, fmt: str, damage: str, kind: str) -> bytes:
    if damage in ("huge_cell", "non_utf8"):
        i = _text_at(data, fmt)
        return data[:i] + (b"A" * HUGE if damage == "huge_cell" else b"\xff\xfe\xc3(") + data[i:]
    if fmt == "trace":
        i = _trace_insert_at(data)
        return data[:i] + b", ".join(BAD_EVENTS[damage]) + b", " + data[i:]
    i = data.index(b"{", data.index(b'"collective"')) + 1  # inside the first step's collective ops
    return data[:i] + BAD_OPS[kind][damage] + data[i:]


def truncate(data: bytes, fmt: str, n: int) -> bytes:
    """A cut at a random point (fixed seed). A CSV cut right at a line end leaves a shorter valid
    file that nothing can tell from a complete one, so those points are not used."""
    rng = _rng("cut", fmt, n, len(data))
    while True:
        cut = rng.randrange(1, len(data) - 1)
        if fmt != "csv" or data[cut - 1:cut] not in (b"\n", b"\r"):
            return data[:cut]


def header_only(data: bytes, fmt: str) -> bytes:
    if fmt == "csv":
        return data[: data.index(b"\n") + 1]
    if fmt == "sqlite":
        return data[:100]  # the database header alone
    return b"[]" if data.lstrip()[:1] == b"[" else b"{}"


def damaged(data: bytes, fmt: str, damage: str, kind: str) -> bytes:
    rng = _rng(kind, damage)
    if damage == "empty":
        return b""
    if damage == "header_only":
        return header_only(data, fmt)
    if damage.startswith("truncated"):
        return truncate(data, fmt, int(damage.rsplit("_", 1)[1]))
    if damage == "garbage":
        return bytes(rng.getrandbits(8) for _ in range(min(len(data), 256 * 1024)))
    if damage == "garbage_middle":
        i = len(data) // 2
        return data[:i] + bytes(rng.getrandbits(8) for _ in range(4096)) + data[i + 4096:]
    if damage == "gzip_cut":
        gz = gzip.compress(data, mtime=0)
        return gz[: rng.randrange(len(gz) // 4, len(gz) - 8)]
    if fmt == "csv":
        return csv_damage(data, damage, rng, kind)
    return json_damage(data, fmt, damage, kind)


COMMON = ["empty", "header_only", "truncated_0", "truncated_1", "truncated_2", "garbage", "garbage_middle"]
TEXT = ["ragged", "overlong", "bad_numbers", "huge_cell", "non_utf8"]
# (A document's empty object, "{}", is no damage: profiler_metadata.json without groups is the
# usual one, of a run that was not distributed.)
DAMAGES = {"csv": COMMON + TEXT, "comm": COMMON + TEXT, "trace": COMMON + TEXT + ["gzip_cut"],
           "json": [d for d in COMMON if d != "header_only"] + ["huge_cell", "non_utf8"], "sqlite": COMMON}
FORMAT = {"kernel_details": "csv", "op_summary": "csv", "sqlite_export": "sqlite", "trace_view": "trace",
          "msprof_timeline": "trace", "kineto": "trace", "step_trace_time": "csv", "communication": "comm",
          "communication_matrix": "comm", "op_statistic": "csv", "operator_details": "csv",
          "memory_record": "csv", "operator_memory": "csv", "npu_module_mem": "csv",
          "static_op_mem": "csv", "profiler_metadata": "json"}
# Damages confined to a few rows, events or ops (at most 5); the rest of the file must still load.
ROW_LEVEL = {"csv": TEXT, "comm": TEXT, "trace": TEXT, "json": [], "sqlite": []}
CASES = [(kind, damage) for kind in SOURCE_ORDER for damage in DAMAGES[FORMAT[kind]]]


def test_every_source_kind_is_in_the_corpus():
    assert sorted(FORMAT) == sorted(SOURCE_ORDER)


def load_or_error(root: Path):
    """load_profile's result, or its ProfileError after checking the message is one line."""
    try:
        return load_profile(root)
    except ProfileError as e:
        msg = str(e)
        assert msg and "\n" not in msg and "Traceback" not in msg
        return e


def non_finite(p) -> List[Tuple[str, str]]:
    """(table, column) pairs holding NaN or infinity: such a value poisons every sum over it."""
    cols = p.con.execute("SELECT table_name, column_name FROM information_schema.columns "
                         "WHERE data_type = 'DOUBLE' AND table_schema = 'main'").fetchall()
    return [(t, c) for t, c in cols
            if p.con.execute(f'SELECT count(*) FROM {t} WHERE NOT isfinite("{c}")').fetchone()[0]]


@pytest.mark.parametrize("kind,damage", CASES)
def test_damaged_file_is_skipped_and_counted(baseline, tmp_path, kind, damage):
    base = baseline(kind)
    s = rebuild(base, tmp_path)
    bad = damaged(base.intact, base.sample.fmt, damage, kind)
    s.target.write_bytes(bad)

    p = load_profile(s.root)  # the intact companion always loads, so this never raises
    # The companion file gave what it gives when the target is intact.
    comp = log_row(p, s.companion)
    assert comp is not None and comp[3] == base.companion_log[3] and comp[1] >= base.companion_log[1]
    # The damaged file is reported: a note, skipped rows, or fewer rows than the intact file gave.
    log = log_row(p, s.target)
    assert log is not None, f"{s.target.name} was passed over without a word"
    rank, rows, skipped, note = log
    assert "\n" not in note
    got_rows = target_rows(p, kind, rank)
    if damage == "huge_cell":
        # A 10 MB string is still data, in JSON as in a CSV cell (where it stands for a value): the
        # file loads as before, nothing is lost.
        assert (rows, skipped) == base.log[1:3] and note == base.log[3], log
        if base.sample.fmt != "csv":
            return
    # A row (an event) with bytes of another encoding, or a 10 MB cell, is read as it is: the one
    # damaged row is kept, those bytes written \xNN (a comm file drops the op they are in). Its
    # name as read may put it where the intact one was not (msprof's NOTIFY_RECORD is no kernel).
    kept = damage == "huge_cell" or damage == "non_utf8" and base.sample.fmt not in ("comm", "json")
    if damage == "non_utf8" and kept:
        # said, unless the bytes fell in a column the loader does not read
        assert "kept with those bytes written as \\xNN" in note or got_rows == base.rows, log
        assert skipped <= 1, log
    # Evidence, unless the damage hit nothing the loader reads (rows exactly as from the intact file).
    assert note or skipped > 0 or kept or (rows == base.log[1] and got_rows == base.rows), log
    assert rows <= base.log[1] + kept
    if damage in ROW_LEVEL[base.sample.fmt]:  # a few bad rows cost those rows, not the file
        assert rows >= base.log[1] - _row_level_loss(base.intact, damage, kind), log
    want_rows = base.rows
    if damage == "non_utf8" and kind == "kineto":
        # The event with those bytes is a CPU op: the kernels it launched take its name as read.
        # Besides the launching op's columns, they are the intact file's.
        q = "SELECT * EXCLUDE (rank, type, input_shapes, input_dtypes) FROM kernels WHERE rank = $rank"
        intact = load_profile(base.sample.root)
        kernels = [Counter(x.con.execute(q, {"rank": rank}).fetchall()) for x in (p, intact)]
        assert not kernels[0] - kernels[1]
        got_rows, want_rows = got_rows[1:], want_rows[1:]
    # No row the intact file did not have (a cut or garbled row never gets in half-read), but the
    # damaged one where it is kept.
    for got, want in zip(got_rows, want_rows):
        assert sum((got - want).values()) <= kept, f"rows not in the intact file: {list(got - want)[:3]}"
    assert p.con.execute("SELECT count(*) FROM kernels WHERE NOT dur_ns >= 0").fetchone()[0] == 0
    assert non_finite(p) == []


def _row_level_loss(intact: bytes, damage: str, kind: str) -> int:
    """At most 5 rows, but for bytes of another encoding in a matrix op's key (json_damage): every
    link of that op carries the key, and goes with it."""
    if damage == "non_utf8" and kind == "communication_matrix":
        steps = json.loads(intact).values()
        return len(next(iter(next(s["collective"] for s in steps if "collective" in s).values())))
    return 5


def rebuild(base: Baseline, tmp_path: Path) -> Sample:
    """The same sample, in this test's folder."""
    old = base.sample
    top = old.root
    while top.parent.name and not top.parent.name.startswith("intact_"):
        top = top.parent
    new_top = tmp_path / top.name
    shutil.copytree(top, new_top)

    def moved(path: Path) -> Path:
        return new_top / path.relative_to(top)

    return Sample(moved(old.root), moved(old.target), moved(old.companion), old.fmt)


# --- situations beyond one damaged file ------------------------------------------------------------


def small_rank(real: Path, folder: Path, info: Optional[int] = 0) -> Path:
    """A rank folder with a real kernel_details.csv and step_trace_time.csv (and profiler_info_N)."""
    out = folder / "ASCEND_PROFILER_OUTPUT"
    copy(real / L1 / "kernel_details.csv", out / "kernel_details.csv")
    copy(real / L1 / "step_trace_time.csv", out / "step_trace_time.csv")
    if info is not None:
        copy(real / L1 / "step_trace_time.csv", folder / f"profiler_info_{info}.json", b'{"config": {}}')
    return folder


def kernel_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.DictReader(f))


def notes(p, kind: Optional[str] = None) -> List[str]:
    sql = "SELECT note FROM load_log WHERE note <> ''" + (" AND kind = ?" if kind else "")
    return [n for (n,) in p.con.execute(sql, [kind] if kind else []).fetchall()]


@pytest.mark.parametrize("cut", ["no line break", "at the last delimiter", "mid-row", "open quote"])
def test_a_last_row_without_a_line_break(real, tmp_path, cut):
    """A file that does not end with a line break: its last line loads when it is a whole row (as
    many fields as the header, no quote left open, not ending on a delimiter; a cut inside the last
    cell's value cannot be told from one), and is counted as a partial row when it is not."""
    intact = load_profile(small_rank(real, tmp_path / "a" / "r_ascend_pt"))
    rank = small_rank(real, tmp_path / "b" / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    data = kd.read_bytes().rstrip(b"\r\n")
    last = data.rsplit(b"\n", 1)[1]
    assert data.endswith(b",0")  # the last cell is one character: cutting it leaves the delimiter
    kept = {"no line break": data, "at the last delimiter": data[:-1],
            "mid-row": data[:len(data) - len(last) + last.index(b",", 40)],
            "open quote": data[:len(data) - len(last) + last.index(b'"') + 3]}[cut]
    kd.write_bytes(kept)
    p = load_profile(rank)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    whole = cut == "no line break"
    assert log_row(p, kd)[1:3] == ((n, 0) if whole else (n - 1, 1))
    q = "SELECT * EXCLUDE (rank) FROM kernels"
    lost = Counter(intact.con.execute(q).fetchall()) - Counter(p.con.execute(q).fetchall())
    if cut == "no line break":
        assert not lost
    elif not whole:
        assert len(lost) == 1


def test_a_row_over_duckdbs_own_limit_loads_whole(real, tmp_path, monkeypatch):
    """Input shapes of an op over thousands of tensors: a 3 MB row (DuckDB's reader stops at
    2 MiB by default) loads with its cell whole. One over npu-tui's own limit is skipped, and said."""
    from npu_tui.profile.sources import csvfile

    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = kd.read_bytes().split(b"\r\n")
    shapes = b";".join([b"4096,4096"] * 300_000)
    header = next(csv.reader([lines[0].decode()]))
    cells = next(csv.reader([lines[1].decode()]))
    cells[header.index("Input Shapes")] = f'"{shapes.decode()}"'
    lines[1] = ",".join(cells).encode()
    kd.write_bytes(b"\r\n".join(lines))
    n = kernel_rows(real / L1 / "kernel_details.csv")
    p = load_profile(rank)
    assert log_row(p, kd)[1:] == (n, 0, "")
    assert p.con.execute("SELECT max(length(input_shapes)) FROM kernels").fetchone()[0] == len(shapes)

    monkeypatch.setattr(csvfile, "MAX_ROW", 1 << 20)
    p = load_profile(rank, cache=False)
    assert log_row(p, kd)[1:] == (n - 1, 1, "1 row over 1 MiB long")


def test_a_table_joined_after_the_files_own_is_not_loaded(real, tmp_path):
    """Two exports in one file (`cat a b > c`): the rows of the first load once, the second table
    from its header on is left out, and the file is not loaded whole (an error); before, every
    kernel counted twice, beside one row skipped."""
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    one = (real / L1 / "kernel_details.csv").read_bytes()
    kd.write_bytes(one + one)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    p = load_profile(rank)
    rows, skipped, note = log_row(p, kd)[1:]
    assert (rows, skipped) == (n, n)
    assert note == f"its header again at line {n + 2}: another table joined to it (two exports in one file?), not loaded"
    (item,) = [i for i in health(p) if i.file == str(kd)]
    assert item.severity == "error" and item.lost == n and "split the file" in item.fix
    assert p.con.execute("SELECT count(*), count(DISTINCT start_ns) FROM kernels").fetchone() == (n, n)


def test_two_kineto_traces_joined_in_one_file_load_the_first_and_say_the_second(real, tmp_path):
    """`cat` of two ranks' traces: the second document's events had been read into the first's
    rank, its own rank gone, with "1 event skipped" the only sign. Now the first loads whole, the
    second is counted, and the file is not loaded whole (an error)."""
    from npu_tui.profile.health import failed, health

    docs = [gzip.decompress((real / KINETO / f"sampled_rank-{r}.json.gz").read_bytes()) for r in (0, 1)]
    joined = tmp_path / "job" / "both.json"
    joined.parent.mkdir()
    joined.write_bytes(docs[0] + docs[1])
    alone = tmp_path / "alone" / "rank0.json"
    alone.parent.mkdir()
    alone.write_bytes(docs[0])
    p, want = load_profile(joined.parent), load_profile(alone.parent)
    second = len(json.loads(docs[1])["traceEvents"])
    rows, skipped, note = log_row(p, joined)[1:]
    assert skipped == second and note == (f"a second trace from byte {len(docs[0]):,}: another trace joined to it "
                                          f"(two traces in one file?), its {second:,} events not loaded")
    assert p.ranks == want.ranks == [0]
    sql = "SELECT count(*), sum(dur_ns), count(DISTINCT step) FROM kernels"
    assert p.con.execute(sql).fetchone() == want.con.execute(sql).fetchone()
    (item,) = failed(health(p))
    assert item.file == str(joined) and "split the file where the second trace begins" in item.fix


def test_a_single_trace_read_in_salvage_is_no_joined_one(real, tmp_path):
    """What a join looks like, inside one trace's events (a string holding "}] [{", args holding
    a key traceEvents of their own), read event by event for a raw control character: every
    event loads, nothing is said joined (a review found 3 of 10,112 events loaded)."""
    from npu_tui.profile.schema import connect
    from npu_tui.profile.sources.chrome_trace import MalformedTrace, stage_trace

    events = json.loads((real / L1 / "trace_view.json").read_bytes())
    events[5]["args"] = {"note": "x}] [{y", "traceEvents": [1, 2]}
    array = tmp_path / "trace_view.json"
    array.write_bytes(json.dumps(events).replace("x}] [{y", "x}] [{y\x01").encode())  # a raw control character
    doc = json.loads(gzip.decompress((real / KINETO / "sampled_rank-0.json.gz").read_bytes()))
    doc["traceEvents"][5]["args"] = {"traceEvents": [1, 2], "name": "a-b"}
    obj = tmp_path / "kineto.json"
    obj.write_bytes(json.dumps(doc).replace('"a-b"', '"a\x01b"').encode())
    con = connect()
    for path, n in ((array, len(events)), (obj, len(doc["traceEvents"]))):
        assert b"\x01" in path.read_bytes()
        with pytest.raises(MalformedTrace):
            stage_trace(con, path, "stg_one")
        staged = stage_trace(con, path, "stg_one", salvage=True)
        assert (staged.events + staged.untimed, staged.lost, staged.note) == (n, 0, "")


def test_an_event_over_32_mib_loads_with_the_others(real, tmp_path):
    """A 33 MiB string in one event's args: past DuckDB's default room for one JSON value (16 MiB,
    read in buffers of twice that), it had failed the whole trace, said as a trace "over 4 GiB"."""
    doc = json.loads(gzip.decompress((real / KINETO / "sampled_rank-0.json.gz").read_bytes()))
    want = load_profile(real / KINETO / "sampled_rank-0.json.gz")
    doc["traceEvents"].insert(0, {"ph": "i", "s": "t", "name": "note", "pid": 0, "tid": 0, "ts": 0,
                                  "args": {"text": "x" * (33 << 20)}})
    big = tmp_path / "rank0.json"
    big.write_text(json.dumps(doc))
    p = load_profile(big)
    assert log_row(p, big)[1:] == (log_row(want, real / KINETO / "sampled_rank-0.json.gz")[1], 0, "")
    sql = "SELECT count(*), sum(dur_ns) FROM kernels"
    assert p.con.execute(sql).fetchone() == want.con.execute(sql).fetchone()


def test_a_trace_view_joined_to_itself_loads_once(real, tmp_path):
    """The bare array of torch_npu's trace_view.json, twice: its events stage once."""
    from npu_tui.profile.schema import connect
    from npu_tui.profile.sources.chrome_trace import MalformedTrace, stage_trace

    one = (real / L1 / "trace_view.json").read_bytes()
    twice = tmp_path / "trace_view.json"
    twice.write_bytes(one + b"\n" + one)
    con = connect()
    with pytest.raises(MalformedTrace):  # the fast read fails; the loader reads it again in salvage
        stage_trace(con, twice, "stg_twice")
    staged = stage_trace(con, twice, "stg_twice", salvage=True)
    n = len(json.loads(one))
    assert (staged.events + staged.untimed, staged.lost) == (n, n)
    assert staged.note == (f"a second trace from byte {len(one) + 1:,}: another trace joined to it (two traces in "
                           f"one file?), its {n:,} events not loaded")


def test_the_header_is_found_again_at_any_chunk_size(tmp_path):
    """The scan reads a file in chunks: a header that starts in one and ends in another is found,
    where it starts (its byte order mark included), at a line's start or glued to a last row; a row
    that begins as the header but goes on is not one, nor is the file's own behind its byte order
    mark, wherever a chunk ends."""
    from npu_tui.profile.sources.csvfile import _scan

    header = b"Name,Type,Start Time(us)"
    top = header + b"\r\nadd,Add,1\r\n" + header + b"_x,Add,2\r\n" + header + b"x\r\n"
    bom = b"\xef\xbb\xbf"
    cases = ((header + b",3\r\n", b"mul,Mul,4\r\n", 0), (bom + header + b"\r\n", b"mul,Mul,4\r\n", 0),
             (b"", b"", None), (b"\n" + header, b"", 1), (b"add,Add,5" + header, b"\r\n", 9),
             (b"add,Add,5" + bom + header, b",x\r\n", 9))
    for again, rest, where in cases:
        for first in (b"", bom):
            body = first + top + again + rest
            f = tmp_path / "t.csv"
            f.write_bytes(body)
            want = -1 if where is None else len(first + top) + where
            for chunk in range(1, len(body) + 1):
                assert _scan(f, len(body), header, chunk).again == want, (again, first, chunk)
    assert _scan(f, len(body), b"", 5).again == -1


def test_a_table_joined_to_a_file_without_its_last_line_break_is_told(real, tmp_path):
    """The real advisor fixture ends without a line break: joined to itself, the second header is
    glued to the first table's last row. Every row of the first loads, the second is left out and
    said; before, the glued line was one ragged row skipped and the second table loaded too."""
    src = real / "mstt-advisor-fixtures/ut/advisor/compute_advice/data/kernel_details.csv"
    one = src.read_bytes()
    assert not one.endswith((b"\n", b"\r"))
    kd = tmp_path / "kernel_details.csv"
    kd.write_bytes(one + one)
    p = load_profile(kd)
    assert log_row(p, kd)[1:] == (29, 29, "its header again at line 30: another table joined to it "
                                  "(two exports in one file?), not loaded")
    with open(src, newline="", encoding="utf-8") as f:
        want = round(sum(float(r["Duration(us)"]) for r in csv.DictReader(f)) * 1000)
    assert p.con.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone() == (29, want)


@pytest.mark.parametrize("parts, bom", [(2, False), (3, False), (2, True)], ids=["twice", "three times", "Excel's BOM"])
def test_a_joined_kernel_file_counts_the_rows_left_out(real, tmp_path, parts, bom):
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    one = (real / L1 / "kernel_details.csv").read_bytes()
    kd.write_bytes(one + (b"\xef\xbb\xbf" * bom + one) * (parts - 1))
    n = kernel_rows(real / L1 / "kernel_details.csv")
    p = load_profile(rank)
    assert log_row(p, kd)[1:3] == (n, n * (parts - 1))
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == n


def test_a_joined_file_with_rows_over_several_lines_counts_rows_not_lines(real, tmp_path):
    """operator_details.csv's call stacks hold line breaks inside quoted cells."""
    src = real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/operator_details.csv"
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    od = rank / "ASCEND_PROFILER_OUTPUT" / "operator_details.csv"
    od.write_bytes(src.read_bytes() * 2)
    with open(src, newline="", encoding="utf-8") as f:
        rows = sum(1 for _ in csv.DictReader(f))
    assert src.read_bytes().count(b"\n") > rows + 1  # rows over several lines, as tested
    p = load_profile(rank)
    assert log_row(p, od)[2] == rows


def test_a_joined_file_whose_second_table_holds_a_wide_cell_is_counted(real, tmp_path):
    """A 200 KB cell (input shapes) after the second header: counted, not a reader's error."""
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    one = (real / L1 / "kernel_details.csv").read_bytes()
    lines = one.split(b"\r\n")
    cells = lines[1].split(b",")
    lines[1] = b",".join(cells[:-1] + [b'"' + b"4096;" * 40_000 + b'"'])
    kd.write_bytes(one + b"\r\n".join(lines))
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert log_row(load_profile(rank), kd)[1:3] == (n, n)


def test_a_copy_of_a_file_shorter_than_said_ends(tmp_path):
    """A file cut between its size being read and its copy: the copy ends at its end."""
    from npu_tui.profile.sources.csvfile import _copy

    f = tmp_path / "short.csv"
    f.write_bytes("a,b\r\r\n数,2\r\r\n".encode("gbk"))
    assert run_with_deadline(lambda: _copy(f, tmp_path / "out.csv", 100, True, True), 30) == (1, 0)
    assert (tmp_path / "out.csv").read_bytes().decode() == "a,b\r\n数,2\r\n"


def test_a_line_of_utf8_and_gbk_reads_each_as_written():
    """Chinese in UTF-8 beside a GBK path on one line: read whole as GBK, the UTF-8 would turn
    into other characters; read as UTF-8, the path into escapes. Each part is read as it is."""
    from npu_tui.profile.sources.base import other_locale

    line = "MatMul_算子,".encode() + "D:\\代码\\a.py".encode("gbk")
    assert other_locale(line) == ("MatMul_算子,D:\\代码\\a.py", False)
    assert other_locale("转换_0".encode("gbk")) == ("转换_0", False)  # GBK whole, though "转" reads as UTF-8
    assert other_locale(b"ab\xff,\x81") == ("ab\\xff,\\x81", True)


def test_rows_in_another_encoding_straddling_a_copys_blocks_read_whole(real, tmp_path, monkeypatch):
    """The copy that reads rows of another encoding goes a block at a time: a GBK name or a
    CR CR LF split across two blocks is read as one."""
    from npu_tui.profile.sources import csvfile

    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    text = (real / L1 / "kernel_details.csv").read_text(encoding="utf-8")
    name = text.splitlines()[1].split(",")[4]
    assert text.count(name) == 1
    kd.write_bytes(text.replace(name, "矩阵" + name).replace("\r\n", "\r\r\n").encode("gbk"))
    monkeypatch.setattr(csvfile, "COUNT_CHUNK", 7)
    p = load_profile(rank)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert log_row(p, kd)[1:] == (n, 0, "not UTF-8: 1 row with bytes of another encoding, read as GBK")
    assert p.con.execute("SELECT count(*) FROM kernels WHERE name = ?", ["矩阵" + name]).fetchone()[0] == 1


@pytest.mark.parametrize("guess", [True, False], ids=["starts-the-cell-above", "ends-on-a-delimiter"])
def test_a_last_row_cut_or_maybe_cut_makes_the_run_incomplete(real, tmp_path, guess):
    """Without a last line break, a last cell that is the start of the one above (``0`` under
    ``05``) may be cut right after it, or whole: left out, and said as the guess it is. A last row
    that ends on its delimiter is cut for certain. Either way what followed it is unknown (a
    memory_record.csv cut in half, ``NPU:`` under ``NPU:0``, had passed as whole but a warning,
    its peak from the half left): the run is incomplete."""
    from npu_tui.profile.sources.csvfile import MAYBE_CUT

    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    head, before, last = kd.read_bytes().rstrip(b"\r\n").rsplit(b"\r\n", 2)
    assert before.endswith(b",0") and last.endswith(b",0")
    kd.write_bytes(b"\r\n".join([head, before + b"5", last]) if guess else b"\r\n".join([head, before, last[:-1]]))
    p = load_profile(rank)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert log_row(p, kd)[1:3] == (n - 1, 1)
    (item,) = [i for i in health(p) if i.file.endswith("kernel_details.csv")]
    if guess:
        assert notes(p, "kernel_details") == [MAYBE_CUT] and item.severity == "error"
    else:
        assert notes(p, "kernel_details") == ["cut short: its last row is partial"] and item.severity == "error"


@pytest.mark.parametrize("pad", [b"\0", b"x"], ids=["zero bytes", "a long last line"])
def test_a_long_tail_without_a_line_break_is_read_once(real, tmp_path, monkeypatch, pad):
    """A file whose end was never written (zero bytes, or the disk filled mid-line): its tail is
    looked for a line break block by block, and the blocks were joined anew each time, so time
    grew with the square of the tail (128 MB took minutes). With blocks of 16 bytes, a 2 MB tail
    shows that at once. Zeros are not the file's (the next test): every row loads."""
    from npu_tui.profile.sources import base, csvfile

    monkeypatch.setattr(csvfile, "TAIL_BYTES", 16)
    monkeypatch.setattr(base, "ZERO_BLOCK", 16)
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    with open(kd, "ab") as f:
        f.write(pad * (2 << 20))
    p = run_with_deadline(lambda: load_profile(rank), 60)
    assert log_row(p, kd)[1:3] == (kernel_rows(real / L1 / "kernel_details.csv"), int(pad != b"\0"))


@pytest.mark.parametrize("name", ["kernel_details.csv", "trace_view.json"])
@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut"])
def test_zero_bytes_a_crash_left_at_the_end_are_not_read_and_are_said(real, tmp_path, monkeypatch, name, cut):
    """A machine that stops before a file's last blocks reach the disk leaves zero bytes where they
    were to be. What precedes them loads as it would alone: every row of a whole file, all but the
    row or event the zeros cut; and the zeros are said. A file of nothing else failed to load.
    A CSV that ends in them is not whole: rows show no end, and what was written there is lost.
    (Not read: a small whole trace was read as it was, zeros and all, and failed into the slow
    event-by-event salvage.)"""
    from npu_tui.profile.health import health
    from npu_tui.profile.sources import trace_view

    salvaged = []
    staged = trace_view.stage_trace
    monkeypatch.setattr(trace_view, "stage_trace", lambda *a, salvage=False, **k: (
        salvaged.append(salvage), staged(*a, salvage=salvage, **k))[1])

    def rank_with(data: bytes, where: Path) -> Tuple[Path, Path]:
        rank = small_rank(real, where)
        f = rank / "ASCEND_PROFILER_OUTPUT" / name
        f.write_bytes(data)
        return rank, f

    data = (real / L1 / name).read_bytes()
    if cut:
        data = data[:len(data) - 300]
    alone, f = rank_with(data, tmp_path / "alone" / "r_ascend_pt")
    padded, g = rank_with(data + b"\0" * 5000, tmp_path / "padded" / "r_ascend_pt")
    kind = name.split(".")[0]
    expected, got = load_profile(alone), load_profile(padded)
    assert log_row(got, g)[1:3] == log_row(expected, f)[1:3]
    assert log_row(got, g)[2] == int(cut)
    assert target_rows(got, kind, 0) == target_rows(expected, kind, 0)
    (item,) = [i for i in health(got) if i.file.endswith(name)]
    # Cut short, or rows that end at the zeros (what was written after them is lost, how much the
    # file cannot show): the run is incomplete. A trace that closes before them is whole: a warning.
    assert item.severity == ("error" if cut or name.endswith(".csv") else "warning") and "5,000 zero bytes" in item.what
    assert ("the rows written there are lost" in item.what) == (name.endswith(".csv") and not cut)
    assert ("cut short" in item.what) == cut
    assert not any(salvaged)
    nothing, h = rank_with(b"\0" * 5000, tmp_path / "nothing" / "r_ascend_pt")
    (item,) = [i for i in health(load_profile(nothing)) if i.file.endswith(name)]
    assert item.severity == "error" and item.what.startswith(f"{name} holds only zero bytes")


@pytest.mark.parametrize("header, says", [
    (lambda cols: cols[:2] + [cols[1]] + cols[3:], "'{1}' named twice"),
    (lambda cols: cols[:2] + [""] + cols[3:], "column 3 has no name"),
], ids=["a column twice", "a column without a name"])
def test_a_header_that_cannot_name_its_columns_says_which(real, tmp_path, header, says):
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    first, rest = kd.read_text(encoding="utf-8").split("\n", 1)
    cols = first.split(",")
    kd.write_text(",".join(header(cols)) + "\n" + rest, encoding="utf-8")
    p = load_profile(rank)
    assert log_row(p, kd)[1] == 0
    assert notes(p, "kernel_details") == ["unreadable CSV header: " + says.format(*cols)]


@pytest.mark.parametrize("edit", [
    lambda rows: [r + ["", ""] for r in rows],
    lambda rows: [[""] + rows[0]] + [[str(i)] + r for i, r in enumerate(rows[1:])],
    lambda rows: [rows[0] + [""], []] + [r + [""] for r in rows[1:]],
    lambda rows: [rows[0] + [""], rows[1][:-1] + [rows[1][-1] + " " * 70_000, ""]] + [r + [""] for r in rows[2:]],
], ids=["a spreadsheet's empty columns after", "pandas' index before", "a blank line after the header",
        "a first row longer than the head"])
def test_columns_without_a_name_at_either_end_load_aside(real, tmp_path, edit):
    """A table saved again with unnamed columns added around it loads every row, as before the
    edit; they had failed the file as damaged ("column 47 has no name")."""
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows, end = _csv_rows(kd.read_bytes())
    kd.write_bytes(_csv_bytes(edit(rows), end))
    p = load_profile(rank)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert log_row(p, kd)[1:] == (n, 0, "")
    want = load_profile(small_rank(real, tmp_path / "intact_ascend_pt"))
    sql = "SELECT count(*), sum(dur_ns), count(DISTINCT type), sum(hash(input_shapes)) FROM kernels"
    assert p.con.execute(sql).fetchone() == want.con.execute(sql).fetchone()


def test_a_header_with_a_column_its_rows_lack_is_damaged(real, tmp_path):
    """A name lost from the header's end, or a comma added to it alone: the rows have no such
    cell, so no column was added around the table; the header is said, not each row as cut."""
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    first, rest = kd.read_bytes().split(b"\n", 1)
    kd.write_bytes(first.rstrip(b"\r") + b",\r\n" + rest)
    p = load_profile(rank)
    n = len(first.split(b","))
    assert log_row(p, kd)[1] == 0
    assert notes(p, "kernel_details") == [f"unreadable CSV header: column {n + 1} has no name"]


@pytest.mark.parametrize("delimiter, says", [(";", "semicolons"), ("\t", "TABs")])
def test_a_table_delimited_by_another_character_says_so(real, tmp_path, delimiter, says):
    """Excel saves CSV with semicolons where the locale's list separator is one: the header had
    read as one column, said as "no Name / Start Time(us) ..." and a damaged file."""
    from npu_tui.profile.health import health

    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows, end = _csv_rows(kd.read_bytes())
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator=end).writerows(rows)
    kd.write_text(out.getvalue(), encoding="utf-8")
    p = load_profile(rank)
    (item,) = [i for i in health(p) if i.file == str(kd)]
    assert item.severity == "error" and f"delimited by {says}" in item.what and "commas" in item.fix


def test_the_advisor_fixture_without_a_final_line_break_loads_every_row(real):
    path = real / "mstt-advisor-fixtures/ut/advisor/compute_advice/data/kernel_details.csv"
    assert not path.read_bytes().endswith((b"\n", b"\r"))
    p = load_profile(path)
    assert log_row(p, path)[1:3] == (kernel_rows(path), 0) == (29, 0)


def test_numbers_a_spreadsheet_grouped_in_thousands_load_as_they_were(real, tmp_path):
    """Durations and starts written "79,089.52" and "1,736,412,474,757,059.800" (quoted): four
    allReduce rows, 92 % of the rank's device time, had been skipped as not numbers. A cell that
    could be a decimal comma ("53,741": 53.741 where the comma is the decimal mark) stays skipped."""
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows, end = _csv_rows(kd.read_bytes())
    original = [r[:] for r in rows]
    start, dur = rows[0].index("Start Time(us)"), rows[0].index("Duration(us)")
    for r in rows[1:]:
        whole, _, frac = r[start].strip().partition(".")
        r[start] = f"{int(whole):,}.{frac or '0'}"
        r[dur] = f"{float(r[dur]):,}"
    assert any(float(r[dur].replace(",", "")) >= 1000 for r in rows[1:])
    ambiguous = next(i for i, r in enumerate(rows) if i and "." in r[dur] and float(r[dur].replace(",", "")) < 1000)
    rows[ambiguous][dur] = rows[ambiguous][dur].replace(".", ",")  # 53,741
    kd.write_bytes(_csv_bytes(rows, end))
    n = kernel_rows(real / L1 / "kernel_details.csv")
    p, intact = load_profile(rank), load_profile(small_rank(real, tmp_path / "intact_ascend_pt"))
    assert log_row(p, kd)[1:3] == (n - 1, 1)
    sql = "SELECT start_ns, dur_ns FROM kernels"
    got, want = Counter(p.con.execute(sql).fetchall()), Counter(intact.con.execute(sql).fetchall())
    skipped = tuple(int(Decimal(original[ambiguous][c].strip()) * 1000) for c in (start, dur))
    assert want - got == Counter([skipped]) and not got - want
    # A count is never a decimal: grouped, it is one (op_statistic's Count, "1,234").
    assert p.con.execute("SELECT int_or_null('1,234'), num('1,234'), num('1,234,567'), num('12,34.5')").fetchone() == (
        1234, None, 1234567.0, None)


def test_nan_inf_negative_durations_never_become_kernels(real, tmp_path):
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows, end = _csv_rows(kd.read_bytes())
    dur = rows[0].index("Duration(us)")
    for i, bad in enumerate(["NaN", "inf", "-inf", "-0.5", "1e999"], start=1):
        rows[i][dur] = bad
    kd.write_bytes(_csv_bytes(rows, end))
    p = load_profile(rank)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert log_row(p, kd)[1:3] == (n - 5, 5)
    assert p.con.execute("SELECT count(*), min(dur_ns) >= 0 FROM kernels").fetchone() == (n - 5, True)

    # The same in a trace_view.json, on the Ascend Hardware process where kernels come from.
    tv = copy(FIXTURES / "bare_trace" / "trace_view.json", tmp_path / "tv" / "trace_view.json")
    events = json.loads(tv.read_text())
    hw = next(e["pid"] for e in events
              if e.get("ph") == "M" and e.get("args", {}).get("name") == "Ascend Hardware")
    bad = [b'{"ph": "X", "name": "aclnnMm_MatMulCommon_MatMulV2", "pid": %s, "tid": 1, "ts": "%s", '
           b'"dur": %s, "args": {"Task Type": "AI_CORE"}}' % (json.dumps(hw).encode(), b"1000.0", d)
           for d in (b"NaN", b"Infinity", b"-Infinity", b"-3.5", b'"-1"', b"1e400")]
    data = tv.read_bytes()
    i = _trace_insert_at(data)
    tv.write_bytes(data[:i] + b", ".join(bad) + b", " + data[i:])
    before = load_profile(FIXTURES / "bare_trace" / "trace_view.json")
    p = load_profile(tv)
    assert log_row(p, tv)[2] == 6
    q = "SELECT count(*), min(dur_ns) FROM kernels"
    assert p.con.execute(q).fetchone() == before.con.execute(q).fetchone()
    assert p.con.execute("SELECT count(*) FROM kernels WHERE start_ns = 1000000").fetchone()[0] == 0


def run_with_deadline(fn, seconds: float):
    """fn() in a thread; fails the test instead of hanging it."""
    import threading
    out: Dict[str, object] = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as e:  # handed back to the test below
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_symlink_loops_do_not_hang_discovery(real, tmp_path):
    run = tmp_path / "run"
    rank = small_rank(real, run / "node_1_ascend_pt")
    (rank / "loop").symlink_to(rank)                  # a folder link pointing at its own folder
    (rank / "ASCEND_PROFILER_OUTPUT" / "up").symlink_to(run)  # and one at its grandparent
    (run / "self").symlink_to(run)
    p = run_with_deadline(lambda: load_profile(run), 30)
    assert p.ranks == [0]
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == n
    # Two folders linked to each other: a loop of two links, each rank found once.
    pair = tmp_path / "pair"
    small_rank(real, pair / "y" / "r_ascend_pt")
    (pair / "x").mkdir()
    (pair / "x" / "to_y").symlink_to(pair / "y")
    (pair / "y" / "to_x").symlink_to(pair / "x")
    with pytest.raises(ProfileError) as e:
        run_with_deadline(lambda: load_profile(pair), 30)
    assert e.value.candidates == [pair / "y"]
    # A folder holding nothing but loops is no profile, said in one line.
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a").symlink_to(empty)
    with pytest.raises(ProfileError) as e:
        run_with_deadline(lambda: load_profile(empty), 30)
    assert "\n" not in str(e.value)


def test_unreadable_file_is_reported_with_the_os_reason(real, tmp_path, monkeypatch):
    """Tests run as root, where chmod 000 does not stop reads, so open() is made to refuse this one
    file as it would for another user; the loader must log the OS error, not call the file empty."""
    import builtins
    rank = small_rank(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):
        if Path(file) == kd:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    p = load_profile(rank)
    _, rows, _, note = log_row(p, kd)
    assert rows == 0 and "Permission denied" in note and "\n" not in note
    assert log_row(p, rank / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")[1] == 1


def _refuse_folder(monkeypatch, folder: Path, listed: bool = False) -> None:
    """As chmod 000 on ``folder`` does for a user other than root (tests run as root): it cannot
    be listed, and nothing inside it can be looked at or opened. ``listed``: as chmod 644 does (read
    permission without search permission, `chmod -R 644` on folders): its names are listed, and
    nothing inside it can be looked at or opened all the same."""
    import builtins

    def guarded(real, inside_only=False):
        def call(p, *args, **kwargs):
            q = Path(os.fsdecode(p)) if isinstance(p, (str, bytes, os.PathLike)) else None
            if q is not None and (folder in q.parents or (not inside_only and q == folder)):
                raise PermissionError(13, "Permission denied", str(q))
            return real(p, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "listdir", guarded(os.listdir, inside_only=listed))
    monkeypatch.setattr(os, "scandir", guarded(os.scandir, inside_only=listed))
    monkeypatch.setattr(os, "stat", guarded(os.stat, inside_only=True))
    monkeypatch.setattr(os, "lstat", guarded(os.lstat, inside_only=True))
    monkeypatch.setattr(builtins, "open", guarded(builtins.open, inside_only=True))


DEMO_RANK = "diffusion-node_3096504_20250109074803704_ascend_pt"


@pytest.mark.parametrize("hidden,says,complete", [
    (f"{DEMO_RANK}/ASCEND_PROFILER_OUTPUT", "cannot be read (Permission denied): left out", False),
    (DEMO_RANK, "cannot be read (Permission denied): left out", False),
    ("private", "private/ was not searched: it cannot be read (Permission denied)", True),
], ids=["output-folder", "rank-folder", "folder-beside"])
@pytest.mark.parametrize("listed", [False, True], ids=["chmod 000", "chmod 644"])
def test_a_folder_that_cannot_be_read_is_said_not_passed_over(tmp_path, monkeypatch, capsys, hidden, says, complete,
                                                              listed):
    """Listed but not searchable (644), a rank folder's files had read as missing, each said as a
    file to copy, and the run as complete."""
    from npu_tui.cli import main
    from npu_tui.demo import PATH as DEMO

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    profile = tmp_path / "job"
    shutil.copytree(DEMO, profile)
    (profile / hidden).mkdir(exist_ok=True)
    (profile / hidden / "notes.txt").write_text("kept")
    _refuse_folder(monkeypatch, profile / hidden, listed)
    code = main(["report", str(profile), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is complete and code == (0 if complete else 2)
    (item,) = [h for h in doc["health"] if says in h["what"]]
    assert item["severity"] == ("warning" if complete else "error")
    # The readable rank loads whole either way.
    kernels = {r["rank"]: r["kernel_count"] for r in doc["ranks"]}
    assert kernels[1] == 930 and (complete or 0 not in kernels)


@pytest.mark.parametrize("where", ["device", "timeline"])
def test_an_msprof_device_that_cannot_be_read_is_left_out_and_said(real, tmp_path, monkeypatch, where):
    job = tmp_path / "job"
    shutil.copytree(real / "mindinsight-msprof-2dev-hccl", job)
    device = job / Path(MSPROF).relative_to("mindinsight-msprof-2dev-hccl")
    hidden = device if where == "device" else device / "timeline"
    _refuse_folder(monkeypatch, hidden)
    p = load_profile(job)
    from npu_tui.profile.health import health

    (item,) = [h for h in health(p) if h.severity == "error"]
    assert item.file == str(hidden) and "cannot be read (Permission denied)" in item.what


def test_a_folder_nothing_is_read_from_is_a_warning_however_deep(real, tmp_path, monkeypatch):
    """A folder of Kineto traces is read for its files alone: a sub-folder it holds was never
    searched, readable or not."""
    from npu_tui.profile.health import health

    for rank in (0, 1):
        shutil.copy(real / KINETO / f"sampled_rank-{rank}.json.gz", tmp_path / f"r{rank}.json.gz")
    (tmp_path / "private" / "deeper").mkdir(parents=True)
    _refuse_folder(monkeypatch, tmp_path / "private")
    p = load_profile(tmp_path)
    assert p.ranks == [0, 1]
    (item,) = [h for h in health(p) if "private" in h.file]
    assert item.severity == "warning" and item.file == str(tmp_path / "private")


@pytest.mark.parametrize("listed", [False, True], ids=["chmod 000", "chmod 644"])
def test_a_profile_folder_that_cannot_be_read_is_one_line(tmp_path, monkeypatch, listed):
    (tmp_path / "r_ascend_pt").mkdir()
    _refuse_folder(monkeypatch, tmp_path, listed)
    with pytest.raises(ProfileError, match="cannot be read \\(Permission denied\\)"):
        load_profile(tmp_path)
    from npu_tui.session import Session

    with pytest.raises(ProfileError, match="cannot be read"):
        Session.load(tmp_path / "inside" / "ASCEND_PROFILER_OUTPUT")


def _not_a_file(path: Path, make: str, tmp_path: Path) -> None:
    if make == "fifo":
        os.mkfifo(path)  # opening it would block until a writer comes: it must never be opened
    elif make == "folder":
        path.mkdir()
    elif make == "link_loop":
        path.symlink_to(path.name)  # a link to itself
    else:
        path.symlink_to(tmp_path / "gone.json")


NOT_A_FILE = {"fifo": "a named pipe", "folder": "a folder", "dangling_link": "a link to nothing",
              "link_loop": "a link in a loop"}
WHY = {"dangling_link": " (its target is gone)", "link_loop": " (it leads back to itself)"}


@pytest.mark.parametrize("make", ["fifo", "folder", "dangling_link", "link_loop"])
def test_entries_named_like_files_but_not_files_do_not_hang_and_are_said(real, tmp_path, make):
    """Never opened, and never passed over in silence: the file the user meant to load is not
    there to read, so the run is incomplete (the report exits 2), as for a file that gave nothing."""
    from npu_tui.profile.health import failed, health

    rank = small_rank(real, tmp_path / "r_ascend_pt")
    odd = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    _not_a_file(odd, make, tmp_path)
    (rank / "ASCEND_PROFILER_OUTPUT" / "notes.d").mkdir()  # a folder by no profiler file's name
    p = run_with_deadline(lambda: load_profile(rank), 30)
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == n
    (item,) = failed(health(p))
    assert item.rank == 0
    assert item.what == (f"ASCEND_PROFILER_OUTPUT/trace_view.json is {NOT_A_FILE[make]}{WHY.get(make, '')}"
                         ", not a file: left out")


def test_an_entry_that_is_not_a_file_where_nothing_is_loaded_from_is_not_said(real, tmp_path):
    """Discovery looks into every folder beside the ranks; a dangling link in one it loads nothing
    from (notes, a backup) is not the run's."""
    from npu_tui.profile.health import health

    small_rank(real, tmp_path / "job" / "r_ascend_pt")
    (tmp_path / "job" / "notes").mkdir()
    _not_a_file(tmp_path / "job" / "notes" / "kernel_details.csv", "dangling_link", tmp_path)
    p = load_profile(tmp_path / "job")
    assert not [h for h in health(p) if "not a file" in h.what]


@pytest.mark.parametrize("make", ["fifo", "folder", "dangling_link"])
def test_a_folder_whose_only_profiler_file_is_not_a_file_says_so(tmp_path, make):
    _not_a_file(tmp_path / "kernel_details.csv", make, tmp_path)
    with pytest.raises(ProfileError, match=f"no profiler file here could be read "
                                           f"\\(kernel_details.csv is {NOT_A_FILE[make]}"):
        run_with_deadline(lambda: load_profile(tmp_path), 30)
    if make == "fifo":
        with pytest.raises(ProfileError, match="a named pipe, not a profiler file or folder"):
            run_with_deadline(lambda: load_profile(tmp_path / "kernel_details.csv"), 30)


def test_profile_still_being_written(real, tmp_path):
    """No profiler_info yet and trace_view.json cut mid-event: the complete events load, and both
    problems are said."""
    rank = tmp_path / "node_1_20250101000000000_ascend_pt"
    tv = copy(FIXTURES / "bare_trace" / "trace_view.json",
              rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    data = tv.read_bytes()
    tv.write_bytes(data[: len(data) * 2 // 3])
    p = load_profile(rank)
    assert p.ranks == [0]
    (note,) = notes(p, "trace_view")
    assert "cut short" in note
    (info,) = notes(p, "discovery")
    assert "no profiler_info.json" in info
    events = json.loads(data)
    kept = p.con.execute("SELECT count(*) FROM kernels").fetchone()[0]
    assert 0 < kept < sum(1 for e in events if e.get("ph") == "X")


def test_a_rank_claimed_twice_is_loaded_once_and_the_other_said(real, tmp_path):
    """A second folder of rank 0 (copied, or a job run twice into one folder) is another run's: given
    a number of its own, it took the id of a rank the job's communication data names, and counted in
    every cross-rank comparison. What discovery said inside it goes with it."""
    run = tmp_path / "run"
    small_rank(real, run / "a_ascend_pt", info=0)
    small_rank(real, run / "b_ascend_pt", info=0)
    c = small_rank(real, run / "c_ascend_pt", info=None)  # no profiler_info: the first free rank
    kd = c / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"  # (another rank's: not a's rows, one fewer)
    kd.write_text("".join(kd.read_text(encoding="utf-8").splitlines(keepends=True)[:-1]), encoding="utf-8")
    (run / "b_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").mkdir()  # "not a file", of b only
    p = load_profile(run)
    assert p.ranks == [0, 1]
    assert p.con.execute("SELECT rank, parse_filename(path) FROM ranks ORDER BY rank").fetchall() == [
        (0, "a_ascend_pt"), (1, "c_ascend_pt")]
    assert p.con.execute("SELECT rank, parse_filename(file), note FROM load_log WHERE kind = 'discovery' ORDER BY file"
                         ).fetchall() == [(None, "b_ascend_pt", "rank 0 claimed twice, by a_ascend_pt too: not loaded"),
                                          (1, "c_ascend_pt", NO_INFO)]
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank ORDER BY rank").fetchall() == [
        (0, n), (1, n - 1)]


def test_a_copy_of_a_rank_folder_without_its_profiler_info_is_said_not_loaded_as_a_rank(real, tmp_path):
    """A rank folder copied under another name, its profiler_info left behind: given the first free
    rank, its rows counted as another rank's in every cross-rank figure. Its files are a's byte for
    byte: said as a copy, not loaded. A folder of its own rows without profiler_info still loads."""
    run = tmp_path / "run"
    small_rank(real, run / "a_ascend_pt", info=0)
    small_rank(real, run / "zz_ascend_pt", info=None)
    p = load_profile(run)
    assert p.ranks == [0]
    (item,) = [h for h in health(p) if "zz_ascend_pt" in (h.file or "")]
    assert item.severity == "info" and item.what.startswith("zz_ascend_pt: a copy of a_ascend_pt beside it")
    n = kernel_rows(real / L1 / "kernel_details.csv")
    assert p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank").fetchall() == [(0, n)]


def test_of_a_job_run_twice_the_later_run_is_kept_whole(real, tmp_path):
    """Folders named host_pid_time: run 1 put rank 0 on node A and rank 1 on node C, run 2 rank 0
    on node B and rank 1 on node A. By name, rank 0 came from run 1 and rank 1 from run 2, and the
    cross-rank figures compared two runs; by when each rank's run ended, both are run 2's."""
    run = tmp_path / "run"
    for name, rank, ended in (("nodeA_100_ascend_pt", 0, 1_000), ("nodeC_100_ascend_pt", 1, 1_001),
                              ("nodeB_200_ascend_pt", 0, 2_000), ("nodeA_200_ascend_pt", 1, 2_001)):
        folder = small_rank(real, run / name, info=None)
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps(
            {"rank_id": rank, "end_info": {"collectionTimeEnd": ended}}))
    p = load_profile(run)
    assert p.con.execute("SELECT rank, parse_filename(path) FROM ranks ORDER BY rank").fetchall() == [
        (0, "nodeB_200_ascend_pt"), (1, "nodeA_200_ascend_pt")]
    notes = p.con.execute("SELECT parse_filename(file), note FROM load_log WHERE note LIKE '%claimed%' ORDER BY file")
    assert notes.fetchall() == [
        ("nodeA_100_ascend_pt", "rank 0 claimed twice, by nodeB_200_ascend_pt too, whose run ended later: not loaded"),
        ("nodeC_100_ascend_pt", "rank 1 claimed twice, by nodeA_200_ascend_pt too, whose run ended later: not loaded")]


@pytest.mark.parametrize("rank_id, said", [
    ('"1"', None), ('" 1 "', None),  # a number written as text: the number
    ('"one"', 'rank_id "one" is not a rank number'), ("1.5", "rank_id 1.5 is not a rank number"),
    ("true", "rank_id true is not a rank number"), ("[1]", "rank_id [1] is not a rank number")])
def test_a_rank_id_that_is_not_a_number_is_said(real, tmp_path, rank_id, said):
    """profiler_info.json (no rank in its name) with a rank_id that is no integer: the folder order
    gave a rank without a word, and swapped two ranks (a's "1" and b's "0" became 0 and 1)."""
    run = tmp_path / "run"
    a = small_rank(real, run / "a_ascend_pt", info=None)
    b = small_rank(real, run / "b_ascend_pt", info=None)
    (a / "profiler_info.json").write_text('{"rank_id": %s}' % rank_id)
    (b / "profiler_info.json").write_text('{"rank_id": "0"}')
    p = load_profile(run)
    got = dict(p.con.execute("SELECT parse_filename(path), rank FROM ranks").fetchall())
    assert got == {"a_ascend_pt": 1, "b_ascend_pt": 0}
    notes = [n for (n,) in p.con.execute("SELECT note FROM load_log WHERE kind = 'discovery'").fetchall()]
    assert notes == ([f"{said}; its rank is taken from the first rank no other folder claims"] if said else [])


@pytest.mark.parametrize("rank_id, said", [
    ("1", None), ('"1"', None), ("-1", None),  # the same rank, as text too; -1: no rank stated
    ("0", "its name says rank 1, its rank_id 0: the rank is taken from its name (a file renamed, or edited?)")])
def test_a_rank_id_other_than_the_profiler_info_files_name_is_said(real, tmp_path, rank_id, said):
    """profiler_info_1.json saying rank_id 0 (one of the two changed by hand): rank 1 by its name,
    as before, and no longer without a word."""
    a = small_rank(real, tmp_path / "a_ascend_pt", info=None)
    (a / "profiler_info_1.json").write_text('{"rank_id": %s}' % rank_id)
    p = load_profile(a)
    assert p.ranks == [1]
    notes = [n for (n,) in p.con.execute("SELECT note FROM load_log WHERE kind = 'discovery'").fetchall()]
    assert notes == ([said] if said else [])


def test_runs_of_one_process_side_by_side_are_said(real, tmp_path):
    """rank_id -1 is torch_npu's run of one process: two such folders in one are two runs, loaded
    as ranks 0 and 1 of one job without a word. One alone is just that run."""
    run = tmp_path / "run"
    for name, rank_id in (("a_ascend_pt", "-1"), ("b_ascend_pt", '"-1"')):  # the second as text
        (small_rank(real, run / name, info=None) / "profiler_info.json").write_text('{"rank_id": %s}' % rank_id)
    p = load_profile(run)
    assert p.ranks == [0, 1]
    said = [(i.severity, i.what) for i in health(p) if "distributed" in i.what]
    assert said == [("warning", f"run/{n}: not a distributed run (rank_id -1): 2 folders here say so, separate "
                                "runs loaded side by side as ranks in folder order, none compared with the others")
                    for n in ("a_ascend_pt", "b_ascend_pt")]
    assert not [i for i in health(load_profile(run / "a_ascend_pt")) if "distributed" in i.what]


def test_rank_folders_below_the_others_are_said(real, tmp_path):
    """A rank folder in a node's folder beside the others, or copied into one of them (`cp -r`
    into a folder that exists): passed over without a word, the job looked whole without it."""
    run = tmp_path / "run"
    small_rank(real, run / "a_ascend_pt", info=0)
    small_rank(real, run / "node2" / "b_ascend_pt", info=1)
    small_rank(real, run / "a_ascend_pt" / "c_ascend_pt", info=2)
    (run / "a_ascend_pt" / "loop_ascend_pt").symlink_to("..")  # a loop: the same folders, not more
    below = "a rank folder below the others, not loaded"
    for opened, said in ((run, ["node2/b_ascend_pt", "a_ascend_pt/c_ascend_pt"]),
                         (run / "a_ascend_pt", ["a_ascend_pt/c_ascend_pt"])):
        p = load_profile(opened)
        assert p.ranks == [0]
        items = [(i.severity, i.what) for i in health(p) if below in i.what]
        assert sorted(items) == sorted(("warning", f"{folder}: {below}") for folder in said)
    assert discover(run / "node2").ranks[0].rank == 1  # each opens on its own


def test_msprof_and_trace_folders_below_the_others_are_said(real, tmp_path):
    """A device's PROF_* folder, or a rank's traces, in a folder beside the others: its rank was
    gone from a report that said nothing (a Kineto job only said to copy the ranks' folders)."""
    from npu_tui.profile.health import health

    prof = real / "mindinsight-msprof-2dev-hccl"
    first, second = sorted(prof.glob("PROF_*"))
    shutil.copytree(first, tmp_path / "msprof" / first.name)
    shutil.copytree(second, tmp_path / "msprof" / "later" / second.name)
    for r, where in ((0, tmp_path / "traces"), (1, tmp_path / "traces" / "sub")):
        where.mkdir(parents=True, exist_ok=True)
        shutil.copy(real / KINETO / f"sampled_rank-{r}.json.gz", where)
    for opened, folder, said in (("msprof", f"later/{second.name}", "a rank folder below the others"),
                                 ("traces", "traces/sub", "profiler files in a folder below the others")):
        p = load_profile(tmp_path / opened)
        assert p.ranks == [0]
        items = [(i.severity, i.what) for i in health(p) if "below the others" in i.what]
        assert items == [("warning", f"{folder}: {said}, not loaded")]
    assert not [i for i in health(load_profile(prof)) if "below" in i.what]
    assert not [i for i in health(load_profile(real / KINETO)) if "below" in i.what]


def test_ranks_that_disagree_on_the_world_size_are_said(real, tmp_path):
    """Two traces whose distributedInfo give two jobs' sizes: the larger had been taken for the
    job's, the other passed over."""
    from npu_tui.profile.health import health

    shutil.copy(real / KINETO / "sampled_rank-0.json.gz", tmp_path)
    one = gzip.decompress((real / KINETO / "sampled_rank-1.json.gz").read_bytes())
    assert b'"rank": 1, "world_size": 128' in one
    (tmp_path / "sampled_rank-1.json.gz").write_bytes(gzip.compress(one.replace(b'"world_size": 128', b'"world_size": 2')))
    said = [(i.severity, i.what) for i in health(load_profile(tmp_path)) if "world size" in i.what and "disagree" in i.what]
    assert said == [("warning", "the ranks disagree on the job's world size (rank 1 says 2; rank 0 says 128): traces of "
                                "more than one job?")]
    assert not [i for i in health(load_profile(real / KINETO)) if "disagree" in i.what]


def test_node_folders_of_one_job_open_as_one(real, tmp_path):
    """A job run on two machines, gathered a folder per node (nodes/node1/rank…, nodes/node2/rank…),
    is one job when every rank states its id and none twice. The runs of one job side by side (a
    rank 0 in each), or ranks without an id, stay separate profiles to pick from."""
    nodes = tmp_path / "nodes"
    for node, names in (("node1", "ab"), ("node2", "cd")):
        for name in names:
            small_rank(real, nodes / node / f"{name}_ascend_pt", info="abcd".index(name))
    small_rank(real, nodes / "node2" / "d_ascend_pt" / "e_ascend_pt", info=4)
    shutil.copytree(real / "mstt-advisor-fixtures/resource/advisor/cluster_analysis_output",
                    nodes / "node1" / "cluster_analysis_output")
    p = load_profile(nodes)
    assert p.layout == "cluster"
    got = dict(p.con.execute("SELECT parse_filename(path), rank FROM ranks").fetchall())
    assert got == {"a_ascend_pt": 0, "b_ascend_pt": 1, "c_ascend_pt": 2, "d_ascend_pt": 3}
    rows = kernel_rows(real / L1 / "kernel_details.csv")
    assert p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank ORDER BY rank").fetchall() == [
        (r, rows) for r in range(4)]
    said = [(i.severity, i.what) for i in health(p)]
    assert said == [("warning", "node1/cluster_analysis_output: msprof-analyze's outputs of one node's ranks, "
                                "not loaded: they are not the job's"),
                    ("warning", "d_ascend_pt/e_ascend_pt: a rank folder below the others, not loaded")]
    assert p.con.execute("SELECT count(*) FROM cluster_step_trace").fetchone()[0] == 0

    runs = tmp_path / "runs"
    for run in ("r1", "r2"):
        for rank, name in enumerate("ab"):
            small_rank(real, runs / run / f"{name}_ascend_pt", info=rank)
    small_rank(real, tmp_path / "unnamed" / "n1" / "a_ascend_pt", info=0)
    small_rank(real, tmp_path / "unnamed" / "n2" / "b_ascend_pt", info=None)
    # Folders of rank folders at different depths are not a job's nodes side by side.
    small_rank(real, tmp_path / "uneven" / "n1" / "a_ascend_pt", info=0)
    small_rank(real, tmp_path / "uneven" / "n2" / "deeper" / "b_ascend_pt", info=1)
    with pytest.raises(ProfileError, match="profiles were found under"):
        load_profile(tmp_path / "uneven")
    for folder, why in ((runs, "rank 0 is in both r1/a_ascend_pt and r2/a_ascend_pt"),
                        (tmp_path / "unnamed", "n2/b_ascend_pt states no rank id")):
        with pytest.raises(ProfileError, match="profiles were found under") as e:
            load_profile(folder)
        assert str(e.value).endswith(f" (not one job: {why})")


def test_folder_that_changes_between_discovery_and_load(real, tmp_path):
    run = tmp_path / "run"
    r0 = small_rank(real, run / "a_ascend_pt", info=0)
    r1 = small_rank(real, run / "b_ascend_pt", info=1)
    disc = discover(run)
    kd0 = r0 / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    kd0.unlink()                                                     # deleted
    st1 = r1 / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    with open(st1, "ab") as f:                                       # grown
        f.write(b"51,1.0,2.0,3.0,4.0,5.0,6.0,0,2.0,0\r\n")
    p = load_discovered(disc)
    _, rows, _, note = log_row(p, kd0)
    assert rows == 0 and "No such file" in note and "\n" not in note
    assert p.con.execute("SELECT rank, step FROM step_trace ORDER BY rank, step").fetchall() == [
        (0, 50), (1, 50), (1, 51)]
    assert p.con.execute("SELECT DISTINCT rank FROM kernels").fetchall() == [(1,)]

    # Every file gone by the time it is read: one line saying nothing could be loaded.
    disc = discover(run)
    shutil.rmtree(r0)
    shutil.rmtree(r1)
    with pytest.raises(ProfileError) as e:
        load_discovered(disc)
    assert "\n" not in str(e.value) and "nothing could be loaded" in str(e.value)


def test_a_file_that_says_it_is_empty_is_not_opened_to_be_classified(tmp_path, monkeypatch):
    """Files of /proc and /sys say they are empty, and reading some of them waits for ever
    (`npu-tui report /proc` hung): discovery looks only at what a file says it holds."""
    from npu_tui.profile import discover as discovery

    (tmp_path / "kmsg").write_bytes(b"")
    (tmp_path / "notes.csv").write_bytes(b"a,b\n1,2\n")
    read = []
    real_read_head = discovery.read_head
    monkeypatch.setattr(discovery, "read_head", lambda path, *a: read.append(path.name) or real_read_head(path, *a))
    with pytest.raises(ProfileError):
        discover(tmp_path)
    assert "notes.csv" in read and "kmsg" not in read


def test_a_working_folder_removed_under_the_shell_is_said(tmp_path, monkeypatch, capsys):
    """`npu-tui report .` in a folder removed since the shell entered it (a new run re-creating
    prof_out) had been a traceback from resolving the path."""
    from npu_tui.cli import main

    gone = tmp_path / "prof_out"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    for path in (".", "../elsewhere"):
        assert main(["report", path]) == 2
        assert "the working folder no longer exists" in capsys.readouterr().err


def test_without_a_home_the_report_runs_without_a_cache_and_the_console_without_its_files(monkeypatch, capsys):
    """A user id the system does not know (a container's -u 12345) and no HOME: Path.home() fails.
    The report had been a traceback; the cache is not needed for one, nor files for the console's
    history and saved queries, kept for the session instead."""
    import pwd

    from npu_tui.cli import main
    from npu_tui.query.history import History
    from npu_tui.query.saved import SavedQueries

    for name in ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "NPU_TUI_CACHE_DIR", "NPU_TUI_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)

    def unknown(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", unknown)
    assert main(["report", str(ROOT / "npu_tui" / "demo" / "diffusion_demo"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["complete"] is True
    history, saved = History(), SavedQueries()
    history.add("SELECT 1", True, 1)
    with pytest.raises(OSError, match="no home folder"):  # the console says it is kept for the session
        saved.save("one", "SELECT 1")
    assert [e.sql for e in history.entries] == ["SELECT 1"] and saved.queries == {"one": "SELECT 1"}
    assert history.path is None and "no home folder" in history.unsaved


def _refusing(monkeypatch, refused: Path) -> None:
    """open() of ``refused`` fails as without read permission (the tests run as root, whom a
    chmod 000 does not stop)."""
    import builtins

    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file) == refused:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)


@pytest.mark.parametrize("how", ["unreadable", "a pipe"])
def test_a_trace_named_as_its_maker_liked_that_cannot_be_read_is_said(real, tmp_path, monkeypatch, how):
    """Kineto traces under names of the user's own (HTA's sampled_rank-N.json.gz): one that cannot
    be read had been passed over without a word, its rank gone and the report exit 0. Named as
    the traces beside it, it is taken for one, its rank's load failed (a pipe is no file, so said
    as one that may be a trace): either way the run is incomplete."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for n in (0, 1):
        shutil.copy(real / KINETO / f"sampled_rank-{n}.json.gz", runs)
    lost = runs / "sampled_rank-1.json.gz"
    if how == "a pipe":
        lost.unlink()
        os.mkfifo(lost)
    else:
        _refusing(monkeypatch, lost)
    p = load_profile(runs)
    (item,) = [i for i in health(p) if i.severity == "error"]
    assert item.file == str(lost) and p.ranks == ([0, 1] if how == "unreadable" else [0])
    assert ("sampled_rank-1.json.gz cannot be read (permission denied)" in item.what
            if how == "unreadable" else "is a named pipe, not a file" in item.what)


def test_an_msprof_split_that_cannot_be_read_is_said(real, tmp_path, monkeypatch):
    """An msprof iteration without its merged msprof_*.json loads from its splits (task_time_*,
    hccl_*): a split that could not be read had been passed over, its tasks gone without a word."""
    prof = tmp_path / "PROF_000001_20230818142704567_GQFAMHBKGODKJMLA"
    shutil.copytree(real / "mindinsight-msprof-2dev-hccl" / prof.name, prof)
    (prof / "device_1" / "timeline" / "msprof_1_0_1.json").unlink()
    lost = prof / "device_1" / "timeline" / "hccl_1_0_1.json"
    _refusing(monkeypatch, lost)
    items = [i for i in health(load_profile(prof)) if i.severity == "error"]
    assert [(i.file, "cannot be read (permission denied)" in i.what) for i in items] == [(str(lost), True)]


def test_a_folder_beside_the_ranks_not_searched_keeps_the_cache_until_it_is_readable(tmp_path, monkeypatch):
    """A folder beside the ranks that cannot be read (another user's, lost+found) had kept the
    cache off for good: every open a cold load. It is cached with its warning, and once readable
    (its mode changed, not its size or time) the profile is another key: loaded afresh, unsaid."""
    from npu_tui.demo import PATH as DEMO
    from npu_tui.session import Session

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    profile = tmp_path / "job"
    shutil.copytree(DEMO, profile)
    private = profile / "private"
    private.mkdir()
    private.chmod(0o000)

    def said(session):
        return [h.what for h in session.health if "not searched" in h.what]

    with monkeypatch.context() as m:
        _refuse_folder(m, private)
        first = Session.load(profile)
        first.analyse()
        again = Session.load(profile)
        assert said(first) and said(again) == said(first) and again.profile.from_cache
    private.chmod(0o755)
    opened = Session.load(profile)
    assert not opened.profile.from_cache and said(opened) == []


def test_only_traces_named_as_their_makers_liked_are_guessed_at(real, tmp_path, monkeypatch):
    """An unreadable file among the fixed-named files of a torch_npu output (a user's notes.csv) is
    no profiler file: not said, and the run whole. Nor is a profiler_metadata.json among Kineto
    traces a rank of its own."""
    rank = tmp_path / "r_ascend_pt"
    shutil.copytree(real / L1, rank / "ASCEND_PROFILER_OUTPUT")
    (rank / "ASCEND_PROFILER_OUTPUT" / "my_notes.csv").write_text("a,b\n")
    with monkeypatch.context() as m:
        _refusing(m, rank / "ASCEND_PROFILER_OUTPUT" / "my_notes.csv")
        assert [i for i in health(load_profile(rank)) if i.severity == "error"] == []
    runs = tmp_path / "runs"
    runs.mkdir()
    for n in (0, 1):
        shutil.copy(real / KINETO / f"sampled_rank-{n}.json.gz", runs)
    (runs / "profiler_metadata.json").write_text('{"parallel_group_info": {}}')
    assert load_profile(runs).ranks == [0, 1]
