"""One module per pane. Each is handed the profile's connection (``show_profile(con)``) as soon as
the tables are loaded, and the analysis report (``show_report(report)``) when it is built."""
