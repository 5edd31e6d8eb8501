"""The rules file: categories, stage markers and signatures, finding thresholds (design.md §5-§6).

The shipped ``rules.toml`` is the default; ``--rules FILE`` is merged over it, so a file holding one
changed threshold changes that alone: tables merge key by key, a ``[[finding]]`` merges into the
shipped rule of the same ``rule`` id (or adds a new rule), and a list of ``[[category]]`` or
``[[stages.marker]]`` entries replaces the shipped list (their order is their meaning). Rules reach
SQL as rows of small ``rules_*`` tables, so every view is plain SQL and patterns never enter SQL text.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib

import duckdb

from ..profile.errors import ProfileError

CATEGORY_FIELDS = ("type", "name", "core")
METRICS = ("share", "exposed_share", "idle_share", "copy_share", "vae_share", "forwards", "spread",
           "memory_growth", "memory_idle_reserved", "memory_capacity_share")
DOC = "STRUCT(repository VARCHAR, path VARCHAR, action VARCHAR)"


@dataclass
class Rules:
    data: Dict[str, Any]
    source: str

    @property
    def fingerprint(self) -> str:
        """Identifies the rules' content, so views installed with them need not be rebuilt."""
        return hashlib.sha256(json.dumps(self.data, sort_keys=True).encode()).hexdigest()

    @property
    def stage_names(self) -> List[str]:
        return list(self.data["stages"]["names"])

    @property
    def findings(self) -> List[Dict[str, Any]]:
        return list(self.data.get("finding", []))

    @property
    def categories(self) -> List[str]:
        """Category names in first-seen order (the order reports list them in)."""
        seen: List[str] = []
        for c in self.data["category"]:
            if c["name"] not in seen:
                seen.append(c["name"])
        return seen


def load_rules(path: Optional[Path] = None) -> Rules:
    """The shipped rules, with the rules in ``path`` merged over them. Raises ProfileError for an
    unusable file."""
    data = tomllib.loads(resources.files(__package__).joinpath("rules.toml").read_text(encoding="utf-8"))
    source = "default"
    if path is not None:
        try:
            data = merge(data, tomllib.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, UnicodeError, tomllib.TOMLDecodeError) as e:
            raise ProfileError(f"{path}: unreadable rules file: {e}") from e
        source = str(path)
    _check(data, source)
    if path is not None:
        _check_patterns(data, source)
    return Rules(data=data, source=source)


def merge(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    """``over`` merged into ``base`` (see the module docstring); neither is changed."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        if key == "finding" and isinstance(old, list) and isinstance(value, list):
            changed = {f.get("rule"): f for f in value}
            shipped = {f.get("rule") for f in old}
            out[key] = ([merge(f, changed[f.get("rule")]) if f.get("rule") in changed else f for f in old]
                        + [f for f in value if f.get("rule") not in shipped])
        elif isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def rule_ids(rules: Rules) -> List[str]:
    return [f["rule"] for f in rules.findings]


def _check(data: Dict[str, Any], source: str) -> None:
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ProfileError(f"{source}: rules file: {what}")

    need(isinstance(data.get("category"), list) and data["category"], "no [[category]] rules")
    for c in data["category"]:
        need("name" in c and ("pattern" in c or "core" in c), f"category rule without name/pattern: {c}")

    def number(table: Any, key: str, where: str, whole: bool = False) -> None:
        need(isinstance(table, dict), f"{where} is not a table")
        need(key in table, f"{where} lacks {key}")
        value = table[key]
        need(isinstance(value, int if whole else (int, float)) and not isinstance(value, bool)
             and math.isfinite(value), f"{where}: {key} = {value!r} is not a{' whole' if whole else ''} number")

    need("compute" in data, "no [compute] table")
    for key in ("warmup_factor", "account_tolerance"):
        number(data.get("steps", {}), key, "[steps]")
    number(data.get("comm", {}), "slow_link_ratio", "[comm]")
    for key in ("comm_category", "default_category", "copies"):
        need(key in data["compute"], f"[compute] lacks {key}")
    stages = data.get("stages", {})
    for key in ("names", "default", "rest", "markers", "marker", "signature"):
        need(key in stages, f"[stages] lacks {key}")
    number(stages["markers"], "vae_min_kernels", "[stages.markers]", whole=True)
    number(stages["signature"], "period_support", "[stages.signature]")
    for key in ("vae_min_kernels", "period_min_kernels", "block_min_kernels"):
        number(stages["signature"], key, "[stages.signature]", whole=True)
    for f in data.get("finding", []):
        for key in ("rule", "metric", "direction", "docs"):
            need(key in f, f"finding {f.get('rule', '?')} lacks {key}")
        number(f, "threshold", f"finding {f['rule']}")
        need(f["metric"] in METRICS, f"finding {f['rule']}: unknown metric {f['metric']!r}")
        for cause in [f] + list(f.get("causes", {}).values()):
            for doc in cause.get("docs", []):
                need(isinstance(doc, dict) and "page" in doc and "action" in doc,
                     f"finding {f['rule']}: a doc needs a page and an action: {doc}")
    need("repository" in data.get("docs", {}) and "folder" in data.get("docs", {}),
         "[docs] lacks repository or folder")


def _check_patterns(data: Dict[str, Any], source: str) -> None:
    """Each regular expression of merged rules, asked of DuckDB, whose syntax (RE2) the views
    match with: a bad one failed the analysis with a traceback. Only for a user's file (30 ms
    for a connection); the shipped patterns are tested."""
    con = duckdb.connect()
    stages = data["stages"]
    found = ([(c["pattern"], f"category {c['name']}") for c in data["category"] if "pattern" in c]
             + [(data["compute"].get("copies"), "[compute] copies"),
                (stages["markers"].get("own"), "[stages.markers] own"),
                (stages["markers"].get("ignore"), "[stages.markers] ignore"),
                (stages["markers"].get("frames"), "[stages.markers] frames"),
                (stages["signature"].get("vae_pattern"), "[stages.signature] vae_pattern")]
             + [(m.get("pattern"), f"stage marker {m.get('stage', '?')}") for m in stages["marker"]])
    for value, where in found:
        try:
            if not isinstance(value, str):
                raise ValueError("not text")
            con.execute("SELECT regexp_matches('', ?)", [value])
        except (ValueError, duckdb.Error) as e:
            raise ProfileError(f"{source}: rules file: {where}: pattern {value!r}: {e}") from None


RULE_TABLES = """
CREATE OR REPLACE TABLE rules_categories (ord INTEGER, category VARCHAR, field VARCHAR, pattern VARCHAR);
CREATE OR REPLACE TABLE rules_compute (category VARCHAR, core VARCHAR, comm_category VARCHAR,
                                        default_category VARCHAR, copies VARCHAR);
CREATE OR REPLACE TABLE rules_stage_markers (ord INTEGER, stage VARCHAR, pattern VARCHAR);
CREATE OR REPLACE TABLE rules_stages (
    default_stage VARCHAR, rest_stage VARCHAR, own_marker VARCHAR, ignore_marker VARCHAR, frame_marker VARCHAR,
    vae_stage VARCHAR, dit_stage VARCHAR, vae_pattern VARCHAR, vae_min_kernels INTEGER,
    attention_category VARCHAR, forward_categories VARCHAR[], period_support DOUBLE,
    period_min_kernels INTEGER, block_min_kernels INTEGER, vae_marker_min_kernels INTEGER);
CREATE OR REPLACE TABLE rules_findings (
    ord INTEGER, rule VARCHAR, stage VARCHAR, metric VARCHAR, category VARCHAR, threshold DOUBLE,
    direction VARCHAR, docs {doc}[], speedup DOUBLE, estimate VARCHAR);
-- what a finding says instead when its time has this cause (exposed comm: transit, wait, idle)
CREATE OR REPLACE TABLE rules_finding_causes (
    rule VARCHAR, cause VARCHAR, direction VARCHAR, docs {doc}[], speedup DOUBLE, estimate VARCHAR);
CREATE OR REPLACE TABLE rules_order (kind VARCHAR, ord INTEGER, name VARCHAR);
CREATE OR REPLACE TABLE rules_steps (warmup_factor DOUBLE, account_tolerance DOUBLE);
CREATE OR REPLACE TABLE rules_comm (slow_link_ratio DOUBLE);
-- Stage windows set by hand (CLI / TUI); they win over detection for their rank.
CREATE TABLE IF NOT EXISTS stage_overrides (rank INTEGER, stage VARCHAR, start_ns BIGINT, end_ns BIGINT);
"""


def _insert(con: duckdb.DuckDBPyConnection, sql: str, rows: list) -> None:
    if rows:  # DuckDB refuses executemany with no parameter sets
        con.executemany(sql, rows)


def _docs(d: Dict[str, Any], entry: Dict[str, Any]) -> List[Dict[str, str]]:
    where = d["docs"]
    return [{"repository": where["repository"], "path": where["folder"] + doc["page"], "action": doc["action"]}
            for doc in entry.get("docs", [])]


def install_rule_tables(con: duckdb.DuckDBPyConnection, rules: Rules) -> None:
    d = rules.data
    con.execute(RULE_TABLES.replace("{doc}", DOC))
    rows = []
    for i, c in enumerate(d["category"]):
        if "pattern" in c:
            rows += [(i, c["name"], f, c["pattern"]) for f in ("type", "name")]
        rows += [(i, c["name"], "core", core.lower()) for core in c.get("core", [])]
    _insert(con, "INSERT INTO rules_categories VALUES (?, ?, ?, ?)", rows)

    order = [("category", i, c) for i, c in enumerate(d.get("category_order", rules.categories))]
    order += [("stage", i, s) for i, s in enumerate(d["stages"]["names"])]
    _insert(con, "INSERT INTO rules_order VALUES (?, ?, ?)", order)

    comp = d["compute"]
    shared = (comp["comm_category"], comp["default_category"], comp["copies"])
    _insert(con, "INSERT INTO rules_compute VALUES (?, ?, ?, ?, ?)",
            [(c, None) + shared for c in comp.get("categories", [])]
            + [(None, c.lower()) + shared for c in comp.get("cores", [])])

    con.execute("INSERT INTO rules_steps VALUES (?, ?)",
                [float(d["steps"]["warmup_factor"]), float(d["steps"]["account_tolerance"])])
    con.execute("INSERT INTO rules_comm VALUES (?)", [float(d["comm"]["slow_link_ratio"])])
    st = d["stages"]
    _insert(con, "INSERT INTO rules_stage_markers VALUES (?, ?, ?)",
                    [(i, m["stage"], m["pattern"]) for i, m in enumerate(st["marker"])])
    sig = st["signature"]
    names = st["names"]
    con.execute(
        "INSERT INTO rules_stages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [st["default"], st["rest"], st["markers"]["own"], st["markers"]["ignore"], st["markers"]["frames"],
         sig.get("vae_stage", names[1]), sig.get("dit_stage", names[0]), sig["vae_pattern"],
         int(sig["vae_min_kernels"]), sig["attention_category"], list(sig["forward_categories"]),
         float(sig["period_support"]),
         int(sig["period_min_kernels"]), int(sig["block_min_kernels"]), int(st["markers"]["vae_min_kernels"])],
    )
    findings = d.get("finding", [])
    _insert(con, "INSERT INTO rules_findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(i, f["rule"], f.get("stage"), f["metric"], f.get("category"), float(f["threshold"]),
              f["direction"], _docs(d, f), f.get("speedup"), f.get("estimate"))
             for i, f in enumerate(findings)])
    _insert(con, "INSERT INTO rules_finding_causes VALUES (?, ?, ?, ?, ?, ?)",
            [(f["rule"], cause, c.get("direction", f["direction"]), _docs(d, c) or _docs(d, f),
              c.get("speedup", f.get("speedup")), c.get("estimate", f.get("estimate")))
             for f in findings for cause, c in f.get("causes", {}).items()])
