"""The DuckDB under test: pyproject allows 1.4.1 on, and pip gives Python 3.9 and 3.10 nothing newer
than 1.4 and 1.5, which differ from 2.0 where the tests say so (README, "DuckDB versions")."""

import duckdb

BEFORE_2 = int(duckdb.__version__.split(".")[0]) < 2
