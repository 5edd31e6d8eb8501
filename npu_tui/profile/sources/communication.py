"""communication.json: per-rank time and bandwidth of every communication op, per step.

Layout: ``{"step50": {"collective" | "p2p": {"<op>@<group>": {"Communication Time Info": {...},
"Communication Bandwidth Info": {"HCCS": {...}, "RDMA": {...}, ...}}}}}``. The file is parsed once
by DuckDB into typed maps, never into Python objects: it reaches tens of MB on big clusters. Each
kind's ``Total Op Info`` entry is left out, since it is the sum of the ops beside it. Times stay in
ms as written. ``Start Timestamp(us)`` becomes the DECIMAL of the digits the file wrote: the
profiler writes the shortest text that round-trips its double, and DuckDB prints the same digits
back (a double holds only 0.25 µs at these magnitudes; the file cannot be more exact). The peer
analyser's cluster_communication.json (groups, then ranks, inside each step) is not claimed.
msprof's own (``PROF_*/analyze/communication.json``) holds the ops at the top, without steps or
kinds: they load with neither.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Pattern, Tuple

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext, read_head, refuse_utf16, trailing_zeros, zeros_note

KIND = "communication"
FILE_NAMES = ("communication.json",)
STAGE = "stg_communication"

# A rank's own file: steps, then the op kinds. The cluster summary has rank groups on top instead.
STEP_LAYOUT = re.compile(rb'^\s*\{\s*"(?i:step)[^"]*"\s*:\s*\{\s*"(?:p2p|collective)"\s*:')
# msprof's own analysis (PROF_*/analyze/communication.json, msprof --analyze=on): the ops at the
# top, without steps or kinds (its ops are the first iteration's: placed by their start, as any),
# and the ops' sum beside them under FLAT_TOTAL.
FLAT_LAYOUT = re.compile(rb'^\s*\{\s*"[^"]*"\s*:\s*\{\s*"Communication (?:Time|Bandwidth) Info"\s*:')
FLAT_TOTAL = "Total HCCL Operators"
# The columns of the levels a flat file lacks, added to its ops as NULL.
NO_LEVELS = "ALTER TABLE {table}_ops ADD COLUMN step_key VARCHAR; ALTER TABLE {table}_ops ADD COLUMN kind VARCHAR"
TIME_INFO = b'"Communication Time Info"'

OP_TYPE = """STRUCT(
    "Communication Time Info" STRUCT("Start Timestamp(us)" VARCHAR, "Elapse Time(ms)" DOUBLE,
        "Transit Time(ms)" DOUBLE, "Wait Time(ms)" DOUBLE, "Synchronization Time(ms)" DOUBLE,
        "Idle Time(ms)" DOUBLE),
    "Communication Bandwidth Info" MAP(VARCHAR, STRUCT("Transit Size(MB)" DOUBLE,
        "Transit Time(ms)" DOUBLE, "Bandwidth(GB/s)" DOUBLE)))"""

# The document is checked, then walked step -> kind -> op as JSON, and each op alone is typed: one
# malformed op (wrong types, a list where an object belongs) costs that op, not its step or kind.
# Nothing here may raise: a failed statement would abort the loader's transaction, so bad bytes
# and bad JSON are flagged (TRY, json_valid) and reported afterwards.
STAGE_JSON = """
CREATE OR REPLACE TEMP TABLE {table} AS
SELECT text IS NULL AS not_utf8, json_valid(text) AS valid,
       CASE WHEN json_valid(text) THEN json(text) END AS doc
-- without a byte order mark, nor the zero bytes a crash leaves at the end (sources.base.trailing_zeros)
FROM (SELECT rtrim(ltrim(text, chr(65279)), chr(0)) AS text FROM ({text}))
"""
AS_UTF8 = "SELECT TRY(decode(content)) AS text FROM read_blob($path)"
# A file with bytes of another encoding (a group or op named on a GBK system) is read with those
# bytes replaced (U+FFFD), and the ops they fall in are dropped and counted, the rest kept.
REPLACED = "SELECT $text AS text"
# A byte that starts no UTF-8 character is read with the byte after it as one GBK character (a
# first byte from 0x81, then one from 0x40): its second byte may be a backslash (0x5C, as in 116
# CJK characters), which JSON would take for an escape, or a byte that UTF-8 would read together
# with the next character's.
GBK_PAIRS = "npu_tui_gbk_pairs"


def _gbk_pair(e: UnicodeDecodeError):
    first, after = e.object[e.start], e.object[e.start + 1:e.start + 2]
    paired = 0x81 <= first <= 0xFE and after and 0x40 <= after[0] <= 0xFE and after[0] != 0x7F
    return "\ufffd", e.start + (2 if paired else 1)


codecs.register_error(GBK_PAIRS, _gbk_pair)


# One json_transform splits an object into its entries: json_each here made DuckDB grow past 18 GB
# on a 20 MB file (9,294 ops a step). It makes no MAP of an object that gives a key twice, which
# is read in Python instead (_first_entries): each key once, with its first value (JSON readers
# differ on which to keep: the others are counted, as skipped). In SQL, reading it key by key
# copied the whole object for each key: out of memory at 8,000 ops.
SPLIT = "CREATE OR REPLACE TEMP TABLE {table}_o AS SELECT {kept}v, map_once(json_transform(v, '\"MAP(VARCHAR, JSON)\"')) AS m FROM {source}"
ENTRIES = """SELECT {kept}e.key AS {level}, e.value AS v
FROM (SELECT {kept}unnest(map_entries(m)) AS e FROM {table}_o WHERE m IS NOT NULL)"""
TWICE = "npu_tui_entries_twice"  # (the entries _first_entries read, a DataFrame while they are put in)
TWICE_ENTRIES = "\nUNION ALL SELECT {kept}{level}, v::JSON FROM " + TWICE
SPACE_JSON = re.compile(r"[ \t\n\r]*")


def _first_entries(text: str) -> Tuple[list, int]:
    """The entries of the JSON object ``text``: (key, its first value as the file wrote it) each
    key once, and how many values were given for a key again."""
    decoder, first, again = json.JSONDecoder(), {}, 0
    at = SPACE_JSON.match(text, text.index("{") + 1).end()
    while text[at] != "}":
        key, at = decoder.raw_decode(text, at)
        start = SPACE_JSON.match(text, SPACE_JSON.match(text, at).end() + 1).end()  # past the ':'
        _, end = decoder.raw_decode(text, start)
        if key in first:
            again += 1
        else:
            first[key] = text[start:end]
        at = SPACE_JSON.match(text, end).end()
        at = SPACE_JSON.match(text, at + 1).end() if text[at] == "," else at
    return list(first.items()), again


def _split(con: duckdb.DuckDBPyConnection, table: str, level: int, levels: Tuple[str, ...], into: str,
           params: Optional[dict] = None) -> int:
    """Every entry of the objects whose entries make level ``level`` (the document's, or the level
    above's), with the keys so far, put in a table by ``into`` (a statement over ``{entries}``);
    how many of their keys were given twice (those entries not read)."""
    kept = levels[:level]
    fields = dict(table=table, kept="".join(k + ", " for k in kept), level=levels[level])
    con.execute(SPLIT.format(source=_objects(table, level), **fields))
    entries, rows, twice = ENTRIES.format(**fields), [], 0
    for *keys, v in con.execute(f"SELECT {fields['kept']}v FROM {table}_o WHERE m IS NULL").fetchall():
        firsts, again = _first_entries(v)
        rows += [(*keys, key, value) for key, value in firsts]
        twice += again
    if rows:  # (rare: pandas only then)
        import pandas

        con.register(TWICE, pandas.DataFrame(rows, columns=[*kept, levels[level], "v"], dtype=object))
        entries += TWICE_ENTRIES.format(**fields)
    try:
        con.execute(into.format(entries=entries), params)
    finally:
        if rows:
            con.unregister(TWICE)
    con.execute(f"DROP TABLE {table}_o")
    return twice


def _level_sql(table: str, level: int) -> str:
    """``{table}_l{level}``: the entries of a level above the innermost, each with its keys so far,
    its value ``v`` and that value's JSON type ``t`` (the level below reads the objects; the others
    are counted, ``not_objects_sql``)."""
    return f"CREATE OR REPLACE TEMP TABLE {table}_l{level} AS SELECT *, json_type(v) AS t FROM ({{entries}})"


def _objects(table: str, level: int) -> str:
    """The objects whose entries make level ``level``: the document's, or the level above's."""
    if level == 0:
        return f"(SELECT doc AS v FROM {table} WHERE json_type(doc) = 'OBJECT')"
    return f"(SELECT * EXCLUDE (t) FROM {table}_l{level - 1} WHERE t = 'OBJECT')"


def _ops_sql(table: str, levels: Tuple[str, ...]) -> str:
    """``{table}_ops``: one row per innermost entry, a column per level (its key) and ``op``, the
    value typed by ``$spec`` (NULL when it is not an object of that shape, or when ``$replaced``
    and it or its keys hold a replaced byte, ``not_utf8``: counted, then skipped, by the loaders)."""
    replaced = f"$replaced AND contains(concat({', '.join(levels)}, v::VARCHAR), chr(65533))"
    return (f"CREATE OR REPLACE TEMP TABLE {table}_ops AS SELECT *, CASE WHEN NOT not_utf8 AND "
            f"json_type(v) = 'OBJECT' THEN TRY(json_transform(v, $spec)) END AS op FROM (SELECT "
            f"{', '.join(levels)}, v, {replaced} AS not_utf8 FROM ({{entries}}))")


def not_objects_sql(table: str, levels: Tuple[str, ...]) -> str:
    """How many entries above the innermost level are not objects (a step or kind given as null,
    a string, a list): whatever ops they were to hold are lost, one skipped entry each."""
    counts = " + ".join(f"(SELECT count(*) FROM {table}_l{i} WHERE t IS DISTINCT FROM 'OBJECT')"
                        for i in range(len(levels) - 1))
    return f"SELECT {counts}" if counts else "SELECT 0"


# A rank's own file: steps, then the op kinds, then the ops; step number from "step50" ("Step 50",
# "50"; NULL when the key has none).
LEVELS = ("step_key", "kind", "op_key")
STEP = "step_of(step_key)"

TOTAL_KEY = "Total Op Info"
# Said of a file read whole that holds no op (or link): a rank that ran none in its profiled steps.
NONE_HELD = "read whole, and holds no communication"

INSERT_OPS = """
INSERT INTO comm_ops
SELECT $rank, {step}, kind, op_without_group(op_key), op_group(op_key),
       us_decimal(t."Start Timestamp(us)"), t."Elapse Time(ms)", t."Transit Time(ms)",
       t."Wait Time(ms)", t."Synchronization Time(ms)", t."Idle Time(ms)"
FROM (SELECT *, op."Communication Time Info" AS t FROM {table}_ops WHERE op_key <> $total)
WHERE {valid}
"""
# An op is kept with its elapse time, and with no time that is not one (NaN, inf, negative, huge;
# text, null or a boolean: ``v`` is the op's JSON).
VALID_TIMES = 'amount(t."Elapse Time(ms)") IS NOT NULL AND NOT (' + " OR ".join(
    f"""json_not_amount(t."{f}", v, '$."Communication Time Info"."{f}"')"""
    for f in ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)",
              "Idle Time(ms)")) + ")"

# A kept op's transports, but for one with a figure that is not an amount (skipped, counted).
BANDWIDTH = """
FROM (SELECT step_key, kind, op_key, unnest(map_entries(map_once(op."Communication Bandwidth Info"))) AS b, v
      FROM (SELECT *, op."Communication Time Info" AS t FROM {table}_ops WHERE op_key <> $total) WHERE {valid})
"""
BAD_LINK = " OR ".join(
    f"""json_not_amount(b.value."{f}", v, json_pointer('/Communication Bandwidth Info', b.key) || '/{f}')"""
    for f in ("Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)"))
INSERT_BANDWIDTH = """
INSERT INTO comm_bandwidth
SELECT $rank, {step}, kind, op_without_group(op_key), b.key,
       b.value."Transit Size(MB)", b.value."Transit Time(ms)", b.value."Bandwidth(GB/s)"
""" + BANDWIDTH + f"WHERE NOT ({BAD_LINK})"
COUNT_BAD_LINKS = "SELECT count(*) " + BANDWIDTH + f"WHERE {BAD_LINK}"
# The transports of kept ops whose bandwidth info is an object but no map of them (a transport given
# twice): each lost, and counted.
COUNT_UNREAD_LINKS = """
SELECT coalesce(sum(len(json_keys(b))), 0)
FROM (SELECT *, op."Communication Time Info" AS t, json_extract(v, '$."Communication Bandwidth Info"') AS b
      FROM {table}_ops WHERE op_key <> $total AND map_once(op."Communication Bandwidth Info") IS NULL)
WHERE {valid} AND json_type(b) = 'OBJECT'
"""

COUNT_OPS = "SELECT count(*) FROM {table}_ops WHERE op_key <> $total"


def sniff(head: bytes) -> bool:
    return bool(STEP_LAYOUT.match(head) or FLAT_LAYOUT.match(head)) and TIME_INFO in head


@dataclass
class Staged:
    """What stage_json could not make ops of, for the loader to count as skipped and say."""

    not_objects: int  # entries above the ops that are not objects (``not_objects_sql``)
    not_utf8: int  # ops dropped for bytes of another encoding
    gbk: bool = False  # written in GBK throughout, read as such
    zeros: str = ""  # what its trailing zero bytes were (sources.base.zeros_note)
    twice: int = 0  # entries not read: their key given again in the same object (_split)

    def none(self, what: str) -> str:
        """Said of a file that gave no ``what`` (ops, links): read whole (NONE_HELD), or with
        entries lost, which may have held them."""
        return f"{NONE_HELD} {what}" if not (self.lost or self.not_utf8) else f"no communication {what}"

    @property
    def lost(self) -> int:
        """Entries that never reached ``{table}_ops``, each counted as one skipped."""
        return self.not_objects + self.twice

    def note(self, note: str) -> str:
        """``note``, and what was lost, where anything was."""
        n = self.not_objects
        return "; ".join(filter(None, [
            note, self.zeros,
            "not UTF-8: written in GBK, and read as GBK" if self.gbk else "",
            f"not UTF-8: {self.not_utf8:,} op{'s' if self.not_utf8 > 1 else ''} with bytes of another "
            "encoding dropped, the rest kept" if self.not_utf8 else "",
            f"{n} step, kind or group {'entry' if n == 1 else 'entries'} not an object "
            "(null, text or a list): what they were to hold is lost" if n else "",
            f"{self.twice} key{'s' if self.twice > 1 else ''} given again in the same object: the first "
            "value of each read, the other not loaded" if self.twice else ""]))


def stage_json(con: duckdb.DuckDBPyConnection, path: Path, table: str, op_type: str,
               levels: Tuple[str, ...] = LEVELS) -> Staged:
    """Parse ``path`` into ``{table}_ops`` (``_split``, ``_ops_sql``): one row per op of every step
    and kind (or of ``levels``), ``op`` typed ``op_type``. Raises SourceError for empty, truncated
    or non-object files."""
    head = read_head(path)
    if not head.strip():
        raise SourceError("empty file")
    refuse_utf16(head, "JSON")
    zeros = zeros_note(trailing_zeros(path), path.stat().st_size)
    con.execute(STAGE_JSON.format(table=table, text=AS_UTF8), {"path": str(path)})
    replaced, valid = con.execute(f"SELECT not_utf8, valid FROM {table}").fetchone()
    gbk = False
    if replaced or not valid:  # small files (tens of MB on the biggest clusters): read once more, in Python
        raw = path.read_bytes()
        text = raw.decode("utf-8", errors=GBK_PAIRS)
        # GBK bytes may also read as UTF-8 (E0 A7 81 5C: a character, then an escape): where
        # that breaks the JSON, the whole file is GBK's, if it reads as GBK.
        whole = None if _json(text) else _gbk(raw)
        if whole is not None:
            text, gbk, replaced = whole, True, False
        if replaced or gbk:
            con.execute(STAGE_JSON.format(table=table, text=REPLACED), {"text": text})
    valid, kind = con.execute(f"SELECT valid, json_type(doc) FROM {table}").fetchone()
    if not valid:
        raise SourceError("truncated or malformed JSON" + (" (and not UTF-8)" if replaced else ""))
    if kind != "OBJECT":
        raise SourceError("not a JSON object of steps")
    twice = sum(_split(con, table, i, levels, _level_sql(table, i)) for i in range(len(levels) - 1))
    twice += _split(con, table, len(levels) - 1, levels, _ops_sql(table, levels),
                    {"spec": json.dumps(op_type), "replaced": replaced})
    not_objects = con.execute(not_objects_sql(table, levels)).fetchone()[0]
    not_utf8 = con.execute(f"SELECT count(*) FILTER (not_utf8) FROM {table}_ops").fetchone()[0]
    return Staged(not_objects, not_utf8, gbk, zeros, twice)


def stage_either(con: duckdb.DuckDBPyConnection, path: Path, table: str, op_type: str,
                 flat_layout: Pattern) -> Tuple[Staged, bool]:
    """stage_json over a rank's file in either layout: by step and kind, or msprof's own analysis
    (``flat_layout`` matches its head: the ops at the top), its ops given NULL steps and kinds.
    Also whether it was the flat one."""
    flat = bool(flat_layout.match(read_head(path)))
    staged = stage_json(con, path, table, op_type, ("op_key",) if flat else LEVELS)
    if flat:
        con.execute(NO_LEVELS.format(table=table))
    return staged, flat


def _json(text: str) -> bool:
    try:
        json.loads(text.lstrip("\ufeff").rstrip("\0"))
        return True
    except ValueError:
        return False


def _gbk(raw: bytes):
    """The file read as GBK (GB18030), where that makes JSON of it; else None."""
    try:
        text = raw.decode("gb18030")
    except UnicodeDecodeError:
        return None
    return text if _json(text) else None


# Ops whose times are all 0: the profiler matched no task to them (their exposed comm is left
# unsplit by step_account, and rank_waits compares no wait of theirs).
COUNT_UNTIMED = "SELECT count(*) FROM comm_ops WHERE rank = ? AND elapse_ms = 0"
UNTIMED = ("{n} of its {of} op{s} took no time (the profiler matched no task to them): their exposed "
           "communication is not split by cause, and their waits are not compared across ranks")


def drop_json(con: duckdb.DuckDBPyConnection, table: str) -> None:
    # The level tables of the deepest layout (the cluster file's four levels) and any shallower.
    for t in (table, f"{table}_o", f"{table}_ops", *(f"{table}_l{i}" for i in range(3))):
        con.execute(f"DROP TABLE IF EXISTS {t}")


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        staged, flat = stage_either(con, path, STAGE, OP_TYPE, FLAT_LAYOUT)
        params = {"rank": ctx.rank, "total": FLAT_TOTAL if flat else TOTAL_KEY}
        total = con.execute(COUNT_OPS.format(table=STAGE), {"total": params["total"]}).fetchone()[0]
        sql = {"table": STAGE, "step": STEP, "valid": VALID_TIMES}
        untimed = con.execute(COUNT_UNTIMED, [ctx.rank]).fetchone()[0]
        rows = con.execute(INSERT_OPS.format(**sql), params).fetchone()[0]
        con.execute(INSERT_BANDWIDTH.format(**sql), params)
        bad_links = sum(con.execute(count.format(**sql), {"total": params["total"]}).fetchone()[0]
                        for count in (COUNT_BAD_LINKS, COUNT_UNREAD_LINKS))
        untimed = con.execute(COUNT_UNTIMED, [ctx.rank]).fetchone()[0] - untimed
        said = UNTIMED.format(n=f"{untimed:,}", of=f"{rows:,}", s="" if rows == 1 else "s") if untimed else ""
        note = "; ".join(filter(None, ["" if total else staged.none("ops"), said]))
        return LoadResult(rows=rows, skipped=total - rows + bad_links + staged.lost,
                          note=staged.note(note))
    finally:
        drop_json(con, STAGE)
