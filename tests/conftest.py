import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True, scope="session")
def _private_cache_and_state(tmp_path_factory):
    """Tests never touch the user's cache or state directories."""
    mp = pytest.MonkeyPatch()
    mp.setenv("NPU_TUI_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.setenv("NPU_TUI_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    yield
    mp.undo()


# Tests over the real samples need ../shared/real beside the checkout. Without it they are skipped
# with the reason, unless NPU_TUI_REQUIRE_REAL is set (CI sets it): then its absence fails the run.
REQUIRE_REAL = bool(os.environ.get("NPU_TUI_REQUIRE_REAL"))
MISSING = f"the real profiler samples are not at {REAL}"


def _uses_real(item) -> bool:
    if "real" in getattr(item, "fixturenames", ()):
        return True
    source = Path(str(item.fspath)).read_text(encoding="utf-8")
    return '"shared" / "real"' in source or "shared/real" in source


def pytest_sessionstart(session):
    if REQUIRE_REAL and not REAL.is_dir():
        raise pytest.UsageError(f"NPU_TUI_REQUIRE_REAL is set and {MISSING}")


def pytest_collection_modifyitems(config, items):
    if REAL.is_dir():
        return
    skip = pytest.mark.skip(reason=MISSING)
    for item in items:
        if _uses_real(item):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def real() -> Path:
    """The real profiler samples beside the checkout (../shared/real); read-only."""
    return REAL
