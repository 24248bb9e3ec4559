"""The community's checkpoints replayed from the files their repositories ship (issue 42): what --compare runs
when the target's own joint order is the checkpoint's, and the shared legged_gym H1-2 walker on every engine."""

from __future__ import annotations

import json

import pytest

from transfer.cli import main


@pytest.fixture
def mjcf_order_policy(tmp_path):
    """A policy in the MuJoCo order of the project's own quadruped MJCF (a fresh network: the test reads what runs,
    not how it walks)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("mujoco")
    policy = tmp_path / "policy.pt"
    torch.jit.script(torch.nn.Sequential(torch.nn.Linear(48, 12), torch.nn.Tanh())).save(str(policy))
    return policy


def test_compare_makes_no_naive_run_where_the_targets_own_order_is_the_checkpoints(mjcf_order_policy, capsys):
    args = ["replay", str(mjcf_order_policy), "--config", "presets/tasks/quadruped_flat_velocity.yaml", "--source",
            "mujoco", "--asset", "transfer:quadruped.xml", "--target", "mujoco", "--compare", "--num-envs", "1",
            "--seconds", "1.5"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in out["runs"]] == ["native (mujoco)"]
    assert out["no_control"].startswith("no naive run: mujoco's own joint order (mujoco) is the checkpoint's (mujoco)")
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "naive" not in text.split("no naive run")[0] and "no naive run: mujoco's own joint order" in text


def test_compare_keeps_the_naive_control_where_the_orders_differ(mjcf_order_policy, capsys):
    args = ["replay", str(mjcf_order_policy), "--config", "presets/tasks/quadruped_flat_velocity.yaml", "--source",
            "physx", "--asset", "transfer:quadruped.xml", "--target", "mujoco", "--compare", "--num-envs", "1",
            "--seconds", "1.5", "--json"]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in out["runs"]][-1] == "naive (mujoco)" and out["no_control"] is None
