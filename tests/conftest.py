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


@pytest.fixture(scope="session")
def real() -> Path:
    """The real profiler samples beside the checkout (../shared/real); read-only."""
    if not REAL.is_dir():
        pytest.fail(f"real samples missing: {REAL}")
    return REAL
