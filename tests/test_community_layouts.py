"""Checkpoints laid out as community projects ship them replay with nothing but their own files plus ``--source``
(issue 28), through ``transfer replay`` on the real engines:

- a legged_gym / unitree_rl_gym folder: ``deploy/deploy_mujoco/configs/<robot>.yaml`` with ``{LEGGED_GYM_ROOT_DIR}``,
  the robot's MJCF under ``resources/robots/``, and an LSTM actor exported by legged_gym's ``PolicyExporterLSTM``
  (the order is the MJCF's: ``mujoco``; the gait clock is in the observation);
- a unitree_rl_lab run: ``params/deploy.yaml`` (5 steps of history on every term) beside ``exported/policy.pt``,
  ``--source physx``, on the project's quadruped.

The policies are untrained (small random weights): what is checked is that the layouts are read, the sizes meet,
the recurrent state is batched over the envs and the run goes through on the engine; walking is the shared
checkpoints' to show (tests/test_policy_transfer.py).
"""

from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ovphysx")

from tests.robotgen import mjcf_robot  # noqa: E402
from tests.test_deploy_configs import G1_YAML, export_deploy_cfg  # noqa: E402
from tests.test_recurrent import PolicyExporterLSTM, _ActorCritic  # noqa: E402

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def _small(module: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():
        for p in module.parameters():
            p.mul_(0.05)
    return module


def _replay(capsys, *args: str) -> dict:
    from transfer.cli import main

    code = main(["replay", *args, "--target", "physx", "--num-envs", "2", "--seconds", "0.2", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_a_legged_gym_folder_replays_its_lstm_on_its_mjcf(tmp_path, capsys, monkeypatch, converters):
    root = tmp_path / "unitree_rl_gym"
    robot = mjcf_robot(root / "resources/robots/walker", walker=True, name="scene")  # 8 hinges
    n = 8
    config = (
        G1_YAML.replace("g1_description/scene.xml", "walker/scene.xml")
        .replace("num_actions: 12", f"num_actions: {n}")
        .replace("num_obs: 47", f"num_obs: {9 + 3 * n + 2}")
    )
    for key in ("kps", "kds", "default_angles"):
        start = config.index(f"{key}:")
        end = config.index("]", start) + 1
        config = (
            config[:start] + f"{key}: {[20.0 if key == 'kps' else 0.5 if key == 'kds' else 0.0] * n}" + config[end:]
        )
    cfg = root / "deploy/deploy_mujoco/configs/walker.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(config)
    policy = root / "deploy/pre_train/walker/motion.pt"
    policy.parent.mkdir(parents=True)
    torch.manual_seed(0)
    torch.jit.script(_small(PolicyExporterLSTM(_ActorCritic(9 + 3 * n + 2, n, 64)))).save(str(policy))
    monkeypatch.delenv("LEGGED_GYM_ROOT_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # nothing is read relative to the current folder
    result = _replay(capsys, str(policy), "--config", os.path.relpath(cfg))
    assert result["source"] == "mujoco" and result["num_envs"] == 2 and result["nonfinite_envs"] == 0
    assert result["asset"] == str(robot.resolve()) and result["settings"]["sim_dt"] == 0.002
    assert result["settings"]["decimation"] == 10 and result["settings"]["actuators"][0]["model"] == "ideal_pd"


def test_a_unitree_rl_lab_run_with_history_replays_with_source_physx(tmp_path, capsys):
    from transfer.orders import resolve_ordering
    from transfer.task import load_task, resolve_asset

    task = load_task("presets/tasks/quadruped_flat_velocity.yaml")
    asset = resolve_asset(task.asset)
    names = list(resolve_ordering(asset, "physx").joints)
    run = tmp_path / "2026-11-30_go2"
    export_deploy_cfg(run, names, names[::-1], history=5)  # SDK order: some other order of the same motors
    obs = 5 * (9 + 3 * len(names))
    mlp = _small(torch.nn.Sequential(torch.nn.Linear(obs, 32), torch.nn.ELU(), torch.nn.Linear(32, len(names))))
    (run / "exported").mkdir()
    torch.jit.script(mlp).save(str(run / "exported/policy.pt"))
    args = [str(run / "exported/policy.pt"), "--config", str(run / "params/deploy.yaml"), "--asset", str(asset)]
    from transfer.cli import main

    assert main(["replay", *args, "--target", "physx", "--seconds", "0.2"]) == 2
    assert "--source is needed" in capsys.readouterr().err
    result = _replay(capsys, *args, "--source", "physx")
    assert result["source"] == "physx" and result["nonfinite_envs"] == 0 and result["fall_fraction"] == 0.0


def test_a_unitree_rl_mjlab_deploy_yaml_replays_in_the_mjcfs_order(tmp_path, capsys, converters):
    """unitree_rl_mjlab: deploy.yaml beside an ONNX-less TorchScript export, ``--source mujoco`` with the MJCF."""
    from transfer.robot.assets.mjcf import mjcf_joint_names

    robot = mjcf_robot(tmp_path / "robot", walker=True, motors=True)  # Unitree's MJCFs drive each joint by a motor
    names = list(mjcf_joint_names(robot))
    run = tmp_path / "run"
    export_deploy_cfg(run, names, names, default=[-0.3 if n.endswith("knee") else 0.0 for n in names])
    mlp = _small(
        torch.nn.Sequential(torch.nn.Linear(9 + 3 * len(names), 16), torch.nn.ELU(), torch.nn.Linear(16, len(names)))
    )
    (run / "exported").mkdir()
    torch.jit.script(mlp).save(str(run / "exported/policy.pt"))
    args = [
        str(run / "exported/policy.pt"),
        "--config",
        str(run / "params/deploy.yaml"),
        "--asset",
        str(robot),
        "--source",
        "mujoco",
    ]
    result = _replay(capsys, *args)
    assert result["source"] == "mujoco" and result["nonfinite_envs"] == 0
    from transfer.cli import main

    # MuJoCo's order on the MJCF is the MuJoCo backend's own: --compare runs it natively there (issue 30)
    assert main(["replay", *args, "--target", "physx", "--compare", "--seconds", "0.2", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["label"] for r in runs] == ["native (mujoco)", "reordered (physx)", "naive (physx)"]
