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
    args = [
        "replay",
        str(mjcf_order_policy),
        "--config",
        "presets/tasks/quadruped_flat_velocity.yaml",
        "--source",
        "mujoco",
        "--asset",
        "transfer:quadruped.xml",
        "--target",
        "mujoco",
        "--compare",
        "--num-envs",
        "1",
        "--seconds",
        "1.5",
    ]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in out["runs"]] == ["native (mujoco)"]
    assert out["no_control"].startswith("no naive run: mujoco's own joint order (mujoco) is the checkpoint's (mujoco)")
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "naive" not in text.split("no naive run")[0] and "no naive run: mujoco's own joint order" in text


def test_compare_keeps_the_naive_control_where_the_orders_differ(mjcf_order_policy, capsys):
    args = [
        "replay",
        str(mjcf_order_policy),
        "--config",
        "presets/tasks/quadruped_flat_velocity.yaml",
        "--source",
        "physx",
        "--asset",
        "transfer:quadruped.xml",
        "--target",
        "mujoco",
        "--compare",
        "--num-envs",
        "1",
        "--seconds",
        "1.5",
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in out["runs"]][-1] == "naive (mujoco)" and out["no_control"] is None


def _without_actuators(tmp_path, keep: int = 0):
    """The project's quadruped MJCF as mjlab ships its robots: no ``<actuator>`` (or only ``keep`` of them)."""
    import re

    from transfer.robot.assets import locate_asset

    source = locate_asset("transfer:quadruped.xml")
    text = source.read_text()
    block = re.search(r"<actuator>.*?</actuator>", text, re.S).group(0)
    kept = re.findall(r"<(?:position|motor)\b[^>]*/>", block)[:keep]
    path = tmp_path / "quadruped.xml"
    path.write_text(text.replace(block, f"<actuator>{''.join(kept)}</actuator>" if kept else ""))
    return path


def test_an_mjcf_with_no_actuator_is_driven_by_the_tasks_gains_and_says_so(tmp_path, capsys):
    """Issue 42: mjlab's robot MJCFs have no ``<actuator>`` (mjlab adds them from its Python config): the MuJoCo
    backend adds one position actuator per joint with the task's gains, says so once naming the file, and the demo
    checkpoint walks on it as on the file's own actuators."""
    pytest.importorskip("mujoco")
    bare = _without_actuators(tmp_path)
    args = [
        "replay",
        "checkpoints/quadruped_flat_physx/exported/policy.pt",
        "--target",
        "mujoco",
        "--num-envs",
        "1",
        "--seconds",
        "3",
        "--json",
    ]
    assert main([*args, "--asset", "transfer:quadruped.xml"]) == 0
    authored = json.loads(capsys.readouterr().out)
    assert main([*args, "--asset", str(bare)]) == 0
    added = json.loads(capsys.readouterr().out)
    said = [w for w in added["warnings"] if "has no <actuator>" in w]
    assert len(said) == 1 and said[0].startswith(
        "quadruped.xml has no <actuator>: one position actuator per joint added (12)"
    )
    assert added["fall_fraction"] == 0 and added["forward_velocity"] == pytest.approx(
        authored["forward_velocity"], abs=0.05
    )
    assert not [w for w in authored["warnings"] if "<actuator>" in w]


def test_an_mjcf_with_actuators_for_some_joints_only_is_refused_naming_them(tmp_path, capsys):
    pytest.importorskip("mujoco")
    some = _without_actuators(tmp_path, keep=4)
    args = [
        "replay",
        "checkpoints/quadruped_flat_physx/exported/policy.pt",
        "--target",
        "mujoco",
        "--asset",
        str(some),
        "--num-envs",
        "1",
        "--seconds",
        "1.5",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()[-1]  # after the converter's one line
    assert err.startswith(f"error: {some}: joints [") and "have no actuator" in err


@pytest.mark.engines
def test_an_isaac_lab_g1_on_unitrees_mjcf_does_not_blow_up_on_mujoco(shared, tmp_path, capsys):
    """Issue 42: an Isaac Lab-trained G1 23-DoF on Unitree's ``g1_23dof.xml`` tilted past 60 degrees within 0.1 s on
    MuJoCo: the file authors no armature, its ankle links weigh 74 g, and MuJoCo's default Euler integrates a
    position actuator's damping explicitly. Isaac Lab's drives are implicit (PhysX's, and Newton's MuJoCo-Warp at
    ``implicitfast``): under them the robot holding its default pose (a zero policy) stands as long as on PhysX."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("mujoco")
    from tests.test_deploy_configs import export_deploy_cfg
    from transfer.orders import resolve_ordering
    from transfer.task import resolve_asset

    xml = shared / "community/unitree_rl_gym/resources/robots/g1_description/g1_23dof.xml"
    names = list(resolve_ordering(resolve_asset(xml), "physx").joints)
    legs = [100.0 if ("hip" in n or "knee" in n) else 40.0 for n in names]
    config = export_deploy_cfg(tmp_path / "run", names, names, history=5, kp=legs, default=[0.0] * len(names))
    zero = torch.nn.Linear(5 * (9 + 3 * len(names)), len(names))
    torch.nn.init.zeros_(zero.weight)
    torch.nn.init.zeros_(zero.bias)
    policy = tmp_path / "zero.pt"
    torch.jit.script(torch.nn.Sequential(zero)).save(str(policy))
    args = [
        "replay",
        str(policy),
        "--config",
        str(config),
        "--source",
        "physx",
        "--asset",
        str(xml),
        "--target",
        "mujoco",
        "--compare",
        "--num-envs",
        "1",
        "--seconds",
        "1.5",
        "--json",
    ]
    assert main(args) == 0
    native, mujoco_run = json.loads(capsys.readouterr().out)["runs"][:2]
    assert mujoco_run["survival_seconds"] >= min(native["survival_seconds"], 1.5) - 0.3
    assert mujoco_run["settings"]["mujoco"] == {"integrator": "implicitfast"}


@pytest.mark.engines
def test_mjlabs_g1_mjcf_as_shipped_gets_an_actuator_per_joint(shared):
    """mjlab's G1 (``asset_zoo/robots/unitree_g1/xmls/g1.xml`` in unitree_rl_mjlab) as the repository ships it: no
    ``<actuator>``; the MuJoCo backend builds it with one position actuator on each of its 29 joints."""
    pytest.importorskip("mujoco")
    from transfer.backends.mujoco.model import build_model
    from transfer.backends.scene import SceneDescription

    xml = shared / "community/unitree_rl_mjlab/mjlab/asset_zoo/robots/unitree_g1/xmls/g1.xml"
    assert "<actuator" not in xml.read_text()
    built = build_model(xml, SceneDescription())
    assert len(built.joint_names) == 29 and set(built.actuator_of) == set(built.joint_names)
    assert built.changes == (
        "g1.xml has no <actuator>: one position actuator per joint added (29), with the task's "
        "stiffness and damping (and effort limit, where it gives one), as mjlab builds them from "
        "its robot config",
    )
