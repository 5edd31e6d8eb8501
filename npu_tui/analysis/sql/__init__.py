"""SQL of the analysis views, one file per view (see npu_tui.analysis.views)."""
