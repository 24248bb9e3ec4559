"""PhysX's settings in a task (the ``physx:`` section): the articulation's solver iterations.

Light on purpose (no engine, no warp): the task model checks a task file's ``physx:`` section through
:func:`transfer.backends.check_settings`, which imports this module and nothing else of the backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["KEYS", "check", "describe", "training", "variations"]

KEYS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {"solver_position_iterations": (1, 255), "solver_velocity_iterations": (0, 255)}
)
"""Each setting and the range PhysX accepts (``PxArticulationReducedCoordinate``)."""

_LEGGED = MappingProxyType({"solver_position_iterations": 4, "solver_velocity_iterations": 0})


def check(value: Any, where: str) -> Mapping[str, int]:
    """``value`` checked (known keys, integers in PhysX's range); raises ``ValueError`` naming ``where``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {value!r}")
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown settings {unknown}; known: {sorted(KEYS)}")
    out = {}
    for key, v in value.items():
        low, high = KEYS[key]
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise ValueError(
                f"{where}.{key}: expected an integer in [{low}, {high}], got {v!r} (PhysX takes at most "
                f"{high} iterations; Isaac Lab's legged robots: 4 and 0)"
            )
        out[key] = int(v)
    return MappingProxyType(out)


def describe(value: Mapping[str, Any]) -> str:
    """One line for ``transfer info`` and a replay's settings line."""
    if not value:
        return "the asset's solver iterations"
    pos, vel = value.get("solver_position_iterations", "asset"), value.get("solver_velocity_iterations", "asset")
    return f"{pos} position / {vel} velocity iterations"


def training(setup: str, facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """The PhysX settings a training ``setup`` implies (:func:`transfer.backends.training_settings`).

    ``isaaclab``: the articulation's ``solver_position_iteration_count`` / ``solver_velocity_iteration_count`` in
    ``facts["articulation_props"]`` (Isaac Lab's ``ArticulationRootPropertiesCfg``; none there: the asset's);
    ``isaaclab_legged`` (a file from an Isaac Lab project that says nothing): its legged robots' 4 and 0;
    ``legged_gym``: Isaac Gym's ``LeggedRobotCfg.sim.physx`` (4 and 0); ``mjlab`` (which never trained on PhysX):
    Isaac Lab's legged iterations.
    """
    props = facts.get("articulation_props")
    if setup == "isaaclab" and isinstance(props, Mapping):
        out = {}
        for ours, theirs in (
            ("solver_position_iterations", "solver_position_iteration_count"),
            ("solver_velocity_iterations", "solver_velocity_iteration_count"),
        ):
            if isinstance(props.get(theirs), int) and not isinstance(props.get(theirs), bool):
                out[ours] = props[theirs]
        return check(out, "articulation_props")
    return _LEGGED


def starting(asset: Any) -> tuple[Mapping[str, Any], str, bool]:
    """What a new task file (``transfer task``) starts from on an asset whose authored settings are ``asset``
    (:class:`transfer.robot.profile.AssetSettings`): the iterations the asset authors, the comment on them, and ``True``
    (a human must decide: Isaac Lab trains at other iterations than assets often author)."""
    out = {}
    if asset.position_iterations is not None:
        out["solver_position_iterations"] = asset.position_iterations
    if asset.velocity_iterations is not None:
        out["solver_velocity_iterations"] = asset.velocity_iterations
    authored = (
        f" ({out.get('solver_position_iterations')} / {out.get('solver_velocity_iterations')})"
        if out
        else " (none: the engine's)"
    )
    text = (
        f"the solver iterations the asset authors on {asset.root}{authored}. Isaac Lab trains legged robots at "
        "4 / 0; with 32 / 16 a PhysX-trained ANYmal C falls on PhysX."
    )
    return check(out, "physx"), text, True


def variations(value: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The solver settings ``transfer diagnose`` tries instead of ``value`` (one factor: the solver iterations):
    twice and half the position iterations (Isaac Lab's legged 4 where none are set), with and without velocity
    iterations."""
    pos = int(value.get("solver_position_iterations", _LEGGED["solver_position_iterations"]))
    vel = int(value.get("solver_velocity_iterations", _LEGGED["solver_velocity_iterations"]))
    out = []
    for p, v in ((min(2 * pos, 255), vel), (max(pos // 2, 1), vel), (pos, 1 if vel == 0 else 0)):
        if (p, v) != (pos, vel) or not value:
            out.append(
                (
                    f"{p} position / {v} velocity iterations",
                    {**value, "solver_position_iterations": p, "solver_velocity_iterations": v},
                )
            )
    return out
