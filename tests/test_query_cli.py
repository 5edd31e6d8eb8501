"""`npu-tui sql PATH "..."` runs on the console's engine, with the same protections."""

import csv
import io
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LEVEL1 = "msinsight-pt-2rank-levels/text/level1"


def npu_tui(*args):
    return subprocess.run([sys.executable, "-m", "npu_tui", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_sql_prints_the_last_statements_rows(real):
    with open(real / LEVEL1 / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
              newline="") as f:
        mul = [r for r in csv.DictReader(f) if r["Type"] == "Mul"]
    done = npu_tui("sql", str(real / LEVEL1), "--format", "csv",
                   "CREATE TEMP TABLE m AS FROM kernels WHERE type = 'Mul' AND rank = 1; "
                   "SELECT count(*) AS n, sum(dur_ns) AS ns FROM m")
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    assert rows == [["n", "ns"], [str(len(mul)),
                                  str(sum(int(Decimal(r["Duration(us)"]) * 1000) for r in mul))]]


def test_sql_refuses_to_change_the_profile(real):
    done = npu_tui("sql", str(real / LEVEL1), "DELETE FROM kernels")
    assert done.returncode == 2 and done.stdout == ""
    err = done.stderr
    assert "refused" in err and "kernels" in err


def test_sql_and_diff_over_a_profile_that_lost_a_file_exit_2_unless_partial(real, tmp_path):
    """Their output leaves the file out, as an incomplete report does: they said nothing, exit 0."""
    import shutil

    damaged = tmp_path / "level1"
    shutil.copytree(real / LEVEL1, damaged)
    (damaged / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv").write_bytes(b"")
    query = "SELECT count(*) AS n FROM kernels WHERE rank = 0"
    for args in (["sql", str(damaged), query], ["diff", str(real / LEVEL1), str(damaged)]):
        done = npu_tui(*args)
        assert done.returncode == 2 and "incomplete: 1 file failed to load" in done.stderr, done.stderr
        assert "kernel_details.csv" in done.stderr and "--partial" in done.stderr
        assert done.stdout  # the result is printed all the same
        assert npu_tui(*args, "--partial").returncode == 0
    diff = npu_tui("diff", str(real / LEVEL1), str(damaged), "--partial").stdout
    assert "INCOMPLETE: the new run: 1 file could not be loaded" in diff
    assert npu_tui("sql", str(real / LEVEL1), query).returncode == 0


CTRL_C = """
import os, signal, sys, threading
import duckdb
from npu_tui import cli

def slow(args):  # a long query, as an analysis or a console statement can be; Ctrl-C once it runs
    con = duckdb.connect()
    # DuckDB looks for Ctrl-C only where the main thread runs the query: on one thread, always
    con.execute("SET threads = 1")
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    con.execute("SELECT count(*) FROM range(10000000000000) t(x) WHERE x % 7 = 3").fetchall()
    return 0

cli.COMMANDS["report"] = slow
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever started this test
sys.exit(cli.main(["report", "anything"]))
"""


def test_ctrl_c_during_a_query_exits_130_without_a_traceback():
    """DuckDB answers Ctrl-C during a query with RuntimeError("Query interrupted"), not a
    KeyboardInterrupt: the CLI still stops quietly, as for Ctrl-C anywhere else."""
    done = subprocess.run([sys.executable, "-c", CTRL_C], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr


TERMINATED = """
import os, signal, sys
from npu_tui import cli
from npu_tui.profile import loader

load_all = loader._load_all

def stopped(*args, **kwargs):  # a job's time limit, or the SSH session closed, while the load runs
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
    return load_all(*args, **kwargs)

loader._load_all = stopped
sys.exit(cli.main(["report", sys.argv[1]]))
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_report_terminated_while_loading_leaves_no_cache_file(tmp_path, name):
    """Killed by SIGTERM or SIGHUP, the load's cache file had stayed behind until the next cold load
    swept it; it goes as on Ctrl-C, and the exit is the signal's, without a traceback."""
    import signal

    from npu_tui.demo import PATH as DEMO

    cache = tmp_path / "cache"
    env = {**os.environ, "NPU_TUI_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", TERMINATED, str(DEMO), name], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 128 + getattr(signal, name) and "Traceback" not in done.stderr, done.stderr
    assert list(cache.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [("report", "--format", "json", "--fail-on", "any"),
                                  ("sql", "fixtures/diffusion_2rank", "SELECT * FROM kernels")])
@pytest.mark.parametrize("out", ["full", "closed"])
def test_output_that_cannot_be_written_is_said_and_exits_2(tmp_path, args, out):
    """A report written to a full disk was a traceback and exit 1, which `--fail-on` gives for a
    finding (a CI gate read the crash as one); closed, another traceback."""
    env = {**os.environ, "NPU_TUI_CACHE_DIR": str(tmp_path / "cache")}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "npu_tui", *args], cwd=ROOT, env=env, text=True,
                              stdout=full if out == "full" else None, stderr=subprocess.PIPE, timeout=120,
                              **({} if out == "full" else {"preexec_fn": lambda: os.close(1)}))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert ("cannot write the output: " + ("No space left on device" if out == "full"
                                          else "standard output is closed")) in done.stderr


def test_text_the_terminal_cannot_spell_is_escaped_not_an_output_failure(tmp_path):
    """A console of another encoding (PYTHONIOENCODING=ascii, a GBK terminal's µ): the stdout guard
    took the encoding error for a failed write (exit 2)."""
    env = {**os.environ, "NPU_TUI_CACHE_DIR": str(tmp_path / "cache"), "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "npu_tui", "sql", "fixtures/diffusion_2rank", "SELECT '中µ' AS x",
                           "--format", "csv"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.splitlines() == ["x", "\\u4e2d\\xb5"], done.stderr

