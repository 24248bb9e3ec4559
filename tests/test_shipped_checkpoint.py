"""The project's own policies, trained on PhysX and shipped in checkpoints/ (no ../shared needed).

The demo's default is the quadruped (``quadruped_flat_physx``): at the demo's 4 envs its reordered replay on Newton
walks like native with no falls, and its naive control (Newton's order) falls at once. The tests below that name no
robot are the Ant's (``ant_flat_physx``), the first policy the project trained:

It knows its order (``transfer info``), and replayed on Newton with no other flag (as ``./run.sh demo`` does) it
walks like its native PhysX run when fed its own joint order (measured 1.06x), and fed Newton's order (the naive
control) it lurches at 0.25x, its velocity swinging several times wider. The runs are those of the command line's
defaults (1 env, 10 s, seed 0), deterministic on the CPU; checkpoints/README.md has the spread over env counts
(the Ant's symmetry lets a scrambled gait creep forward: with 2 envs the naive run averages 0.49x)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transfer.cli import main
from transfer.runs.replay import replay

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "ant_flat_physx"
EXPORTED = SHIPPED / "exported" / "policy.pt"

pytest.importorskip("ovphysx")
pytest.importorskip("newton")
pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def test_info_names_the_order_and_the_training_backend(capsys):
    assert main(["info", str(EXPORTED), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    meta = info["metadata"]
    assert meta["trained_on"] == "physx" and meta["convention"] == "physx"
    assert meta["joint_names"][:4] == ["front_left_leg", "front_right_leg", "left_back_leg", "right_back_leg"]
    assert meta["asset"] == "ovphysx:Ant"


@pytest.fixture(scope="module")
def runs():
    common = dict(progress=False)  # the command line's defaults, what the demo and the acceptance run
    return {
        "native": replay(EXPORTED, "physx", **common),
        "reordered": replay(EXPORTED, "newton", **common),
        "naive": replay(EXPORTED, "newton", reorder=False, **common),
    }


def test_it_walks_natively(runs):
    native = runs["native"]
    assert native.fall_fraction == 0.0 and native.forward_velocity > 0.3, native


def test_reordered_on_newton_walks_like_native(runs):
    native, reordered = runs["native"], runs["reordered"]
    assert reordered.fall_fraction == 0.0, reordered
    assert reordered.forward_velocity >= 0.8 * native.forward_velocity, (reordered, native)


def test_naive_on_newton_lurches(runs):
    import numpy as np

    native, reordered, naive = runs["native"], runs["reordered"], runs["naive"]
    assert naive.fall_fraction > 0.0 or naive.forward_velocity < 0.3 * native.forward_velocity, (naive, native)

    def swing(run) -> float:  # spread of the forward velocity after the warm-up second
        t, v = np.asarray(run.trace["time"]), np.asarray(run.trace["forward"])
        return float(np.nanstd(v[t > 1.0]))

    assert swing(naive) > 3.0 * swing(reordered), (swing(naive), swing(reordered))


def test_the_rsl_rl_checkpoint_and_the_export_are_one_policy():
    import numpy as np

    from transfer import load_policy

    (model,) = sorted(SHIPPED.glob("model_*.pt"))
    rsl, jit = load_policy(model), load_policy(EXPORTED)
    obs = np.random.default_rng(1).normal(size=(32, rsl.input_size)).astype(np.float32)
    np.testing.assert_allclose(rsl(obs), jit(obs), atol=1e-5)


def test_progress_in_a_log_is_one_plain_line():
    """A replay writing its progress to a file or pipe (no terminal) prints one line, no carriage-return frames."""
    import io

    log = io.StringIO()
    replay(EXPORTED, "physx", seconds=2.5, progress=log)
    assert "\r" not in log.getvalue() and log.getvalue().count("\n") == 1
    assert "policy steps in" in log.getvalue()


QUADRUPED = ROOT / "checkpoints" / "quadruped_flat_physx"
QUADRUPED_EXPORTED = QUADRUPED / "exported" / "policy.pt"


@pytest.fixture(scope="module")
def quadruped_runs():
    common = dict(num_envs=4, seconds=6.0, progress=False)  # the demo's env count; 6 s of its 10
    return {
        "native": replay(QUADRUPED_EXPORTED, "physx", **common),
        "reordered": replay(QUADRUPED_EXPORTED, "newton", **common),
        "naive": replay(QUADRUPED_EXPORTED, "newton", reorder=False, **common),
    }


def test_demo_quadruped_transfers_and_its_naive_control_falls(quadruped_runs):
    native, reordered, naive = (quadruped_runs[k] for k in ("native", "reordered", "naive"))
    assert native.fall_fraction == 0.0 and native.forward_velocity > 0.4, native  # commanded 0.5 m/s
    assert reordered.fall_fraction == 0.0, reordered
    assert reordered.forward_velocity >= 0.8 * native.forward_velocity, (reordered, native)
    assert naive.fall_fraction > 0.0 or naive.forward_velocity < 0.3 * native.forward_velocity, naive


def test_demo_quadruped_knows_its_order_and_robot(capsys):
    assert main(["info", str(QUADRUPED_EXPORTED), "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)["metadata"]
    assert meta["trained_on"] == "physx" and meta["convention"] == "physx" and meta["asset"] == "transfer:quadruped"
    assert meta["joint_names"][:5] == ["LF_HAA", "LH_HAA", "RF_HAA", "RH_HAA", "LF_HFE"]
