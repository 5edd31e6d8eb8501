"""The SQL console's engine, with no UI: statements, guarded execution, paging, cancellation,
completion, history, saved and starter queries, export. Imports duckdb and the stdlib only."""

from .catalog import Catalog, Relation, read_catalog
from .complete import Candidate, Completion, complete
from .engine import EXPORT_OPTIONS, RESULT_TABLE, QueryEngine, Result
from .errors import Cancelled, ProtectedError, QueryError
from .history import Entry, History
from .saved import SavedQueries, starter_queries
from .state import STATE_DIR_ENV, state_dir
from .statements import Statement, split_statements, statement_at

__all__ = [
    "EXPORT_OPTIONS", "RESULT_TABLE", "STATE_DIR_ENV", "Cancelled", "Candidate", "Catalog",
    "Completion", "Entry", "History", "ProtectedError", "QueryEngine", "QueryError", "Relation",
    "Result", "SavedQueries", "Statement", "complete", "read_catalog", "split_statements",
    "starter_queries", "state_dir", "statement_at",
]
