"""SVG snapshots at fixed sizes (80×24 included): what the panes look like, kept from drifting.
Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`."""

from pathlib import Path

import pytest

from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.panes import PANES, pane_key
from tui_support import settle

ROOT = Path(__file__).resolve().parents[1]
# Relative to the repository root, so the path in the header is the same on every machine.
LEVEL1 = Path("..") / "shared" / "real" / "msinsight-pt-2rank-levels" / "text" / "level1"


@pytest.fixture
def app(monkeypatch):
    monkeypatch.chdir(ROOT)
    return NpuTuiApp(LEVEL1)


async def loaded(pilot):
    # Until no worker has run for three rounds in a row: a chain of them (the trace's phase, the
    # Timeline's build, then its draw) starts one after another, later on a loaded machine.
    # The trace's phase too, from before it starts (the session still pending) to its end, for a
    # profile big enough to load in two phases.
    app = pilot.app
    quiet, rounds = 0, 0
    while (quiet < 3 or app.loading or app.trace_loading or (app.session is not None and app.session.pending)) \
            and rounds < 300:
        await settle(pilot.app, pilot, rounds=1)
        quiet = quiet + 1 if all(w.is_finished for w in pilot.app.workers) else 0
        rounds += 1
    # A blinking cursor is drawn or not by the clock: a slow machine caught the SQL editor's
    # cursor mid-blink. Held steady, the snapshot is the same on every run.
    for widget in pilot.app.query("TextArea, Input"):
        widget.cursor_blink = False
    await pilot.pause()


# Every pane at the two sizes the README promises, by its number key.
PANE_KEYS = {pid: pane_key(i) for i, (pid, _) in enumerate(PANES, 1)}
SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("pane", PANE_KEYS)
def test_pane(app, snap_compare, pane, size):
    async def show(pilot):
        await loaded(pilot)
        await pilot.press(PANE_KEYS[pane])
        await loaded(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=show)


def test_operators_drilled_80x24(app, snap_compare):
    async def drill(pilot):
        await loaded(pilot)
        await pilot.press("3", "down", "enter")
        await loaded(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=drill)



@pytest.mark.parametrize("size", SIZES)
def test_timeline_on_the_demo(monkeypatch, snap_compare, size):
    """The Timeline of the bundled demo (stage band, overlap and memory lanes, streams), as the
    issue asks it shown; the panes above use the real level1 sample."""
    from npu_tui.demo import PATH as DEMO

    monkeypatch.chdir(ROOT)

    async def show(pilot):
        await loaded(pilot)
        await pilot.press(PANE_KEYS["timeline"])
        await loaded(pilot)

    assert snap_compare(NpuTuiApp(DEMO.relative_to(ROOT)), terminal_size=SIZES[size], run_before=show)
