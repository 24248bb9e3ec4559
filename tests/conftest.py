"""Shared fixtures: the ../shared assets (skipped cleanly when absent) and hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Every property runs at least 200 examples (the "ci" profile is the default); `--hypothesis-profile=dev`
# gives a quick local loop.
settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED = Path(os.environ.get("TRANSFER_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared/ folder beside the checkout (real robots and policies); skips when absent."""
    if not (SHARED / "assets").is_dir():
        pytest.skip(f"shared assets not found at {SHARED} (set TRANSFER_SHARED to point elsewhere)")
    return SHARED


def shared_asset(relative: str) -> Path:
    """A file under shared/assets, or a skip when shared/ is absent."""
    path = SHARED / "assets" / relative
    if not path.is_file():
        pytest.skip(f"shared asset not found: {path}")
    return path


@pytest.fixture(scope="session")
def anymal_files(shared: Path) -> dict[str, Path]:
    """The shared ANYmal C asset and its real checkpoints (trained on MuJoCo-Warp and on PhysX) and Newton's YAML."""
    folder = shared / "policies" / "anybotics_anymal_c" / "rl_policies"
    return {
        "asset": shared / "assets" / "anybotics_anymal_c" / "usd" / "anymal_c.usda",
        "mjw_pt": folder / "mjw_anymal.pt",
        "physx_onnx": folder / "physx_anymal.onnx",
        "yaml": folder / "anymal.yaml",
    }


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 (pytest's hook signature)
    """Say at the end how many tests skipped for want of ../shared (the real robots and checkpoints), and where
    they were looked for: a green run without them has not tested the real robots."""
    skipped = terminalreporter.stats.get("skipped", [])
    shared = [r for r in skipped if "shared" in str(getattr(r, "longrepr", "")).lower()]
    if shared:
        terminalreporter.write_line(
            f"{len(shared)} test(s) skipped: ../shared not found at {SHARED} (the real robots and checkpoints); "
            "set TRANSFER_SHARED or place it beside the checkout to run them",
            yellow=True,
        )


# The MJCF/URDF converters (transfer.robot.assets) live in an environment of their own, created on first use. Lack of
# network is the one reason to skip the tests that need them; any other failure to create it fails them.
OFFLINE = (
    "No matching distribution",
    "Could not find a version",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Max retries exceeded",
    "ConnectTimeout",
)


@pytest.fixture(scope="session")
def converters(tmp_path_factory) -> Path:
    """The converter environment, made once per test session: in ``$TRANSFER_CONVERTERS`` when the developer set it
    (kept between sessions), else in a fresh temporary folder, as a new machine (or CI) makes it on first use. The
    variable is set for the session so that subprocesses (the command line) find the same environment. Skips only
    when pip cannot reach a package index."""
    from transfer.robot.assets.converters import HOME_VARIABLE, ConverterSetupError, ensure_environment

    home = os.environ.get(HOME_VARIABLE) or str(tmp_path_factory.mktemp("converters"))
    os.environ[HOME_VARIABLE] = home
    try:
        ensure_environment()
    except ConverterSetupError as exc:
        if any(phrase in str(exc) for phrase in OFFLINE):
            pytest.skip(f"the MJCF/URDF converter environment needs a package index (PyPI), unreachable here: {exc}")
        raise
    return Path(home)
