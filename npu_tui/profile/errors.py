"""Errors the profile layer raises on purpose; anything else is a bug."""

import re

# Said of a file whose loader failed on it other than by the file's fault (a defect of npu-tui's):
# that file is lost, the others load.
LOADER_FAULT = "npu-tui's loader failed on it"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """Control characters escaped (a folder name may hold a newline or an ANSI escape)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class ProfileError(Exception):
    """Nothing usable could be loaded from the given path; the message says why, in one line.
    ``candidates``: folders below it that would load, for a picker."""

    def __init__(self, message: str, candidates=()):
        super().__init__(one_line(message))
        self.candidates = list(candidates)


class SourceError(Exception):
    """One source file could not be read; the load goes on without it and logs the message."""


class MalformedTrace(SourceError):
    """A trace's JSON breaks somewhere among its events: read it again event by event (salvage)."""


class EmptyTrace(SourceError):
    """A trace whose list of events is empty."""

    def __init__(self) -> None:
        super().__init__("no events: the trace is an empty list")


class LoadCancelled(Exception):
    """The caller asked the load to stop."""
