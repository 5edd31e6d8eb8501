"""The key journeys in a real terminal (tmux), as scripts/journeys.py drives them at 120×40 and 80×24."""

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_journeys_pass_in_tmux():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "journeys.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok   ") == 8
