"""Splitting console text into statements, using DuckDB's own tokenizer (strings, comments and
dollar quotes hide their semicolons from it, so no SQL grammar is reimplemented here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import duckdb


@dataclass(frozen=True)
class Statement:
    """One statement of the console text: `text` is sql[start:end], without the closing `;`."""

    start: int
    end: int
    text: str


def split_statements(sql: str) -> List[Statement]:
    """The non-empty statements of `sql`, each starting at its first token."""
    bounds = []
    first: Optional[int] = None
    for pos, kind in duckdb.tokenize(sql):
        if kind == duckdb.token_type.comment:
            continue
        if kind == duckdb.token_type.operator and sql[pos] == ";":
            if first is not None:
                bounds.append((first, pos))
            first = None
        elif first is None:
            first = pos
    if first is not None:
        bounds.append((first, len(sql)))
    return [Statement(s, e, sql[s:e].rstrip()) for s, e in bounds]


def statement_at(sql: str, offset: int) -> Optional[Statement]:
    """The statement under the cursor: the one containing `offset`, else the nearest one before it
    (the cursor usually sits just after a `;` or on a blank line below), else the first one."""
    statements = split_statements(sql)
    if not statements:
        return None
    before = [s for s in statements if s.start <= offset]
    return before[-1] if before else statements[0]


def line_col(text: str, offset: int) -> tuple:
    """0-based (line, column) of `offset` in `text`."""
    head = text[:offset]
    line = head.count("\n")
    return line, offset - (head.rfind("\n") + 1)


def offset_of(text: str, line: int, col: int) -> int:
    """Inverse of line_col, clamped to the text."""
    lines = text.split("\n")
    line = max(0, min(line, len(lines) - 1))
    return min(sum(len(x) + 1 for x in lines[:line]) + max(col, 0), len(text))
