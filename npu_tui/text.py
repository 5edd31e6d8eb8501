"""Profile text for people: shown as written, never able to drive the terminal. Stdlib only, so the
TUI's first frame and the reports share it without importing the analysis (and DuckDB)."""

from __future__ import annotations

from typing import Any


def literal(value: Any) -> str:
    """Profile text as it is, except characters that would drive a terminal or hide text: control
    characters (ESC, BEL, CR, backspace...), zero-width and bidirectional format characters are
    written as escapes (``\\x1b``, ``\\u202e``). Used by the reports and by every TUI pane."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"
