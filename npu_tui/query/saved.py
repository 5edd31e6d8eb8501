"""Named queries: the user's own (saved in the state directory) and the starters shipped here."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .state import set_aside, state_file, write_atomic

SAVED_FILE = "sql_saved.json"
STARTERS_FILE = "starters.sql"
_NAME = re.compile(r"^--\s*name:\s*(.+?)\s*$", re.MULTILINE)


def starter_queries() -> List[Tuple[str, str]]:
    """(name, sql) for each query of starters.sql, each introduced by a `-- name: ...` line."""
    text = resources.files(__package__).joinpath(STARTERS_FILE).read_text(encoding="utf-8")
    marks = list(_NAME.finditer(text))
    return [(m.group(1), text[m.end():nxt.start() if nxt else len(text)].strip())
            for m, nxt in zip(marks, marks[1:] + [None])]


class SavedQueries:
    """name -> sql, kept in one JSON object; an unreadable file is set aside, never fatal."""

    def __init__(self, path: Optional[Path] = None):
        self.path, self.unsaved = state_file(SAVED_FILE, path)  # (None, why): in memory alone
        self.set_aside_to: Optional[Path] = None
        self.queries: Dict[str, str] = self._read()

    def _read(self) -> Dict[str, str]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not (isinstance(data, dict) and all(isinstance(v, str) for v in data.values())):
                raise ValueError("not a name -> sql object")
            return data
        except (ValueError, OSError, UnicodeDecodeError):
            try:
                self.set_aside_to = set_aside(self.path)
            except OSError as e:  # not ours to move: left as it is, and saves kept in memory
                self.path, self.unsaved = None, f"{e.strerror or e}: {self.path}"
            return {}

    def save(self, name: str, sql: str) -> None:
        """Raises OSError where the file cannot be written (the query is kept for this session)."""
        self.queries[name] = sql.strip()
        self._write()

    def delete(self, name: str) -> None:
        self.queries.pop(name, None)
        self._write()

    def _write(self) -> None:
        if self.path is None:
            raise OSError(self.unsaved)
        write_atomic(self.path, json.dumps(self.queries, indent=1, sort_keys=True) + "\n")
