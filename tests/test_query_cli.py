"""`npu-tui sql PATH "..."` runs on the console's engine, with the same protections."""

import csv
import io
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

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
