"""The code style gate: ruff (including the ban on module-level engine imports) over the whole project."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean():
    if shutil.which("ruff") is None and subprocess.run([sys.executable, "-m", "ruff", "--version"]).returncode:
        pytest.fail("ruff is not installed; it is part of the dev extra: pip install -e '.[dev]'")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "transfer", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
