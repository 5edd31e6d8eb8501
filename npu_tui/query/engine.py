"""Running console SQL on the loaded profile: one statement at a time, timed, cancellable, guarded.

The console owns one cursor on the profile's connection, so the temp tables and views a user
creates live as long as the console. A query's result is kept in DuckDB (a temp table) and read a
page at a time; nothing pulls a whole result into Python except the few statements that cannot be
materialised that way (PRAGMA, EXPLAIN, CALL, RETURNING), whose results are small."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import duckdb

from .catalog import Catalog, read_catalog
from .errors import Cancelled, QueryError, from_duckdb
from .guard import Guard
from .statements import Statement, split_statements

RESULT_TABLE = "_console_result"
# The statement goes on its own line so DuckDB's error positions shift by exactly one line.
MATERIALIZE_SQL = "CREATE OR REPLACE TEMP TABLE " + RESULT_TABLE + " AS (\n{statement}\n)"
COUNT_SQL = "SELECT count(*) FROM " + RESULT_TABLE
DESCRIBE_SQL = "SELECT * FROM " + RESULT_TABLE + " LIMIT 0"
PAGE_SQL = "SELECT * FROM " + RESULT_TABLE + " LIMIT ? OFFSET ?"
EXPORT_SQL = "COPY (SELECT * FROM " + RESULT_TABLE + ") TO ? {options}"
EXPORT_OPTIONS = {
    "csv": "(FORMAT csv, HEADER true)",
    "parquet": "(FORMAT parquet)",
    "json": "(FORMAT json, ARRAY true)",
}
TRANSACTION_REFUSED = ("the console manages transactions itself: each statement commits on its "
                       "own, and one that would change the profile is rolled back")


@dataclass
class Result:
    """What a statement gave: a table of `row_count` rows (read with QueryEngine.page) or none."""

    statement: Statement
    kind: str
    columns: List[str] = field(default_factory=list)
    types: List[str] = field(default_factory=list)
    row_count: int = 0
    elapsed_s: float = 0.0
    exportable: bool = False


class QueryEngine:
    """The console's SQL session on `con`. Thread-safe: statements and page reads are serialised,
    and cancel() may be called from any thread while a statement runs."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self._cur = con.cursor()
        self._lock = threading.Lock()
        self.guard = Guard(self._cur)
        self._rows: Optional[List[tuple]] = None
        self.result: Optional[Result] = None

    def run(self, sql: str, statement: Statement) -> Result:
        """Run one statement of the console text `sql` (errors point into `sql`)."""
        # Parsing uses the cursor too: under the lock, or a catalog read on another thread (the
        # schema refreshed when the analysis is rebuilt) finds it busy, and DuckDB refuses.
        with self._lock:
            try:
                parsed = self._cur.extract_statements(statement.text)
            except duckdb.Error as e:
                raise from_duckdb(e, sql, statement.start) from None
            kind = parsed[0].type
            if kind == duckdb.StatementType.TRANSACTION:
                raise QueryError(TRANSACTION_REFUSED)
            select = kind == duckdb.StatementType.SELECT
            started = time.perf_counter()
            try:
                if select:
                    result = self._materialize(statement)
                else:
                    result = self.guard.run(self._cur, lambda: self._execute(statement), statement.text)
            except duckdb.InterruptException:
                raise Cancelled("cancelled") from None
            except duckdb.Error as e:
                raise from_duckdb(e, sql, statement.start, 1 if select else 0) from None
            result.kind = kind.name
            result.elapsed_s = time.perf_counter() - started
        self.result = result
        return result

    def run_all(self, sql: str) -> List[Result]:
        """Every statement of `sql` in order; the first failure stops the rest (and is raised)."""
        return [self.run(sql, s) for s in split_statements(sql)]

    def _materialize(self, statement: Statement) -> Result:
        self._cur.execute(MATERIALIZE_SQL.format(statement=statement.text))
        self._rows = None
        self._cur.execute(DESCRIBE_SQL)
        columns = [d[0] for d in self._cur.description]
        types = [str(d[1]) for d in self._cur.description]
        count = self._cur.execute(COUNT_SQL).fetchone()[0]
        return Result(statement, "", columns, types, count, exportable=True)

    def _execute(self, statement: Statement) -> Result:
        self._cur.execute(statement.text)
        if self._cur.description is None:
            self._rows = []
            return Result(statement, "")
        columns = [d[0] for d in self._cur.description]
        types = [str(d[1]) for d in self._cur.description]
        self._rows = self._cur.fetchall()
        return Result(statement, "", columns, types, len(self._rows))

    def page(self, start: int, count: int) -> List[tuple]:
        """Rows start..start+count of the latest result."""
        if self._rows is not None:
            return self._rows[start:start + count]
        with self._lock:
            return self._cur.execute(PAGE_SQL, [count, start]).fetchall()

    def frame(self):
        """The latest result whole, as a pandas DataFrame (pandas is imported here, when asked)."""
        with self._lock:
            if self._rows is None:
                return self._cur.execute(f"SELECT * FROM {RESULT_TABLE}").df()
            import pandas

            return pandas.DataFrame(self._rows, columns=self.result.columns if self.result else None)

    def catalog(self) -> Catalog:
        """Tables, views (the console's temp ones too), columns, functions and keywords."""
        with self._lock:
            return read_catalog(self._cur, hidden=(RESULT_TABLE,))

    def cancel(self) -> None:
        """Interrupt the running statement (a no-op when none runs)."""
        self._cur.interrupt()

    def export(self, path: Path, fmt: str) -> Path:
        """Write the latest result to `path` as csv, parquet or json. The file appears whole or not
        at all: DuckDB writes a temp name beside it, which is then renamed."""
        if self.result is None or not self.result.exportable:
            raise QueryError("nothing to export: run a query (SELECT ...) first")
        target = Path(path).expanduser()
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            with self._lock:
                self._cur.execute(EXPORT_SQL.format(options=EXPORT_OPTIONS[fmt]), [str(partial)])
            os.replace(partial, target)
        except duckdb.Error as e:
            raise QueryError(f"export failed: {str(e).splitlines()[0]}") from None
        finally:
            if partial.exists():
                partial.unlink()
        return target

    def close(self) -> None:
        self._cur.close()
