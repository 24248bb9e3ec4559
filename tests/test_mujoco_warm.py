"""A command starts compiling the robot's MJCF while it loads the policy (issue 47: H1-2's compile was a third of its
time to a result): :func:`transfer.backends.mujoco.model.warm` compiles the file on a thread, and the run's own build
then finds the meshes in MuJoCo's cache. The model built after a warm-up steps exactly as one built cold, the main
thread can import an extension module meanwhile (a thread that loaded one too could deadlock the dynamic loader),
a file that cannot be read is left to the run to refuse, and the input layer names the robot before the policy."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("warp")

ROOT = Path(__file__).resolve().parents[1]


def _sphere_obj(rings: int = 90, segments: int = 180) -> str:
    """A dense sphere (16,000 vertices): its convex hull takes the compile a while."""
    lines = []
    for i in range(1, rings):
        theta = math.pi * i / rings
        for j in range(segments):
            phi = 2 * math.pi * j / segments
            x, y, z = math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta)
            lines.append(f"v {0.05 * x:.6f} {0.05 * y:.6f} {0.05 * z:.6f}")
    lines += ["v 0 0 0.05", "v 0 0 -0.05"]
    return "\n".join(lines) + "\n"


def _robot(tmp_path: Path) -> Path:
    (tmp_path / "ball.obj").write_text(_sphere_obj())
    xml = """<mujoco model="warm">
  <asset><mesh name="ball" file="ball.obj"/></asset>
  <worldbody>
    <body name="base" pos="0 0 0.4">
      <freejoint name="root"/>
      <geom name="torso" type="box" size="0.15 0.08 0.04" mass="3"/>
      <body name="leg" pos="0.1 0 -0.05">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom name="thigh" type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02" mass="0.4"/>
        <geom name="foot" type="mesh" mesh="ball" pos="0 0 -0.22"/>
      </body>
      <body name="tail" pos="-0.1 0 -0.05">
        <joint name="knee" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom name="shin" type="capsule" fromto="0 0 0 0 0 -0.25" size="0.02" mass="0.4"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hip" gear="10" ctrlrange="-3 3"/>
    <motor joint="knee" gear="10" ctrlrange="-3 3"/>
  </actuator>
</mujoco>"""
    path = tmp_path / "warm.xml"
    path.write_text(xml)
    return path


RUN = """
import json, sys
import numpy as np
from pathlib import Path
from transfer.backends.mujoco.model import _WARMING, build_model, warm
from transfer.backends.scene import DEFAULT_GROUND, SceneDescription
import mujoco
path, warmed, out = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
if warmed:
    warm(path)
    import torch  # an extension module imported by the main thread while the compile runs
built = build_model(path, SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.45))
m = built.model
d = mujoco.MjData(m)
rows = []
for k in range(300):
    d.ctrl[:] = [0.4 * np.sin(0.05 * k), -0.3]
    mujoco.mj_step(m, d)
    rows.append(np.concatenate([d.qpos, d.qvel]))
np.save(out, np.array(rows))
print(json.dumps({"ngeom": int(m.ngeom), "nmeshvert": int(m.nmeshvert), "warmed": Path(path).resolve() in _WARMING}))
"""


def _run(robot: Path, warmed: bool, out: Path) -> tuple[np.ndarray, dict]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(robot), "1" if warmed else "0", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return np.load(out), json.loads(done.stdout.strip().splitlines()[-1])


def test_a_model_built_after_a_warm_up_steps_as_one_built_cold(tmp_path):
    """In two processes: built cold, and built after ``warm`` while the main thread imported torch (the process
    ends: no deadlock); the two models step to the same bits."""
    robot = _robot(tmp_path)
    cold, cold_sizes = _run(robot, False, tmp_path / "cold.npy")
    warmed, warm_sizes = _run(robot, True, tmp_path / "warm.npy")
    assert warm_sizes.pop("warmed") and not cold_sizes.pop("warmed")
    assert cold_sizes == warm_sizes and cold_sizes["nmeshvert"] > 100
    np.testing.assert_array_equal(warmed, cold)
    assert np.isfinite(cold).all() and np.ptp(cold[:, 7]) > 0.01  # the hip moved


def test_a_file_that_cannot_be_read_is_left_to_the_run_to_refuse(tmp_path):
    from transfer.backends.mujoco.model import _WARMING, build_model, warm
    from transfer.backends.scene import SceneDescription

    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body name='b'><joint name='j' type='hinge'/></body></worldbody>")
    warm(broken)  # no exception, no thread
    warm(tmp_path / "missing.xml")
    assert broken.resolve() not in _WARMING and (tmp_path / "missing.xml").resolve() not in _WARMING
    with pytest.raises(ValueError, match="broken.xml"):
        build_model(broken, SceneDescription())


def test_the_input_layer_names_the_robot_before_it_loads_the_policy(monkeypatch):
    """``resolve_inputs(warm=...)`` hands the robot ``--asset`` names to the warm-up first, then loads the policy."""
    import transfer.runs.inputs as inputs

    events: list[str] = []
    load = inputs.load_policy

    def loading(*args, **kwargs):
        events.append("policy")
        return load(*args, **kwargs)

    monkeypatch.setattr(inputs, "load_policy", loading)
    mjcf = ROOT / "transfer/data/quadruped.xml"
    inputs.resolve_inputs(
        ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt",
        asset=mjcf,
        warm=lambda robot: events.append(f"warm {Path(robot).name}"),
    )
    assert events == ["warm quadruped.xml", "policy"]


def test_a_config_naming_the_robot_is_read_once_and_warms_it_first(monkeypatch):
    """With no ``asset``, the robot the ``config`` names is warmed before the policy loads, and the config read for
    that is the one the rest of the resolution uses (read once)."""
    import transfer.runs.inputs as inputs

    events: list[str] = []
    load, read = inputs.load_policy, inputs.read_config

    def loading(*args, **kwargs):
        events.append("policy")
        return load(*args, **kwargs)

    def reading(*args, **kwargs):
        events.append("config")
        return read(*args, **kwargs)

    monkeypatch.setattr(inputs, "load_policy", loading)
    monkeypatch.setattr(inputs, "read_config", reading)
    found = inputs.resolve_inputs(
        ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt",
        config=ROOT / "presets/tasks/quadruped_flat_velocity.yaml",
        warm=lambda robot: events.append(f"warm {Path(robot).name}"),
    )
    assert events == ["config", "warm quadruped.usda", "policy"]
    assert found.task.name == "quadruped_flat_velocity"
