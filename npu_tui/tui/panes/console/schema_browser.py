"""The schema browser: the profile's tables and views, each with its description and columns."""

from __future__ import annotations

from typing import Dict

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree

from ....analysis.views import VIEW_DESCRIPTIONS
from ....profile.schema import TABLE_DESCRIPTIONS
from ....query import Catalog
from ...cells import literal


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
        about = descriptions()
        self.clear()
        for rel in catalog.relations.values():
            kind = f"temp {rel.kind}" if rel.temporary else rel.kind
            node = self.root.add(Text.assemble((literal(rel.name), "bold"), "  ", (kind, "dim")),
                                 data=rel.name)
            line = about.get(rel.name) or rel.comment
            if line:
                node.add_leaf(Text(literal(line), style="italic dim"))
            for column, dtype in rel.columns:
                node.add_leaf(Text.assemble(literal(column), "  ", (literal(dtype), "dim")), data=column)

    def action_insert(self) -> None:
        node = self.cursor_node
        if node is not None and node.data:
            self.post_message(self.Insert(node.data))
