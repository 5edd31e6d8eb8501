"""Hand-made profiles for the analysis tests: rows INSERTed straight into the canonical tables."""

from pathlib import Path
from typing import Iterable, Sequence

from npu_tui.analysis import install_views, load_rules
from npu_tui.profile import connect
from npu_tui.profile.loader import Profile

KERNEL_COLS = "rank, step, name, type, core, start_ns, dur_ns, input_shapes"


def make_profile(kernels: Iterable[Sequence] = (), lanes: Iterable[Sequence] = (),
                 host: Iterable[Sequence] = (), flows: Iterable[Sequence] = (),
                 step_trace: Iterable[Sequence] = (), comm: Iterable[Sequence] = (), rules=None) -> Profile:
    """kernels: (rank, step, name, type, core, start_ns, dur_ns, input_shapes);
    lanes: (rank, lane, start_ns, dur_ns); host: (rank, name, start_ns, dur_ns);
    flows: (rank, host_ts_ns, device_ts_ns); step_trace: (rank, step, computing, cno, overlapped, free, stage);
    comm: communication.json's ops, (rank, step, op_name, start_us, elapse, transit, wait, sync, idle) in ms."""
    con = connect()

    def insert(sql, data):
        data = list(data)
        if data:
            con.executemany(sql, data)

    insert(f"INSERT INTO kernels ({KERNEL_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kernels)
    insert("INSERT INTO overlap_lanes VALUES (?, ?, ?, ?)", lanes)
    insert("INSERT INTO host_events (rank, name, start_ns, dur_ns) VALUES (?, ?, ?, ?)", host)
    insert("INSERT INTO flows (rank, flow_id, host_ts_ns, device_ts_ns) VALUES (?, 'f', ?, ?)",
           flows)
    insert(
        "INSERT INTO step_trace (rank, step, computing_us, comm_not_overlapped_us, overlapped_us, free_us, "
        "stage_us, source) VALUES (?, ?, ?, ?, ?, ?, ?, 'step_trace_time.csv')", step_trace)
    insert("INSERT INTO comm_ops (rank, step, kind, op_name, start_us, elapse_ms, transit_ms, wait_ms, sync_ms, "
           "idle_ms) VALUES (?, ?, 'collective', ?, ?, ?, ?, ?, ?, ?)", comm)
    ranks = sorted({r for (r,) in con.execute(
        "SELECT rank FROM kernels UNION SELECT rank FROM overlap_lanes UNION SELECT rank FROM step_trace"
    ).fetchall()})
    insert("INSERT INTO ranks (rank, device_id, source_format) VALUES (?, ?, 'test')",
                    [(r, r) for r in ranks])
    install_views(con, rules or load_rules())
    return Profile(con=con, path=Path("hand-made"), layout="test", ranks=ranks, formats=["test"])


def rows(profile: Profile, sql: str, params=None):
    return profile.con.execute(sql, params or []).fetchall()
