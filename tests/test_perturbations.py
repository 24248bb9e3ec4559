"""The sweep's perturbations reach both real engines (issue 23): each one is read back from the engine, or changes
what the engine does, on PhysX and on Newton, on the project's Ant (no shared assets needed).

- ``added_base_mass``: the engine holds the heavier base and its scaled inertia (the backend contract's
  ``body_masses`` / ``body_inertias``), and a run with the mass written at runtime is the run of an asset that
  authors that mass, step for step, and not the unperturbed run;
- ``ground_friction``: the ground's and the robot's collision shapes' frictions are scaled in the engine, and a
  robot shoved sideways on a slippery ground slides further;
- ``gain_scale``: the stiffness and damping the engine holds are scaled;
- ``action_delay``: with a delay of one policy step the first action reaches no joint (the run is the zero-action
  run) and the second does;
- ``push``: the engine's base velocity jumps by the push, turned by the base's yaw.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from transfer.env import PolicyEnv
from transfer.env.perturbations import Perturbation
from transfer.ordering import parse_ordering
from transfer.task import load_task, resolve_asset

pytest.importorskip("ovphysx")
pytest.importorskip("newton")
pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]

TASK = load_task("presets/tasks/ant_flat_velocity.yaml")
ASSET = resolve_asset(TASK.asset)
ENGINES = ["physx", "newton"]
ADDED = 10.0  # kg on a 0.48 kg torso: the Newton Ant sinks ~7 cm, the PhysX Ant ~0.6 mm (its legs hold it)


def _env(engine: str, asset=ASSET, num_envs: int = 1, **perturbation) -> PolicyEnv:
    return PolicyEnv(
        TASK, asset, engine, parse_ordering("physx"), num_envs=num_envs, perturbation=Perturbation(**perturbation)
    )


def _stand(env: PolicyEnv, steps: int) -> np.ndarray:
    """Zero actions for ``steps`` policy steps; the base height after each."""
    heights = []
    for _ in range(steps):
        env.step(np.zeros((env.num_envs, env.action_size)))
        heights.append(env.root_state()[0][:, 2].copy())
    return np.array(heights)


@pytest.fixture(scope="module")
def heavy_asset(tmp_path_factory):
    """The Ant with its torso authoring ``ADDED`` kg more mass (``physics:mass`` on the torso prim)."""
    text = ASSET.read_text()
    torso = text.index('def Xform "torso" (')
    brace = text.index("{", torso)
    light = None
    with PolicyEnv(TASK, ASSET, "physx", parse_ordering("physx")) as env:
        light = float(env.art.body_masses()[0, env.art.body_names.index("torso")])
    out = tmp_path_factory.mktemp("heavy") / "Ant.usda"
    out.write_text(text[: brace + 1] + f"\n        float physics:mass = {light + ADDED}\n" + text[brace + 1 :])
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_added_base_mass_is_the_engine_s_and_runs_like_an_authored_mass(engine, heavy_asset):
    with _env(engine) as env:
        light, inertia = env.art.body_masses(), env.art.body_inertias()
        light_run = _stand(env, 25)
    with _env(engine, added_base_mass=ADDED) as env:
        torso = env.art.body_names.index("torso")
        heavy, heavy_inertia = env.art.body_masses(), env.art.body_inertias()
        added_run = _stand(env, 25)
    assert heavy[0, torso] == pytest.approx(light[0, torso] + ADDED, rel=1e-6)
    others = [b for b in range(heavy.shape[1]) if b != torso]
    np.testing.assert_array_equal(heavy[:, others], light[:, others])
    ratio = heavy[0, torso] / light[0, torso]
    np.testing.assert_allclose(heavy_inertia[0, torso], inertia[0, torso] * ratio, rtol=1e-5, atol=1e-9)
    with _env(engine, asset=heavy_asset) as env:
        authored_run = _stand(env, 25)
    np.testing.assert_allclose(added_run, authored_run, atol=2e-5)  # the runtime write is the authored mass
    assert added_run[-1, 0] < light_run[-1, 0] - 3e-4  # and it weighs: the base sinks


@pytest.mark.parametrize("engine", ENGINES)
def test_body_masses_write_only_the_rows_given(engine):
    with _env(engine, num_envs=2) as env:
        before = env.art.body_masses()
        env.art.write_body_masses(before[[1], :2] * 2.0, env_ids=[1], body_ids=[0, 1])
        after = env.art.body_masses()
        np.testing.assert_array_equal(after[0], before[0])
        np.testing.assert_allclose(after[1, :2], before[1, :2] * 2.0, rtol=1e-6)
        np.testing.assert_array_equal(after[1, 2:], before[1, 2:])
        with pytest.raises(ValueError, match="finite and > 0"):
            env.art.write_body_masses([[0.0]], env_ids=[0], body_ids=[0])


def test_an_added_mass_that_leaves_none_is_refused_naming_the_base():
    with pytest.raises(ValueError, match=re.escape("added_base_mass -5 kg: the base (torso)")):
        _env("physx", added_base_mass=-5.0)


def _slide(engine: str, friction: float) -> float:
    """How far (m) the standing Ant slides in 0.5 s after a 2 m/s sideways shove, at ``friction`` x the contact."""
    with _env(engine, ground_friction=friction) as env:
        _stand(env, 10)
        start = env.root_state()[0][0].copy()
        env.push((0.0, 2.0, 0.0))
        _stand(env, 25)
        return float(env.root_state()[0][0, 1] - start[1])


@pytest.mark.parametrize("engine", ENGINES)
def test_ground_friction_scales_the_contact_and_the_robot_slides(engine):
    with _env(engine, ground_friction=0.1) as env:
        backend = env.art.backend
        if engine == "physx":
            np.testing.assert_allclose(backend.shape_frictions(), 0.05)  # the robot's shapes: PhysX's 0.5, x 0.1
        else:
            np.testing.assert_allclose(backend.model.shape_material_mu.numpy(), 0.1)  # robot shapes and ground: 1
    assert env.scene.scaled_ground().dynamic_friction == pytest.approx(0.1)
    slippery, grippy = _slide(engine, 0.1), _slide(engine, 1.0)
    assert slippery > 2.5 * grippy and grippy > 0.05, (slippery, grippy)


def test_multiply_combine_scales_the_ground_alone():
    task = TASK.with_settings({"ground.friction_combine": "multiply"})
    env = PolicyEnv(task, ASSET, "physx", parse_ordering("physx"), perturbation=Perturbation(ground_friction=0.1))
    with env:
        np.testing.assert_allclose(env.art.backend.shape_frictions(), 0.5)  # the product scales once
        assert env.scene.scaled_ground().static_friction == pytest.approx(0.1)


@pytest.mark.parametrize("engine", ENGINES)
def test_gain_scale_reaches_the_engine_s_drives(engine):
    with _env(engine, gain_scale=0.5) as env:
        stiffness = env.art.backend.joint_properties().stiffness.numpy()
        damping = env.art.backend.joint_properties().damping.numpy()
    np.testing.assert_allclose(stiffness, 15.0 * 0.5)  # the task's 15 and 1, halved
    np.testing.assert_allclose(damping, 1.0 * 0.5)


@pytest.mark.parametrize("engine", ENGINES)
def test_gain_scale_reaches_explicit_actuators_too(engine):
    """An explicit PD computes its torque from the scaled gains: at the same state and target, half the torque."""
    explicit = TASK.with_settings(
        {"actuators": [{"name": "legs", "model": "ideal_pd", "joints": [".*"]}], "effort_limit": {".*": 1000.0}}
    )
    torques = {}
    for scale in (1.0, 0.5):
        env = PolicyEnv(explicit, ASSET, engine, parse_ordering("physx"), perturbation=Perturbation(gain_scale=scale))
        with env:
            env.art.set_joint_position_target(env.default_joint_pos + 0.1)
            env.art.step(TASK.sim_dt)
            torques[scale] = env.art.applied_effort.numpy().copy()
    assert np.abs(torques[1.0]).min() > 0.1
    np.testing.assert_allclose(torques[0.5], 0.5 * torques[1.0], rtol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_action_delay_holds_the_target_back_that_many_physics_steps(engine):
    action = np.full((1, 8), 1.0)
    runs = {}
    for name, delay, actions in (("zero", 0, [0 * action] * 2), ("now", 0, [action] * 2), ("late", 4, [action] * 2)):
        with _env(engine, action_delay=delay) as env:
            assert env.task.decimation == 4  # a delay of 4 physics steps is one policy step
            runs[name] = []
            for a in actions:
                env.step(a)
                runs[name].append(env.art.data.joint_pos.numpy().copy())
    np.testing.assert_array_equal(runs["late"][0], runs["zero"][0])  # the first action has reached no joint
    assert np.abs(runs["now"][0] - runs["zero"][0]).max() > 0.02
    assert np.abs(runs["late"][1] - runs["zero"][1]).max() > 0.02  # one policy step later, it has


@pytest.mark.parametrize("engine", ENGINES)
def test_push_adds_velocity_in_the_base_s_yaw_frame(engine):
    with _env(engine) as env:
        _stand(env, 5)
        pose = np.concatenate([env.root_state()[0], [[0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)]]], axis=1)
        env.art.write_root_pose(pose)  # yawed 90 degrees: the base's forward is the world's +y
        before = env.art.data.root_lin_vel_w.numpy().copy()
        env.push((1.5, 0.0, 0.0))
        after = env.art.data.root_lin_vel_w.numpy().copy()
    np.testing.assert_allclose(after - before, [[0.0, 1.5, 0.0]], atol=1e-5)


class _Gravity:
    """A kind of disturbance the project does not have, plugged in as one class and one registry entry: gravity
    scaled (the engine's side, through the scene) and a count of the policy steps it saw (the run's side)."""

    from transfer.env.perturbations import PerturbationKind as _Base

    class Kind(_Base):
        name = "gravity_scale"
        meaning = "scale of gravity"
        neutral, minimum = 1.0, 0.0
        seen: list[int] = []

        def scene(self, value, scene):
            import dataclasses

            return dataclasses.replace(scene, gravity=(0.0, 0.0, -9.81 * value))

        def step(self, value, env, step, steps):
            self.seen.append(step)


def test_a_new_kind_is_one_class_and_one_entry_and_every_run_honours_it(monkeypatch):
    """Issue 29: the env applies a registered kind in one place; a replay drives its run hooks."""
    from types import MappingProxyType

    import transfer.env.perturbations as perturbations
    from transfer.runs.replay import replay

    kind = _Gravity.Kind()
    monkeypatch.setattr(
        perturbations, "PERTURBATIONS", MappingProxyType({**perturbations.PERTURBATIONS, kind.name: kind})
    )
    assert Perturbation(gravity_scale=0.5).active() == [(kind, 0.5)] and Perturbation().neutral
    env = _env("physx", gravity_scale=0.5)
    try:
        assert env.scene.gravity == pytest.approx((0.0, 0.0, -4.905))
    finally:
        env.close()
    result = replay(
        "checkpoints/ant_flat_physx/exported/policy.pt",
        "physx",
        seconds=0.2,
        progress=False,
        perturbation={"gravity_scale": 0.5},
    )
    assert kind.seen == list(range(10)) and result.seconds == pytest.approx(0.2)  # 10 policy steps of 0.02 s
    with pytest.raises(ValueError, match=r"perturbation gravity_scale: expected a value >= 0, got -1"):
        Perturbation(gravity_scale=-1)


def test_observation_noise_is_each_terms_training_noise_drawn_every_step():
    """``obs_noise``: every observation term gets uniform noise of its training range (Isaac Lab's: ``noise`` in
    the term table) times the value, before its scale, drawn anew each policy step, the same for a seed; terms
    without a training noise (the command, the last action) are read clean."""
    from transfer.task.terms import OBS_TERMS

    clean, noisy, again = _env("physx", obs_noise=0.0), _env("physx", obs_noise=2.0), _env("physx", obs_noise=2.0)
    try:
        seen = []
        for _ in range(3):
            zero = np.zeros((1, clean.action_size))
            a, b, c = clean.step(zero)[0].copy(), noisy.step(zero)[0].copy(), again.step(zero)[0].copy()
            np.testing.assert_array_equal(b, c)  # the same seed, the same noise
            seen.append(b - a)
        for term in TASK.observation:
            where = clean.slices[term.name]
            diff = np.stack(seen)[..., where]
            bound = 2.0 * OBS_TERMS[term.name].noise * np.max(np.abs(np.atleast_1d(term.scale or 1.0)))
            if bound == 0:
                assert np.abs(diff).max() < 1e-4, term.name  # the physics alike, no noise added
                continue
            assert np.abs(diff).max() <= bound * 1.05 + 1e-3, term.name
            assert np.abs(diff).max() > 0.2 * bound, term.name  # drawn across its range
            assert not np.allclose(diff[0], diff[1]), term.name  # anew every step
    finally:
        for env in (clean, noisy, again):
            env.close()
