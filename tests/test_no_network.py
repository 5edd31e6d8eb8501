"""npu-tui never reaches for the network: servers it runs on are often offline, and must stay so."""

import os
import subprocess
import sys

from conftest import REAL, ROOT

GUARDED = """
import socket, sys

def refuse(*args, **kwargs):
    raise SystemExit(f"network access attempted: {args!r}")

socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse

from npu_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_guarded(*args, cache):
    env = {**os.environ, "NPU_TUI_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", GUARDED, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_load_analyse_report_and_sql_attempt_no_connection(tmp_path):
    """A fresh load (empty cache), then a reopen from the cache it wrote."""
    sample = str(REAL / "msinsight-pt-2rank-levels/text/level1")
    report = run_guarded("report", sample, "--format", "json", cache=tmp_path)
    assert report.returncode == 0, report.stderr
    assert '"schema_version": 3' in report.stdout
    sql = run_guarded("sql", sample, "SELECT count(*) AS n FROM kernels", "--format", "csv",
                      cache=tmp_path)
    assert sql.returncode == 0 and sql.stdout.split() == ["n", "382"], sql.stderr


def test_duckdb_never_installs_extensions():
    from npu_tui.profile import connect

    con = connect()
    setting = "SELECT current_setting('autoinstall_known_extensions')"
    assert con.execute(setting).fetchone() == (False,)
