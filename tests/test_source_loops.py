"""Observations step for step as each source's own loop computes them (issue 42).

Each reader turns another project's file into a task; the environment then builds the policy's observation. Here
each source's own computation is written again from its code, independently of ``transfer``: it reads MuJoCo's raw
arrays (``qpos``, ``qvel``) of the very state ``transfer``'s environment is in after each policy step, and the
file's own numbers (parsed here with PyYAML, not by ``transfer``). Every term must be equal from the first step.

- legged_gym / unitree_rl_gym ``deploy/deploy_mujoco/deploy_mujoco.py``: ``omega = qvel[3:6] * ang_vel_scale``,
  gravity from ``qpos[3:7]``, ``cmd * cmd_scale``, ``(qpos[7:] - default) * dof_pos_scale``, ``qvel[6:] *
  dof_vel_scale``, the last action, then ``sin, cos(2 pi (counter * dt % 0.8) / 0.8)`` with ``counter`` the physics
  steps taken: the first observation is read after one policy step's physics (t = 0.02 s), as legged_gym's
  ``episode_length_buf`` is advanced before its observation.
- Isaac Lab's ``ObservationManager`` (what Unitree's deploy.yaml, mjlab's ONNX metadata and an Isaac Lab run
  describe, and what unitree_rl_lab's C++ deploy re-implements): each term computed, clipped, scaled per entry, its
  last ``history_length`` values stacked oldest first (the first value after a reset fills the history), terms
  concatenated in order; the clock reads ``episode_length_buf * step_dt``, 0 at the reset.
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

import numpy as np
import pytest
import yaml

mujoco = pytest.importorskip("mujoco")
torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
QUADRUPED = ROOT / "transfer/data/quadruped.xml"
STEPS = 12


def gravity_orientation(quat_wxyz: np.ndarray) -> np.ndarray:
    """deploy_mujoco.py's ``get_gravity_orientation``."""
    qw, qx, qy, qz = quat_wxyz
    return np.array([2 * (-qz * qx + qw * qy), -2 * (qz * qy + qw * qx), 1 - 2 * (qw * qw + qz * qz)])


def _policy(tmp_path: Path, inputs: int, outputs: int) -> Path:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(inputs, outputs), torch.nn.Tanh())
    path = tmp_path / "policy.pt"
    torch.jit.script(net).save(str(path))
    return path


def _run(policy_file: Path, config: Path, asset: Path, source=None):
    """``transfer``'s environment on MuJoCo with the checkpoint's inputs: yields ``(step, observation, MjModel, MjData,
    the action fed before it, the command)`` after the start (the action: zeros) and after each of :data:`STEPS`
    policy steps."""
    from transfer.env import PolicyEnv
    from transfer.runs.inputs import resolve_inputs

    inputs = resolve_inputs(policy_file, source=source, config=config, asset=asset)
    env = PolicyEnv(inputs.task, inputs.robot, "mujoco", inputs.source, num_envs=1)
    try:
        obs = env.reset()
        backend = env.art.backend
        fed = np.zeros((1, env.action_size), np.float32)
        for step in range(STEPS + 1):
            yield step, obs[0].copy(), backend.models[0], backend.datas[0], fed[0].copy(), env.command[0].copy()
            fed = np.asarray(inputs.policy(obs), np.float32)
            obs, _ = env.step(fed)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------------- legged_gym


def legged_gym_config(folder: Path, xml: Path, names: list[str]) -> Path:
    """A ``deploy/deploy_mujoco/configs/*.yaml`` for the robot ``xml`` (joints ``names``, MuJoCo's order), as
    unitree_rl_gym writes them for its humanoids: the gait clock's two entries counted in ``num_obs``."""
    n = len(names)
    text = f"""\
policy_path: "{{LEGGED_GYM_ROOT_DIR}}/deploy/pre_train/robot/motion.pt"
xml_path: "{xml}"
simulation_duration: 60.0
simulation_dt: 0.005
control_decimation: 4
kps: {[40.0] * n}
kds: {[1.0] * n}
default_angles: {[0.1 * ((i % 3) - 1) for i in range(n)]}
ang_vel_scale: 0.25
dof_pos_scale: 1.0
dof_vel_scale: 0.05
action_scale: 0.25
cmd_scale: [2.0, 2.0, 0.25]
num_actions: {n}
num_obs: {9 + 3 * n + 2}
cmd_init: [0.5, 0, 0.2]
"""
    path = folder / "robot.yaml"
    path.write_text(text)
    return path


def deploy_mujoco_observation(cfg: dict, m, d, action: np.ndarray, counter: int, names: list[str]) -> np.ndarray:
    """deploy_mujoco.py's observation of the state ``d`` after ``counter`` physics steps (its arrays read by the
    names of the policy's joints: the robot's MJCF order, which deploy_mujoco.py takes as ``qpos[7:]``)."""
    qadr = [m.joint(n).qposadr[0] for n in names]
    dadr = [m.joint(n).dofadr[0] for n in names]
    assert qadr == list(range(7, 7 + len(names)))  # the file's order is the policy's: qpos[7:], as the loop reads
    default = np.array(cfg["default_angles"], np.float32)
    qj = (d.qpos[7:] - default) * cfg["dof_pos_scale"]
    dqj = d.qvel[6:] * cfg["dof_vel_scale"]
    assert dadr == list(range(6, 6 + len(names)))
    period = 0.8
    phase = counter * cfg["simulation_dt"] % period / period
    return np.concatenate(
        [
            d.qvel[3:6] * cfg["ang_vel_scale"],
            gravity_orientation(d.qpos[3:7]),
            np.array(cfg["cmd_init"], np.float32) * np.array(cfg["cmd_scale"], np.float32),
            qj,
            dqj,
            action,
            [np.sin(2 * np.pi * phase), np.cos(2 * np.pi * phase)],
        ]
    ).astype(np.float32)


def _legged_gym_case(tmp_path: Path, xml: Path, config: Path | None = None, policy: Path | None = None):
    from transfer.robot.assets.mjcf import mjcf_joint_names

    names = list(mjcf_joint_names(xml))
    config = config or legged_gym_config(tmp_path, xml, names)
    cfg = yaml.safe_load(config.read_text())
    policy = policy or _policy(tmp_path, cfg["num_obs"], cfg["num_actions"])
    checked = 0
    for step, obs, m, d, fed, _ in _run(policy, config, xml):
        counter = (step + 1) * cfg["control_decimation"]  # the loop reads its k-th observation after k+1 steps' physics
        assert d.time == pytest.approx(counter * cfg["simulation_dt"])  # the same state: transfer starts one step in
        expected = deploy_mujoco_observation(cfg, m, d, fed, counter, names)
        np.testing.assert_allclose(obs, expected, atol=2e-5, err_msg=f"step {step}")
        checked += 1
    return checked


def test_legged_gym_deploy_mujoco_observation_term_for_term(tmp_path):
    assert _legged_gym_case(tmp_path, QUADRUPED) == STEPS + 1


@pytest.mark.engines
def test_legged_gym_h1_2_observation_term_for_term(shared, tmp_path):
    """The shared H1-2 LSTM walker with its own config and robot (``scene.xml`` includes its MJCF)."""
    root = shared / "community/unitree_rl_gym"
    config = root / "deploy/deploy_mujoco/configs/h1_2.yaml"
    text = config.read_text().replace("{LEGGED_GYM_ROOT_DIR}", str(root))
    (tmp_path / "h1_2.yaml").write_text(text)
    xml = root / "resources/robots/h1_2/scene.xml"
    policy = root / "deploy/pre_train/h1_2/motion.pt"
    assert _legged_gym_case(tmp_path, xml, tmp_path / "h1_2.yaml", policy) == STEPS + 1


# ---------------------------------------------------------------------------------------------------- Isaac Lab's


def _rotation(quat_wxyz: np.ndarray) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat_wxyz, np.float64))
    return out.reshape(3, 3)


def isaaclab_term(
    name: str,
    m,
    d,
    joints: list[str],
    default: np.ndarray,
    fed: np.ndarray,
    command: np.ndarray,
    root: str,
    link_velocity: bool = False,
) -> np.ndarray:
    """One term as Isaac Lab's ``isaaclab.envs.mdp.observations`` computes it from the articulation's data, here
    from MuJoCo's raw arrays of a free-floating robot (``qvel[0:3]``: the root frame's origin, world; ``qvel[3:6]``:
    angular, root frame). ``base_lin_vel`` is Isaac Lab's ``root_lin_vel_b`` (the root's centre of mass), or mjlab's
    ``root_link_lin_vel_b`` (its frame's origin) with ``link_velocity``."""
    rot = _rotation(d.qpos[3:7])
    omega_b = d.qvel[3:6]
    qadr = [m.joint(n).qposadr[0] for n in joints]
    dadr = [m.joint(n).dofadr[0] for n in joints]
    if name == "base_lin_vel":
        com_offset = rot @ m.body(root).ipos  # the COM from the frame's origin, world
        v = d.qvel[0:3] if link_velocity else d.qvel[0:3] + np.cross(rot @ omega_b, com_offset)
        return rot.T @ v
    return {
        "base_ang_vel": lambda: omega_b,
        "projected_gravity": lambda: rot.T @ np.array([0.0, 0.0, -1.0]),
        "velocity_commands": lambda: command,
        "joint_pos_rel": lambda: d.qpos[qadr] - default,
        "joint_vel_rel": lambda: d.qvel[dadr],
        "last_action": lambda: fed,
    }[name]()


class ObservationManager:
    """Isaac Lab's ``ObservationManager.compute_group`` for one concatenated group: per term, its value clipped, then
    scaled (one number or one per entry), then with ``history_length`` H > 0 pushed into a circular buffer whose
    first push after a reset fills all H slots, flattened oldest first; terms concatenated in order."""

    def __init__(self, terms: list[tuple[str, np.ndarray | float, tuple[float, float] | None, int]]):
        self.terms = terms
        self.history = {name: deque(maxlen=h) for name, _, _, h in terms if h > 0}

    def compute(self, values: dict[str, np.ndarray]) -> np.ndarray:
        out = []
        for name, scale, clip, h in self.terms:
            v = np.asarray(values[name], np.float64)
            if clip is not None:
                v = np.clip(v, *clip)
            v = v * np.asarray(scale, np.float64)
            if h:
                buffer = self.history[name]
                buffer.extend([v] * (h if not buffer else 1))
                v = np.concatenate(list(buffer))
            out.append(v)
        return np.concatenate(out).astype(np.float32)


def _isaaclab_case(
    policy: Path,
    config: Path | None,
    xml: Path,
    source,
    joints: list[str],
    default: np.ndarray,
    manager: ObservationManager,
    root: str,
    link_velocity: bool = False,
) -> int:
    checked = 0
    for step, obs, m, d, fed, command in _run(policy, config, xml, source):
        assert d.time == pytest.approx(step * 0.02)  # Isaac Lab and mjlab observe the reset state first
        values = {
            name: isaaclab_term(name, m, d, joints, default, fed, command, root, link_velocity)
            for name, *_ in manager.terms
        }
        np.testing.assert_allclose(obs, manager.compute(values), atol=2e-5, err_msg=f"step {step}")
        checked += 1
    return checked


def test_unitree_deploy_yaml_observation_term_for_term(tmp_path):
    """unitree_rl_lab's deploy.yaml (history 3, per-entry scales, a clip), the policy in PhysX's order (``--source
    physx``), on the quadruped's MJCF: Isaac Lab's manager over the file's own numbers."""
    from tests.test_deploy_configs import export_deploy_cfg
    from transfer.orders import resolve_ordering
    from transfer.task import resolve_asset

    names = list(resolve_ordering(resolve_asset("transfer:quadruped.xml"), "physx").joints)
    config = export_deploy_cfg(tmp_path / "run", names, names, history=3, clip=(-3.0, 3.0))
    cfg = yaml.safe_load(config.read_text())
    terms = [
        (k, np.asarray(v["scale"]), None if v["clip"] is None else tuple(v["clip"]), v["history_length"])
        for k, v in cfg["observations"].items()
    ]
    terms = [(k, s, c, h if h > 1 else 0) for k, s, c, h in terms]  # the exporter writes 1 for none
    policy = _policy(tmp_path, 3 * (9 + 36), 12)
    default = np.asarray(cfg["default_joint_pos"])
    checked = _isaaclab_case(policy, config, QUADRUPED, "physx", names, default, ObservationManager(terms), "base")
    assert checked == STEPS + 1


@pytest.mark.engines
def test_mjlab_observation_term_for_term(tmp_path):
    """An mjlab ONNX export (its metadata: the MuJoCo order, mjlab's term names and layout) on the quadruped's MJCF
    with its base's centre of mass moved off the frame's origin: mjlab's ``base_lin_vel`` is the root *link's*
    velocity (``root_link_lin_vel_b``), Isaac Lab's the centre of mass's."""
    pytest.importorskip("onnxruntime")
    from tests.test_checkpoint import onnx_mlp
    from tests.test_mjlab import MJLAB_LAYOUT, attach, mjlab_metadata
    from transfer.robot.assets.mjcf import mjcf_joint_names

    xml = tmp_path / "robot" / "quadruped.xml"
    xml.parent.mkdir()
    text = QUADRUPED.read_text()
    xml.write_text(text.replace('<inertial pos="0 0 0" mass="6"', '<inertial pos="0.08 0.02 -0.05" mass="6"', 1))
    names = list(mjcf_joint_names(xml))
    default = np.array([0.0, 0.6, -1.2] * 4)
    rng = np.random.default_rng(0)
    n_obs = 12 + 3 * 12
    layers = [(rng.normal(0, 0.3, (12, n_obs)).astype(np.float32), np.zeros(12, np.float32))]
    plain = onnx_mlp(tmp_path / "plain.onnx", layers)
    meta = mjlab_metadata(names, default, terms=MJLAB_LAYOUT, action_scale=0.25)
    policy = attach(plain, tmp_path / "policy.onnx", meta)
    mjlab_names = {
        "joint_pos": "joint_pos_rel",
        "joint_vel": "joint_vel_rel",
        "actions": "last_action",
        "command": "velocity_commands",
    }
    terms = [(mjlab_names.get(n, n), 1.0, None, 0) for n in MJLAB_LAYOUT]
    checked = _isaaclab_case(
        policy, None, xml, None, names, default, ObservationManager(terms), "base", link_velocity=True
    )
    assert checked == STEPS + 1


@pytest.mark.engines
@pytest.mark.parametrize("backend", ["physx", "newton", "mujoco"])
def test_every_engine_reports_the_roots_centre_of_mass_where_the_file_puts_it(tmp_path_factory, backend):
    """What turns the root's centre-of-mass velocity into its frame's (mjlab's ``base_lin_vel``): the MJCF's base
    ``<inertial pos>``, through the converted USD on PhysX and Newton."""
    pytest.importorskip({"physx": "ovphysx", "newton": "newton", "mujoco": "mujoco"}[backend])
    from transfer import open_articulation

    folder = tmp_path_factory.getbasetemp() / "offset_com"
    xml = folder / "quadruped.xml"
    if not xml.is_file():
        folder.mkdir(exist_ok=True)
        xml.write_text(
            QUADRUPED.read_text().replace(
                '<inertial pos="0 0 0" mass="6"', '<inertial pos="0.08 0.02 -0.05" mass="6"', 1
            )
        )
    art = open_articulation(xml, backend=backend, num_envs=2)
    try:
        np.testing.assert_allclose(art.root_com_offset(), [[0.08, 0.02, -0.05]] * 2, atol=1e-5)
    finally:
        art.close()


@pytest.mark.engines
def test_isaaclab_run_observation_term_for_term(tmp_path):
    """An Isaac Lab run folder (``params/env.yaml`` as Isaac Lab dumps it, the flat-velocity task: ``base_lin_vel``
    first, noise, scales none), its policy in PhysX's order, on the quadruped's MJCF with its base's centre of mass off
    the frame's origin: Isaac Lab's ``base_lin_vel`` is the centre of mass's (``root_lin_vel_b``)."""
    from tests.test_isaaclab_runs import isaaclab_env, write_run
    from transfer.orders import resolve_ordering

    xml = tmp_path / "robot" / "quadruped.xml"
    xml.parent.mkdir()
    xml.write_text(
        QUADRUPED.read_text().replace('<inertial pos="0 0 0" mass="6"', '<inertial pos="0.08 0.02 -0.05" mass="6"', 1)
    )
    env_cfg = isaaclab_env("physx")
    run = write_run(tmp_path / "logs/run", "physx", exported=_policy(tmp_path, 48, 12), env=env_cfg)
    names = list(resolve_ordering(xml, "physx").joints)
    init = env_cfg["scene"]["robot"]["init_state"]["joint_pos"]
    default = np.array([next(v for p, v in init.items() if re.fullmatch(p, n)) for n in names])
    policy_cfg = env_cfg["observations"]["policy"]
    terms = [
        (k, 1.0 if v["scale"] is None else np.asarray(v["scale"]), v["clip"], v["history_length"] or 0)
        for k, v in policy_cfg.items()
        if isinstance(v, dict)
    ]
    funcs = {k: v["func"].rpartition(":")[2] for k, v in policy_cfg.items() if isinstance(v, dict)}
    ours = {
        "generated_commands": "velocity_commands",
        "joint_pos_rel": "joint_pos_rel",
        "joint_vel_rel": "joint_vel_rel",
        "last_action": "last_action",
    }  # Isaac Lab's functions, by the keys of this task
    terms = [(ours.get(funcs[k], funcs[k]), s, c, h) for k, s, c, h in terms]
    checked = _isaaclab_case(run, None, xml, None, names, default, ObservationManager(terms), "base")
    assert checked == STEPS + 1
