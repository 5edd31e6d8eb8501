"""operator_details.csv: host-side operators with their host and device times (µs).

``Call Stack`` and ``Input Shapes`` cells span several lines inside quotes. Shapes lose their line
breaks (``32,4096;\\n;\\n`` -> ``32,4096;;``) so they read like kernel_details.csv's and can be joined;
call stacks keep one frame per line. Without ``with_stack`` the Call Stack column is absent.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header, read_head
from .csvfile import load_rows

KIND = "operator_details"
FILE_NAMES = ("operator_details.csv",)
STAGE = "stg_operator_details"
# kernel_details.csv also has Name and Input Shapes, but never host durations or a call stack.
HOST_COLUMNS = {"Host Self Duration(us)", "Call Stack"}
# MindSpore writes the file with these columns alone (its ms_operator_details_viewer): no times to
# load, which is by design, not damage.
NAMES_ONLY = {"Name", "Input Shapes"}
MINDSPORES = "MindSpore's operator names and input shapes without times: not loaded"

INSERT = """
INSERT INTO operators
SELECT $rank, od_name, clean_text(regexp_replace({shapes}, '[\\r\\n]', '', 'g')),
       clean_text(replace({stack}, chr(13), '')), num({host_self}), num({host_total}),
       num({device_self}), num({device_total})
-- od_ prefix: identifiers are case-insensitive, so `name` would be the file's raw Name text.
FROM (SELECT *, clean_text({name}) AS od_name FROM {table})
WHERE od_name IS NOT NULL
  -- a time cell that holds something but not a number (hand-edited, garbled): the row is skipped
  AND (clean_text({host_self}) IS NULL OR num({host_self}) IS NOT NULL)
  AND (clean_text({host_total}) IS NULL OR num({host_total}) IS NOT NULL)
  AND (clean_text({device_self}) IS NULL OR num({device_self}) IS NOT NULL)
  AND (clean_text({device_total}) IS NULL OR num({device_total}) IS NOT NULL)
"""


def sniff(head: bytes) -> bool:
    cols = set(csv_header(head))
    return "Name" in cols and bool(HOST_COLUMNS & cols) and "Start Time(us)" not in cols


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    if set(csv_header(read_head(path))) == NAMES_ONLY:
        return LoadResult(rows=0, note=MINDSPORES)
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "name": "Name", "shapes": "Input Shapes", "stack": "Call Stack", "host_self": "Host Self Duration(us)",
        "host_total": "Host Total Duration(us)", "device_self": "Device Self Duration(us)",
        "device_total": "Device Total Duration(us)",
    }, lambda columns: "Name" in columns and bool(HOST_COLUMNS & set(columns)),
        "not an operator_details table: no Name / Host Self Duration(us)", "header only, no operators")
