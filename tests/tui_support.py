"""Helpers for the TUI tests: run Pilot coroutines without an asyncio plugin, wait for workers."""

import asyncio
import functools

from textual.worker import WorkerCancelled


def async_test(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return run


async def settle(app, pilot, rounds: int = 3):
    """Let workers finish and their messages be handled (a load posts, then grids post)."""
    done = 0
    while done < rounds:
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:
            continue  # replaced by a newer worker of its group (a grid re-queried): wait again
        await pilot.pause()
        done += 1


def screen_text(app) -> str:
    """What the screen shows, one line per row, without styles."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip if not seg.control) for strip in strips)


def terminal_output(app) -> str:
    """The bytes the app would write to the terminal for a full repaint of the current screen,
    through its own console (so with its colour system)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return update.render_segments(app.console)
