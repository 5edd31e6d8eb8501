import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def real() -> Path:
    """The real profiler samples beside the checkout (../shared/real); read-only."""
    if not REAL.is_dir():
        pytest.fail(f"real samples missing: {REAL}")
    return REAL
