"""What the user sees: the Textual app, its panes, screens and widgets. Never imports torch or pandas.

Importing this package is cheap; `npu_tui.tui.app` pulls in Textual, and DuckDB-side modules are
imported only once a profile is being loaded, so the first frame appears quickly.
"""
