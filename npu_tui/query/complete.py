"""Completion candidates for the word before the cursor."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

from .catalog import Catalog
from .statements import statement_at

_WORD_BEFORE = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)?$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LIMIT = 50


@dataclass(frozen=True)
class Candidate:
    text: str
    kind: str  # column | table | view | function | keyword
    detail: str  # the column's relation and type, or empty


@dataclass
class Completion:
    start: int  # where the word being completed begins; replace text[start:offset]
    prefix: str
    candidates: List[Candidate]


def _alias_target(statement: str, alias: str, catalog: Catalog) -> Optional[str]:
    """The relation `alias` stands for in `... FROM kernels k` / `JOIN kernels AS k`."""
    pattern = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s+(?:AS\s+)?" + re.escape(alias) + r"\b", re.I)
    for found in pattern.finditer(statement):
        if catalog.relation(found.group(1)) is not None:
            return found.group(1)
    return None


def complete(sql: str, offset: int, catalog: Catalog) -> Optional[Completion]:
    """Candidates for the identifier ending at `offset`, or None when there is nothing to complete.

    After `name.` only that relation's (or alias's) columns are offered. Otherwise, in order: columns
    of the relations the statement names, relations, other columns, functions, keywords."""
    found = _WORD_BEFORE.search(sql[:offset])
    qualifier, prefix = found.group(1), found.group(2) or ""
    if not prefix and not qualifier:
        return None
    start = offset - len(prefix)
    stmt = statement_at(sql, offset)
    statement = stmt.text if stmt is not None else ""
    low = prefix.lower()

    def columns(rel) -> List[Candidate]:
        return [Candidate(c, "column", f"{rel.name} {t}") for c, t in rel.columns
                if c.lower().startswith(low)]

    if qualifier:
        rel = catalog.relation(qualifier) or catalog.relation(
            _alias_target(statement, qualifier, catalog) or "")
        return Completion(start, prefix, columns(rel)[:LIMIT] if rel is not None else [])

    named = {w.lower() for w in _IDENT.findall(statement)}
    in_scope = [r for key, r in catalog.relations.items() if key in named]
    others = [r for key, r in catalog.relations.items() if key not in named]
    out: List[Candidate] = []
    for rel in in_scope:
        out += columns(rel)
    out += [Candidate(r.name, r.kind, "") for r in catalog.relations.values()
            if r.name.lower().startswith(low)]
    for rel in others:
        out += columns(rel)
    out += [Candidate(f, "function", "") for f in catalog.functions if f.lower().startswith(low)]
    out += [Candidate(k, "keyword", "") for k in catalog.keywords if k.lower().startswith(low)]
    seen, unique = set(), []
    for c in out:
        if c.text.lower() != low and c.text not in seen:
            seen.add(c.text)
            unique.append(c)
    return Completion(start, prefix, unique[:LIMIT])
