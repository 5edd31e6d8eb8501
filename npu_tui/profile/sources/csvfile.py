"""Reading a profiler CSV into a staging table with DuckDB's reader, every column as text.

Columns are typed by our own SQL afterwards (the auto-detecting reader turns TAB-suffixed and N/A
columns into text unpredictably). Rows DuckDB cannot split (ragged, over-long, bad bytes) are
rejected and counted, never fatal.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import duckdb

from ..errors import SourceError
from .base import csv_header, read_head

STAGE_CSV = """
CREATE OR REPLACE TEMP TABLE {table} AS
SELECT * FROM read_csv($path, header = true, auto_detect = false, columns = $columns,
                       delim = ',', quote = '"', escape = '"', strict_mode = $strict,
                       ignore_errors = true, store_rejects = true,
                       rejects_table = '{table}_rejects', rejects_scan = '{table}_scan')
"""


def stage_csv(con: duckdb.DuckDBPyConnection, path: Path, table: str) -> Tuple[List[str], int]:
    """Load ``path`` into temp table ``table``; return its column names and the rejected row count."""
    head = read_head(path)
    if not head.strip():
        raise SourceError("empty file")
    columns = csv_header(head)
    if len(set(columns)) != len(columns) or not all(columns):
        raise SourceError("unreadable CSV header")
    spec = {c: "VARCHAR" for c in columns}
    try:
        con.execute(STAGE_CSV.format(table=table),
                    {"path": str(path), "columns": spec, "strict": not _mixed_line_ends(path)})
    except duckdb.Error as e:
        raise SourceError(f"unreadable CSV: {str(e).splitlines()[0]}") from None
    rejected = con.execute(f"SELECT count(DISTINCT line) FROM {table}_rejects").fetchone()[0]
    return columns, rejected


def _mixed_line_ends(path: Path, chunk: int = 1 << 24) -> bool:
    """CRLF and bare LF in one file (hand-edited) defeat DuckDB's strict mode; the lax mode reads them.

    Decided up front rather than by retrying: a failed read aborts the loader's transaction.
    """
    crlf = lf = 0
    tail = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            data = tail + block
            # Keep a trailing CR for the next block so a CRLF split across blocks still counts.
            tail = data[-1:] if data.endswith(b"\r") else b""
            data = data[:-1] if tail else data
            crlf += data.count(b"\r\n")
            lf += data.count(b"\n")
    return 0 < crlf < lf


def drop_staged(con: duckdb.DuckDBPyConnection, table: str) -> None:
    for t in (table, f"{table}_rejects", f"{table}_scan"):
        con.execute(f"DROP TABLE IF EXISTS {t}")


def col(columns: List[str], *names: str) -> str:
    """SQL for the first of ``names`` present in the file, else NULL (columns differ by version)."""
    for n in names:
        if n in columns:
            return '"' + n.replace('"', '""') + '"'
    return "NULL"
