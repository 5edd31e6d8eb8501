"""Tables out of the app: CSV or Markdown files, TSV for the clipboard, SQL with values written in."""

from __future__ import annotations

import csv
import datetime
import decimal
import re
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from .cells import Column, fmt_cell, literal

COPY_ROW_LIMIT = 10_000  # a clipboard (and the OSC 52 escape carrying it) is no place for more
FETCH_ROWS = 10_000

_PLACEHOLDER = re.compile(r"\?")


def sql_literal(value: Any) -> str:
    """A DuckDB literal for a parameter value, so shown SQL runs as it reads."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    if isinstance(value, (int, float, decimal.Decimal)):
        return repr(value) if isinstance(value, float) else str(value)
    return "'" + str(value).replace("'", "''") + "'"


def inline_params(sql: str, params: Sequence[Any]) -> str:
    """Replace each `?` in order by its value's literal (the program's SQL has no `?` in strings)."""
    values = iter(params)
    return _PLACEHOLDER.sub(lambda m: sql_literal(next(values)), sql)


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def export_rows(cur, sql: str, params: List[Any], columns: Tuple[Column, ...], path: str) -> Tuple[int, Path]:
    """Write the query's rows to ``path``: Markdown when it ends in .md, else CSV. Streams in batches."""
    target = Path(path).expanduser().resolve()
    res = cur.execute(sql, params)
    idx = {d[0]: i for i, d in enumerate(res.description)}
    keys = [idx[c.key] for c in columns]
    written = 0
    markdown = target.suffix.lower() in (".md", ".markdown")
    with open(target, "w", newline="", encoding="utf-8") as f:
        if markdown:
            f.write("| " + " | ".join(_md_cell(c.label) for c in columns) + " |\n")
            f.write("|" + "|".join("---:" if c.numeric else "---" for c in columns) + "|\n")
        else:
            w = csv.writer(f)
            w.writerow([c.key for c in columns])
        while True:
            batch = res.fetchmany(FETCH_ROWS)
            if not batch:
                break
            for r in batch:
                if markdown:
                    cells = (_md_cell(fmt_cell(r[k], c.kind)) for k, c in zip(keys, columns))
                    f.write("| " + " | ".join(cells) + " |\n")
                else:
                    w.writerow(["" if r[k] is None else r[k] for k in keys])
            written += len(batch)
    return written, target


def tsv(columns: Tuple[Column, ...], rows: List[Dict[str, Any]]) -> str:
    lines = ["\t".join(c.label for c in columns)]
    for r in rows:
        lines.append("\t".join(literal(r.get(c.key)).replace("\t", " ") for c in columns))
    return "\n".join(lines) + "\n"


def default_name(title: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower() or "table"
    return f"npu-tui-{slug[:40]}-{datetime.datetime.now():%Y%m%d-%H%M%S}.csv"
