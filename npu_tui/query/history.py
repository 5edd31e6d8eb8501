"""Console history: one JSON object per line in the state directory, newest last."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional

from .state import set_aside, state_file

HISTORY_FILE = "sql_history.jsonl"


@dataclass(frozen=True)
class Entry:
    sql: str
    at: float  # unix time
    ok: bool
    rows: int
    elapsed_s: float


class History:
    """Appends go straight to disk; the file is read once. A file that cannot be read is set aside
    (renamed, see `set_aside_to`) and a fresh one started, so a bad line never stops the console."""

    def __init__(self, path: Optional[Path] = None):
        # Kept in memory alone where it cannot be on disk (no state folder, or one not writable):
        # path None, and unsaved says why.
        self.path, self.unsaved = state_file(HISTORY_FILE, path)
        self.set_aside_to: Optional[Path] = None
        self.entries: List[Entry] = self._read()

    def _read(self) -> List[Entry]:
        if self.path is None or not self.path.exists():
            return []
        try:
            with self.path.open(encoding="utf-8") as f:
                return [Entry(**json.loads(line)) for line in f if line.strip()]
        except (ValueError, TypeError, OSError, UnicodeDecodeError):
            try:
                self.set_aside_to = set_aside(self.path)
            except OSError as e:  # not ours to move (another user's folder): left, and not written to
                self.path, self.unsaved = None, f"{e.strerror or e}: {self.path}"
            return []

    def add(self, sql: str, ok: bool, rows: int = 0, elapsed_s: float = 0.0) -> Entry:
        entry = Entry(sql.strip(), time.time(), ok, rows, round(elapsed_s, 6))
        self.entries.append(entry)
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(entry)) + "\n")
            except OSError as e:
                self.path, self.unsaved = None, f"{e.strerror or e}: {self.path}"
        return entry

    def search(self, text: str = "") -> List[Entry]:
        """Newest first, one entry per distinct statement, those containing `text` (any case)."""
        needle = text.lower()
        seen, out = set(), []
        for e in reversed(self.entries):
            if e.sql not in seen and needle in e.sql.lower():
                seen.add(e.sql)
                out.append(e)
        return out
