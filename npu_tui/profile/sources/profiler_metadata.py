"""profiler_metadata.json (a torch_npu rank folder's, beside profiler_info): the communication groups
of a distributed run, ``parallel_group_info``: ``{<hccl comm name>: {"group_name": "tp" | "" ..,
"group_rank": 1, "global_ranks": [2, 3]}}`` (torch_npu's profiler_interface). The comm files name a
group by a hash of its comm name (``op@<hash>``) and number its ranks locally, 0 to its size - 1:
local n is the n-th of its global ranks in order (torch sorts a group's ranks), as msprof-analyze
reads it. Its other keys (environment variables, a user's own) are not read. torch_npu copies each
key into a db export's META_DATA too, where a db copied without the file beside it gives them.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext

KIND = "profiler_metadata"
FILE_NAMES = ("profiler_metadata.json",)
GROUPS = "parallel_group_info"

INSERT = "INSERT INTO comm_groups VALUES (?, ?, ?, ?, ?, ?)"


def sniff(head: bytes) -> bool:
    return False  # by its name alone: its content is whatever the user added to it


def group_hash(comm_name: str) -> str:
    """The name the comm files give a group: two 32-bit polynomial hashes of its comm name side by
    side, in decimal (msprof-analyze's double_hash, as HCCL writes it)."""
    a = b = 0
    for ch in comm_name:
        a = (a * 29 + ord(ch)) & 0xFFFFFFFF
        b = (b * 131 + ord(ch)) & 0xFFFFFFFF
    return str(a << 32 | b)


def _ranks(value):
    ok = isinstance(value, list) and value and all(
        isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 2**31 for r in value)
    return sorted(value) if ok and len(set(value)) == len(value) else None


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise SourceError("not UTF-8") from None
    except ValueError:
        raise SourceError("not valid JSON (damaged, or written in part)") from None
    if not isinstance(doc, dict):
        raise SourceError("not a JSON object")
    groups = doc.get(GROUPS)
    return LoadResult(rows=0) if groups is None else insert_groups(con, groups, ctx.rank)


def insert_groups(con: duckdb.DuckDBPyConnection, groups, rank: int) -> LoadResult:
    """Rank ``rank``'s comm_groups rows from a parallel_group_info value, as parsed."""
    if not isinstance(groups, dict):
        return LoadResult(rows=0, skipped=1, note=f"{GROUPS} is not an object: the groups' ranks are unknown")
    rows, skipped = [], 0
    for comm_name, group in groups.items():
        ranks = _ranks(group.get("global_ranks")) if isinstance(group, dict) else None
        if ranks is None:
            skipped += 1
            continue
        label = group.get("group_name")
        rows += [(rank, group_hash(comm_name), comm_name, label if isinstance(label, str) and label else None,
                  local, glob) for local, glob in enumerate(ranks)]
    if rows:
        con.executemany(INSERT, rows)
    note = f"{skipped} group(s) without a list of global ranks: their ranks are unknown" if skipped else ""
    return LoadResult(rows=len(rows), skipped=skipped, note=note)
