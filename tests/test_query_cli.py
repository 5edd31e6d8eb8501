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
