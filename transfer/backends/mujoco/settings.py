"""MuJoCo's settings in a task (the ``mujoco:`` section): ``<option>`` values that override the robot file's.

Light on purpose (no mujoco import): the task model checks a task file's ``mujoco:`` section through
:func:`transfer.backends.check_settings`, which imports this module and nothing else of the backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from transfer._numbers import is_finite_number

__all__ = ["CHOICES", "COUNTS", "check", "describe", "starting", "training", "variations"]

CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "integrator": ("euler", "rk4", "implicit", "implicitfast"),
        "cone": ("pyramidal", "elliptic"),
        "solver": ("pgs", "cg", "newton"),
    }
)
"""``<option>`` attributes that name one of MuJoCo's choices."""
COUNTS: tuple[str, ...] = ("iterations", "ls_iterations", "noslip_iterations")
"""``<option>`` attributes that count solver iterations (integers >= 1; ``noslip_iterations`` >= 0)."""
_NUMBERS = ("impratio", "tolerance", "ls_tolerance")

_IMPLICIT_PD = MappingProxyType({"integrator": "implicitfast"})
"""A PD drive's damping integrated implicitly, as PhysX's drives (Isaac Lab) and mjlab's MuJoCo-Warp (its default
integrator) integrate it. MuJoCo's default Euler integrates an actuator's ``kv`` explicitly: a drive's damping over
a light link's inertia past 2 / dt rings and blows up (Unitree's G1 MJCF, whose ankles weigh 74 g and whose joints
author no armature: every env tilted past 60 degrees within 0.3 s, standing still)."""
_MJLAB = MappingProxyType({**_IMPLICIT_PD, "iterations": 10, "ls_iterations": 20})


def check(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` checked; raises ``ValueError`` naming ``where``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {value!r}")
    known = (*CHOICES, *COUNTS, *_NUMBERS)
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown settings {unknown}; known: {sorted(known)} (MuJoCo's <option>)")
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key in CHOICES:
            if str(v).lower() not in CHOICES[key]:
                raise ValueError(f"{where}.{key}: expected one of {list(CHOICES[key])}, got {v!r}")
            out[key] = str(v).lower()
        elif key in COUNTS:
            low = 0 if key == "noslip_iterations" else 1  # 0 solver iterations leave the contacts unsolved
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 10_000:
                raise ValueError(f"{where}.{key}: expected an integer in [{low}, 10000], got {v!r}")
            out[key] = int(v)
        else:
            if not is_finite_number(v) or v <= 0:
                raise ValueError(f"{where}.{key}: expected a number > 0, got {v!r}")
            out[key] = float(v)
    return MappingProxyType(out)


def describe(value: Mapping[str, Any]) -> str:
    """One line for ``transfer info`` and a replay's settings line."""
    return ", ".join(f"{k} {v}" for k, v in value.items()) or "the robot file's own <option>"


def training(setup: str, facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """The MuJoCo settings a training ``setup`` implies: mjlab's (``implicitfast``, its solver iterations 10, line
    search 20); Isaac Lab's (its runs and its legged robots), driven by implicit PD drives: ``implicitfast``; legged_gym, whose PD
    torque is computed outside the engine (and ``deploy_mujoco.py`` runs the file as it is): the file's own
    options."""
    del facts
    return {"mjlab": _MJLAB, "isaaclab": _IMPLICIT_PD, "isaaclab_legged": _IMPLICIT_PD}.get(setup, MappingProxyType({}))


def starting(asset: Any) -> tuple[Mapping[str, Any], str, bool]:
    """What a new task file starts from: nothing (the robot file's own ``<option>``), and nothing to decide."""
    del asset
    return (
        MappingProxyType({}),
        "MuJoCo's settings: the robot file's own <option> (integrator, solver iterations)",
        False,
    )


def variations(value: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``<option>`` values ``transfer diagnose`` tries instead of ``value``: mjlab's 10 / 20 iterations and
    MuJoCo's own 100 / 50 (line search)."""
    out = []
    for its, ls in ((10, 20), (100, 50)):
        if (value.get("iterations"), value.get("ls_iterations")) != (its, ls):
            out.append(
                (f"{its} solver / {ls} line-search iterations", {**value, "iterations": its, "ls_iterations": ls})
            )
    return out
