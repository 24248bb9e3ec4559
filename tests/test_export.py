"""``transfer export --to unitree`` (issue 45): the deploy.yaml Unitree's C++ deploy reads and the one-input ONNX.

- a G1 policy exported with the task of unitree_rl_mjlab's shipped deploy.yaml writes that file back field by field,
  and transfer's own reader gives the same task;
- the exported ONNX gives the source policy's actions within 1e-5 (onnxruntime);
- what export writes, ``transfer replay --config OUT/params/deploy.yaml`` replays;
- ``joint_ids_map`` for any policy order maps each gain onto its motor and reads back by name (hypothesis);
- bad inputs: one line each, nothing written.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from transfer.cli import main  # noqa: E402
from transfer.runs.export import UNITREE_MOTORS, dump_deploy, unitree_deploy  # noqa: E402
from transfer.task.deploy import read_deploy_config  # noqa: E402
from transfer.task.model import ActionTerm, ObsTerm, Task  # noqa: E402

QUADRUPED = Path(__file__).resolve().parent.parent / "checkpoints/quadruped_flat_physx/exported/policy.pt"
MOTORS = Path(__file__).resolve().parent.parent / "presets/robots/quadruped_motors.txt"
DANCE = "community/unitree_rl_mjlab/deploy/robots/g1/config/policy/mimic/dance1_subject2/params/deploy.yaml"
G1_XML = "community/unitree_rl_mjlab/mjlab/asset_zoo/robots/unitree_g1/xmls/g1.xml"


def rsl_rl_checkpoint(path: Path, obs: int, act: int, *, recurrent: bool = False) -> Path:
    """An rsl-rl-lib 5 training checkpoint: an MLP actor with its observation normalizer (and an rnn when asked)."""
    g = torch.Generator().manual_seed(0)
    state = {
        "mlp.0.weight": torch.randn(64, obs, generator=g) * 0.2,
        "mlp.0.bias": torch.randn(64, generator=g) * 0.1,
        "mlp.2.weight": torch.randn(act, 64, generator=g) * 0.2,
        "mlp.2.bias": torch.randn(act, generator=g) * 0.1,
        "obs_normalizer._mean": torch.randn(1, obs, generator=g),
        "obs_normalizer._std": torch.rand(1, obs, generator=g) + 0.5,
        "distribution.std_param": torch.ones(act),
    }
    if recurrent:
        state["rnn.rnn.weight_ih_l0"] = torch.zeros(4 * 8, obs)
    torch.save({"actor_state_dict": state, "iter": 1}, path)
    return path


def export_quadruped(out: Path, *extra: str) -> list[str]:
    return ["export", str(QUADRUPED), "--to", "unitree", "-o", str(out), *extra]


# ---------------------------------------------------------------------------------------------------- G1, shared


@pytest.fixture(scope="module")
def g1_export(shared, tmp_path_factory):
    pytest.importorskip("mujoco")
    deploy, xml = shared / DANCE, shared / G1_XML
    if not deploy.is_file() or not xml.is_file():
        pytest.skip("unitree_rl_mjlab's G1 deploy.yaml or MJCF not in shared/")
    folder = tmp_path_factory.mktemp("g1")
    ckpt = rsl_rl_checkpoint(folder / "model_1.pt", 58 + 6 + 3 + 3 * 29, 29)
    out = folder / "out"
    args = ["--config", str(deploy), "--source", "mujoco", "--asset", str(xml)]
    assert main(["export", str(ckpt), "--to", "unitree", "-o", str(out), *args]) == 0
    return deploy, xml, ckpt, out


def test_a_g1_export_writes_the_shipped_deploy_yaml_field_by_field(g1_export):
    deploy, _, _, out = g1_export
    shipped = yaml.safe_load(deploy.read_text())
    written = yaml.safe_load((out / "params/deploy.yaml").read_text())
    assert list(written) == [
        "joint_ids_map",
        "step_dt",
        "stiffness",
        "damping",
        "default_joint_pos",
        "commands",
        "actions",
        "observations",
    ]
    for key in ("joint_ids_map", "step_dt", "stiffness", "damping", "default_joint_pos", "commands"):
        assert written[key] == shipped[key], key
    action, shipped_action = written["actions"]["JointPositionAction"], shipped["actions"]["JointPositionAction"]
    for key in ("scale", "offset", "clip", "joint_ids", "joint_names"):
        assert action[key] == shipped_action[key], key
    assert list(written["observations"]) == list(shipped["observations"])
    for name, term in shipped["observations"].items():
        for key in ("params", "clip", "scale", "history_length"):
            assert written["observations"][name][key] == term[key], (name, key)
    assert written["joint_ids_map"] == list(range(29))  # mjlab's g1.xml is the SDK's order (UNITREE_MOTORS["g1"])


def test_the_written_deploy_yaml_reads_back_as_the_same_task(g1_export):
    from transfer.robot.assets.mjcf import mjcf_joint_names

    deploy, xml, _, out = g1_export
    names = tuple(mjcf_joint_names(xml))
    assert names == UNITREE_MOTORS["g1"]
    shipped = read_deploy_config(deploy, yaml.safe_load(deploy.read_text())).task(names)
    path = out / "params/deploy.yaml"
    written = read_deploy_config(path, yaml.safe_load(path.read_text())).task(names)
    for field in (
        "observation",
        "action",
        "joint_names",
        "default_joint_pos",
        "stiffness",
        "damping",
        "sim_dt",
        "decimation",
        "command",
        "engines",
    ):
        assert getattr(written, field) == getattr(shipped, field), field


def test_the_exported_onnx_gives_the_policys_actions(g1_export):
    from transfer.formats import load_policy
    from transfer.formats.onnx import onnxruntime

    _, _, ckpt, out = g1_export
    session = onnxruntime().InferenceSession(str(out / "exported/policy.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs"]
    policy = load_policy(ckpt)
    x = (np.random.default_rng(1).standard_normal((64, policy.input_size)) * 3).astype(np.float32)
    got = np.concatenate([session.run(None, {"obs": row[None]})[0] for row in x])
    np.testing.assert_allclose(got, policy(x), atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------------------------------- round trip


def test_what_export_writes_replays_with_its_deploy_yaml(tmp_path, capsys):
    pytest.importorskip("newton")
    out = tmp_path / "out"
    assert main(export_quadruped(out, "--motor-order", str(MOTORS), "--allow", "base_lin_vel")) == 0
    assert (out / "exported/policy.onnx").is_file() and (out / "params/deploy.yaml").is_file()
    capsys.readouterr()
    args = ["replay", str(out / "exported/policy.onnx"), "--config", str(out / "params/deploy.yaml")]
    assert main([*args, "--target", "newton", "--seconds", "1"]) == 0
    assert main(["info", str(out / "exported/policy.onnx")]) == 0
    assert "joint order" in capsys.readouterr().out


def test_the_export_replays_the_source_checkpoints_actions_step_for_step(tmp_path):
    """Round trip: the exported ONNX with its deploy.yaml, replayed on MuJoCo, acts as the source checkpoint does on
    the same robot, step for step (the deploy.yaml's 3 significant digits leave the quadruped's gains as they are;
    what a deploy.yaml does not carry, the robot's own physics and the integrator Isaac Lab trains with, is set alike
    on both runs)."""
    pytest.importorskip("mujoco")
    from transfer.runs.replay import replay

    out = tmp_path / "out"
    assert main(export_quadruped(out, "--motor-order", str(MOTORS), "--allow", "base_lin_vel")) == 0
    common = dict(asset="transfer:quadruped.xml", num_envs=1, seconds=1.0, progress=False)
    source = replay(QUADRUPED, "mujoco", settings={"mujoco": {"integrator": "implicitfast"}}, **common)
    # what a deploy.yaml does not say (the robot knows it): armature, effort limits, the start height
    physical = {"armature": {".*": 0.01}, "effort_limit": {".*": 40.0}, "spawn_height": 0.56}
    exported = replay(
        out / "exported/policy.onnx", "mujoco", config=out / "params/deploy.yaml", settings=physical, **common
    )
    a, b = source.recording.arrays["action"], exported.recording.arrays["action"]
    assert source.recording.joint_names == exported.recording.joint_names and a.shape == b.shape == (50, 1, 12)
    np.testing.assert_allclose(b, a, atol=1e-4)


# ---------------------------------------------------------------------------------------------------- joint_ids_map


@settings(max_examples=30, deadline=None)
@given(st.permutations(UNITREE_MOTORS["go2"]), st.lists(st.floats(1.0, 99.0), min_size=12, max_size=12))
def test_joint_ids_map_puts_each_gain_on_its_motor_for_any_policy_order(tmp_path_factory, order, kp):
    names = tuple(order)
    kp = [float(f"{k:.3g}") for k in kp]
    task = Task(
        name="t",
        observation=(ObsTerm("base_ang_vel"), ObsTerm("joint_pos_rel"), ObsTerm("last_action")),
        action=ActionTerm(scale=0.25),
        joint_names=names,
        default_joint_pos=dict.fromkeys(names, 0.1),
        stiffness=dict(zip(names, kp, strict=True)),
        damping=dict.fromkeys(names, 0.5),
        sim_dt=0.005,
        decimation=4,
    )
    motors = UNITREE_MOTORS["go2"]
    cfg, _ = unitree_deploy(task, names, motors)
    assert [motors[i] for i in cfg["joint_ids_map"]] == list(names)
    assert cfg["stiffness"] == [dict(zip(names, kp, strict=True))[m] for m in motors]
    path = tmp_path_factory.mktemp("ids") / "params/deploy.yaml"
    back = read_deploy_config(path, yaml.safe_load(dump_deploy(cfg))).task(names)
    assert dict(back.stiffness) == dict(task.stiffness) and dict(back.damping) == dict(task.damping)


# ---------------------------------------------------------------------------------------------------- refusals


def _bad_motor_file(tmp_path: Path) -> Path:
    path = tmp_path / "motors.txt"
    path.write_text("\n".join(MOTORS.read_text().splitlines()[1:-1]))  # no LH_KFE
    return path


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("unknown robot", "no built-in Unitree motor order"),
        ("motor missing", "no motor for the policy's joint LH_KFE"),
        ("existing out", "exists; pass --force"),
        ("recurrent", "recurrent"),
        ("no sensor", "base_lin_vel: the robot has no sensor"),
    ],
)
def test_bad_inputs_are_refused_in_one_line_and_nothing_is_written(tmp_path, capsys, case, match):
    out = tmp_path / "out"
    args = {
        "unknown robot": export_quadruped(out, "--allow", "base_lin_vel"),
        "motor missing": export_quadruped(
            out, "--motor-order", str(_bad_motor_file(tmp_path)), "--allow", "base_lin_vel"
        ),
        "existing out": export_quadruped(out, "--motor-order", str(MOTORS), "--allow", "base_lin_vel"),
        "recurrent": [
            "export",
            str(rsl_rl_checkpoint(tmp_path / "model_1.pt", 48, 12, recurrent=True)),
            "--to",
            "unitree",
            "-o",
            str(out),
        ],
        "no sensor": export_quadruped(out, "--motor-order", str(MOTORS)),
    }[case]
    if case == "existing out":
        out.mkdir()
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and match in err[0], err
    assert not out.exists() or not any(out.iterdir())


# ---------------------------------------------------------------------------------------------------- Isaac Lab run

GO2_SDK = UNITREE_MOTORS["go2"]  # FR, FL, RR, RL: Unitree's SDK order
GO2_PHYSX = tuple(f"{leg}_{j}_joint" for j in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR"))
"""The Go2 articulation's joints as PhysX lists them (breadth first): Isaac Lab's ``asset.data.joint_names``."""


def go2_unitree_env(usd: Path) -> dict:
    """``class_to_dict`` of a unitree_rl_lab Go2 velocity env cfg (Isaac Lab 2.x, PhysX): ``joint_sdk_names`` on the
    robot, two actuator groups with regex gains, the init pose by regex, a level velocity command with limit ranges,
    ``JointPositionAction`` with a clip, and observation terms with scales, clips and histories."""
    from tests.test_isaaclab_runs import isaaclab_env

    env = isaaclab_env("physx2")
    robot = env["scene"]["robot"]
    robot["spawn"]["usd_path"] = str(usd)
    robot["init_state"]["joint_pos"] = {
        ".*R_hip_joint": -0.1,
        ".*L_hip_joint": 0.1,
        "F[L,R]_thigh_joint": 0.8,
        "R[L,R]_thigh_joint": 1.0,
        ".*_calf_joint": -1.5,
    }
    dc = {
        "class_type": "isaaclab.actuators.actuator_pd:DCMotor",
        "effort_limit": 23.5,
        "velocity_limit": 30.0,
        "effort_limit_sim": None,
        "velocity_limit_sim": None,
        "armature": None,
        "friction": 0.01,
        "dynamic_friction": None,
        "viscous_friction": None,
        "saturation_effort": 23.5,
    }
    robot["actuators"] = {
        "hips": {**dc, "joint_names_expr": [".*_hip_joint"], "stiffness": 23.4567, "damping": 0.1015},
        "legs": {
            **dc,
            "joint_names_expr": [".*_thigh_joint", ".*_calf_joint"],
            "stiffness": {".*_thigh_joint": 25.0, ".*_calf_joint": 31.25},
            "damping": {"F.*": 0.5, "R.*": 0.75},
        },
    }
    robot["joint_sdk_names"] = list(GO2_SDK)  # unitree_rl_lab's UnitreeArticulationCfg field
    obs = lambda func, **extra: {  # noqa: E731
        "func": f"isaaclab.envs.mdp.observations:{func}",
        "params": {},
        "modifiers": None,
        "noise": None,
        "clip": (-100.0, 100.0),
        "scale": None,
        "history_length": 0,
        "flatten_history_dim": True,
        **extra,
    }
    policy = {k: v for k, v in env["observations"]["policy"].items() if not isinstance(v, dict)}
    policy.update(
        base_ang_vel=obs("base_ang_vel", scale=0.2, history_length=5),
        projected_gravity=obs("projected_gravity", history_length=5),
        velocity_commands=obs(
            "generated_commands", params={"command_name": "base_velocity"}, scale=(2.0, 2.0, 0.25), history_length=5
        ),
        joint_pos_rel=obs("joint_pos_rel"),
        joint_vel_rel=obs("joint_vel_rel", scale=0.05, clip=None),
        last_action=obs("last_action"),
    )
    env["observations"]["policy"] = policy
    env["actions"] = {
        "JointPositionAction": {
            "class_type": "isaaclab.envs.mdp.actions.joint_actions:JointPositionAction",
            "asset_name": "robot",
            "debug_vis": False,
            "clip": {".*": (-100.0, 100.0)},
            "joint_names": [".*"],
            "scale": 0.25,
            "offset": 0.0,
            "preserve_order": False,
            "use_default_offset": True,
        }
    }
    ranges = lambda x, y, z: {"lin_vel_x": x, "lin_vel_y": y, "ang_vel_z": z, "heading": None}  # noqa: E731
    env["commands"]["base_velocity"] = {
        "class_type": "unitree_rl_lab.tasks.locomotion.mdp.commands.velocity_command:UniformLevelVelocityCommand",
        "resampling_time_range": (10.0, 10.0),
        "debug_vis": True,
        "asset_name": "robot",
        "heading_command": False,
        "heading_control_stiffness": 0.5,
        "rel_standing_envs": 0.1,
        "rel_heading_envs": 1.0,
        "ranges": ranges((-0.1, 0.1), (-0.1, 0.1), (-1.0, 1.0)),
        "limit_ranges": ranges((-1.0, 1.0), (-0.4, 0.4), (-1.0, 1.0)),
    }
    return env


def _matching(keys, strings, preserve_order=False) -> list[int]:
    """isaaclab.utils.string.resolve_matching_names: indices into ``strings`` each full-matched by a key."""
    hits = [(k, i) for i, s in enumerate(strings) for k, key in enumerate(keys) if re.fullmatch(key, s)]
    return [i for _, i in (sorted(hits, key=lambda h: h[0]) if preserve_order else hits)]


def _matching_values(data, strings) -> dict[int, float]:
    """isaaclab.utils.string.resolve_matching_names_values: ``{index into strings: value}``."""
    out = {}
    for i, s in enumerate(strings):
        for key, value in data.items():
            if re.fullmatch(key, s):
                assert i not in out
                out[i] = value
    return out


def _f32(values) -> list:
    """What ``tensor.tolist()`` gives for values Isaac Lab holds in float32 tensors."""
    return np.asarray(values, dtype=np.float32).tolist()


def _format_value(x):
    """unitree_rl_lab's ``format_value``."""
    if isinstance(x, float):
        return float(f"{x:.3g}")
    if isinstance(x, list):
        return [_format_value(i) for i in x]
    if isinstance(x, dict):
        return {k: _format_value(v) for k, v in x.items()}
    return x


_OBS_DIMS = {"base_ang_vel": 3, "projected_gravity": 3, "generated_commands": 3}


def unitree_exporter(env: dict, joint_names: tuple[str, ...]) -> str:
    """unitree_rl_lab's ``export_deploy_cfg(env, log_dir)`` re-done on the env cfg (``class_to_dict`` form) of an
    articulation whose joints, in Isaac Lab's order, are ``joint_names``: the deploy.yaml text it writes."""
    robot, n = env["scene"]["robot"], len(joint_names)
    sdk = robot["joint_sdk_names"]
    ids = _matching(joint_names, sdk, preserve_order=True)
    gains = {"stiffness": np.zeros(n, np.float32), "damping": np.zeros(n, np.float32)}  # default_joint_stiffness
    for act in robot["actuators"].values():
        joints = _matching(act["joint_names_expr"], joint_names)
        for key, into in gains.items():
            value = act[key]
            per = _matching_values(value, [joint_names[j] for j in joints]) if isinstance(value, dict) else None
            for k, j in enumerate(joints):
                into[j] = value if per is None else per[k]
    default = np.zeros(n, np.float32)
    for j, value in _matching_values(robot["init_state"]["joint_pos"], joint_names).items():
        default[j] = value
    cfg = {"joint_ids_map": ids, "step_dt": env["sim"]["dt"] * env["decimation"]}
    for key, values in gains.items():
        by_motor = np.zeros(len(sdk))
        by_motor[ids] = values.tolist()
        cfg[key] = by_motor.tolist()
    cfg["default_joint_pos"] = default.tolist()
    cfg["commands"] = {}
    if "base_velocity" in env["commands"]:
        command = env["commands"]["base_velocity"]
        ranges = dict(command["limit_ranges"] if "limit_ranges" in command else command["ranges"])
        for item in ("lin_vel_x", "lin_vel_y", "ang_vel_z"):
            ranges[item] = list(ranges[item])
        cfg["commands"]["base_velocity"] = {"ranges": ranges}
    cfg["actions"] = {}
    for name, term in env["actions"].items():
        joints = _matching(term["joint_names"], joint_names, term["preserve_order"])
        dim, term = len(joints), dict(term)
        if isinstance(term["scale"], float):
            term["scale"] = [term["scale"]] * dim
        else:
            per = _matching_values(term["scale"], [joint_names[j] for j in joints])
            term["scale"] = _f32([per.get(k, 1.0) for k in range(dim)])
        if term["clip"] is not None:
            per = _matching_values(term["clip"], [joint_names[j] for j in joints])
            term["clip"] = _f32([list(per.get(k, (-np.inf, np.inf))) for k in range(dim)])
        if name in ("JointPositionAction", "JointVelocityAction"):
            term["offset"] = _f32(default[joints]) if term["use_default_offset"] else [0.0] * dim
        for key in ("class_type", "asset_name", "debug_vis", "preserve_order", "use_default_offset"):
            del term[key]
        term["joint_ids"] = None if dim == n and not env["actions"][name]["preserve_order"] else joints
        cfg["actions"][name] = term
    cfg["observations"] = {}
    group = env["observations"]["policy"]
    for name, term in group.items():
        if not isinstance(term, dict):
            continue
        func = term["func"].rpartition(":")[2]
        size = _OBS_DIMS.get(func, n)
        term = dict(term)
        if group["history_length"] is not None:
            term["history_length"] = group["history_length"]
        scale = term["scale"]
        term["scale"] = [1.0] * size if scale is None else _f32(scale if isinstance(scale, tuple) else [scale] * size)
        if term["clip"] is not None:
            term["clip"] = list(term["clip"])
        term["history_length"] = term["history_length"] or 1
        for key in ("func", "modifiers", "noise", "flatten_history_dim"):
            del term[key]
        cfg["observations"][name] = term
    return yaml.dump(_format_value(cfg), default_flow_style=None, sort_keys=False)


@pytest.fixture(scope="module")
def go2_run(shared, tmp_path_factory):
    """A unitree_rl_lab Go2 run folder (env.yaml, agent.yaml, exported/policy.pt) and its export."""
    from tests.test_isaaclab_runs import isaaclab_agent, write_run

    usd = shared / "assets/unitree_go2/usd/go2_flat.usda"
    if not usd.is_file():
        pytest.skip(f"{usd} not in shared/")
    folder = tmp_path_factory.mktemp("go2")
    env = go2_unitree_env(usd)
    obs = 3 * (3 * 5) + 3 * 12
    policy = torch.jit.script(torch.nn.Linear(obs, 12))
    policy.save(str(folder / "policy.pt"))
    run = write_run(
        folder / "logs/rsl_rl/unitree_go2_velocity/2026-01-01_00-00-00",
        "physx2",
        exported=folder / "policy.pt",
        env=env,
        agent=isaaclab_agent("unitree_go2_velocity"),
    )
    out = folder / "out"
    assert main(["export", str(run), "--to", "unitree", "-o", str(out)]) == 0
    return env, run, out


def test_an_isaac_lab_run_exports_the_deploy_yaml_unitrees_exporter_writes_for_it(go2_run):
    env, _, out = go2_run
    text = (out / "params/deploy.yaml").read_text()
    written, expected = yaml.safe_load(text), yaml.safe_load(unitree_exporter(env, GO2_PHYSX))
    assert list(written) == list(expected)
    for key in ("joint_ids_map", "step_dt", "stiffness", "damping", "default_joint_pos", "commands", "actions"):
        assert written[key] == expected[key], key
    assert list(written["observations"]) == list(expected["observations"])
    for name, term in expected["observations"].items():
        assert written["observations"][name] == term, name
    assert text == unitree_exporter(env, GO2_PHYSX)  # and the same text, line by line
    # the articulation's order is not the SDK's: policy joint i (FL_hip first) drives SDK motor 3 (FR, FL, ...)
    assert written["joint_ids_map"][:4] == [3, 0, 9, 6]
    assert written["damping"][:3] == [0.101, 0.5, 0.5]  # float32 0.1015 rounds down, as the exporter's tensor does


def test_an_isaac_lab_runs_onnx_gives_its_exported_policys_actions(go2_run):
    from transfer.formats import load_policy
    from transfer.formats.onnx import onnxruntime

    _, run, out = go2_run
    session = onnxruntime().InferenceSession(str(out / "exported/policy.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs"]
    policy = load_policy(run / "exported/policy.pt")
    x = (np.random.default_rng(2).standard_normal((64, policy.input_size)) * 3).astype(np.float32)
    got = np.concatenate([session.run(None, {"obs": row[None]})[0] for row in x])
    np.testing.assert_allclose(got, policy(x), atol=1e-5, rtol=0)


def test_a_runs_partial_clip_per_joint_scale_kept_order_and_heading_are_written_as_the_exporter_does(go2_run, tmp_path):
    from tests.test_isaaclab_runs import isaaclab_agent, write_run

    env, run, _ = go2_run
    env = copy.deepcopy(env)
    env["commands"]["base_velocity"]["limit_ranges"]["heading"] = (-3.141592653589793, 3.141592653589793)
    action = env["actions"]["JointPositionAction"]
    action["clip"] = {".*_calf_joint": (-2.7182, 0.5)}  # the other joints: (-inf, inf)
    action["scale"] = {".*_hip_joint": 0.125, ".*_thigh_joint": 0.25, ".*_calf_joint": 0.1015}
    action["preserve_order"] = True  # joint_ids listed, not null
    env["observations"]["policy"]["history_length"] = 3  # the group's history overrides every term's
    copied = write_run(tmp_path / "run", "physx2", exported=run / "exported/policy.pt", env=env, agent=isaaclab_agent())
    out = tmp_path / "out"
    # the group history changes the observation size (3 steps of every term): a policy that reads as many
    policy = torch.jit.script(torch.nn.Linear(3 * (3 * 3 + 3 * 12), 12))
    policy.save(str(copied / "exported/policy.pt"))
    assert main(["export", str(copied), "--to", "unitree", "-o", str(out)]) == 0
    written = yaml.safe_load((out / "params/deploy.yaml").read_text())
    expected = yaml.unsafe_load(unitree_exporter(env, GO2_PHYSX))  # heading: the exporter dumps a !!python/tuple
    ranges = expected["commands"]["base_velocity"]["ranges"]
    ranges["heading"] = list(ranges["heading"])
    assert written == expected
    assert written["actions"]["JointPositionAction"]["clip"][0] == [-float("inf"), float("inf")]
    assert written["actions"]["JointPositionAction"]["joint_ids"] == list(range(12))


def test_the_built_in_motor_tables_name_the_robot_a_policy_drives():
    """Unitree's SDK orders (unitree_rl_lab's joint_sdk_names): a policy's joints pick the table holding them all;
    the H1's motor 9 drives no joint."""
    from transfer.runs.export import UNITREE_MOTORS, _motors

    h1 = [n for n in UNITREE_MOTORS["h1"] if n]
    label, motors = _motors(h1[::-1], None, None)
    assert label == "h1" and motors.index("left_ankle_joint") == 10 and motors[9] == ""
    assert _motors(list(UNITREE_MOTORS["go2"]), None, None)[0] == "go2"
    assert _motors(list(UNITREE_MOTORS["g1"][:12]), None, None)[0] == "g1"  # a legs-only G1 policy
