"""The lower layers never import the UI, torch or pandas (design.md §2); checked in a fresh process."""

import json
import os
import subprocess
import sys

from conftest import ROOT
from duckdb_support import BEFORE_2

PROBE = """
import importlib, json, pkgutil, sys
import npu_tui
pkgs = {pkgs!r}
for pkg in pkgs:
    mod = importlib.import_module(pkg)
    for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
        importlib.import_module(info.name)
print(json.dumps(sorted(m.split(".")[0] for m in sys.modules)))
"""


def imported_roots(*packages):
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(pkgs=list(packages))],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    return set(json.loads(out))


def test_profile_and_analysis_import_no_ui_torch_or_pandas():
    roots = imported_roots("npu_tui.profile", "npu_tui.analysis", "npu_tui.query")
    assert "duckdb" in roots
    assert not roots & {"textual", "rich", "torch", "torch_npu", "pandas"}


def test_tui_imports_no_torch_or_pandas():
    roots = imported_roots("npu_tui.tui")
    assert not roots & {"torch", "torch_npu", "pandas"}


def test_importing_the_package_and_cli_is_light():
    """`npu-tui --help` and `import npu_tui` (for npu_tui.stage) must not pay for the UI or torch."""
    out = subprocess.run(
        [sys.executable, "-c", "import json, sys, npu_tui.cli; print(json.dumps(sorted(sys.modules)))"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    roots = {m.split(".")[0] for m in json.loads(out)}
    assert not roots & {"textual", "torch", "duckdb", "pandas"}


def _modules_after(code: str, cache) -> set:
    out = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)"],
        cwd=ROOT, capture_output=True, text=True, check=True, env={**os.environ, "NPU_TUI_CACHE_DIR": str(cache)},
    ).stderr
    return {m.split(".")[0] for m in json.loads(out.splitlines()[-1])}


def test_the_app_shell_imports_no_database(tmp_path):
    """The first frame (the app module imported, the shell drawn) does not wait for DuckDB or the
    analysis: the load worker imports them."""
    roots = _modules_after("import npu_tui.tui.app", tmp_path)
    assert "duckdb" not in roots and "textual" in roots


def test_the_report_imports_no_ui(tmp_path):
    """`npu-tui report` pays for DuckDB and the analysis only."""
    roots = _modules_after(f"from npu_tui.cli import main\nmain(['report', {str(ROOT / 'fixtures' / 'level0')!r}])",
                           tmp_path)
    assert "duckdb" in roots
    # (DuckDB before 2.0 imports pandas itself, to look at a statement's parameters)
    assert not roots & {"textual", "rich", "torch", *(() if BEFORE_2 else ("pandas",))}
