"""Tables out of the app: CSV (values exact) or Markdown (profile text escaped as in the reports)
files, TSV for the clipboard."""

from __future__ import annotations

import csv
import datetime
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..text import markdown
from .cells import Column, fmt_cell, literal

COPY_ROW_LIMIT = 10_000  # a clipboard (and the OSC 52 escape carrying it) is no place for more
FETCH_ROWS = 10_000


def export_rows(cur, sql: str, params: List[Any], columns: Tuple[Column, ...], path: str) -> Tuple[int, Path]:
    """Write the query's rows to ``path``: Markdown when it ends in .md, else CSV. Streams in batches."""
    target = Path(path).expanduser().resolve()
    res = cur.execute(sql, params)
    idx = {d[0]: i for i, d in enumerate(res.description)}
    keys = [idx[c.key] for c in columns]
    written = 0
    as_md = target.suffix.lower() in (".md", ".markdown")
    with open(target, "w", newline="", encoding="utf-8") as f:
        if as_md:
            f.write("| " + " | ".join(markdown(c.label) for c in columns) + " |\n")
            f.write("|" + "|".join("---:" if c.numeric else "---" for c in columns) + "|\n")
        else:
            w = csv.writer(f)
            w.writerow([c.key for c in columns])
        while True:
            batch = res.fetchmany(FETCH_ROWS)
            if not batch:
                break
            for r in batch:
                if as_md:
                    cells = (markdown(fmt_cell(r[k], c.kind)) for k, c in zip(keys, columns))
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
