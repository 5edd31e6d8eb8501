"""What the console can name: tables and views with their columns, functions, keywords."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import duckdb

RELATIONS_SQL = """
SELECT table_name, 'table' AS kind, temporary, coalesce(comment, '') FROM duckdb_tables() WHERE NOT internal
UNION ALL
SELECT view_name, 'view', temporary, coalesce(comment, '') FROM duckdb_views() WHERE NOT internal
ORDER BY temporary, kind, 1
"""
COLUMNS_SQL = """
SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE NOT internal
ORDER BY database_name, schema_name, table_name, column_index
"""
# Operators (`+`, `~~`) are functions too in DuckDB's catalog; only names one can type are kept.
FUNCTIONS_SQL = """
SELECT DISTINCT function_name FROM duckdb_functions()
WHERE regexp_matches(function_name, '^[A-Za-z_][A-Za-z0-9_]*$') ORDER BY 1
"""
KEYWORDS_SQL = "SELECT keyword_name FROM duckdb_keywords() ORDER BY 1"


@dataclass
class Relation:
    name: str
    kind: str  # table | view
    temporary: bool
    comment: str
    columns: List[Tuple[str, str]] = field(default_factory=list)  # (name, type)


@dataclass
class Catalog:
    relations: Dict[str, Relation]  # lower-case name -> relation
    functions: List[str]
    keywords: List[str]

    def relation(self, name: str):
        return self.relations.get(name.lower())


def read_catalog(cur: duckdb.DuckDBPyConnection, hidden: Tuple[str, ...] = ()) -> Catalog:
    """The catalog as `cur` sees it (its own temp objects included), less the `hidden` names."""
    relations: Dict[str, Relation] = {}
    for name, kind, temporary, comment in cur.execute(RELATIONS_SQL).fetchall():
        if name not in hidden:
            relations.setdefault(name.lower(), Relation(name, kind, temporary, comment))
    for table, column, dtype in cur.execute(COLUMNS_SQL).fetchall():
        rel = relations.get(table.lower())
        if rel is not None and (column, dtype) not in rel.columns:
            rel.columns.append((column, dtype))
    functions = [r[0] for r in cur.execute(FUNCTIONS_SQL).fetchall()]
    keywords = [r[0].upper() for r in cur.execute(KEYWORDS_SQL).fetchall()]
    return Catalog(relations, functions, keywords)
