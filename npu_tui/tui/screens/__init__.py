"""Screens pushed over the panes: drill-down levels, help, export."""
