"""Turning profile values into display text: literal (never markup) and compact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# One rule for the screen and the reports: control and format characters shown as escapes.
from ..text import literal

__all__ = ["Column", "fmt_cell", "fmt_us", "literal"]


@dataclass(frozen=True)
class Column:
    """One grid column: `key` names the query's column; `kind` decides formatting and alignment;
    `identity`: it names the row (an operator beside its type), so it is the text column a narrow
    grid keeps widest (else the first text column is)."""

    key: str
    label: str
    kind: str = "text"  # text | list | flag | int | us | ms | share | float
    identity: bool = False

    @property
    def numeric(self) -> bool:
        return self.kind not in ("text", "list", "flag")


def fmt_us(us: float) -> str:
    """Microseconds with a unit that keeps the number short: 950.0us, 12.35ms, 3.210s."""
    a = abs(us)
    if a >= 1e6:
        return f"{us / 1e6:.3f}s"
    if a >= 1e3:
        return f"{us / 1e3:.2f}ms"
    return f"{us:.1f}us"


def fmt_cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind in ("text", "list"):
        return literal(value)
    if kind == "flag":
        return "yes" if value else ""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return literal(value)
    if kind == "int":
        return f"{int(x):,}"
    if kind == "us":
        return fmt_us(x)
    if kind == "ms":
        return f"{x:,.3f}"
    if kind == "share":
        return f"{x * 100:.1f}%"
    return f"{x:,.2f}"
