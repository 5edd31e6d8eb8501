"""The schema browser: the profile's tables and views, each with its description and columns."""

from __future__ import annotations

from typing import Dict

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree

from ....analysis.views import BUILDING_BLOCKS, INPUT_TABLES, TABLE_MACROS, VIEW_DESCRIPTIONS, VIEW_ORDER
from ....profile.schema import TABLE_DESCRIPTIONS
from ....query import Catalog
from ...cells import literal


# Bookkeeping of the loader and the cache, not profile data.
INTERNAL_TABLES = ("rules_installed", "npu_tui_cache", "stage_overrides")


def descriptions() -> Dict[str, str]:
    return {**TABLE_DESCRIPTIONS, **VIEW_DESCRIPTIONS}


class SchemaBrowser(Tree):
    """`enter` on a table, view or column writes its name into the editor."""

    HELP_TITLE = "Schema"
    BINDINGS = [Binding("enter", "insert", "Insert name")]

    class Insert(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, **kwargs) -> None:
        super().__init__(Text("tables and views"), **kwargs)
        self.show_root = False
        self.guide_depth = 2

    def show(self, catalog: Catalog) -> None:
        """The profile's tables, then the analysis views (as design and README describe them) and
        those that take arguments, then what the user made; the rules tables and the views'
        building blocks folded under one node."""
        about = descriptions()
        self.clear()
        rels = list(catalog.relations.values())
        views = {name: i for i, name in enumerate(VIEW_ORDER)}

        def group(rel) -> int:
            if rel.name in TABLE_DESCRIPTIONS:
                return 0
            if rel.name in views and rel.name not in BUILDING_BLOCKS:
                return 1
            return 3 if rel.name.startswith("rules_") or rel.name in BUILDING_BLOCKS or \
                rel.name in INTERNAL_TABLES or rel.name in INPUT_TABLES else 2

        rels.sort(key=lambda r: (group(r), views.get(r.name, 0)))
        inner = [r for r in rels if group(r) == 3]
        for rel in rels:
            if group(rel) < 2:
                self._add(self.root, rel, about)
        for name, params in TABLE_MACROS.items():
            if name in catalog.functions:
                node = self.root.add(Text.assemble((f"{name}({', '.join(params)})", "bold"), "  ",
                                                   ("view with arguments", "dim")), data=f"{name}(")
                node.add_leaf(Text(literal(about[name]), style="italic dim"))
        for rel in rels:
            if group(rel) == 2:
                self._add(self.root, rel, about)
        if inner:
            folder = self.root.add(Text.assemble(("internals", "bold dim"), "  ",
                                                 (f"{len(inner)}: rules as rows, steps of the views", "dim")))
            for rel in inner:
                self._add(folder, rel, about)

    @staticmethod
    def _add(parent, rel, about: Dict[str, str]) -> None:
        kind = f"temp {rel.kind}" if rel.temporary else rel.kind
        node = parent.add(Text.assemble((literal(rel.name), "bold"), "  ", (kind, "dim")), data=rel.name)
        line = about.get(rel.name) or rel.comment
        if line:
            node.add_leaf(Text(literal(line), style="italic dim"))
        for column, dtype in rel.columns:
            node.add_leaf(Text.assemble(literal(column), "  ", (literal(dtype), "dim")), data=column)

    def action_insert(self) -> None:
        node = self.cursor_node
        if node is not None and node.data:
            self.post_message(self.Insert(node.data))
