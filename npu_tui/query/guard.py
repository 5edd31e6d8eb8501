"""Keeps the loaded profile intact while the console runs the user's SQL.

Every statement other than a plain query runs inside a transaction; before it commits, the catalog
and the rows of the profile's tables are compared with what they were, and any change to them is
rolled back with a message. DuckDB does the parsing and the work; this module only compares.
Protected: every table, view and macro that exists when the console opens. The user's own objects
go in the temp schema (CREATE TEMP TABLE / VIEW), where they are free to change them. A profile
reopened from its cache is read-only (other npu-tuis may share the file): there DuckDB refuses a
change itself, and the statement's target says which of the same refusals to give."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, Tuple, TypeVar

import duckdb

from .errors import ProtectedError

T = TypeVar("T")

# (kind, database, schema, name) -> a signature that changes when the object is replaced or altered
# (a comment on it included). Schemas, sequences and indexes count too: made in the profile's
# database, they would be written into a cache file others share.
OBJECTS_SQL = """
SELECT 'table', database_name, schema_name, table_name, temporary,
       table_oid::VARCHAR || sql || coalesce(comment, '')
FROM duckdb_tables() WHERE NOT internal
UNION ALL
SELECT 'view', database_name, schema_name, view_name, temporary, view_oid::VARCHAR || sql || coalesce(comment, '')
FROM duckdb_views() WHERE NOT internal
UNION ALL
SELECT 'schema', database_name, schema_name, schema_name, database_name = 'temp', coalesce(comment, '')
FROM duckdb_schemas() WHERE NOT internal
UNION ALL
SELECT 'sequence', database_name, schema_name, sequence_name, temporary, coalesce(sql, '')
FROM duckdb_sequences()
UNION ALL
SELECT 'index', database_name, schema_name, index_name, database_name = 'temp', coalesce(sql, '')
FROM duckdb_indexes()
UNION ALL
SELECT 'macro', database_name, schema_name, function_name, database_name = 'temp',
       string_agg(coalesce(macro_definition, ''), ';' ORDER BY macro_definition)
FROM duckdb_functions() WHERE NOT internal AND function_type IN ('macro', 'table_macro')
GROUP BY ALL
"""

# Row count and an order-free hash of every row: equal before and after means the rows are unchanged.
FINGERPRINT_SQL = "SELECT count(*), sum(hash(t)::HUGEINT) FROM {table} AS t"

Key = Tuple[str, str, str, str]

COPY_HINT = {
    "table": "CREATE TEMP TABLE my_{name} AS FROM {name}",
    "view": "CREATE TEMP VIEW my_{name} AS ...",
    "macro": "CREATE TEMP MACRO my_{name}(...) AS ...",
    "sequence": "CREATE TEMP SEQUENCE my_{name}",
}
# Kinds DuckDB has no temp form of.
NO_TEMP = {"index": "indexes", "schema": "schemas"}


# What a statement changes: its first words and the name after them.
TARGET = re.compile(r"""^\s*(?:EXPLAIN\s+(?:ANALYZE\s+)?)?
    (?:(?:CREATE(?:\s+OR\s+REPLACE)?\s+(?P<kind>\w+)(?:\s+IF\s+NOT\s+EXISTS)?)
      |(?:DROP|ALTER)\s+\w+(?:\s+IF\s+EXISTS)?
      |(?P<rows>INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?))
    \s+(?P<name>(?:"(?:[^"]|"")+"|\w+)(?:\.(?:"(?:[^"]|"")+"|\w+))*)""", re.IGNORECASE | re.VERBOSE)


def _changed(kind: str, name: str) -> ProtectedError:
    hint = COPY_HINT.get(kind)
    return ProtectedError(
        f"refused: {kind} {name} belongs to the loaded profile and cannot be dropped, "
        f"replaced or altered from the console; nothing was changed."
        + (f" Make your own under another name: {hint.format(name=name)}" if hint else ""))


def _rows_changed(name: str) -> ProtectedError:
    return ProtectedError(
        f"refused: table {name} belongs to the loaded profile and its rows cannot be "
        f"changed from the console; nothing was changed. "
        f"Work on a copy: {COPY_HINT['table'].format(name=name)}")


def _not_temp(kind: str, name: str) -> ProtectedError:
    if kind in NO_TEMP:
        return ProtectedError(f"refused: the profile's database stays as loaded, and DuckDB has no temp "
                              f"{NO_TEMP[kind]}: {kind} {name} cannot be made from the console")
    return ProtectedError(
        f"refused: new {kind}s go in the temp schema so the profile's database stays "
        f"as loaded; use CREATE TEMP {kind.upper()} {name} ...")


def _last_part(name: str) -> str:
    part = re.findall(r'"(?:[^"]|"")+"|\w+', name)[-1]
    return part[1:-1].replace('""', '"') if part.startswith('"') else part


@dataclass(frozen=True)
class _Object:
    temporary: bool
    signature: str


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _objects(cur: duckdb.DuckDBPyConnection) -> Dict[Key, _Object]:
    return {(k, db, schema, name): _Object(temp, sig)
            for k, db, schema, name, temp, sig in cur.execute(OBJECTS_SQL).fetchall()}


class Guard:
    """Snapshot of the profile's objects, taken on the cursor the console runs on."""

    def __init__(self, cur: duckdb.DuckDBPyConnection):
        self.protected = {key: obj for key, obj in _objects(cur).items() if not obj.temporary}
        self.database = cur.execute("SELECT current_database()").fetchone()[0]
        self._names = {key[3].lower(): key for key in self.protected}

    def _fingerprints(self, cur, objects: Dict[Key, _Object]) -> Dict[Key, tuple]:
        return {key: cur.execute(FINGERPRINT_SQL.format(
                    table=".".join(quote_ident(p) for p in key[1:]))).fetchone()
                for key in self.protected if key[0] == "table" and key in objects}

    def run(self, cur: duckdb.DuckDBPyConnection, execute: Callable[[], T], text: str = "") -> T:
        """execute() (of the statement ``text``) inside a transaction that commits only if the
        profile is unchanged."""
        cur.execute("BEGIN TRANSACTION")
        try:
            # Compared with the state just before the statement, not at startup: the app may
            # reinstall the analysis views (new rules) while the console is open.
            objects = _objects(cur)
            rows = self._fingerprints(cur, objects)
            try:
                result = execute()
            except duckdb.InvalidInputException as e:
                if "read-only mode" not in str(e):
                    raise
                raise self._read_only(text) from None
            self._check(cur, objects, rows)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")
        return result

    def _read_only(self, text: str) -> ProtectedError:
        """The refusal for a change DuckDB refused on a read-only profile, by the statement's target."""
        m = TARGET.match(text)
        key = self._names.get(_last_part(m["name"]).lower()) if m else None
        if key is None:
            if m and m["kind"]:
                kind = m["kind"].lower()
                return _not_temp({"function": "macro", "unique": "index"}.get(kind, kind), _last_part(m["name"]))
            return ProtectedError("refused: statements cannot change the loaded profile's database; "
                                  "nothing was changed. Make your own objects in the temp schema: "
                                  "CREATE TEMP TABLE name AS ...")
        if m["rows"] and key[0] == "table":
            return _rows_changed(key[3])
        return _changed(key[0], key[3])

    def _check(self, cur, objects: Dict[Key, _Object], rows: Dict[Key, tuple]) -> None:
        now = _objects(cur)
        for key in self.protected:
            kind, _, _, name = key
            if key in objects and (key not in now or now[key].signature != objects[key].signature):
                raise _changed(kind, name)
        for key, prints in self._fingerprints(cur, now).items():
            if prints != rows.get(key):
                raise _rows_changed(key[3])
        for key, obj in now.items():
            kind, db, _, name = key
            if key in self.protected or key in objects:
                continue
            if obj.temporary and name.lower() in self._names:
                raise ProtectedError(
                    f"refused: a temp {kind} named {name} would hide the profile's own {name}; "
                    f"choose another name")
            if not obj.temporary and db == self.database:
                raise _not_temp(kind, name)
