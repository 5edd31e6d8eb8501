"""Where the console keeps its own files: the user's state directory, never a profile folder."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional, Tuple

STATE_DIR_ENV = "NPU_TUI_STATE_DIR"


def state_dir() -> Path:
    """$NPU_TUI_STATE_DIR, else $XDG_STATE_HOME/npu-tui, else ~/.local/state/npu-tui. OSError where
    there is none: no HOME, and a user id the system does not know (a container's ``-u 12345``)."""
    try:
        explicit = os.environ.get(STATE_DIR_ENV)
        if explicit:
            return Path(explicit).expanduser()
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(base).expanduser() / "npu-tui"
    except (RuntimeError, KeyError):
        raise OSError("no home folder to keep the console's history in (HOME unset, and the user unknown)") from None


def state_file(name: str, path: Optional[Path] = None) -> Tuple[Optional[Path], str]:
    """``path``, else ``name`` in the state folder; (None, why) where there is none: the console
    keeps what it would write there for the session alone."""
    try:
        return path or state_dir() / name, ""
    except OSError as e:
        return None, str(e)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step, so a crash leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def set_aside(path: Path) -> Path:
    """Move an unreadable file out of the way (kept for the user to look at) and say where."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, aside)
    return aside
