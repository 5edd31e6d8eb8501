"""Errors the profile layer raises on purpose; anything else is a bug."""


class ProfileError(Exception):
    """Nothing usable could be loaded from the given path; the message says why, in one line."""


class SourceError(Exception):
    """One source file could not be read; the load goes on without it and logs the message."""


class LoadCancelled(Exception):
    """The caller asked the load to stop."""
