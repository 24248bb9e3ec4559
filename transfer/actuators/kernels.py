"""Warp kernels of the explicit actuator models, over ``(num_envs, num_joints)`` float32 arrays in public order.

``kind`` per joint: :data:`PASS` (implicit: the feed-forward effort goes through, the engine's drive does the PD),
:data:`IDEAL` (PD + feed-forward clipped to ``+-effort_limit``: ideal and delayed PD), :data:`DC` (PD +
feed-forward, then the DC motor's torque-speed box), :data:`NET` (a network's torque, then the box).

The box, as Isaac Lab's ``DCMotor._clip_effort`` (and Newton's ``ClampingDCMotor``): the joint velocity is first
clamped to the corner velocities ``+-velocity_limit * (1 + effort_limit / saturation_effort)``, then
``upper = min(saturation_effort * (1 - v / velocity_limit), effort_limit)`` and
``lower = max(saturation_effort * (-1 - v / velocity_limit), -effort_limit)``.
"""

from __future__ import annotations

import warp as wp

__all__ = ["DC", "IDEAL", "NET", "PASS", "advance", "dc_box", "delay", "explicit_effort"]

PASS, IDEAL, DC, NET = 0, 1, 2, 3


@wp.func
def dc_box(effort: float, v: float, saturation: float, velocity_limit: float, effort_limit: float) -> float:
    corner = velocity_limit * (1.0 + effort_limit / saturation)
    vc = wp.clamp(v, -corner, corner)
    upper = wp.min(saturation * (1.0 - vc / velocity_limit), effort_limit)
    lower = wp.max(saturation * (-1.0 - vc / velocity_limit), -effort_limit)
    return wp.clamp(effort, lower, upper)


@wp.kernel
def explicit_effort(
    kind: wp.array(dtype=wp.int32),
    stiffness: wp.array(dtype=wp.float32),
    damping: wp.array(dtype=wp.float32),
    effort_limit: wp.array(dtype=wp.float32),
    saturation: wp.array(dtype=wp.float32),
    velocity_limit: wp.array(dtype=wp.float32),
    position_target: wp.array2d(dtype=wp.float32),
    velocity_target: wp.array2d(dtype=wp.float32),
    feed_forward: wp.array2d(dtype=wp.float32),
    joint_pos: wp.array2d(dtype=wp.float32),
    joint_vel: wp.array2d(dtype=wp.float32),
    network: wp.array2d(dtype=wp.float32),
    effort: wp.array2d(dtype=wp.float32),
):
    e, j = wp.tid()
    k = kind[j]
    if k == PASS:
        effort[e, j] = feed_forward[e, j]
        return
    v = joint_vel[e, j]
    tau = network[e, j]
    if k != NET:
        tau = stiffness[j] * (position_target[e, j] - joint_pos[e, j]) + damping[j] * (velocity_target[e, j] - v)
        tau = tau + feed_forward[e, j]
    if k == IDEAL:
        effort[e, j] = wp.clamp(tau, -effort_limit[j], effort_limit[j])
    else:
        effort[e, j] = dc_box(tau, v, saturation[j], velocity_limit[j], effort_limit[j])


@wp.kernel
def delay(
    src: wp.array2d(dtype=wp.float32),
    history: wp.array3d(dtype=wp.float32),
    head: wp.array(dtype=wp.int32),
    pushes: wp.array(dtype=wp.int32),
    lag: wp.array2d(dtype=wp.int32),
    out: wp.array2d(dtype=wp.float32),
):
    """Push ``src`` into each env's ring of past values and read it back ``lag`` pushes ago (Isaac Lab's
    ``DelayBuffer``: the first push after a reset fills the whole ring; a lag longer than the pushes so far reads the
    oldest value)."""
    e, j = wp.tid()
    size = history.shape[0]
    h = head[e]
    if pushes[e] == 0:
        for k in range(size):
            history[k, e, j] = src[e, j]
    else:
        history[h, e, j] = src[e, j]
    back = wp.min(lag[e, j], pushes[e])
    out[e, j] = history[(h - back + size) % size, e, j]


@wp.kernel
def advance(head: wp.array(dtype=wp.int32), pushes: wp.array(dtype=wp.int32), size: int):
    """Each env's ring moves on by one push (after every :func:`delay` of the step)."""
    e = wp.tid()
    head[e] = (head[e] + 1) % size
    pushes[e] = pushes[e] + 1
