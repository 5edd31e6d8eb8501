"""Terminal plots as Rich Text: stacked bars, sparklines and a heat grid. Colours come from the
256-colour palette so they survive terminals without true colour."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from rich.style import Style
from rich.text import Text

from .cells import literal

CATEGORY_COLORS: Dict[str, str] = {
    "FA": "color(135)",
    "MatMul": "color(33)",
    "Conv": "color(37)",
    "Vector": "color(214)",
    "Comm": "color(203)",
    "Other": "color(245)",
    # the step account's parts
    "compute": "color(33)",
    "exposed comm": "color(203)",
    "copies": "color(178)",
    "free": "color(245)",
    "between steps": "color(238)",
    # the Comm pane's exposure bars
    "exposed": "color(203)",
    "overlapped": "color(108)",
    "rest of the stage": "color(238)",
    # the Timeline's stage band and overlap lanes
    "DiT": "color(61)",
    "VAE": "color(130)",
    "computing": "color(67)",
    "comm": "color(108)",
    **{f"memory {i}": "color(172)" for i in range(1, 9)},
}
FALLBACK = ("color(141)", "color(108)", "color(180)", "color(67)")
SPARK = "▁▂▃▄▅▆▇█"
# A light-to-strong ramp of the 256-colour cube (blue → red) for heat cells.
HEAT = ("color(17)", "color(18)", "color(25)", "color(31)", "color(71)", "color(142)", "color(178)",
        "color(208)", "color(196)")


def color_for(label: str, index: int = 0) -> str:
    return CATEGORY_COLORS.get(label, FALLBACK[index % len(FALLBACK)])


def split_width(values: Sequence[float], width: int) -> List[int]:
    """Integer widths proportional to values that add up to ``width`` (largest remainder); a
    positive value too small for a cell still gets one, taken from the widest, so it stays seen."""
    total = sum(v for v in values if v > 0)
    if total <= 0 or width <= 0:
        return [0] * len(values)
    exact = [max(v, 0) / total * width for v in values]
    cells = [int(x) for x in exact]
    order = sorted(range(len(values)), key=lambda i: exact[i] - cells[i], reverse=True)
    for i in order[: width - sum(cells)]:
        cells[i] += 1
    for i, v in enumerate(values):
        widest = max(range(len(cells)), key=cells.__getitem__)
        if v > 0 and cells[i] == 0 and cells[widest] > 1:
            cells[i], cells[widest] = 1, cells[widest] - 1
    return cells


def stacked_bar(parts: Sequence[Tuple[str, float]], width: int) -> Text:
    """One line of blocks, each part as wide as its share of the total."""
    text = Text()
    for i, ((label, _), cells) in enumerate(zip(parts, split_width([v for _, v in parts], width))):
        if cells:
            text.append("█" * cells, style=color_for(label, i))
    return text


def legend(labels: Sequence[str]) -> Text:
    text = Text()
    for i, label in enumerate(labels):
        text.append("■ ", style=color_for(label, i))
        text.append(literal(label) + "  ")
    return text


def sparkline(values: Sequence[float], width: Optional[int] = None) -> Text:
    """One character per value (the last ``width`` values), its height proportional to the value
    (zero at the bottom): steps 0.4 % apart look alike, a step twice as long stands out."""
    vals = list(values)[-width:] if width else list(values)
    if not vals:
        return Text("")
    hi = max(vals)
    top = len(SPARK) - 1
    chars = "".join(SPARK[max(0, min(top, round(v / hi * top)))] if hi > 0 else SPARK[0] for v in vals)
    return Text(chars, style="color(39)")


def heat_cell(value: Optional[float]) -> Style:
    if value is None:
        return Style(color="color(240)")
    i = max(0, min(len(HEAT) - 1, int(value * (len(HEAT) - 1) + 0.5)))
    return Style(color="color(231)", bgcolor=HEAT[i])


def heat_grid(rows: Sequence[str], cols: Sequence[str], values: Dict[Tuple[str, str], float],
              marked: Sequence[str] = (), labels: Optional[Dict[Tuple[str, str], str]] = None) -> Text:
    """Rows × columns of shares (0..1), each cell coloured by its value and labelled in percent,
    or with ``labels`` where given (the figure the share was scaled from)."""
    label_w = max([len(literal(r)) for r in rows] + [4]) + 2
    cell_w = max([len(c) for c in cols] + [len(v) for v in (labels or {}).values()] + [5]) + 1
    text = Text(" " * label_w)
    for c in cols:
        text.append(literal(c).center(cell_w))
    for r in rows:
        text.append("\n")
        text.append(literal(r).ljust(label_w), style="bold" if r in marked else "")
        for c in cols:
            v = values.get((r, c))
            shown = "-" if v is None else (labels or {}).get((r, c), f"{v * 100:.0f}%")
            text.append(shown.center(cell_w), style=heat_cell(v))
    return text
