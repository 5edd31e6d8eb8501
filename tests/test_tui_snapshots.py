"""SVG snapshots at fixed sizes (80×24 included): what the panes look like, kept from drifting.
Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`."""

from pathlib import Path

import pytest

from npu_tui.tui.app import NpuTuiApp
from tui_support import settle

ROOT = Path(__file__).resolve().parents[1]
# Relative to the repository root, so the path in the header is the same on every machine.
LEVEL1 = Path("..") / "shared" / "real" / "msinsight-pt-2rank-levels" / "text" / "level1"


@pytest.fixture
def app(monkeypatch):
    monkeypatch.chdir(ROOT)
    return NpuTuiApp(LEVEL1)


async def loaded(pilot):
    await settle(pilot.app, pilot, rounds=4)


def test_overview_80x24(app, snap_compare):
    assert snap_compare(app, terminal_size=(80, 24), run_before=loaded)


def test_operators_drilled_80x24(app, snap_compare):
    async def drill(pilot):
        await loaded(pilot)
        await pilot.press("3", "down", "enter")
        await loaded(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=drill)


def test_ranks_120x36(app, snap_compare):
    async def ranks(pilot):
        await loaded(pilot)
        await pilot.press("5")
        await loaded(pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=ranks)


def test_findings_100x30(app, snap_compare):
    async def findings(pilot):
        await loaded(pilot)
        await pilot.press("2")
        await loaded(pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=findings)
