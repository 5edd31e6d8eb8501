"""The lower layers never import the UI, torch or pandas (design.md §2); checked in a fresh process."""

import json
import subprocess
import sys

from conftest import ROOT

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
