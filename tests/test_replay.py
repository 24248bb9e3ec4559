"""``transfer replay`` on the real engines with the real ANYmal C checkpoints, both directions, both formats.

Direction A: the MuJoCo-Warp-trained TorchScript checkpoint on PhysX; direction B: the PhysX-trained ONNX
checkpoint on Newton (several worlds, MuJoCo-Warp). Each direction runs native (the training backend), reordered
(the checkpoint's order found by name on the target) and naive (fed the target's own order). Walking means a
forward velocity of at least 0.8x native with no falls; the naive control stays below 0.3x native or falls.
Measured values are in docs/replay.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from transfer.cli import main
from transfer.runs.replay import compare, replay

pytest.importorskip("ovphysx")
pytest.importorskip("newton")
pytest.importorskip("onnxruntime")
pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]

TASK = "presets/tasks/anymal_c_flat_velocity.yaml"


@pytest.fixture(scope="module")
def anymal(anymal_files):
    return anymal_files


@pytest.fixture(scope="module")
def to_physx(anymal):
    """Direction A: the mjwarp TorchScript checkpoint, native on Newton, reordered and naive on PhysX (4 envs)."""
    runs = compare(
        anymal["mjw_pt"], "physx", source="mjwarp", config=TASK, asset=anymal["asset"], num_envs=4, progress=False
    )
    return {r.label.split()[0]: r for r in runs}


@pytest.fixture(scope="module")
def to_newton(anymal):
    """Direction B: the physx ONNX checkpoint, native on PhysX, reordered on Newton (4 worlds) and naive on Newton."""
    common = dict(source="physx", config=TASK, asset=anymal["asset"], progress=False)
    return {
        "native": replay(anymal["physx_onnx"], "physx", num_envs=4, **common),
        "reordered": replay(anymal["physx_onnx"], "newton", num_envs=4, seconds=6.0, **common),
        "naive": replay(anymal["physx_onnx"], "newton", reorder=False, **common),
    }


def _walks(run, native):
    assert run.fall_fraction == 0.0 and run.nonfinite_envs == 0, run
    assert run.forward_velocity >= 0.8 * native.forward_velocity, (run, native)


def _fails(run, native):
    assert run.fall_fraction > 0.0 or run.forward_velocity < 0.3 * native.forward_velocity, (run, native)


@pytest.mark.parametrize("direction", ["to_physx", "to_newton"])
def test_native_walks(direction, request):
    native = request.getfixturevalue(direction)["native"]
    assert native.fall_fraction == 0.0 and native.forward_velocity > 0.7, native


@pytest.mark.parametrize("direction", ["to_physx", "to_newton"])
def test_reordered_walks_like_native(direction, request):
    runs = request.getfixturevalue(direction)
    _walks(runs["reordered"], runs["native"])
    assert runs["reordered"].reordered and runs["reordered"].order == runs["reordered"].source


@pytest.mark.parametrize("direction", ["to_physx", "to_newton"])
def test_naive_control_does_not_walk(direction, request):
    runs = request.getfixturevalue(direction)
    _fails(runs["naive"], runs["native"])
    assert not runs["naive"].reordered and "target's own" in runs["naive"].order


def test_report_fields(to_physx):
    run = to_physx["reordered"]
    report = run.to_dict()
    for key in (
        "target",
        "source",
        "reordered",
        "num_envs",
        "seconds",
        "command",
        "forward_velocity",
        "lateral_velocity",
        "yaw_rate",
        "fall_fraction",
        "survival_seconds",
        "env_steps_per_second",
    ):
        assert key in report, key
    assert report["num_envs"] == 4 and report["seconds"] == pytest.approx(10.0)
    assert report["command"] == [1.0, 0.0, 0.0] and report["target"] == "physx"
    assert abs(report["lateral_velocity"]) < 0.2 and report["env_steps_per_second"] > 0
    json.dumps(report)  # plain data
    # the trace behind the plot: one sample per policy step (50 Hz)
    assert len(run.trace["time"]) == 500 and math.isclose(run.trace["time"][-1], 10.0)


def test_newton_yaml_config_by_name(anymal):
    """Newton's policy YAML works as the config: values read by joint name, the listed order checked."""
    run = replay(
        anymal["mjw_pt"],
        "physx",
        source="mjwarp",
        config=anymal["yaml"],
        asset=anymal["asset"],
        seconds=3.0,
        backend_options={"spawn_offset": (0, 0, 0.7), "solver_position_iterations": 4, "solver_velocity_iterations": 0},
        progress=False,
    )
    assert run.fall_fraction == 0.0 and run.forward_velocity > 0.5, run


def test_cli_json_and_plot(anymal, tmp_path, capsys):
    png = tmp_path / "replay.png"
    args = [
        "replay",
        str(anymal["mjw_pt"]),
        "--target",
        "physx",
        "--source",
        "mjwarp",
        "--config",
        TASK,
        "--asset",
        str(anymal["asset"]),
        "--seconds",
        "3",
        "--json",
        "--plot",
        str(png),
    ]
    assert main(args) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)  # stdout holds exactly one JSON object: no engine chatter
    assert report["reordered"] is True and report["forward_velocity"] > 0.5
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- bad input: each a clear error naming what is wrong, and a non-zero exit ------------------------------------


def _cli_error(capsys, *args) -> str:
    assert main(["replay", *map(str, args)]) == 2
    return capsys.readouterr().err


def test_missing_and_corrupt_checkpoints(anymal, tmp_path, capsys):
    common = ["--target", "physx", "--source", "mjwarp", "--config", TASK, "--asset", anymal["asset"]]
    assert "not found: /no/such/policy.pt" in _cli_error(capsys, "/no/such/policy.pt", *common)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00\x01not a checkpoint" * 10)
    assert "junk.pt" in _cli_error(capsys, junk, *common)


def test_a_pickle_that_needs_code_is_refused(anymal, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    evil = tmp_path / "model_1.pt"
    torch.save({"actor": _Opaque()}, evil)
    err = _cli_error(
        capsys, evil, "--target", "physx", "--source", "mjwarp", "--config", TASK, "--asset", anymal["asset"]
    )
    assert "weights_only" in err and "model_1.pt" in err


class _Opaque:
    """A class instance: unpickling it would need this module's code."""


def test_observation_size_mismatch_names_both_sizes(anymal, tmp_path, capsys):
    short = tmp_path / "short.yaml"
    short.write_text(open(TASK).read().replace("  - last_action           # action-sized\n", ""))
    err = _cli_error(
        capsys,
        anymal["mjw_pt"],
        "--target",
        "physx",
        "--source",
        "mjwarp",
        "--config",
        short,
        "--asset",
        anymal["asset"],
        "--seconds",
        "1",
    )
    assert "reads 48 observations" in err and "builds 36" in err


def test_a_config_joint_the_asset_lacks(anymal, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(open(TASK).read().replace('".*_HAA": 0.0', '".*_HAA": 0.0\n  "LF_WRIST": 0.1'))
    err = _cli_error(
        capsys, anymal["mjw_pt"], "--target", "physx", "--source", "mjwarp", "--config", bad, "--asset", anymal["asset"]
    )
    assert "'LF_WRIST'" in err and "no joint of the asset" in err


def test_a_config_order_that_contradicts_the_asset(anymal, tmp_path, capsys):
    text = open(anymal["yaml"]).read()
    # swap two entries of the physx list: the YAML now claims an order the asset does not resolve to
    head, physx = text.split("physx_joint_names:", 1)
    physx = physx.replace('"LH_HAA"', '"@@"', 1).replace('"RF_HAA"', '"LH_HAA"', 1).replace('"@@"', '"RF_HAA"', 1)
    swapped = tmp_path / "anymal.yaml"
    swapped.write_text(head + "physx_joint_names:" + physx)
    err = _cli_error(
        capsys,
        anymal["physx_onnx"],
        "--target",
        "newton",
        "--source",
        "physx",
        "--config",
        swapped,
        "--asset",
        anymal["asset"],
    )
    assert "[1] listed 'RF_HAA', resolved 'LH_HAA'" in err


def test_missing_asset_and_missing_source(anymal, capsys):
    assert "--asset is needed" in _cli_error(
        capsys, anymal["mjw_pt"], "--target", "physx", "--source", "mjwarp", "--config", TASK
    )
    assert "not found" in _cli_error(
        capsys,
        anymal["mjw_pt"],
        "--target",
        "physx",
        "--source",
        "mjwarp",
        "--config",
        TASK,
        "--asset",
        "/no/robot.usda",
    )
    assert "--source is needed" in _cli_error(
        capsys, anymal["mjw_pt"], "--target", "physx", "--config", TASK, "--asset", anymal["asset"]
    )


def test_a_policy_that_outputs_nan_counts_as_fallen_without_engine_errors(anymal, tmp_path, capfd):
    """An env whose action is not finite is reported (and counted as fallen); the engine never sees the NaN."""
    torch = pytest.importorskip("torch")

    class HalfNan(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(48, 12)

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            out = self.layer(obs) * 0.0
            out[1:] = float("nan")  # every env but the first
            return out

    path = tmp_path / "half_nan.pt"
    torch.jit.save(torch.jit.script(HalfNan()), str(path))
    run = replay(
        path, "physx", source="physx", config=TASK, asset=anymal["asset"], num_envs=2, seconds=2.0, progress=False
    )
    assert run.nonfinite_envs == 1 and run.fall_fraction == 0.5, run
    err = capfd.readouterr().err
    assert "nan" not in err.lower() or "error" not in err.lower(), err[-2000:]


def test_quiet_by_default_verbose_on_request(anymal):
    """Warp's module-load lines and the engines' chatter stay off the terminal unless --verbose."""
    import subprocess
    import sys

    args = [
        sys.executable,
        "-m",
        "transfer.cli",
        "replay",
        str(anymal["mjw_pt"]),
        "--target",
        "physx",
        "--source",
        "mjwarp",
        "--config",
        TASK,
        "--asset",
        str(anymal["asset"]),
        "--seconds",
        "0.5",
        "--json",
    ]
    quiet = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    json.loads(quiet.stdout)
    assert "Module " not in quiet.stderr and "Warp " not in quiet.stderr and "[Warning]" not in quiet.stderr, (
        quiet.stderr
    )
    loud = subprocess.run([*args, "--verbose"], capture_output=True, text=True, timeout=300)
    assert loud.returncode == 0 and "Warp " in loud.stderr  # the same run, with what the engines said
    json.loads(loud.stdout)


def test_set_changes_settings_without_a_task_file_and_names_an_unknown_field(anymal_files, capsys):
    """Every --set is applied (repeatable), reported in --json's settings; an unknown field is one error line."""
    from transfer.cli import main

    a = anymal_files
    base = [
        "replay",
        str(a["mjw_pt"]),
        "--target",
        "physx",
        "--source",
        "mjwarp",
        "--config",
        str(a["yaml"]),
        "--asset",
        str(a["asset"]),
        "--seconds",
        "0.2",
    ]
    assert (
        main(
            [
                *base,
                "--set",
                "physx.solver_position_iterations=8",
                "--set",
                "ground.friction_combine=multiply",
                "--set",
                "self_collisions=true",
                "--json",
            ]
        )
        == 0
    )
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert settings["physx"] == {"solver_position_iterations": 8, "solver_velocity_iterations": 0}
    assert settings["ground"]["friction_combine"] == "multiply" and settings["self_collisions"] is True
    assert main([*base, "--set", "physx.iterations=8"]) == 2
    assert "physx" in capsys.readouterr().err
    assert main([*base, "--set", "nonsense=1"]) == 2
    assert "'nonsense' names no task field" in capsys.readouterr().err


def test_set_reads_an_exponent_as_the_number_it_means():
    """YAML 1.1 reads ``1e-3`` as text; on the command line it is the number."""
    from transfer.cli.replay import parse_settings

    assert parse_settings(["sim_dt=1e-3", "spawn_height=0.5", "trained_on=physx", "command=[1, 0, 0]"]) == {
        "sim_dt": 0.001,
        "spawn_height": 0.5,
        "trained_on": "physx",
        "command": [1, 0, 0],
    }
    # inside a mapping too: 'stiffness={".*": 1e12}' was text, and the hint's own 1.0e9 was refused as well
    assert parse_settings(['stiffness={".*": 1e12}', 'damping={".*": 1.0e9}']) == {
        "stiffness": {".*": 1e12},
        "damping": {".*": 1e9},
    }
    with pytest.raises(ValueError, match="given twice"):
        parse_settings(['stiffness={".*": 1, ".*": 2}'])


def test_a_delay_longer_than_the_run_and_a_run_shorter_than_the_warm_up_say_so():
    """Issue 31: a delay longer than the episode ran with no action ever applied and reported 0 m/s, 0 % fell; a run
    within the warm-up gave no data and blamed the settings."""
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import ReplayError, baseline_failure, replay

    policy = Path(__file__).resolve().parents[1] / "checkpoints/quadruped_flat_physx/exported/policy.pt"
    with pytest.raises(ReplayError, match="no action would ever reach the joints"):
        replay(policy, "physx", seconds=0.1, progress=False, perturbation={"action_delay": 100})
    short = replay(policy, "physx", seconds=0.2, progress=False)
    assert "no longer than the 1 s warm-up" in baseline_failure(short)


def test_a_delay_line_too_large_for_memory_is_refused_before_it_is_allocated():
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import replay

    policy = Path(__file__).resolve().parents[1] / "checkpoints/quadruped_flat_physx/exported/policy.pt"
    with pytest.raises(ValueError, match=r"the action delay would take 44.7 GiB for 1 envs \(at most 2 GiB\)"):
        replay(policy, "physx", seconds=1e7, progress=False, perturbation={"action_delay": 10**9})


@pytest.mark.engines
def test_a_velocity_limit_binds_on_physx_and_is_said_not_to_act_on_mujoco(tmp_path):
    """A task's ``velocity_limit`` (Isaac Lab's ``velocity_limit_sim``) bounds every joint's speed on PhysX, where
    the demo's joints otherwise pass it; MuJoCo has no joint velocity limit, and the replay there says so."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("pyarrow")
    import numpy as np
    import pandas as pd

    demo = Path(__file__).resolve().parents[1] / "checkpoints/quadruped_flat_physx/exported/policy.pt"
    peaks = {}
    for limit in (None, 2.0):
        settings = {} if limit is None else {"velocity_limit": {".*": limit}}
        out = tmp_path / f"{limit}.parquet"
        replay(demo, "physx", seconds=1.5, settings=settings, record=out, progress=False)
        frame = pd.read_parquet(out)
        speeds = np.abs(frame[[c for c in frame if c.startswith("velocity.")]].to_numpy())
        peaks[limit] = (float(np.percentile(speeds, 99)), float(speeds.max()))
    assert peaks[None][0] > 4.0, peaks  # the unlimited walk moves its joints far faster than the limit
    # PhysX clamps the speeds in its solver; contacts after it overshoot a little (measured on two hosts: 99 % <= 2.07
    # and 2.05, max 2.48 and 2.75; unlimited: max 10)
    assert peaks[2.0][0] <= 2.0 * 1.05 and peaks[2.0][1] <= 2.0 * 1.5, peaks
    pytest.importorskip("mujoco")
    result = replay(demo, "mujoco", seconds=0.3, settings={"velocity_limit": {".*": 2.0}}, progress=False)
    assert any("enforces no joint velocity limit" in w for w in result.warnings), result.warnings


def test_compare_on_the_training_engine_runs_native_once():
    """``--compare --target physx`` for a PhysX-trained checkpoint printed its native run twice (once as "native",
    once as the reordered run, which on its own engine is the same run). Its naive run, PhysX's own order, is the
    checkpoint's order too: not a control either (issue 42), so native runs alone, and the report says why."""
    demo = Path(__file__).resolve().parents[1] / "checkpoints/quadruped_flat_physx/exported/policy.pt"
    runs = compare(demo, "physx", num_envs=1, seconds=0.2, progress=False)
    assert [r.label for r in runs] == ["native (physx)"] and runs[0].reordered
    assert runs[0].no_control.startswith("no naive run: physx's own joint order (physx) is the checkpoint's (physx)")


def test_the_native_failure_names_the_native_engines_own_settings():
    """Issue 46: the message spelled PhysX's and Newton's settings whatever engine the native run was on."""
    from transfer.runs.replay import ReplayResult, baseline_failure

    settings = {
        "mujoco": {"integrator": "implicitfast"},
        "physx": {"solver_position_iterations": 4},
        "ground": {"static_friction": 1.0},
        "self_collisions": None,
        "sim_dt": 0.005,
        "decimation": 4,
        "actuators": [],
    }
    native = ReplayResult(
        label="native (mujoco)",
        target="mujoco",
        source="mujoco",
        reordered=True,
        order="mujoco",
        num_envs=2,
        seconds=4.0,
        command=(0.5, 0.0, 0.0),
        forward_velocity=0.1,
        lateral_velocity=0.0,
        yaw_rate=0.0,
        fall_fraction=0.5,
        survival_seconds=2.0,
        fall_causes={"bad_orientation": 1},
        env_steps_per_second=1.0,
        nonfinite_envs=0,
        checkpoint="policy.pt",
        asset="robot.xml",
        settings=settings,
    )
    text = baseline_failure(native)
    assert "fell in 50% of envs; walked 0.10 m/s, below half the commanded 0.50 m/s on mujoco" in text
    assert "Settings in effect: mujoco integrator implicitfast, ground" in text and "physx" not in text
