"""Query errors with the position DuckDB reported, mapped back onto the console text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .statements import line_col, offset_of

# DuckDB's words for a block whose checksum fails (before 2.0 after the error's class, "IO Error: ")
_DAMAGED = re.compile(r"(IO Error: )?Corrupt database file")
# DuckDB appends "LINE n: <source line>" and a caret line under the offending token.
_CONTEXT = re.compile(r"\n\s*LINE (\d+): (.*)\n(\s*)\^", re.MULTILINE)


@dataclass
class QueryError(Exception):
    """A statement failed; `offset` is where in the console text it failed (None when unknown)."""

    message: str
    offset: Optional[int] = None
    line: Optional[int] = None  # 0-based, in the console text
    column: Optional[int] = None
    # The database file failed to read under it (a damaged block of a cache file): not the query's fault.
    damaged: bool = False

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.message} (line {self.line + 1}, column {self.column + 1})"


class ProtectedError(QueryError):
    """A statement would have changed a table or view of the loaded profile; it was rolled back."""


class Cancelled(QueryError):
    """The running statement was interrupted."""


def is_damaged(message: str) -> bool:
    """Whether a failed query's message says a block of the database file did not read back."""
    return _DAMAGED.match(message) is not None


def from_duckdb(exc: Exception, sql: str, start: int, line_shift: int = 0) -> QueryError:
    """A QueryError for `exc`, raised by the statement starting at `start` in `sql`.

    `line_shift` is the number of lines the engine put before the statement (a wrapper)."""
    text = str(exc)
    found = _CONTEXT.search(text)
    message = (text[: found.start()] if found else text).strip()
    if not found:
        return QueryError(message, damaged=is_damaged(message))
    stmt_line = int(found.group(1)) - 1 - line_shift
    shown = found.group(2)
    caret = len(found.group(3)) - len(f"LINE {found.group(1)}: ")
    col = caret
    source_lines = sql[start:].split("\n")
    if shown.startswith("...") and 0 <= stmt_line < len(source_lines):
        # DuckDB elides the start of long lines; find the part it shows in the real line.
        snippet = shown[3:].rstrip(".")
        where = source_lines[stmt_line].find(snippet)
        if where >= 0:
            col = where + caret - 3
    base_line, base_col = line_col(sql, start)
    line = base_line + stmt_line
    column = col + (base_col if stmt_line == 0 else 0)
    return QueryError(message, offset_of(sql, line, column), line, column)
