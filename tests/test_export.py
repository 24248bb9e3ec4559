"""``transfer export --to unitree`` (issue 45): the deploy.yaml Unitree's C++ deploy reads and the one-input ONNX.

- a G1 policy exported with the task of unitree_rl_mjlab's shipped deploy.yaml writes that file back field by field,
  and transfer's own reader gives the same task;
- the exported ONNX gives the source policy's actions within 1e-5 (onnxruntime);
- what export writes, ``transfer replay --config OUT/params/deploy.yaml`` replays;
- ``joint_ids_map`` for any policy order maps each gain onto its motor and reads back by name (hypothesis);
- bad inputs: one line each, nothing written.
"""

from __future__ import annotations

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
    assert list(written) == ["joint_ids_map", "step_dt", "stiffness", "damping", "default_joint_pos", "commands",
                             "actions", "observations"]  # fmt: skip
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
    from transfer.assets.mjcf import mjcf_joint_names

    deploy, xml, _, out = g1_export
    names = tuple(mjcf_joint_names(xml))
    assert names == UNITREE_MOTORS["g1"]
    shipped = read_deploy_config(deploy, yaml.safe_load(deploy.read_text())).task(names)
    path = out / "params/deploy.yaml"
    written = read_deploy_config(path, yaml.safe_load(path.read_text())).task(names)
    for field in ("observation", "action", "joint_names", "default_joint_pos", "stiffness", "damping", "sim_dt",
                  "decimation", "command", "engines"):  # fmt: skip
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
        ],  # fmt: skip
        "no sensor": export_quadruped(out, "--motor-order", str(MOTORS)),
    }[case]
    if case == "existing out":
        out.mkdir()
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and match in err[0], err
    assert not out.exists() or not any(out.iterdir())
