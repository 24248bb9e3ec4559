"""The observation terms transfer knows, in one table: a new term is one row here.

Each row (:class:`KnownTerm`) says what the term indexes and how long it is, how the environment builds it from
public-order data, which names Isaac Lab and mjlab give it, the noise Isaac Lab trains it with, the tolerance
``transfer verify`` compares it to, and the labels of its entries. Everything that deals in terms reads this
table: the task model (names, axes, sizes), the environment (builders), the Isaac Lab and mjlab readers (their
names), training (noise) and verify (tolerances and labels; verify keeps an independent re-computation of the
values, on purpose: it checks the builders against a second derivation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol

from transfer._arrays import host
from transfer.task._checks import TaskError

__all__ = [
    "OBS_TERMS",
    "Axis",
    "KnownTerm",
    "TermSources",
    "alias_hint",
    "check_aliases",
    "isaaclab_names",
    "mjlab_names",
]

Axis = Literal["joint", "body", "none"]


class TermSources(Protocol):
    """What a term is built from: the environment (:class:`transfer.env.PolicyEnv`) provides these, every array
    ``(num_envs, …)`` in the public order."""

    art: Any
    """The articulation; ``art.data`` holds the state (Warp arrays: ``.numpy()``)."""
    command: Any
    default_joint_pos: Any
    last_action: Any
    episode_time: Any
    """``(num_envs,)`` seconds since each env's last reset (policy steps x policy dt)."""
    episode_steps: Any
    """``(num_envs,)`` policy steps since each env's last reset."""
    tracking: Any
    """The reference motion (:class:`transfer.env.tracking.MotionTracking`), or ``None``."""


@dataclass(frozen=True)
class KnownTerm:
    """One observation term: the axis it indexes and, for ``none``, its size; its builder and its other names."""

    axis: Axis
    size: int | None
    doc: str
    build: Callable[[TermSources, Mapping[str, float]], Any]
    """``(num_envs, size)`` values from public-order data and the term's parameters."""
    isaaclab: tuple[str, ...] = ()
    """Isaac Lab observation functions (``isaaclab.envs.mdp.observations``) that compute it."""
    mjlab: tuple[str, ...] = ()
    """Names mjlab's velocity task gives it (``observation_names`` of its ONNX exports)."""
    noise: float = 0.0
    """Uniform training noise, ± this in the term's units before its scale (Isaac Lab's ranges)."""
    tolerance: float = 1e-4
    """Largest difference per entry ``transfer verify`` counts as the same, before the term's scale (float32: values
    of a few units round-trip an engine to ~1e-6; velocities rotated into the base frame get 1e-3; copied terms
    1e-6)."""
    components: tuple[str, ...] | None = None
    """Entry labels of a term that indexes no joint; of a joint term with several entries per joint, their parts
    (``motion_command``: every joint's ``pos``, then every joint's ``vel``)."""
    params: Mapping[str, float | None] = field(default_factory=lambda: MappingProxyType({}))
    """The parameters the builder reads (``ObsTerm.params``), each with its default; ``None``: required."""
    per_joint: int = 1
    """Entries per joint of a ``joint`` term (``motion_command``: a position and a velocity, 2)."""
    motion: bool = False
    """Built from the reference motion (``transfer replay --motion``): a tracking policy's term."""


def _data(name: str) -> Callable[[TermSources, Mapping[str, float]], Any]:
    return lambda src, p: host(getattr(src.art.data, name))


def _link_velocity(src: TermSources, params: Mapping[str, float]) -> Any:
    """The root frame origin's velocity, base frame: the centre of mass's less ``omega x c`` (``c``: the centre of
    mass in the root frame), what mjlab's ``root_link_lin_vel_b`` reads."""
    import numpy as np

    data = src.art.data
    return host(data.root_lin_vel_b) - np.cross(host(data.root_ang_vel_b), src.art.root_com_offset())


def _motion_command(src: TermSources, params: Mapping[str, float]) -> Any:
    return src.tracking.command(src.episode_steps)


def _motion_anchor_ori_b(src: TermSources, params: Mapping[str, float]) -> Any:
    anchor = host(src.art.data.body_quat_w)[:, src.tracking.anchor_index]
    return src.tracking.anchor_ori_b(src.episode_steps, anchor)


def _motion_anchor_pos_b(src: TermSources, params: Mapping[str, float]) -> Any:
    i, data = src.tracking.anchor_index, src.art.data
    return src.tracking.anchor_pos_b(src.episode_steps, host(data.body_pos_w)[:, i], host(data.body_quat_w)[:, i])


def gait_phase(time: Any, period: float, offset: float = 0.0) -> Any:
    """``(n, 2)``: sin and cos of ``2 pi (time / period + offset)``, the gait clock legged_gym's and Unitree's humanoid
    policies read (``phase = t % period / period``; ``[sin(2 pi phase), cos(2 pi phase)]``)."""
    import numpy as np

    phase = 2.0 * np.pi * (np.asarray(time, np.float64) / period + offset)
    return np.stack([np.sin(phase), np.cos(phase)], axis=-1).astype(np.float32)


XYZ = ("x", "y", "z")

OBS_TERMS: Mapping[str, KnownTerm] = MappingProxyType(
    {
        "base_lin_vel": KnownTerm(
            "none",
            3,
            "root centre-of-mass linear velocity in the base frame (m/s): Isaac Lab's root_lin_vel_b",
            _data("root_lin_vel_b"),
            isaaclab=("base_lin_vel",),
            noise=0.1,
            tolerance=1e-3,
            components=XYZ,
        ),
        "base_link_lin_vel": KnownTerm(
            "none",
            3,
            "root link frame origin's linear velocity in the base frame (m/s), not its centre of mass's",
            _link_velocity,
            mjlab=("base_lin_vel",),
            noise=0.1,
            tolerance=1e-3,
            components=XYZ,
        ),
        "base_ang_vel": KnownTerm(
            "none",
            3,
            "root angular velocity in the base frame (rad/s)",
            _data("root_ang_vel_b"),
            isaaclab=("base_ang_vel",),
            mjlab=("base_ang_vel",),
            noise=0.2,
            tolerance=1e-3,
            components=XYZ,
        ),
        "projected_gravity": KnownTerm(
            "none",
            3,
            "unit gravity direction in the base frame",
            _data("projected_gravity_b"),
            isaaclab=("projected_gravity",),
            mjlab=("projected_gravity",),
            noise=0.05,
            components=XYZ,
        ),
        "velocity_commands": KnownTerm(
            "none",
            3,
            "commanded vx, vy (m/s, base frame) and yaw rate wz (rad/s)",
            lambda src, p: src.command,
            isaaclab=("generated_commands",),
            mjlab=("command", "velocity_commands"),
            tolerance=1e-6,
            components=("vx", "vy", "wz"),
        ),
        "joint_pos_rel": KnownTerm(
            "joint",
            None,
            "joint position minus the default joint position",
            lambda src, p: host(src.art.data.joint_pos) - src.default_joint_pos,
            isaaclab=("joint_pos_rel",),
            mjlab=("joint_pos", "joint_pos_rel"),
            noise=0.01,
        ),
        "joint_vel_rel": KnownTerm(
            "joint",
            None,
            "joint velocity minus the default joint velocity (0)",
            _data("joint_vel"),
            isaaclab=("joint_vel_rel",),
            mjlab=("joint_vel", "joint_vel_rel"),
            noise=1.5,
        ),
        "last_action": KnownTerm(
            "joint",
            None,
            "the previous raw action (action-sized: the action term's joints)",
            lambda src, p: src.last_action,
            isaaclab=("last_action",),
            mjlab=("actions", "last_action"),
            tolerance=1e-6,
        ),
        "joint_pos": KnownTerm(
            "joint", None, "joint position (absolute, rad or m)", _data("joint_pos"), isaaclab=("joint_pos",)
        ),
        "joint_vel": KnownTerm("joint", None, "joint velocity (absolute)", _data("joint_vel"), isaaclab=("joint_vel",)),
        "gait_phase": KnownTerm(
            "none",
            2,
            "gait clock: sin and cos of 2 pi (t / period + offset), t the time since the env's reset (s)",
            lambda src, p: gait_phase(src.episode_time, p["period"], p["offset"]),
            isaaclab=("gait_phase",),
            mjlab=("gait_phase", "phase"),
            tolerance=1e-5,
            components=("sin", "cos"),
            params=MappingProxyType({"period": None, "offset": 0.0}),
        ),
        "motion_command": KnownTerm(
            "joint",
            None,
            "the reference motion's joint positions, then joint velocities, at the frame the env is at (2 per joint)",
            _motion_command,
            mjlab=("motion_command",),
            tolerance=1e-6,
            per_joint=2,
            motion=True,
            components=("pos", "vel"),
        ),
        "motion_anchor_ori_b": KnownTerm(
            "none",
            6,
            "the reference anchor orientation in the robot anchor's frame: its rotation matrix's first two "
            "columns, row by row",
            _motion_anchor_ori_b,
            isaaclab=("motion_anchor_ori_b",),
            mjlab=("motion_anchor_ori_b",),
            tolerance=1e-5,
            components=("m00", "m01", "m10", "m11", "m20", "m21"),
            motion=True,
        ),
        "motion_anchor_pos_b": KnownTerm(
            "none",
            3,
            "the reference anchor position in the robot anchor's frame (m)",
            _motion_anchor_pos_b,
            isaaclab=("motion_anchor_pos_b",),
            mjlab=("motion_anchor_pos_b",),
            tolerance=1e-5,
            components=XYZ,
            motion=True,
        ),
    }
)
"""Observation terms by name (transfer's names are Isaac Lab's observation functions', ``generated_commands``
aside). Joint terms follow the articulation's joint count, except ``last_action``, which follows the action term
(all joints unless it names some)."""


def _by_other_name(field: str) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for name, term in OBS_TERMS.items():
        for other in getattr(term, field):
            out[other] = name
    return MappingProxyType(out)


def isaaclab_names() -> Mapping[str, str]:
    """Isaac Lab observation function -> transfer's term."""
    return _by_other_name("isaaclab")


def mjlab_names() -> Mapping[str, str]:
    """mjlab observation term name -> transfer's term."""
    return _by_other_name("mjlab")


# ---------------------------------------------------------------------------------------------------- other names


def check_aliases(value: Any, where: str = "observation_aliases") -> Mapping[str, str]:
    """A task's ``observation_aliases``: a term's name in another project -> the term transfer builds for it
    (``{keyboard_velocity_commands: velocity_commands}``); each target must be a name of :data:`OBS_TERMS`."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise TaskError(
            f"{where}: expected a mapping from a term's name in your project to the term transfer builds "
            f"for it ({', '.join(OBS_TERMS)}), got {value!r}"
        )
    out: dict[str, str] = {}
    for name, term in value.items():
        if not isinstance(name, str) or not name or not name.isprintable() or len(name) > 256:
            raise TaskError(f"{where}: {name!r} is not a term name (a non-empty printable string)")
        if not isinstance(term, str) or term not in OBS_TERMS:
            raise TaskError(
                f"{where}.{name}: {term!r} is no observation term transfer builds; map it to one of "
                f"{', '.join(OBS_TERMS)}"
            )
        out[name] = term
    return MappingProxyType(out)


def alias_hint(name: str) -> str:
    """How a user maps a term of another name onto one transfer builds: what an "unknown term" refusal ends with."""
    return (
        f"if it is one of them under another name, map it: --set observation_aliases.{name}=TERM (or "
        f"observation_aliases: {{{name}: TERM}} in a task file; docs/replay.md)"
    )
