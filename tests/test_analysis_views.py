"""Installing the analysis over a cached profile that an older version analysed."""

from npu_tui.analysis import ensure_views, load_rules
from npu_tui.analysis.views import MATERIALIZED, VIEW_ORDER

from analysis_support import make_profile

US = 1000
# Two kernels of rank 0: 300 µs + 400 µs.
KERNELS = [
    (0, None, "aclnnFlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "AI_CORE", 0, 300 * US, "1,2"),
    (0, None, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 300 * US, 400 * US, "3,4"),
]


def test_views_an_older_version_stored_the_other_way_are_rebuilt():
    con = make_profile(KERNELS).con
    # As a version that stored kernel_stages as a view and kept kernel_categories as a table left them.
    stored, plain = "kernel_stages", "kernel_categories"
    assert stored in MATERIALIZED and plain not in MATERIALIZED
    con.execute(f"DROP TABLE {stored}")
    con.execute(f"CREATE VIEW {stored} AS SELECT 1 AS stale")
    con.execute(f"DROP VIEW {plain}")
    con.execute(f"CREATE TABLE {plain} AS SELECT 1 AS stale")
    con.execute("UPDATE rules_installed SET fingerprint = 'an older version'")

    ensure_views(con, load_rules())

    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    for name in VIEW_ORDER:
        assert kinds[name] == ("BASE TABLE" if name in MATERIALIZED else "VIEW"), name
    assert con.execute("SELECT count(*), sum(dur_ns) FROM kernel_stages").fetchone() == (2, 700 * US)
    assert con.execute("SELECT kernel_count, kernel_time_us FROM rank_summary").fetchone() == (2, 700.0)
