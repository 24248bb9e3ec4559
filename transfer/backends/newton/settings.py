"""Newton's settings in a task (the ``newton:`` section): the solver and its keyword arguments.

Light on purpose (no newton, no warp): the task model checks a task file's ``newton:`` section through
:func:`transfer.backends.check_settings`, which imports this module and nothing else of the backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from transfer._numbers import is_finite_number

__all__ = ["MUJOCO_FAMILY", "SOLVERS", "check", "collision_variations", "describe", "training", "variations"]

SOLVERS: tuple[str, ...] = ("mujoco_cpu", "mujoco_warp", "xpbd", "semi_implicit")
"""The solvers the backend builds."""

MUJOCO_FAMILY: frozenset[str] = frozenset({"mujoco_cpu", "mujoco_warp"})
"""One trajectory, two engines: a scene naming either lets the backend pick by world count (MuJoCo C simulates
world 0 only)."""

_MJLAB_OPTIONS = MappingProxyType({"iterations": 10, "ls_iterations": 20})


def _option(value: Any) -> bool:
    return isinstance(value, (bool, str)) or is_finite_number(value)


def check(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` checked (``solver`` one of :data:`SOLVERS` or ``auto``; ``solver_options`` a mapping from name to
    a number, bool or string); raises ``ValueError`` naming ``where``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {value!r}")
    unknown = sorted(set(value) - {"solver", "solver_options", "mesh_maxhullvert"})
    if unknown:
        raise ValueError(
            f"{where}: unknown settings {unknown}; known: ['mesh_maxhullvert', 'solver', 'solver_options']"
        )
    out: dict[str, Any] = {}
    if "solver" in value:
        solver = value["solver"]
        if solver not in (*SOLVERS, "auto"):
            raise ValueError(f"{where}.solver: expected one of {list(SOLVERS)} or 'auto', got {solver!r}")
        out["solver"] = solver
    if "solver_options" in value:
        opts = value["solver_options"]
        if not isinstance(opts, Mapping) or not all(isinstance(k, str) and _option(v) for k, v in opts.items()):
            raise ValueError(f"{where}.solver_options: expected a mapping from name to a number, bool or string")
        for key, v in opts.items():  # a count of iterations: 0 or a negative one runs no solver, 1e8 never ends
            if key.endswith("iterations") and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10_000):
                raise ValueError(f"{where}.solver_options.{key}: expected an integer in [1, 10000], got {v!r}")
        out["solver_options"] = MappingProxyType(dict(opts))
    if "mesh_maxhullvert" in value:
        hull = value["mesh_maxhullvert"]
        if isinstance(hull, bool) or not isinstance(hull, int) or not (hull == -1 or 4 <= hull <= 100_000):
            raise ValueError(
                f"{where}.mesh_maxhullvert: expected -1 (a mesh collider's whole convex hull) or an "
                f"integer in [4, 100000] (at most that many hull vertices), got {hull!r}"
            )
        out["mesh_maxhullvert"] = hull
    return MappingProxyType(out)


def describe(value: Mapping[str, Any]) -> str:
    """One line for ``transfer info`` and a replay's settings line."""
    options, hull = value.get("solver_options"), value.get("mesh_maxhullvert")
    return (
        f"{value.get('solver', 'auto')}"
        + (f", options {dict(options)}" if options else "")
        + (f", mesh hulls of at most {hull} vertices" if hull not in (None, -1) else "")
    )


def training(setup: str, facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Newton settings a training ``setup`` implies (:func:`transfer.backends.training_settings`).

    ``isaaclab`` / ``isaaclab_legged``: the run's Newton solver (``facts["newton_solver"]``), else MuJoCo-Warp; ``mjlab``: MuJoCo-Warp at
    mjlab's 10 solver and 20 line-search iterations; ``legged_gym`` (Isaac Gym, never Newton): the solver by world
    count.
    """
    if setup == "mjlab":
        return MappingProxyType({"solver": "mujoco_warp", "solver_options": _MJLAB_OPTIONS})
    if setup in ("isaaclab", "isaaclab_legged"):
        solver = facts.get("newton_solver") or "mujoco_warp"
        return MappingProxyType({"solver": solver} if solver in SOLVERS else {})
    return MappingProxyType({})


def starting(asset: Any) -> tuple[Mapping[str, Any], str, bool]:
    """What a new task file (``transfer task``) starts from: MuJoCo-Warp (Isaac Lab's Newton solver), its comment,
    and ``False`` (nothing to decide)."""
    del asset
    return (
        MappingProxyType({"solver": "mujoco_warp"}),
        "Newton's solver: mujoco_warp (MuJoCo-Warp; replay picks MuJoCo C for one environment)",
        False,
    )


def variations(value: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The solver settings ``transfer diagnose`` tries instead of ``value``: MuJoCo's solver at mjlab's 10 / 20
    iterations and at MuJoCo's own 100 / 50 (line search)."""
    options = dict(value.get("solver_options") or {})
    out = []
    for its, ls in ((10, 20), (100, 50)):
        if (options.get("iterations"), options.get("ls_iterations")) != (its, ls):
            out.append(
                (
                    f"{its} solver / {ls} line-search iterations",
                    {**value, "solver_options": {**options, "iterations": its, "ls_iterations": ls}},
                )
            )
    return out


def collision_variations(value: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The collision geometry ``transfer diagnose`` tries instead of ``value``'s: mesh colliders with their whole
    convex hull, when ``value`` caps it (Newton's own default, 64 vertices, stops Qhull part way: a partial hull,
    half of H1-2's soles)."""
    if value.get("mesh_maxhullvert", -1) == -1:
        return []
    return [("whole mesh hulls", {**value, "mesh_maxhullvert": -1})]
