"""Disk -> DuckDB: discovery of profile layouts and one loader per source format. No UI imports."""

from .errors import LoadCancelled, ProfileError, SourceError
from .loader import Profile, load_profile
from .schema import CANONICAL_TABLES, connect

__all__ = ["CANONICAL_TABLES", "LoadCancelled", "Profile", "ProfileError", "SourceError",
           "connect", "load_profile"]
