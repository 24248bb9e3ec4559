"""``transfer train``: two-iteration PPO runs on each backend write checkpoints that load, agree across formats,
and carry their ordering metadata (the same joint order whichever backend trained)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from transfer import load_policy, resolve_ordering
from transfer.cli import main
from transfer.formats import read_metadata
from transfer.task import load_task, resolve_asset

pytest.importorskip("rsl_rl")
pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]

TASK = "presets/tasks/ant_flat_velocity.yaml"


@pytest.fixture(scope="module")
def physx_order():
    task = load_task(TASK)
    return resolve_ordering(resolve_asset(task.asset), task.convention).joints


@pytest.mark.parametrize(("backend", "num_envs"), [("physx", 4), ("newton", 1)])
def test_two_iterations_write_a_checkpoint_that_knows_its_order(backend, num_envs, tmp_path, physx_order, capsys):
    pytest.importorskip("ovphysx" if backend == "physx" else "newton")
    out = tmp_path / backend
    args = [
        "train",
        "--task",
        TASK,
        "--backend",
        backend,
        "-o",
        str(out),
        "--num-envs",
        str(num_envs),
        "--iterations",
        "2",
        "--json",
    ]
    assert main(args) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["iterations"] == 2 and summary["backend"] == backend
    # the task names the PhysX convention: the checkpoint follows it whichever backend trained
    assert tuple(summary["joint_names"]) == physx_order

    model, exported = out / "model_1.pt", out / "exported" / "policy.pt"
    for path in (model, exported):
        meta = read_metadata(path)
        assert meta is not None, path
        assert meta["trained_on"] == backend and tuple(meta["joint_names"]) == physx_order
        assert meta["convention"] == "physx" and meta["asset"] == "ovphysx:Ant"
        assert meta["sim"] == {"dt": 0.005, "decimation": 4}
        assert [t["name"] for t in meta["observation"]][:3] == ["base_lin_vel", "base_ang_vel", "projected_gravity"]

    # the RSL-RL dict (normalizer included) and the TorchScript export are the same policy
    rsl, jit = load_policy(model), load_policy(exported)
    assert rsl.input_size == jit.input_size == 36 and rsl.output_size == jit.output_size == 8
    obs = np.random.default_rng(0).normal(size=(64, 36)).astype(np.float32)
    np.testing.assert_allclose(rsl(obs), jit(obs), atol=1e-5)
    assert (out / "rewards.png").stat().st_size > 5_000
    curve = json.loads((out / "train.json").read_text())["curve"]
    assert curve["iteration"] == [0, 1]


def test_a_task_without_an_asset_is_refused(tmp_path, capsys):
    text = open(TASK).read().replace("asset: ovphysx:Ant", "asset: null")
    task = tmp_path / "task.yaml"
    task.write_text(text)
    assert main(["train", "--task", str(task), "-o", str(tmp_path / "run"), "--iterations", "1"]) == 2
    assert "names no asset" in capsys.readouterr().err
