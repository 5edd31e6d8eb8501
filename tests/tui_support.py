"""Helpers for the TUI tests: run Pilot coroutines without an asyncio plugin, wait for workers."""

import asyncio
import functools


def async_test(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return run


async def settle(app, pilot, rounds: int = 3):
    """Let workers finish and their messages be handled (a load posts, then grids post)."""
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()
