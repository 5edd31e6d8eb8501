"""Text from profiles is data, never markup or terminal control.

A copy of a generated profile gets hostile kernel types, names and input shapes in
kernel_details.csv and hostile module range names in trace_view.json: Rich markup, a link, screen
clearing, an OSC 52 clipboard write, CR, backspace, TAB, zero-width and right-to-left override
characters. The real app opens it once and every pane, drill-down, finding, the console's result
grid and schema list, the data health list and the help are captured as the terminal would get
them; then one test per case checks that the text is shown literally (escaped where it is a
control character) and that none of its control characters reaches the terminal. The text and
Markdown reports get the same checks.
"""

import asyncio
import contextlib
import copy
import csv
import io
import json
import re
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Dict

import pytest

from npu_tui.analysis import build_report, install_views, load_rules, render
from npu_tui.cli import main
from npu_tui.profile import load_profile
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.panes.console import SqlConsole
from npu_tui.tui.drill import DrillScreen
from npu_tui.tui.grid import PagedTable
from tui_support import screen_text, settle, terminal_output

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "diffusion_1rank"
SIZE = (160, 60)

# case: (hostile text, what the screen and text report show, what the Markdown report shows)
CASES = {
    "markup": ("[bold red]x[/]", "[bold red]x[/]", r"\[bold red\]x\[/\]"),
    "close_tag": ("[/]", "[/]", r"\[/\]"),
    "link": ("[link=http://e.vil]click[/link]", "[link=http://e.vil]click[/link]",
             r"\[link=http://e.vil\]click\[/link\]"),
    "clear_screen": ("\x1b[2J\x1b[H", r"\x1b[2J\x1b[H", r"\\x1b\[2J\\x1b\[H"),
    "osc52_clipboard": ("\x1b]52;c;aGFja2Vk\x07", r"\x1b]52;c;aGFja2Vk\x07", r"\\x1b\]52;c;aGFja2Vk\\x07"),
    "carriage_return": ("a\rb", r"a\x0db", r"a\\x0db"),
    "backspace": ("a\x08b", r"a\x08b", r"a\\x08b"),
    "tab": ("a\tb", r"a\x09b", r"a\\x09b"),
    "zero_width": ("a\u200bb", r"a\u200bb", r"a\\u200bb"),
    "rtl_override": ("a\u202eb", r"a\u202eb", r"a\\u202eb"),
    "pipe": ("a|b", "a|b", r"a\|b"),
    "html": ("<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>",
             r"\<img src=x onerror=alert(1)\>"),
}
# Textual's own output: colours and styles (SGR) and absolute cursor moves; anything else that is
# a control sequence, a control character or an invisible format character came from the data.
OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d+;\d+H")


def _unsafe(text: str):
    """Control, format (zero-width, bidi), separator-of-lines and unassigned characters."""
    return [c for c in text if c != "\n" and (unicodedata.category(c)[0] == "C"
                                              or unicodedata.category(c) in ("Zl", "Zp"))]


# -- the hostile profile ---------------------------------------------------------------------------


def _output_dir(profile: Path) -> Path:
    (rank,) = [d for d in profile.iterdir() if d.name.endswith("_ascend_pt")]
    return rank / "ASCEND_PROFILER_OUTPUT"


def _hostile_kernels(path: Path) -> Dict[str, dict]:
    """Kernel types by total time get one case each: type and name end in the hostile text (the type
    keeps its prefix, so categories still match), the input shapes carry it in the middle.
    Returns case -> the new type, name and shapes."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(head)}
    totals: Dict[str, float] = {}
    for r in body:
        totals[r[col["Type"]]] = totals.get(r[col["Type"]], 0.0) + float(r[col["Duration(us)"]])
    order = sorted(totals, key=totals.get, reverse=True)
    assign = {t: case for t, case in zip(order, CASES)}
    made = {}
    for r in body:
        case = assign.get(r[col["Type"]])
        if case is None:
            continue
        text = CASES[case][0]
        made[case] = {"type": f"{r[col['Type']]} {text}", "name": f"op {case} {text}",
                      "shapes": f"1,2;{text};3"}
        r[col["Type"]], r[col["Name"]] = made[case]["type"], made[case]["name"]
        r[col["Input Shapes"]] = f'"{made[case]["shapes"]}"'
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([head] + body)
    return made


def _hostile_modules(path: Path) -> Dict[str, str]:
    """Module ranges keep their name (so they stay stage markers) plus one case each, in turn."""
    events = json.loads(path.read_text())
    made = {}
    modules = [e for e in events if e.get("ph") == "X" and str(e.get("name")).startswith("nn.Module:")]
    for i, e in enumerate(modules):
        case = list(CASES)[i % len(CASES)]
        e["name"] = f"{e['name']} #{i} {CASES[case][0]}"
        made.setdefault(case, e["name"])
    path.write_text(json.dumps(events))
    return made


@dataclass
class Screen:
    plain: str      # the characters on screen
    written: str    # what the app writes to the terminal for it
    links: int      # segments carrying a hyperlink


def _capture(app) -> Screen:
    strips = app.screen._compositor.render_strips()
    links = sum(1 for s in strips for seg in s if seg.style is not None and seg.style.link)
    return Screen(screen_text(app), terminal_output(app), links)


async def _tour(path: Path, made: Dict[str, dict]) -> Dict[str, Screen]:
    """Every place profile text can reach, captured."""
    shots: Dict[str, Screen] = {}
    app = NpuTuiApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, rounds=4)
        assert app.report is not None
        for key, name in (("1", "overview"), ("4", "comm"), ("5", "ranks"), ("8", "collect"), ("9", "diff")):
            await pilot.press(key)
            await settle(app, pilot, rounds=1)
            shots[name] = _capture(app)

        await pilot.press("3")
        await settle(app, pilot, rounds=1)
        shots["operators"] = _capture(app)
        types = app.query_one("#pane-operators").query_one(PagedTable)
        for case, kernel in made.items():
            index = next(i for i in range(types.total) if types.row_dict(i)["type"] == kernel["type"])
            types.move_cursor(index)
            await pilot.press("enter")
            await settle(app, pilot, rounds=1)
            await pilot.press("y")  # copy the name: the notification shows it too
            await settle(app, pilot, rounds=1)
            shots[f"names {case}"] = _capture(app)
            await pilot.press("enter")
            await settle(app, pilot, rounds=1)
            shots[f"instances {case}"] = _capture(app)
            await pilot.press("escape", "escape")
            await pilot.pause()
            app.clear_notifications()

        await pilot.press("2")
        await settle(app, pilot, rounds=1)
        findings = app.query_one("#pane-findings").findings
        assert findings, "the MatMul-bound fixture fires matmul_high"
        for i in range(len(findings)):
            app.query_one("#findings-list").highlighted = i
            await pilot.pause()
            shots[f"finding {i}"] = _capture(app)
        app.query_one("#findings-list").highlighted = 0
        app.query_one("#findings-list").focus()
        await pilot.press("enter")
        await settle(app, pilot, rounds=1)
        assert isinstance(app.screen, DrillScreen)
        shots["finding operators"] = _capture(app)
        await pilot.press("enter")
        await settle(app, pilot, rounds=1)
        shots["finding instances"] = _capture(app)
        await pilot.press("escape", "escape")
        await pilot.pause()

        await pilot.press("7")
        await settle(app, pilot, rounds=1)
        console = app.query_one(SqlConsole)
        for name, sql in (
            ("console kernels", "SELECT DISTINCT type, name, input_shapes FROM kernels "
                                "WHERE name LIKE 'op %' ORDER BY type"),
            ("console modules", "SELECT DISTINCT name FROM host_events WHERE name LIKE 'nn.Module:%' "
                                "ORDER BY name"),
        ):
            console.grid.clear()
            console.load_sql(sql)
            await pilot.press("ctrl+r")
            while console.running or not console.grid.row_count:
                await pilot.pause(0.05)
            await settle(app, pilot, rounds=2)  # the grid measures its columns, then paints
            shots[name] = _capture(app)

        await pilot.press("1", "h")
        await pilot.pause()
        shots["data health"] = _capture(app)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        shots["help"] = _capture(app)
    return shots


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "prof"
    shutil.copytree(FIXTURE, path)
    out = _output_dir(path)
    kernels = _hostile_kernels(out / "kernel_details.csv")
    modules = _hostile_modules(out / "trace_view.json")
    assert set(kernels) == set(modules) == set(CASES)
    return path, kernels, modules


@pytest.fixture(scope="module")
def screens(hostile):
    path, kernels, _ = hostile
    return asyncio.run(_tour(path, kernels))


@pytest.fixture(scope="module")
def report(hostile):
    path = hostile[0]
    profile = load_profile(path)
    rules = load_rules()
    install_views(profile.con, rules)
    return build_report(profile, rules)


# -- the app ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_the_app_shows_it_literally_and_writes_no_control(case, screens):
    raw, shown, _ = CASES[case]
    for where in ("operators", f"names {case}", f"instances {case}", "console kernels", "console modules"):
        assert shown in screens[where].plain, (where, shown)
    # Each of its control or format characters is nowhere in what reaches the terminal.
    for where, screen in screens.items():
        written = OWN_SEQUENCES.sub("", screen.written)
        assert not set(_unsafe(raw)) & set(written), where
        assert screen.links == 0, where


def test_the_tour_saw_every_place(screens):
    assert {"overview", "comm", "ranks", "collect", "diff", "operators", "finding 0", "finding operators",
            "finding instances", "console kernels", "console modules", "data health", "help"} <= set(screens)
    for where, screen in screens.items():
        assert _unsafe(OWN_SEQUENCES.sub("", screen.written)) == [], where
        assert _unsafe(screen.plain) == [], where


def test_findings_show_their_operators_literally(screens, report, hostile):
    kernels = hostile[1]
    shown = {k["type"]: CASES[case][1] for case, k in kernels.items()}
    details = "\n".join(s.plain for w, s in screens.items() if w.startswith("finding "))
    tops = [op["type"] for f in report["findings"] for op in f["evidence"]["top_operators"][:5]]
    hostile_tops = [t for t in tops if t in shown]
    assert hostile_tops, "the top operators are the renamed heavy types"
    for t in hostile_tops:
        assert t.split(" ", 1)[0] + " " + shown[t] in details


# -- the reports -----------------------------------------------------------------------------------


def _with(report: dict, text: str) -> dict:
    """The report with the hostile text in every kind of field a person reads."""
    r = copy.deepcopy(report)
    r["profile"]["path"] = f"/data/{text}"
    f = r["findings"][0]
    f["direction"] = f"fix {text}"
    op = f["evidence"]["top_operators"][0]
    op["type"], op["input_shapes"] = f"T {text}", f"S {text}"
    r["stages"][0]["stage"] = f"St {text}"
    return r


@pytest.mark.parametrize("case", CASES)
def test_text_report_shows_it_literally(case, report):
    raw, shown, _ = CASES[case]
    out = render(_with(report, raw), "text")
    assert _unsafe(out) == []
    for field in (f"/data/{shown}", f"fix {shown}", f"T {shown}", f"S {shown}", f"St {shown}"):
        assert field in out, field


@pytest.mark.parametrize("case", CASES)
def test_markdown_report_escapes_markup_and_control(case, report):
    raw, _, md = CASES[case]
    out = render(_with(report, raw), "md")
    assert _unsafe(out) == []
    for field in (f"/data/{md}", f"fix {md}", f"T {md}", f"S {md}", f"St {md}"):
        assert field in out, field
    # Every table row still has as many cells as its header: no cell was split.
    rows = [line for line in out.splitlines() if line.startswith("|")]
    cells = lambda line: len(re.split(r"(?<!\\)\|", line))  # noqa: E731
    blocks, block = [], []
    for line in out.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            blocks.append(block)
            block = []
    assert rows and all(len({cells(b) for b in blk}) == 1 for blk in blocks)


def test_json_report_keeps_the_text_exact(report, hostile):
    kernels = hostile[1]
    out = json.loads(render(report, "json"))
    types = {op["type"] for f in out["findings"] for op in f["evidence"]["top_operators"]}
    assert types & {k["type"] for k in kernels.values()}


# -- diff and sql: escaped as the report is; CSV and JSON keep the text exact ----------------------


def _stdout(argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


HOSTILE_NAMES = "SELECT name FROM kernels WHERE name LIKE 'op %' ORDER BY name"


@pytest.fixture(scope="module")
def cli(hostile):
    """`npu-tui diff` (the original fixture against its hostile copy) and `npu-tui sql` on the copy,
    in every format."""
    path = str(hostile[0])
    outs = {f"diff {fmt}": _stdout(["diff", str(FIXTURE), path, "--format", fmt]) for fmt in ("text", "md", "json")}
    outs.update({f"sql {fmt}": _stdout(["sql", path, HOSTILE_NAMES, "--format", fmt])
                 for fmt in ("table", "md", "csv", "json")})
    return outs


def _md_name(case: str) -> str:
    """The hostile kernel's name as Markdown must show it: `op <case> <text>`, markup escaped."""
    return "op " + case.replace("_", "\\_") + " " + CASES[case][2]


@pytest.mark.parametrize("case", CASES)
def test_sql_output_escapes_it_in_tables_and_keeps_it_exact_in_csv_and_json(case, cli, hostile):
    raw, shown, _ = CASES[case]
    name = hostile[1][case]["name"]
    assert f"op {case} {shown}" in cli["sql table"]
    assert _md_name(case) in cli["sql md"]
    for fmt in ("table", "md"):
        assert _unsafe(cli[f"sql {fmt}"].replace("\n", "")) == [], fmt
    assert name in [row[0] for row in csv.reader(io.StringIO(cli["sql csv"]))]
    assert name in [row["name"] for row in json.loads(cli["sql json"])]


def test_diff_escapes_operator_names_and_keeps_them_exact_in_json(cli, hostile):
    moved = {op["op"] for op in json.loads(cli["diff json"])["operators"]}
    cases = [case for case, k in hostile[1].items() if k["name"] in moved]
    # The renamed heavy operators are the ones that moved most (old name gone, new name there).
    assert len(cases) >= 5, moved
    for case in cases:
        assert f"op {case} {CASES[case][1]}" in cli["diff text"]
        assert _md_name(case) in cli["diff md"]
    for fmt in ("text", "md"):
        assert _unsafe(cli[f"diff {fmt}"].replace("\n", "")) == [], fmt


def test_text_tables_align_wide_characters_by_the_columns_they_take():
    """A CJK character takes two columns of a terminal; padded as one, its row pushed every later
    column right (an operator named 自定义 in a text report, or in `npu-tui sql`)."""
    from npu_tui.text import table, width

    assert (width("自定义::gelu"), width("e\u0301"), width("abc")) == (12, 1, 3)
    lines = table(["name", "us"], [["自定义::gelu", 1.5], ["aten::mm", 12.25]])
    assert {width(line) for line in lines} == {12 + 2 + len("12.25")}  # every row as wide: aligned
