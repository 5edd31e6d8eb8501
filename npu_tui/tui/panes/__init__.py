"""One module per pane. Each pane is told the loaded profile and report with ``show(profile, report)``."""
