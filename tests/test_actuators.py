"""Isaac Lab's actuator models: the formulas (kernels against a numpy statement of Isaac Lab's), the delay buffer's
law, the torque box handed to both real engines, and explicit PD walking like the engine's own PD."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_asset
from transfer.actuators import ActuatorError, ActuatorGroup, Actuators

FINITE = st.floats(-50.0, 50.0, allow_nan=False)


def isaaclab_dc_box(effort, v, saturation, velocity_limit, effort_limit):
    """Isaac Lab's ``DCMotor._clip_effort``, written with numpy."""
    corner = velocity_limit * (1.0 + effort_limit / saturation)
    v = np.clip(v, -corner, corner)
    upper = np.minimum(saturation * (1.0 - v / velocity_limit), effort_limit)
    lower = np.maximum(saturation * (-1.0 - v / velocity_limit), -effort_limit)
    return np.clip(effort, lower, upper)


def compute(groups, names, q, qd, target, ff=None, kp=20.0, kd=0.5, limit=23.5, steps=1):
    env, joints = q.shape
    act = Actuators(
        groups, names, num_envs=env, stiffness=[kp] * joints, damping=[kd] * joints, effort_limit=[limit] * joints
    )
    import warp as wp

    arr = lambda x: wp.array(np.asarray(x, np.float32), dtype=wp.float32)  # noqa: E731
    out = wp.zeros((env, joints), dtype=wp.float32)
    zeros = np.zeros_like(q)
    for _ in range(steps):
        act.compute(arr(target), arr(zeros), arr(zeros if ff is None else ff), arr(q), arr(qd), out)
    return out.numpy(), act


@settings(max_examples=60, deadline=None)
@given(q=FINITE, qd=FINITE, target=FINITE, ff=FINITE)
def test_ideal_pd_and_dc_motor_follow_isaac_labs_formulas(q, qd, target, ff):
    names = ["a", "b", "c"]
    groups = [
        ActuatorGroup("pd", "ideal_pd", ("a",)),
        ActuatorGroup("dc", "dc_motor", ("b",), saturation_effort=30.0, velocity_limit=10.0),
    ]
    x = lambda v: np.full((2, 3), v, np.float32)  # noqa: E731
    out, _ = compute(groups, names, x(q), x(qd), x(target), ff=x(ff))
    pd = np.float32(20.0) * (np.float32(target) - np.float32(q)) + np.float32(0.5) * (0 - np.float32(qd)) + ff
    assert out[:, 0] == pytest.approx(np.clip(pd, -23.5, 23.5), rel=1e-5, abs=1e-4)
    assert out[:, 1] == pytest.approx(isaaclab_dc_box(pd, qd, 30.0, 10.0, 23.5), rel=1e-5, abs=1e-4)
    assert out[:, 2] == pytest.approx(ff, abs=1e-6)  # implicit: only the feed-forward effort goes through


@settings(max_examples=30, deadline=None)
@given(lags=st.tuples(st.integers(0, 4), st.integers(0, 4)), steps=st.integers(1, 9))
def test_a_delayed_target_is_the_target_given_lag_steps_ago_or_the_oldest(lags, steps):
    lo, hi = min(lags), max(lags)
    group = ActuatorGroup("d", "delayed_pd", ("a",), min_delay=lo, max_delay=hi)
    act = Actuators([group], ["a"], num_envs=3, stiffness=[1.0], damping=[0.0], effort_limit=[1e6])
    import warp as wp

    out = wp.zeros((3, 1), dtype=wp.float32)
    zeros = wp.zeros((3, 1), dtype=wp.float32)
    seen = []
    for k in range(steps):  # target k at step k; the joint sits at 0 with kp 1, so the effort is the delayed target
        act.compute(wp.full((3, 1), float(k), dtype=wp.float32), zeros, zeros, zeros, zeros, out)
        seen.append(out.numpy()[:, 0].copy())
    lag = act.lags()[:, 0]
    assert ((lo <= lag) & (lag <= hi)).all()
    for k, value in enumerate(seen):
        assert value == pytest.approx(np.maximum(k - lag, 0).astype(np.float32))
    act.reset([1])  # a reset env starts its ring again from the next target
    act.compute(wp.full((3, 1), 100.0, dtype=wp.float32), zeros, zeros, zeros, zeros, out)
    assert out.numpy()[1, 0] == 100.0


def test_groups_are_checked_naming_the_field():
    with pytest.raises(ActuatorError, match="saturation_effort"):
        ActuatorGroup("legs", "dc_motor", (".*",), velocity_limit=30.0)
    with pytest.raises(ActuatorError, match="unknown model 'pid'"):
        ActuatorGroup("legs", "pid", (".*",))
    with pytest.raises(ActuatorError, match="min_delay 3 is above max_delay 1"):
        ActuatorGroup("legs", "delayed_pd", (".*",), min_delay=3, max_delay=1)
    with pytest.raises(ActuatorError, match="network_file"):
        ActuatorGroup("legs", "lstm", (".*",), saturation_effort=1.0, velocity_limit=1.0)
    with pytest.raises(ActuatorError, match="two actuator groups"):
        Actuators(
            [ActuatorGroup("a", "ideal_pd", ("x",)), ActuatorGroup("b", "ideal_pd", ("x",))],
            ["x"],
            num_envs=1,
            stiffness=[1.0],
            damping=[1.0],
            effort_limit=[1.0],
        )
    group = ActuatorGroup("legs", "mlp", ("x",), saturation_effort=1.0, velocity_limit=1.0, network_file="nope.pt")
    with pytest.raises(ActuatorError, match="nope.pt is not a local file"):
        Actuators([group], ["x"], num_envs=1, stiffness=[1.0], damping=[1.0], effort_limit=[1.0])


def test_an_mlp_network_reads_isaac_labs_input_layout(tmp_path):
    torch = pytest.importorskip("torch")

    class Sum(torch.nn.Module):  # torque = sum of the inputs: checks the history, scaling and order it is fed
        def forward(self, x):
            return x.sum(dim=1, keepdim=True)

    path = tmp_path / "net.pt"
    torch.jit.save(torch.jit.script(Sum()), str(path))
    group = ActuatorGroup(
        "legs",
        "mlp",
        ("a",),
        saturation_effort=1e3,
        velocity_limit=1e3,
        network_file=str(path),
        input_idx=(0, 1),
        pos_scale=2.0,
        vel_scale=10.0,
        torque_scale=0.5,
    )
    q, qd, target = np.zeros((1, 1), np.float32), np.full((1, 1), 0.1, np.float32), np.full((1, 1), 1.0, np.float32)
    out, _ = compute([group], ["a"], q, qd, target, steps=2, limit=1e3)
    # two steps of history: pos error 1, 1 (x2) and velocity 0.1, 0.1 (x10), summed, x0.5
    assert out[0, 0] == pytest.approx(0.5 * (2 * 1.0 * 2 + 2 * 0.1 * 10), rel=1e-5)


@pytest.mark.parametrize("engine", ["physx", "newton"])
def test_the_dc_torque_box_reaches_both_engines(engine):
    """At rest, at half and at the full velocity limit, in both directions: the effort handed to the engine is
    Isaac Lab's DC motor box (Go2's motor: saturation 23.5 N·m, 30 rad/s, effort limit 23.5)."""
    import transfer

    asset = shared_asset("unitree_go2/usd/go2_flat.usda")
    art = transfer.open_articulation(asset, engine, num_envs=6, joint_ordering="physx", body_ordering="physx")
    try:
        n = art.num_joints
        group = ActuatorGroup("legs", "dc_motor", tuple(art.joint_names), saturation_effort=23.5, velocity_limit=30.0)
        art.set_actuators(
            Actuators(
                [group], art.joint_names, num_envs=6, stiffness=[25.0] * n, damping=[0.5] * n, effort_limit=[23.5] * n
            )
        )
        art.write_joint_properties(stiffness=np.zeros((6, n)), damping=np.zeros((6, n)))
        v = np.array([0.0, 15.0, 30.0, 0.0, -15.0, -30.0], np.float32)[:, None].repeat(n, 1)
        sign = np.array([1, 1, 1, -1, -1, -1], np.float32)[:, None]
        q = art.data.joint_pos.numpy()
        art.write_joint_state(q, v)
        art.set_joint_position_target(q + sign * 10.0)  # far away: the PD asks for more than the motor gives
        art.step(1e-5)
        applied = art.applied_effort.numpy()
        pd = 25.0 * sign * 10.0 + 0.5 * (0.0 - v)
        assert applied == pytest.approx(isaaclab_dc_box(pd, v, 23.5, 30.0, 23.5), abs=1e-3)
        assert applied[0, 0] == pytest.approx(23.5) and applied[2, 0] == pytest.approx(0.0, abs=1e-4)
        assert applied[3, 0] == pytest.approx(-23.5) and applied[5, 0] == pytest.approx(0.0, abs=1e-4)
    finally:
        art.close()


@pytest.mark.parametrize("engine", ["physx", "newton"])
def test_explicit_ideal_pd_walks_like_the_engines_own_pd(engine, anymal_files):
    """ANYmal C's PhysX-trained policy, with the engine's PD and with Isaac Lab's IdealPDActuator (same gains):
    within 10% of each other, no falls (one env on Newton: the MuJoCo C engine)."""
    from transfer.runs.replay import replay

    a = anymal_files
    kwargs = dict(
        source="physx",
        config=a["yaml"],
        asset=a["asset"],
        num_envs=2 if engine == "physx" else 1,
        seconds=4.0,
        command=(1.0, 0.0, 0.0),
        progress=False,
    )
    checkpoint = a["mjw_pt"].with_name("physx_anymal.pt")
    implicit = replay(checkpoint, engine, **kwargs)
    explicit = replay(
        checkpoint,
        engine,
        settings={"actuators": [{"name": "legs", "model": "ideal_pd", "joints": [".*"]}], "effort_limit": {".*": 80.0}},
        **kwargs,
    )
    assert explicit.settings["actuators"][0]["model"] == "ideal_pd"
    assert implicit.fall_fraction == explicit.fall_fraction == 0.0
    assert implicit.forward_velocity > 0.8
    assert explicit.forward_velocity == pytest.approx(implicit.forward_velocity, rel=0.10)
