"""Every real sample in ../shared/real opens with populated panes and no error, at 80×24."""

from pathlib import Path

import pytest
from textual.widgets import OptionList

from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.grid import PagedTable
from tui_support import async_test, settle

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "real"
SAMPLES = [
    "msinsight-pt-2rank-levels/text/level0",
    "msinsight-pt-2rank-levels/text/level1",
    "msinsight-pt-2rank-levels/text/level2",
    "msinsight-pt-2rank-levels/db/level0",
    "msinsight-pt-2rank-levels/db/level1",
    "msinsight-pt-2rank-levels/db/level2",
    "mindinsight-msprof-2dev-hccl",
    "kineto/hta-sampled-2rank",
    "kineto/hta-alexnet-1gpu",
    "mstt-advisor-fixtures/ut/advisor/timeline_advice/trace_view.json",
    "mstt-advisor-fixtures/ut/advisor/compute_advice/data",
]


@pytest.mark.parametrize("sample", SAMPLES)
@async_test
async def test_sample_opens_with_populated_panes(sample):
    app = NpuTuiApp(REAL / sample)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, rounds=4)
        assert app.report is not None, app.query_one("#load-label").content
        kernels = app.con.execute("SELECT count(*), count(DISTINCT coalesce(nullif(type, ''), 'N/A')) "
                                  "FROM kernels").fetchone()
        ranks = app.con.execute("SELECT count(*) FROM ranks").fetchone()[0]
        assert kernels[0] > 0
        assert "rank" in app.query_one("#overview-categories").content.plain
        # The other panes are built, and read their queries, when first shown.
        for key in "2345":
            await pilot.press(key)
            await settle(app, pilot)
        assert app.query_one("#pane-operators").query_one(PagedTable).total == kernels[1]
        assert app.query_one("#pane-ranks").query_one(PagedTable).total == ranks
        for grid in app.query_one("#pane-comm").query(PagedTable):
            assert grid.total is not None and not grid.error
        assert app.query_one("#findings-list", OptionList).option_count == len(app.report["findings"])
