"""Collection and comparison panes, mounted by the app shell.

``CollectLog`` (the collection log): mount it in the Collect pane; call
``start(CollectSpec, root, rules)`` for ``c`` (``collect.run_of(open_path)`` finds the run folder of
the open profile, whose ``npu_tui_run.json`` gives the spec to repeat: ``CollectSpec.from_record``;
the root is that folder's parent), ``cancel()`` from the app's escape handler (True when it
stopped something). It posts ``CollectLog.Finished(result, profile, report, diff, error)`` when the
run is over: on success show ``profile``/``report`` like a fresh load and pass ``diff`` (None when
there was no earlier run) to ``DiffView.show``. A failed or cancelled run leaves the open profile
alone; ``result.error`` says why.

``DiffView``: ``show(diff)`` / ``clear()``.
"""

from .diff_view import DiffView
from .log import CollectLog

__all__ = ["CollectLog", "DiffView"]
