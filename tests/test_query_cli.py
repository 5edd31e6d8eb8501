"""`npu-tui sql PATH "..."` runs on the console's engine, with the same protections."""

import csv
import io
from decimal import Decimal

from npu_tui.cli import main

LEVEL1 = "msinsight-pt-2rank-levels/text/level1"


def test_sql_prints_the_last_statements_rows(real, capfd):
    with open(real / LEVEL1 / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
              newline="") as f:
        mul = [r for r in csv.DictReader(f) if r["Type"] == "Mul"]
    rc = main(["sql", str(real / LEVEL1), "--format", "csv",
               "CREATE TEMP TABLE m AS FROM kernels WHERE type = 'Mul' AND rank = 1; "
               "SELECT count(*) AS n, sum(dur_ns) AS ns FROM m"])
    assert rc == 0
    rows = list(csv.reader(io.StringIO(capfd.readouterr().out)))
    assert rows == [["n", "ns"], [str(len(mul)),
                                  str(sum(int(Decimal(r["Duration(us)"]) * 1000) for r in mul))]]


def test_sql_refuses_to_change_the_profile(real, capfd):
    assert main(["sql", str(real / LEVEL1), "DELETE FROM kernels"]) == 2
    err = capfd.readouterr().err
    assert "refused" in err and "kernels" in err
