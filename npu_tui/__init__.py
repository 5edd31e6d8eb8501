"""npu-tui: a terminal explorer for Ascend NPU and PyTorch profiling output."""

__version__ = "0.1.0"


def stage(name: str):
    """``with npu_tui.stage("DiT"):`` marks a pipeline stage for the analysis (needs torch)."""
    from .collect.markers import stage as _stage

    return _stage(name)


def open(path, rules=None, cache: bool = True, run=None):
    """Open and analyse a profile for a notebook or a script::

        p = npu_tui.open("./prof_out")
        p.findings                     # what the report found, largest saving first
        p.sql("SELECT ... FROM kernels")   # a pandas DataFrame; p.table("stage_categories") too
        p.diff("./prof_out_before")    # this run against an earlier one

    Returns a ``npu_tui.session.Session``; ``rules`` is a rules TOML path (default: the shipped one).
    A folder of collected runs opens its newest complete run, or ``run`` (a run folder's name).
    Warns (IncompleteProfile) when a file could not be loaded whole, as ``npu-tui report`` fails.
    """
    import warnings

    from .session import open_session
    from .text import first_named, lost_phrase

    session = open_session(path, rules, cache=cache, run=run)
    lost = session.not_whole
    if lost:
        warnings.warn(f"{lost_phrase(lost)} could not be loaded whole ({first_named(lost)}): the figures lack what "
                      "is missing from it; session.health says why", IncompleteProfile, stacklevel=2)
    return session


class IncompleteProfile(UserWarning):
    """A file of the profile opened exists and could not be loaded whole."""
