"""The app's flows that take several screens: collecting a new run (ask, run, open it, compare),
opening another run of a folder of runs, and finding a kernel by name. Each takes the app and uses
what it exposes (its panes, session, screens); the app binds keys and messages to them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .cells import literal
from .drill import DrillScreen


async def collect(app) -> None:
    """Collect again what the open run collected (its record says how), else the demo, once the
    user has seen the command and confirmed it: minutes of device work never start on a stray key."""
    from .panes.collect import CollectLog, collection_plan
    from .screens.collect_confirm import CollectConfirm

    if app.screen.is_modal:  # (over a drill level, which a cancel comes back to)
        return
    log = app.panes.built.get("collect")
    if isinstance(log, CollectLog) and log.running:
        app.notify("A collection is already running; escape in its pane cancels it.", severity="warning")
        return
    session = getattr(app, "session", None)
    plan = collection_plan(app.opened or app.path, session.folders if session else [])
    if isinstance(plan, str):
        app.notify(literal(plan), severity="error", markup=False)
        return

    async def start(confirmed: Optional[bool]) -> None:
        if confirmed and await app.to_panes():
            (await app.panes.show("collect")).start(*plan, app.rules)

    app.push_screen(CollectConfirm(*plan, app.opened), start)


async def collected(app, msg) -> None:
    """A collection ended: its run replaces the open profile and is compared with the one before;
    a failed or cancelled one leaves the open profile as it was."""
    r = msg.result
    if msg.session is None:
        why = msg.error or r.error
        app.notify(literal(f"Collection {r.status}{': ' + why if why else ''}. The open profile is unchanged."),
                   severity="warning" if r.status == "cancelled" else "error", markup=False)
        return
    app.replace_profile(r.run_dir, msg.session)
    diff = await app.panes.pane("diff")
    if msg.diff is None:
        diff.clear()
        app.notify(literal(f"Collected {r.run_dir}; no earlier run to compare with."), markup=False)
    else:
        from ..analysis.diff import verdict_line

        diff.show(msg.diff)
        app.notify(literal(f"{verdict_line(msg.diff)} · 8 shows the comparison"), markup=False)


async def pick_run(app) -> None:
    """Open another run of the folder of runs the open profile belongs to, or another of the
    profiles found in the folder it was picked from, or beside its rank folders."""
    from .screens.runs import profile_picker, run_picker, runs_root

    root = runs_root(app.path, app.opened)
    beside = app.session.beside if app.session is not None and app.found is None else []
    if root is not None:
        picker = run_picker(root, app.opened)
    elif app.found is not None:
        folder, profiles = app.found
        picker = profile_picker(folder, profiles, app.path)
    elif beside:
        folder, profiles = app.path, [app.path, *beside]
        picker = profile_picker(folder, profiles, app.path)
    else:
        app.notify("The open profile is not in a folder of collected runs, nor picked from a folder of "
                   "several profiles, and no other profile is beside it.", severity="warning")
        return

    def chosen(path: Optional[Path]) -> None:
        if path is None:
            return
        if root is not None:
            app.open_path(root, path.name)
        else:
            app.found = (folder, profiles)  # p offers the same choice from the one opened
            app.open_path(path)

    if await app.to_panes():
        app.push_screen(picker, chosen)


async def find(app) -> None:
    """Look a kernel or operator name up across every type; enter opens its kernels."""
    from .grids import found
    from .screens.find import FindScreen

    if app.con is None or not await app.to_panes():
        return

    async def jump(row: Optional[dict]) -> None:
        if row is None:
            return
        await app.action_pane("operators")
        for crumbs, drill in found(row):
            await app.push_screen(DrillScreen(crumbs, drill, app.con))

    app.push_screen(FindScreen(app.con), jump)
