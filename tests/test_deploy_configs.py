"""The deploy configs robot projects ship (issue 28), written here in their projects' exact layouts.

- Unitree's ``deploy.yaml`` as ``unitree_rl_lab``'s ``export_deploy_cfg`` writes it (``yaml.dump(cfg,
  default_flow_style=None, sort_keys=False)`` of ``joint_ids_map``, ``step_dt``, ``stiffness`` / ``damping`` in the
  SDK's motor order, ``default_joint_pos``, ``commands``, ``actions.JointPositionAction``, ``observations``), and
  the hand-kept layout of ``unitree_rl_mjlab`` (trailing commas, integer gains);
- unitree_rl_gym's ``deploy/deploy_mujoco/configs/g1.yaml`` (``{LEGGED_GYM_ROOT_DIR}`` placeholders, the gait
  clock) and their Go2's (``lin_vel_scale``);
- the MuJoCo order of an MJCF file (``mjcf_joint_names``) against MuJoCo's own compiled model, on generated trees.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from transfer.robot.assets.mjcf import mjcf_body_names, mjcf_joint_names
from transfer.task import TaskError, load_task
from transfer.task.deploy import DeployConfig
from transfer.task.readers import read_config

GO2_ISAACLAB = [
    "FL_hip_joint",
    "FR_hip_joint",
    "RL_hip_joint",
    "RR_hip_joint",
    "FL_thigh_joint",
    "FR_thigh_joint",
    "RL_thigh_joint",
    "RR_thigh_joint",
    "FL_calf_joint",
    "FR_calf_joint",
    "RL_calf_joint",
    "RR_calf_joint",
]
GO2_SDK = [
    "FR_hip_joint",
    "FR_thigh_joint",
    "FR_calf_joint",
    "FL_hip_joint",
    "FL_thigh_joint",
    "FL_calf_joint",
    "RR_hip_joint",
    "RR_thigh_joint",
    "RR_calf_joint",
    "RL_hip_joint",
    "RL_thigh_joint",
    "RL_calf_joint",
]


def export_deploy_cfg(
    folder: Path, joint_names, sdk_names, *, history: int = 1, clip=None, kp=None, default=None
) -> Path:
    """A ``params/deploy.yaml`` as unitree_rl_lab's exporter writes it for a velocity task on ``joint_names`` (the
    policy's order), with every key in its order and its value rounded to 3 significant digits."""
    ids = [sdk_names.index(n) for n in joint_names]  # resolve_matching_names(joint_names, sdk, preserve_order)
    n = len(joint_names)
    stiffness = np.zeros(len(sdk_names))
    stiffness[ids] = kp if kp is not None else [25.0] * n
    default = default if default is not None else [0.1, -0.1, 0.1, -0.1, 0.8, 0.8, 1.0, 1.0, -1.5, -1.5, -1.5, -1.5][:n]

    def term(dim, scale=1.0, params=None):
        return {
            "params": params or {},
            "clip": None if clip is None else list(clip),
            "scale": [scale] * dim,
            "history_length": history,
        }

    cfg = {
        "joint_ids_map": ids,
        "step_dt": 0.02,
        "stiffness": stiffness.tolist(),
        "damping": [0.5] * len(sdk_names),
        "default_joint_pos": default,
        "commands": {
            "base_velocity": {
                "ranges": {
                    "lin_vel_x": [-1.0, 1.0],
                    "lin_vel_y": [-0.4, 0.4],
                    "ang_vel_z": [-1.0, 1.0],
                    "heading": None,
                }
            }
        },
        "actions": {
            "JointPositionAction": {
                "clip": [[-100.0, 100.0]] * n,
                "joint_names": [".*"],
                "scale": [0.25] * n,
                "offset": default,
                "joint_ids": None,
            }
        },
        "observations": {
            "base_ang_vel": term(3, 0.2),
            "projected_gravity": term(3),
            "velocity_commands": term(3, params={"command_name": "base_velocity"}),
            "joint_pos_rel": term(n),
            "joint_vel_rel": term(n, 0.05),
            "last_action": term(n),
        },
    }
    path = folder / "params" / "deploy.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(cfg, default_flow_style=None, sort_keys=False))
    return path


def test_unitree_deploy_yaml_maps_the_sdk_gains_onto_the_policys_joints(tmp_path):
    kp = [20.0 + i for i in range(12)]
    path = export_deploy_cfg(tmp_path / "go2", GO2_ISAACLAB, GO2_SDK, history=5, clip=(-100, 100), kp=kp)
    config = read_config(path)
    assert isinstance(config, DeployConfig) and config.kind == "unitree" and config.num_joints == 12
    task = config.task(GO2_ISAACLAB)
    assert [task.stiffness[n] for n in GO2_ISAACLAB] == kp  # SDK slot joint_ids_map[i] holds policy joint i's gain
    assert task.default_joint_pos["FR_hip_joint"] == -0.1 and task.default_joint_pos["RR_calf_joint"] == -1.5
    assert (task.sim_dt, task.decimation, task.command) == (0.005, 4, (1.0, 0.0, 0.0))
    terms = {t.name: t for t in task.observation}
    assert [t.name for t in task.observation][:3] == ["base_ang_vel", "projected_gravity", "velocity_commands"]
    assert terms["base_ang_vel"].scale == 0.2 and terms["joint_vel_rel"].scale == 0.05
    assert {t.history_length for t in task.observation} == {5} and terms["last_action"].clip == (-100.0, 100.0)
    assert task.observation_size(12) == 5 * (9 + 36)
    action = task.action
    assert (
        not action.use_default_offset
        and action.offset["RL_thigh_joint"] == 1.0
        and action.scale["FL_hip_joint"] == 0.25
    )
    assert action.clip["RR_calf_joint"] == (-100.0, 100.0)
    once = config.task(GO2_ISAACLAB[::-1])  # another order: the same lists land on other joints
    assert once.default_joint_pos["RR_calf_joint"] == 0.1
    with pytest.raises(TaskError, match="lists 12 joints .* the robot has 11"):
        config.task(GO2_ISAACLAB[:11])


def test_unitree_mjlab_layout_reads_and_history_1_is_none(tmp_path):
    """unitree_rl_mjlab's Go2 file, kept by hand: flow lists with trailing commas, integer gains, history 1."""
    text = textwrap.dedent("""\
        joint_ids_map: [3,4,5,0,1,2,9,10,11,6,7,8,]
        step_dt: 0.02
        stiffness: [20, 20, 40, 20, 20, 40, 20, 20, 40, 20, 20, 40]
        damping:   [ 1,  1,  2,  1,  1,  2,  1,  1,  2,  1,  1,  2]
        default_joint_pos: [-0.1,0.9,-1.8, 0.1,0.9,-1.8, -0.1,0.9,-1.8, 0.1,0.9,-1.8]

        commands:
          base_velocity:
            ranges:
              lin_vel_x: [-0.5, 1.0]
              lin_vel_y: [-0.5, 0.5]
              ang_vel_z: [-1.0, 1.0]
              heading: null
        actions:
          JointPositionAction:
            clip: null
            joint_names: [.*]
            scale: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
            offset: [-0.1,0.9,-1.8, 0.1,0.9,-1.8, -0.1,0.9,-1.8, 0.1,0.9,-1.8]
            joint_ids: null
        observations:
          base_ang_vel:
            params: {}
            clip: null
            scale: [1.0, 1.0, 1.0]
            history_length: 1
          projected_gravity:
            params: {}
            clip: null
            scale: [1.0, 1.0, 1.0]
            history_length: 1
          velocity_commands:
            params: { command_name: base_velocity }
            clip: null
            scale: [ 1.0, 1.0, 1.0 ]
            history_length: 1
          joint_pos_rel:
            params: {}
            clip: null
            scale: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
            history_length: 1
          joint_vel_rel:
            params: {}
            clip: null
            scale: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
            history_length: 1
          last_action:
            params: {}
            clip: null
            scale: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
            history_length: 1
        """)
    (tmp_path / "deploy.yaml").write_text(text)
    mjcf = [f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")]
    task = read_config(tmp_path / "deploy.yaml").task(mjcf)
    assert task.stiffness["FL_calf_joint"] == 40.0 and task.stiffness["FR_hip_joint"] == 20.0
    assert all(t.history_length == 0 for t in task.observation) and task.observation_size(12) == 45
    assert task.command == (1.0, 0.0, 0.0) and task.action.clip is None


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda c: c["observations"].update(keyboard_velocity_commands={"params": {}, "scale": [1.0] * 3}),
            "unknown observation term 'keyboard_velocity_commands'",
        ),
        (lambda c: c["observations"]["base_ang_vel"].update(scale=[1.0, 2.0]), "2 scales for a term of 3 entries"),
        (lambda c: c.update(actions={"JointVelocityAction": {}}), "JointPositionAction only"),
        (lambda c: c["observations"].update(use_gym_history=True), "use_gym_history"),
        (lambda c: c.update(step_dt=0.0123), "step_dt"),
        (
            lambda c: c["actions"]["JointPositionAction"].update(scale=[0.25] * 5),
            r"actions.JointPositionAction.scale: 5",
        ),
        (lambda c: c.update(joint_ids_map=[0, 0, 1]), "names a motor twice"),
        (
            lambda c: c["observations"]["joint_pos_rel"]["params"].update(
                asset_cfg={"name": "robot", "joint_ids": [0, 1]}
            ),
            "asset_cfg.joint_ids: \\[0, 1\\]",
        ),
    ],
)
def test_what_a_deploy_yaml_says_that_does_not_map_is_named(tmp_path, edit, match):
    path = export_deploy_cfg(tmp_path, GO2_ISAACLAB, GO2_SDK)
    cfg = yaml.safe_load(path.read_text())
    edit(cfg)
    path.write_text(yaml.dump(cfg, sort_keys=False))
    with pytest.raises(TaskError, match=match) as err:
        read_config(path).task(GO2_ISAACLAB)
    assert str(path) in str(err.value)


G1_YAML = """\
#
policy_path: "{LEGGED_GYM_ROOT_DIR}/deploy/pre_train/g1/motion.pt"
xml_path: "{LEGGED_GYM_ROOT_DIR}/resources/robots/g1_description/scene.xml"

# Total simulation time
simulation_duration: 60.0
# Simulation time step
simulation_dt: 0.002
# Controller update frequency (meets the requirement of simulation_dt * controll_decimation=0.02; 50Hz)
control_decimation: 10

kps: [100, 100, 100, 150, 40, 40, 100, 100, 100, 150, 40, 40]
kds: [2, 2, 2, 4, 2, 2, 2, 2, 2, 4, 2, 2]

default_angles: [-0.1,  0.0,  0.0,  0.3, -0.2, 0.0,
                  -0.1,  0.0,  0.0,  0.3, -0.2, 0.0]

ang_vel_scale: 0.25
dof_pos_scale: 1.0
dof_vel_scale: 0.05
action_scale: 0.25
cmd_scale: [2.0, 2.0, 0.25]
num_actions: 12
num_obs: 47

cmd_init: [0.5, 0, 0]
"""
G1_LEGS = [
    f"{side}_{j}_joint"
    for side in ("left", "right")
    for j in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
]


def legged_gym_tree(root: Path, config: str = G1_YAML, name: str = "g1") -> Path:
    """unitree_rl_gym's folders: the config in deploy/deploy_mujoco/configs/, the robot in resources/robots/."""
    robot = root / "resources/robots/g1_description"
    robot.mkdir(parents=True)
    (robot / "scene.xml").write_text("<mujoco><worldbody/></mujoco>")
    cfg = root / "deploy/deploy_mujoco/configs" / f"{name}.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(config)
    return cfg


def test_legged_gym_config_with_its_gait_clock_and_placeholders(tmp_path, monkeypatch):
    monkeypatch.delenv("LEGGED_GYM_ROOT_DIR", raising=False)
    cfg = legged_gym_tree(tmp_path / "unitree_rl_gym")
    config = read_config(cfg)
    assert config.kind == "legged_gym" and config.trained_on == "physx"
    assert config.asset == (tmp_path / "unitree_rl_gym/resources/robots/g1_description/scene.xml").resolve()
    task = config.task(G1_LEGS)
    assert [t.name for t in task.observation] == [
        "base_ang_vel",
        "projected_gravity",
        "velocity_commands",
        "joint_pos_rel",
        "joint_vel_rel",
        "last_action",
        "gait_phase",
    ]
    terms = {t.name: t for t in task.observation}
    assert terms["velocity_commands"].scale == (2.0, 2.0, 0.25) and terms["gait_phase"].params["period"] == 0.8
    assert task.observation_size(12) == 47 and (task.sim_dt, task.decimation) == (0.002, 10)
    assert task.stiffness["left_knee_joint"] == 150.0 and task.default_joint_pos["right_knee_joint"] == 0.3
    assert task.command == (0.5, 0.0, 0.0) and task.actuators[0].model == "ideal_pd"
    assert task.trained_on == "physx" and task.action.scale == 0.25 and task.action.use_default_offset


def test_legged_gym_go2_puts_the_base_velocity_first_and_a_wrong_num_obs_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("LEGGED_GYM_ROOT_DIR", raising=False)
    go2 = G1_YAML.replace("ang_vel_scale: 0.25", "lin_vel_scale: 2.0\nang_vel_scale: 0.25").replace("47", "48")
    task = read_config(legged_gym_tree(tmp_path / "a", go2, "go2")).task(G1_LEGS)
    assert task.observation[0].name == "base_lin_vel" and task.observation[0].scale == 2.0
    assert task.observation_size(12) == 48 and "gait_phase" not in {t.name for t in task.observation}
    with pytest.raises(TaskError, match="num_obs: 50.*holds 45 entries.*or 47 with the gait clock"):
        read_config(legged_gym_tree(tmp_path / "b", G1_YAML.replace("47", "50"))).task(G1_LEGS)


def test_a_placeholder_no_folder_stands_for_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("LEGGED_GYM_ROOT_DIR", raising=False)
    cfg = tmp_path / "g1.yaml"
    cfg.write_text(G1_YAML)
    config = read_config(cfg)  # --asset may still give the robot
    assert config.asset is None and str(cfg) in config.asset_problem
    assert "xml_path" in config.asset_problem and "LEGGED_GYM_ROOT_DIR to the unitree_rl_gym" in config.asset_problem
    from transfer.runs.inputs import ReplayError, resolve_inputs

    torch = pytest.importorskip("torch")
    policy = tmp_path / "motion.pt"
    torch.jit.script(torch.nn.Linear(47, 12)).save(str(policy))
    with pytest.raises(ReplayError, match=r"no folder stands for \{LEGGED_GYM_ROOT_DIR\}"):
        resolve_inputs(policy, config=cfg)
    legged_gym_tree(tmp_path / "elsewhere")
    monkeypatch.setenv("LEGGED_GYM_ROOT_DIR", str(tmp_path / "elsewhere"))
    assert read_config(cfg).asset.name == "scene.xml"
    # battery 5: an xml_path naming no robot file was taken as the robot ("the robot is a USD file"); a cmd_scale of
    # two entries was "one per joint of the policy"
    passwd = tmp_path / "passwd.yaml"
    passwd.write_text(
        G1_YAML.replace('"{LEGGED_GYM_ROOT_DIR}/resources/robots/g1_description/scene.xml"', '"/etc/passwd"')
    )
    config = read_config(passwd)
    assert config.asset is None and "xml_path: '/etc/passwd' is no MJCF (.xml) or URDF" in config.asset_problem
    short = tmp_path / "short.yaml"
    short.write_text(re.sub(r"cmd_scale: \[[^]]*\]", "cmd_scale: [2.0, 2.0]", G1_YAML))
    with pytest.raises(TaskError, match=r"cmd_scale: 2 entries, expected 3 \(one per command component"):
        read_config(short).task(G1_LEGS)
    with pytest.raises(TaskError, match="deploy config lists its values by position"):
        load_task(cfg)


# ---------------------------------------------------------------------------------------------------- MuJoCo's order


@st.composite
def mjcf_trees(draw):
    """An MJCF body tree: bodies with hinge, slide and ball joints (some typed by a default class), frames, an
    include, and a free base; every element in random document order."""
    counter = iter(range(1000))

    def body(depth: int) -> str:
        k = next(counter)
        parts = []
        ball = draw(st.integers(0, 5)) == 0  # MuJoCo takes a ball joint alone in its body
        for j in range(1 if ball else draw(st.integers(0, 2))):
            kind = "ball" if ball else draw(st.sampled_from(["hinge", "slide", "class"]))
            attr = 'class="slider"' if kind == "class" else f'type="{kind}"'
            axis = "" if kind == "ball" else ' axis="0 0 1"'
            parts.append(f'<joint name="j{k}_{j}" {attr}{axis}/>')
        parts.append('<geom type="sphere" size="0.05" mass="0.1"/>')
        if depth < 3:
            for _ in range(draw(st.integers(0, 2))):
                child = body(depth + 1)
                parts.append(f"<frame>{child}</frame>" if draw(st.booleans()) else child)
        draw(st.randoms()).shuffle(parts)
        return f'<body name="b{k}" pos="0 0 0.1">{"".join(parts)}</body>'

    roots = [body(0) for _ in range(draw(st.integers(1, 2)))]
    return roots, draw(st.booleans())


@settings(max_examples=30, deadline=None)
@given(mjcf_trees())
def test_mjcf_joint_names_are_mujocos_own_order(tmp_path_factory, tree):
    mujoco = pytest.importorskip("mujoco")
    roots, include = tree
    folder = tmp_path_factory.mktemp("mjcf")
    base = f'<body name="base"><freejoint name="root"/><geom type="box" size=".1 .1 .1"/>{roots[0]}</body>'
    rest = "".join(roots[1:])
    if include and rest:
        (folder / "part.xml").write_text(f"<mujoco>{rest}</mujoco>")  # its children stand where the include does
        rest = '<include file="part.xml"/>'
    xml = (
        f'<mujoco><default><default class="slider"><joint type="slide"/></default></default>'
        f"<worldbody>{base}{rest}</worldbody></mujoco>"
    )
    path = folder / "robot.xml"
    path.write_text(xml)
    model = mujoco.MjModel.from_xml_path(str(path))
    expected = []
    for j in range(model.njnt):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        kind = model.jnt_type[j]
        if kind == mujoco.mjtJoint.mjJNT_FREE:
            continue
        expected += [f"{name}:{i}" for i in range(3)] if kind == mujoco.mjtJoint.mjJNT_BALL else [name]
    assert list(mjcf_joint_names(path)) == expected
    bodies = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody)]
    assert list(mjcf_body_names(path)) == bodies  # inspect's mujoco column (issue 42)


@st.composite
def urdf_trees(draw):
    """A URDF tree of revolute, continuous, prismatic and fixed joints, links and joints in random document order."""
    n = draw(st.integers(2, 8))
    parents = {i: draw(st.integers(0, i - 1)) for i in range(1, n)}
    kinds = {i: draw(st.sampled_from(["revolute", "continuous", "prismatic", "fixed"])) for i in range(1, n)}
    links, joints = draw(st.permutations(range(n))), draw(st.permutations(range(1, n)))
    inertia = (
        '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
    )
    text = "".join(f'<link name="l{i}">{inertia}</link>' for i in links)
    text += "".join(
        f'<joint name="j{i}" type="{kinds[i]}"><parent link="l{parents[i]}"/><child link="l{i}"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for i in joints
    )
    return f'<robot name="r">{text}</robot>'


@settings(max_examples=40, deadline=None)
@given(urdf_trees())
def test_urdf_joint_names_are_mujocos_order(tmp_path_factory, text):
    mujoco = pytest.importorskip("mujoco")
    from transfer.robot.assets.mjcf import mujoco_joint_names

    path = tmp_path_factory.mktemp("urdf") / "robot.urdf"
    path.write_text(text)
    model = mujoco.MjModel.from_xml_path(str(path))
    expected = [
        mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        for j in range(model.njnt)
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
    ]
    assert list(mujoco_joint_names(path)) == expected


@pytest.mark.parametrize(
    "name", ["generated_mjcf", "generated_walker", "newton:nv_ant.xml", "newton:quadruped.urdf", "newton:cartpole.urdf"]
)
def test_the_mujoco_order_of_the_robots_the_tests_hold(tmp_path, name):
    """The MJCF and URDF robots of the test suite, against MuJoCo's compiled model (nv_humanoid.xml does not compile
    in MuJoCo 3.x: a sensor names a missing site)."""
    mujoco = pytest.importorskip("mujoco")
    from tests.robotgen import mjcf_robot
    from transfer.robot.assets import locate_asset
    from transfer.robot.assets.mjcf import mujoco_joint_names

    if name.startswith("newton:"):
        pytest.importorskip("newton")
        path = locate_asset(name)
    else:
        path = mjcf_robot(tmp_path, walker=name.endswith("walker"))
    model = mujoco.MjModel.from_xml_path(str(path))
    expected = []
    for j in range(model.njnt):
        kind, joint = model.jnt_type[j], mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        if kind != mujoco.mjtJoint.mjJNT_FREE:
            expected += [f"{joint}:{i}" for i in range(3)] if kind == mujoco.mjtJoint.mjJNT_BALL else [joint]
    assert list(mujoco_joint_names(path)) == expected and expected
    from transfer.backends.mujoco.backend import MujocoBackend

    (order,) = MujocoBackend.engine_orders(path)  # the MuJoCo backend's own order is the engine's
    assert list(order.joints) == expected
    bodies = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody)]
    assert list(order.bodies) == [b for b in bodies if b in order.bodies] and order.bodies[0] == bodies[0]


def test_info_reads_a_checkpoint_with_its_deploy_yaml_naming_each_source(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("pxr")
    from transfer.cli import main
    from transfer.orders import resolve_ordering
    from transfer.task import resolve_asset

    asset = resolve_asset(load_task("presets/tasks/quadruped_flat_velocity.yaml").asset)
    names = list(resolve_ordering(asset, "physx").joints)
    cfg = export_deploy_cfg(tmp_path / "run", names, names, history=5)
    policy = tmp_path / "policy.pt"
    torch.jit.script(torch.nn.Sequential(torch.nn.Linear(5 * 45, 12))).save(str(policy))
    args = ["info", str(policy), "--config", str(cfg), "--source", "physx", "--asset", str(asset)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"task from         {cfg}" in out and "joint order from  --source physx on" in out
    assert "base_ang_vel 5 x 3 (x 0.2)" in out and "= 225" in out and "[-100, 100] (every joint)" in out
    assert main([*args, "--json"]) == 0
    info = __import__("json").loads(capsys.readouterr().out)
    assert info["observation_size"] == 225 == info["input_size"] and info["sources"]["task"] == str(cfg)
    assert main(["info", str(policy), "--source", "physx"]) == 2 and "--config" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- issue 42


def _real_exporter_dump(path: Path, action_ids) -> str:
    """The deploy.yaml of :func:`export_deploy_cfg` as unitree_rl_lab's exporter leaves Python objects in it: its
    ``yaml.dump`` (PyYAML's full Dumper) writes ``slice(None)`` (SceneEntityCfg's default ``joint_ids``, and an action
    term's ``_joint_ids`` in the exporter's versions that did not turn it to null) as
    ``!!python/object/apply:builtins.slice``; one object named twice is anchored (``&id001``)."""
    cfg = yaml.safe_load(path.read_text())
    everything = slice(None)
    entity = {
        "name": "robot",
        "joint_names": [".*"],
        "joint_ids": everything,
        "body_ids": everything,
        "preserve_order": False,
    }
    cfg["observations"]["joint_pos_rel"]["params"] = {"asset_cfg": entity}
    action = cfg["actions"]["JointPositionAction"]
    for key in ("scale", "offset", "clip"):  # one entry per joint the action drives
        action[key] = action[key][action_ids]
    action["joint_ids"] = action_ids
    text = yaml.dump(cfg, default_flow_style=None, sort_keys=False)
    path.write_text(text)
    return text


def test_unitree_s_slice_tag_is_read_as_the_slice_it_names(tmp_path):
    path = export_deploy_cfg(tmp_path / "go2", GO2_ISAACLAB, GO2_SDK)
    text = _real_exporter_dump(path, slice(None))
    assert "joint_ids: !!python/object/apply:builtins.slice [null, null, null]" in text and "&id001" in text
    task = read_config(path).task(GO2_ISAACLAB)
    assert task.action.joints is None and task.observation_size(12) == 45  # every joint, in order
    _real_exporter_dump(
        export_deploy_cfg(tmp_path / "go2", GO2_ISAACLAB, GO2_SDK), slice(0, 12, 2)
    )  # a slice of the policy's joints: those joints, in that order
    assert read_config(path).task(GO2_ISAACLAB).action.joints == tuple(GO2_ISAACLAB[0:12:2])


@given(
    start=st.one_of(st.none(), st.integers(-14, 14)),
    stop=st.one_of(st.none(), st.integers(-14, 14)),
    step=st.one_of(st.none(), st.integers(1, 4)),
)
@settings(max_examples=40, deadline=None)
def test_any_slice_of_integers_reads_back_equal(start, stop, step):
    from transfer.errors import slice_loader

    value = slice(start, stop, step)
    assert yaml.load(yaml.dump({"ids": value}), Loader=slice_loader()) == {"ids": value}  # noqa: S506


@pytest.mark.parametrize(
    ("tag", "match"),
    [
        ("!!python/object/apply:builtins.slice [1, 2, 3, 4]", r"builtins.slice takes a list of 1 to 3 integers"),
        ("!!python/object/apply:builtins.slice []", r"1 to 3 integers or nulls .*got 0 arguments"),
        ("!!python/object/apply:builtins.slice ['a']", r"1 to 3 integers or nulls"),
        ("!!python/object/apply:os.system ['touch {marker}']", r"tag !!python/object/apply:os.system is refused"),
        ("!!python/tuple [0, 1]", r"tag !!python/tuple is refused"),
        ("!!python/name:builtins.print", r"tag !!python/name:builtins.print is refused"),
    ],
)
def test_other_python_tags_and_malformed_slices_are_refused_naming_the_file_and_line(tmp_path, tag, match):
    path = export_deploy_cfg(tmp_path, GO2_ISAACLAB, GO2_SDK)
    marker = tmp_path / "RAN"
    text = path.read_text().replace("joint_ids: null", "joint_ids: " + tag.format(marker=marker))
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "joint_ids: !!" in t)
    with pytest.raises(TaskError, match=match) as err:
        read_config(path)
    message = str(err.value)
    assert message.startswith(f"{path}: line {line}, column") and "\n" not in message
    assert not marker.exists()


def _keyboard_deploy(tmp_path: Path, scale: list[float], command: str = "base_velocity") -> Path:
    """A fork's deploy.yaml: its command observation renamed ``keyboard_velocity_commands``, its params still naming
    the command."""
    path = export_deploy_cfg(tmp_path, GO2_ISAACLAB, GO2_SDK)
    cfg = yaml.safe_load(path.read_text())
    terms = cfg["observations"]
    cfg["observations"] = {k: v for k, v in terms.items() if k != "velocity_commands"}
    renamed = {**terms["velocity_commands"], "params": {"command_name": command}, "scale": scale}
    cfg["observations"] = {
        "base_ang_vel": terms["base_ang_vel"],
        "projected_gravity": terms["projected_gravity"],
        "keyboard_velocity_commands": renamed,
        **{k: terms[k] for k in list(terms)[3:]},
    }
    path.write_text(yaml.dump(cfg, default_flow_style=None, sort_keys=False))
    return path


def test_a_renamed_command_observation_is_that_command_s_when_its_size_fits(tmp_path):
    path = _keyboard_deploy(tmp_path, [2.0, 2.0, 0.25])
    task = read_config(path).task(GO2_ISAACLAB)
    assert [t.name for t in task.observation][:3] == ["base_ang_vel", "projected_gravity", "velocity_commands"]
    assert task.observation[2].scale == (2.0, 2.0, 0.25)
    assert dict(task.observation_aliases) == {"keyboard_velocity_commands": "velocity_commands"}
    with pytest.raises(
        TaskError,
        match=r"observations.keyboard_velocity_commands.scale: 2 entries, but .* is read "
        r"as velocity_commands \(3 entries: vx, vy, wz\)",
    ) as err:
        read_config(_keyboard_deploy(tmp_path / "b", [2.0, 2.0])).task(GO2_ISAACLAB)
    assert str(err.value).startswith(str(tmp_path / "b")) and "\n" not in str(err.value)


def test_a_term_of_another_name_maps_by_observation_aliases_and_the_refusal_says_how(tmp_path):
    path = _keyboard_deploy(tmp_path, [1.0, 1.0, 1.0], command="joystick")  # names no command the file describes
    with pytest.raises(
        TaskError,
        match=r"unknown observation term 'keyboard_velocity_commands'.*--set "
        r"observation_aliases.keyboard_velocity_commands=TERM",
    ):
        read_config(path).task(GO2_ISAACLAB)
    task = read_config(path).task(GO2_ISAACLAB, {"keyboard_velocity_commands": "velocity_commands"})
    assert task.observation[2].name == "velocity_commands"
    with pytest.raises(
        TaskError,
        match=r"observation_aliases.keyboard_velocity_commands: 'keyboard' is no "
        r"observation term transfer builds; map it to one of base_lin_vel",
    ):
        read_config(path).task(GO2_ISAACLAB, {"keyboard_velocity_commands": "keyboard"})


def test_a_task_file_lists_its_terms_by_their_aliases_and_round_trips(tmp_path):
    from transfer.task import Task

    text = Path("presets/tasks/quadruped_flat_velocity.yaml").read_text()
    data = yaml.safe_load(text)
    data["observation"] = ["lin_vel" if t == "base_lin_vel" else t for t in data["observation"]]
    data["observation_aliases"] = {"lin_vel": "base_lin_vel"}
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    task = load_task(tmp_path / "task.yaml")
    assert task.observation[0].name == "base_lin_vel" and dict(task.observation_aliases) == {"lin_vel": "base_lin_vel"}
    assert Task.from_dict(task.to_dict()) == task
    assert task.with_settings({"observation_aliases.joint_speeds": "joint_vel_rel"}).observation_aliases == {
        "lin_vel": "base_lin_vel",
        "joint_speeds": "joint_vel_rel",
    }


def test_set_observation_aliases_reaches_the_deploy_reader_of_a_replay(tmp_path, capsys):
    """``--set observation_aliases.NAME=TERM`` is read before the task exists: a replay of a deploy.yaml naming a
    term its own way runs, and without the flag is refused naming the term, the file and the flag."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("pxr")
    from transfer.cli import main
    from transfer.orders import resolve_ordering
    from transfer.task import resolve_asset

    asset = resolve_asset(load_task("presets/tasks/quadruped_flat_velocity.yaml").asset)
    names = list(resolve_ordering(asset, "physx").joints)
    cfg = export_deploy_cfg(tmp_path / "run", names, names)
    data = yaml.safe_load(cfg.read_text())
    data["observations"] = {("gyro" if k == "base_ang_vel" else k): v for k, v in data["observations"].items()}
    cfg.write_text(yaml.dump(data, default_flow_style=None, sort_keys=False))
    policy = tmp_path / "policy.pt"
    torch.jit.script(torch.nn.Sequential(torch.nn.Linear(45, 12))).save(str(policy))
    args = [
        "replay",
        str(policy),
        "--config",
        str(cfg),
        "--source",
        "physx",
        "--asset",
        str(asset),
        "--target",
        "physx",
        "--num-envs",
        "1",
        "--seconds",
        "1.5",
        "--json",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{cfg}: observations.gyro: unknown observation term 'gyro'" in err
    assert "--set observation_aliases.gyro=TERM" in err and err.count("\n") == 1
    assert main([*args, "--set", "observation_aliases.gyro=base_ang_vel"]) == 0
    result = __import__("json").loads(capsys.readouterr().out)
    assert result["target"] == "physx" and result["survival_seconds"] > 0


def test_inspect_shows_mujocos_order_of_an_mjcf_robot(capsys):
    """Issue 42: an MJCF or URDF robot's ``mujoco`` column, read from the file (the converted USD does not keep it)."""
    pytest.importorskip("mujoco")
    pytest.importorskip("pxr")
    from transfer.cli import main
    from transfer.robot.assets import locate_asset

    assert main(["inspect", "transfer:quadruped.xml", "--json"]) == 0
    (art,) = __import__("json").loads(capsys.readouterr().out)["articulations"]
    path = locate_asset("transfer:quadruped.xml")
    assert art["mujoco"] == {"joints": list(mjcf_joint_names(path)), "bodies": list(mjcf_body_names(path))}
    assert art["mujoco"]["joints"] != art["physx"]["joints"]  # a column of its own, not a copy of another
    assert main(["inspect", "transfer:quadruped.xml"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("#"))
    assert header.split()[1:] == ["physx", "mjwarp", "robot_schema", "mujoco"]


@pytest.mark.engines
def test_inspect_truth_asks_mujoco_for_an_mjcf_robot(shared, capsys):
    pytest.importorskip("mujoco")
    from transfer.cli import main

    robot = shared / "community/unitree_rl_gym/resources/robots/h1_2/h1_2_12dof.xml"
    assert main(["inspect", str(robot), "--truth", "--json"]) == 0
    (art,) = __import__("json").loads(capsys.readouterr().out)["articulations"]
    assert art["truth"]["match"] == {"physx": True, "mjwarp": True, "mujoco": True}
    assert art["truth"]["mujoco"]["joints"] == list(mjcf_joint_names(robot)) == art["mujoco"]["joints"]
