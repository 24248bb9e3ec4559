"""Issue 48: hostile MJCF robots get one clear line (the user's file, the element and its name, the attribute, what to
do) or the right result, before anything is converted, compiled or run.

- actuators: a ``<velocity>`` (and ``<intvelocity>``) actuator is refused on MuJoCo, not driven as a position
  actuator; a motor with activation dynamics is refused (the position actuator replacing it would filter the target,
  not the torque); a position actuator's filter is stepped by MuJoCo as authored and named for PhysX and Newton,
  which drive the joint without it; a range with its lower bound above its upper is refused;
- a walking policy on an MJCF robot welded to the world (no free joint in its root body) is refused before a run;
- a model far larger than any robot (``<replicate count="100000">``, 20,000 bodies) is refused before the converter
  or MuJoCo's compiler spend minutes on it;
- a NaN or inf in a number of the file, and a joint or body name the USD converter would rename, are named in the
  MJCF's own terms; an order mismatch names the MJCF, not the cache's ``.usdc``;
- a legged_gym deploy config whose ``xml_path`` is a folder says so.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from transfer.robot.assets import AssetError, convert_source, locate_asset

mujoco = pytest.importorskip("mujoco")

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"
KFE = '<position name="LF_KFE" joint="LF_KFE" kp="40" kv="1" forcerange="-40 40"/>'


def variant(tmp_path: Path, old: str, new: str, name: str = "quadruped.xml", count: int = 1) -> Path:
    """The project's quadruped MJCF with ``old`` replaced by ``new`` (``count`` times; 0: every one)."""
    text = locate_asset("transfer:quadruped.xml").read_text()
    assert old in text, old
    folder = tmp_path / name.removesuffix(".xml")
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text.replace(old, new) if count == 0 else text.replace(old, new, count))
    return path


def _backend(path: Path):
    from transfer.backends.mujoco.backend import MujocoBackend

    return MujocoBackend(path)


# ------------------------------------------------------------------------------------------------ 1. actuators


@pytest.mark.parametrize(
    ("actuator", "kind"),
    [
        ('<velocity name="LF_KFE" joint="LF_KFE" kv="1" forcerange="-40 40"/>', "velocity actuator"),
        ('<intvelocity name="LF_KFE" joint="LF_KFE" kp="40" actrange="-2.4 0"/>', "activation dynamics"),
        (
            '<general name="LF_KFE" joint="LF_KFE" ctrlrange="-40 40" dyntype="filter" dynprm="0.05"/>',
            "activation dynamics",
        ),
    ],
)
def test_an_actuator_mujoco_cannot_drive_by_position_targets_is_refused_naming_it(tmp_path, actuator, kind):
    path = variant(tmp_path, KFE, actuator)
    with pytest.raises(ValueError, match=kind) as err:
        _backend(path)
    said = str(err.value)
    assert str(path) in said and "actuator 'LF_KFE'" in said and "joint 'LF_KFE'" in said, said


def test_a_filtered_position_actuator_is_stepped_with_its_filter_on_mujoco(tmp_path):
    filtered = '<position name="LF_KFE" joint="LF_KFE" kp="40" kv="1" forcerange="-40 40" timeconst="0.05"/>'
    b = _backend(variant(tmp_path, KFE, filtered))
    try:
        m = b.models[0]
        a = m.actuator("LF_KFE").id
        assert m.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_FILTEREXACT and m.actuator_dynprm[a, 0] == pytest.approx(
            0.05
        )
    finally:
        b.close()


def test_a_filtered_actuator_is_named_for_the_engines_that_drive_without_it(tmp_path):
    pytest.importorskip("mujoco")
    from transfer.backends import source_notes as mjcf_warnings

    general = (
        '<general name="LF_KFE" joint="LF_KFE" dyntype="filter" dynprm="0.05" gainprm="40" biastype="affine" '
        'biasprm="0 -40 -1" forcerange="-40 40"/>'
    )
    path = variant(tmp_path, KFE, general)
    (line,) = mjcf_warnings(path)
    assert line.startswith(f"{path.name}: actuator 'LF_KFE' (joint 'LF_KFE') has activation dynamics")
    assert 'dyntype="filter"' in line and "PhysX and Newton" in line and "MuJoCo" in line
    assert mjcf_warnings(locate_asset("transfer:quadruped.xml")) == ()


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('range="-140 0"', 'range="0 -140"', r"<joint name='LF_KFE'> range=\"0 -140\""),
        (
            KFE,
            '<motor name="LF_KFE" joint="LF_KFE" ctrlrange="40 -40"/>',
            r"<motor name='LF_KFE'> ctrlrange=\"40 -40\"",
        ),
        (KFE, KFE.replace('forcerange="-40 40"', 'forcerange="40 -40"'), r"<position name='LF_KFE'> forcerange"),
    ],
)
def test_a_range_whose_lower_bound_is_above_its_upper_is_refused(tmp_path, old, new, named):
    path = variant(tmp_path, old, new)
    for refuse in (convert_source, _backend):  # before the converter runs; and the MuJoCo backend on the file itself
        with pytest.raises(AssetError, match=named) as err:
            refuse(path)
        assert str(err.value).startswith(f"{path}: ") and "lower bound above its upper" in str(err.value)


# ------------------------------------------------------------------------------------------------ 2. the base


def test_a_welded_root_is_found_in_the_file():
    from transfer.robot.assets.mjcf_checks import welded_root

    assert welded_root(locate_asset("transfer:quadruped.xml")) is None


def test_a_walking_policy_on_a_robot_welded_to_the_world_is_refused(tmp_path, converters):  # noqa: ARG001
    pytest.importorskip("torch")
    from transfer.robot.assets.mjcf_checks import refuse_welded_walker, welded_root
    from transfer.runs.replay import replay

    path = variant(tmp_path, '<freejoint name="root_joint"/>', "")
    assert welded_root(path) == "base"
    refuse_welded_walker(path, ["joint_pos_rel", "joint_vel_rel", "last_action"])  # an arm's policy: fine welded
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        replay(CHECKPOINT, target="mujoco", asset=path, seconds=0.2, progress=False)
    assert str(err.value) == (
        f"{path}: its root body 'base' has no free joint: the robot is welded to the world; a walking policy "
        "(its observation reads base_lin_vel, base_ang_vel, projected_gravity, velocity_commands) needs "
        "<freejoint/> in its root body"
    )
    assert time.perf_counter() - start < 60  # before any engine starts


# ------------------------------------------------------------------------------------------------ 3. size


def test_a_replicate_far_larger_than_a_robot_is_refused_before_converting(tmp_path):
    leg = '<body name="LF_HIP" pos="0.3 0.12 0">'
    path = variant(tmp_path, leg, f'<replicate count="100000" offset="0 0 0.01">{leg}', name="huge.xml")
    text = path.read_text()
    end = text.index("</body>", text.index("LF_foot")) + len("</body>")
    end = text.index("</body>", end) + len("</body>")
    end = text.index("</body>", end) + len("</body>")  # the hip's own
    path.write_text(text[:end] + "</replicate>" + text[end:])
    start = time.perf_counter()
    for refuse in (convert_source, _backend):
        with pytest.raises(
            AssetError,
            match=r'300010 links or bodies \(<replicate count="100000"> repeats what it '
            r"holds\), more than the 2000",
        ) as err:
            refuse(path)
        assert str(err.value).startswith(f"{path}: ")
    assert time.perf_counter() - start < 10


def test_twenty_thousand_bodies_are_refused_naming_the_count(tmp_path):
    bodies = "".join(f'<body name="b{i}" pos="{i} 0 0"><geom size="0.1"/></body>' for i in range(20_000))
    path = tmp_path / "crowd.xml"
    path.write_text(f"<mujoco><worldbody>{bodies}</worldbody></mujoco>")
    with pytest.raises(AssetError, match=r"crowd.xml: 20000 links or bodies, more than the 2000"):
        convert_source(path)


# ------------------------------------------------------------------------------------------------ 4. in the MJCF's terms


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('<body name="LF_HIP" pos="0.3 0.12 0">', '<body name="LF_HIP" pos="nan 0.12 0">', "<body name='LF_HIP'> pos"),
        (
            '<body name="LF_HIP" pos="0.3 0.12 0">',
            '<body name="LF_HIP" pos="0.3 0.12 0" quat="1 0 inf 0">',
            "<body name='LF_HIP'> quat",
        ),
        ('range="-140 0"', 'range="-140 NaN"', "<joint name='LF_KFE'> range"),
        ('mass="6"', 'mass="1e999"', "<inertial> in body 'base' mass"),
        (
            '<geom name="LF_foot" type="sphere" size="0.03"',
            '<geom name="LF_foot" type="sphere" size="-inf"',
            "<geom name='LF_foot'> size",
        ),
    ],
)
def test_a_number_that_is_not_finite_is_named_before_anything_reads_it(tmp_path, old, new, named):
    path = variant(tmp_path, old, new)
    for refuse in (convert_source, _backend):
        with pytest.raises(AssetError, match=re.escape(named)) as err:
            refuse(path)
        assert str(err.value).startswith(f"{path}: ") and "not a finite number" in str(err.value)


@pytest.mark.parametrize(("kind", "name"), [("joint", "LF-H?U5"), ("body", "LF HIP"), ("joint", "1st")])
def test_a_name_the_usd_converter_would_rename_is_refused_in_the_mjcfs_terms(tmp_path, kind, name):
    old = '"LF_HAA"' if kind == "joint" else '"LF_HIP"'
    path = variant(tmp_path, old, f'"{name}"', count=0)
    with pytest.raises(AssetError) as err:
        convert_source(path)
    said = str(err.value)
    assert said.startswith(f"{path}: {kind} {name!r}") and "rename it in the MJCF" in said and "tn__" in said, said


def test_an_order_mismatch_names_the_mjcf_not_the_converted_usd(tmp_path, converters):  # noqa: ARG001
    pytest.importorskip("torch")
    from transfer.runs.inputs import ReplayError, resolve_inputs

    path = variant(tmp_path, '"LF_HAA"', '"LF_HAA_x"', name="renamed.xml", count=0)
    with pytest.raises(ReplayError, match=r"but renamed\.xml resolves that order to \['LF_HAA_x'"):
        resolve_inputs(CHECKPOINT, asset=path)


def test_a_robot_without_colliding_geoms_is_named_in_its_mjcfs_terms(tmp_path, converters):  # noqa: ARG001
    pytest.importorskip("torch")
    from transfer.runs.replay import replay

    path = variant(tmp_path, '<geom contype="1" conaffinity="0"/>', '<geom contype="0" conaffinity="0"/>')
    with pytest.raises(ValueError) as err:
        replay(CHECKPOINT, target="mujoco", asset=path, seconds=0.2, progress=False)
    said = str(err.value)
    assert said.startswith(f"{path}: no link of this floating-base robot (root body 'base') has collision geometry")
    assert "geoms that collide (contype or conaffinity not 0" in said and "PhysicsCollisionAPI" not in said


# ------------------------------------------------------------------------------------------------ 5. deploy configs


def test_a_deploy_configs_xml_path_that_is_a_folder_is_called_one(tmp_path, monkeypatch):
    from tests.test_deploy_configs import G1_YAML, legged_gym_tree
    from transfer.task.readers import read_config

    monkeypatch.delenv("LEGGED_GYM_ROOT_DIR", raising=False)
    folder = G1_YAML.replace("g1_description/scene.xml", "g1_description")
    config = read_config(legged_gym_tree(tmp_path / "unitree_rl_gym", folder))
    robot = (tmp_path / "unitree_rl_gym/resources/robots/g1_description").resolve()
    assert config.asset is None and "no folder stands for" not in config.asset_problem
    assert (
        f"xml_path: '{{LEGGED_GYM_ROOT_DIR}}/resources/robots/g1_description' is the folder {robot}"
        in config.asset_problem
    )
    assert "give the robot's XML file" in config.asset_problem and "scene.xml" in config.asset_problem
    plain = tmp_path / "plain.yaml"
    plain.write_text(G1_YAML.replace('"{LEGGED_GYM_ROOT_DIR}/resources/robots/g1_description/scene.xml"', '"."'))
    said = read_config(plain).asset_problem
    assert "is the folder" in said and "does not exist" not in said
