import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts): one worker per core, at most 4, since each worker imports
    torch and diffusers and a many-core CI box would otherwise start dozens of them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, 4)


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


def _under_real(value) -> bool:
    if isinstance(value, (list, tuple, set)):
        return any(_under_real(v) for v in value)
    if isinstance(value, (str, Path)):
        path = Path(value)
        try:
            return (path if path.is_absolute() else ROOT / path).resolve().is_relative_to(REAL.resolve())
        except (OSError, ValueError):
            return False
    return False


def _names(code, seen) -> set:
    """The global names a function's code (nested functions included) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names") and const not in seen:
            seen.add(const)
            names |= _names(const, seen)
    return names


def _reads_real(fn, depth: int = 0, seen=None) -> bool:
    """Whether ``fn``, or a function of its module it calls (a few levels down), names a path
    under the real samples."""
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or code in seen or depth > 3:
        return False
    seen.add(code)
    scope = fn.__globals__
    for name in _names(code, seen):
        value = scope.get(name)
        if _under_real(value):
            return True
        if callable(value) and getattr(value, "__module__", None) == fn.__module__ and \
                _reads_real(getattr(value, "__wrapped__", value), depth + 1, seen):
            return True
    return False


def _uses_real(item) -> bool:
    """A test needs the real samples when it takes the ``real`` fixture, is parametrized over one
    of their paths, or it (or a fixture or helper of its module) names one."""
    if "real" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(_under_real(v) for v in callspec.params.values()):
        return True
    fixtures = [d.func for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs]
    fn = getattr(item, "function", None)
    return any(_reads_real(getattr(f, "__wrapped__", f)) for f in [fn, *fixtures] if f is not None)


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


@pytest.fixture
def rank1_cut(real, tmp_path) -> Path:
    """A copy of the real level1 run whose rank 1 kernel_details.csv is cut mid-row: a rank not
    loaded whole beside a whole one."""
    import shutil

    job = shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1", tmp_path / "job")
    kernels = job / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    data = kernels.read_bytes()
    kernels.write_bytes(data[: len(data) * 2 // 5])
    return job
