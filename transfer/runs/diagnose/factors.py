"""The factors ``transfer diagnose`` varies, one at a time, on the target, and the values it tries for each.

Each factor is one function of the native run's task, the target's task (the conditions being diagnosed), the target
engine and the target's perturbation, returning :class:`Candidate` values. Every factor first tries **as the native
run has it** when the target's conditions differ there (a wrong training condition is then undone exactly), then
the documented range below (docs/diagnose.md):

======================  ===========================================================================================
``actuators``           stiffness and damping x0.5 and x2 (``gain_scale``); the other actuator model (implicit PD
                        <-> ideal PD computed every physics step)
``armature``            0, and 0.01 kg·m² on every joint
``joint_friction``      0, and 0.05 on every joint
``effort_limit``        the asset's limits (when the task sets its own)
``velocity_limit``      the asset's limits (when the task sets its own; only PhysX enforces joint velocity limits)
``solver``              the target engine's own variations (:func:`transfer.backends.solver_variations`): more and
                        fewer iterations
``collision``           the target engine's own collision geometry variations
                        (:func:`transfer.backends.collision_variations`): Newton's whole mesh hulls, when the task caps
                        them
``timing``              half the physics step at twice the decimation (the same policy rate)
``ground``              static and dynamic friction 0.5 and 1.5; the other friction combine mode
``action_delay``        1 and 2 physics steps of delay (none, when the target has one)
``observation_noise``   each term's training noise x0.5 and x1 (``obs_noise``; none, when the target has some)
======================  ===========================================================================================

A new factor is one function and one :data:`FACTORS` entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from transfer.backends import collision_variations, solver_variations
from transfer.backends.scene import DEFAULT_GROUND

__all__ = ["FACTORS", "Candidate", "candidates", "flag_lines"]

AS_NATIVE = "as the native run"


@dataclass(frozen=True)
class Candidate:
    """One value of one factor: task fields to change on the target by dotted name (``--set``) and perturbations
    to run it under (``--perturb``, replacing the target's)."""

    factor: str
    label: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    perturbation: Mapping[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The command-line flags that set this candidate: ``--set FIELD=VALUE`` (YAML) and ``--perturb K=V``."""
        return flag_lines(self.settings, self.perturbation)


def flag_lines(settings: Mapping[str, Any], perturbation: Mapping[str, Any]) -> list[str]:
    """``--set FIELD=VALUE`` (YAML, quoted for a shell where it must be) and ``--perturb K=V`` flags."""
    import yaml

    out = []
    for key, value in settings.items():
        text = yaml.safe_dump(_plain(value), default_flow_style=True, width=10_000).strip()
        text = text.removesuffix("\n...").removesuffix("...").strip()
        out.append(f"--set '{key}={text}'" if any(c in text for c in " {}[]*,:'\"") else f"--set {key}={text}")
    return out + [f"--perturb {k}={v}" for k, v in perturbation.items()]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        values = list(value.values())
        if len(values) > 1 and all(isinstance(v, (int, float)) and v == values[0] for v in values):
            return {".*": values[0]}  # one value for every joint: one pattern, not a list of names
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _native(
    factor: str,
    fields: tuple[str, ...],
    native: dict,
    target: dict,
    perturb: Mapping[str, Any],
    neutral: Mapping[str, Any],
) -> list[Candidate]:
    """``as the native run`` when the target's task differs in ``fields`` or its perturbation in ``neutral``."""
    settings = {f: native[f] for f in fields if native[f] != target[f]}
    undo = {k: v for k, v in neutral.items() if perturb.get(k, v) != v}
    return [Candidate(factor, AS_NATIVE, settings, undo)] if settings or undo else []


def _actuators(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    out = _native("actuators", ("stiffness", "damping", "actuators"), n, t, p, {"gain_scale": 1.0})
    scale = float(p.get("gain_scale", 1.0))
    out += [Candidate("actuators", f"gains x{s:g}", {}, {"gain_scale": scale * s}) for s in (0.5, 2.0)]
    if t["actuators"]:
        out.append(Candidate("actuators", "implicit PD (the engine's drive)", {"actuators": []}))
    else:
        groups = [{"name": "all", "model": "ideal_pd", "joints": [".*"]}]
        out.append(Candidate("actuators", "ideal PD every physics step", {"actuators": groups}))
    return out


def _joint_value(factor: str, key: str, values: tuple[float, ...]) -> Callable[..., list[Candidate]]:
    def make(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
        out = _native(factor, (key,), n, t, p, {})
        current = t[key] or {}
        for v in values:
            if set(current.values()) != {v}:
                out.append(Candidate(factor, f"{v:g} on every joint", {key: {".*": v}}))
        return out

    return make


def _limit(key: str) -> Callable[..., list[Candidate]]:
    def make(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
        out = _native(key, (key,), n, t, p, {})
        if t[key] is not None and n[key] is not None:
            out.append(Candidate(key, "the asset's limits", {key: None}))
        return out

    return make


def _solver(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    out = _native("solver", (engine,), n, t, p, {})
    return out + [Candidate("solver", label, {engine: dict(v)}) for label, v in solver_variations(engine, t[engine])]


def _collision(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    return [Candidate("collision", label, {engine: dict(v)}) for label, v in collision_variations(engine, t[engine])]


def _timing(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    out = _native("timing", ("sim_dt", "decimation"), n, t, p, {})
    half = {"sim_dt": t["sim_dt"] / 2, "decimation": t["decimation"] * 2}
    return out + [Candidate("timing", f"{half['sim_dt'] * 1e3:g} ms x {half['decimation']}", half)]


def _ground(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    out = _native("ground", ("ground",), n, t, p, {"ground_friction": 1.0})
    ground = dict(t["ground"] or DEFAULT_GROUND.to_dict())
    unscaled = {"ground_friction": 1.0} if p.get("ground_friction", 1.0) != 1.0 else {}
    for mu in (0.5, 1.5):
        if (ground["static_friction"], ground["dynamic_friction"]) != (mu, mu):
            changed = {"ground.static_friction": mu, "ground.dynamic_friction": mu}
            out.append(Candidate("ground", f"friction {mu:g}", changed, unscaled))
    combine = "multiply" if ground["friction_combine"] == "max" else "max"
    out.append(Candidate("ground", f"friction combine {combine}", {"ground.friction_combine": combine}))
    return out


def _action_delay(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    out = _native("action_delay", (), n, t, p, {"action_delay": 0})
    current = int(p.get("action_delay", 0))
    return out + [
        Candidate("action_delay", f"{d} physics step(s)", {}, {"action_delay": d}) for d in (1, 2) if d != current
    ]


def _observation_noise(n: dict, t: dict, engine: str, p: Mapping[str, Any]) -> list[Candidate]:
    out = _native("observation_noise", (), n, t, p, {"obs_noise": 0.0})
    current = float(p.get("obs_noise", 0.0))
    return out + [
        Candidate("observation_noise", f"training noise x{s:g}", {}, {"obs_noise": s})
        for s in (0.5, 1.0)
        if s != current
    ]


FACTORS: Mapping[str, Callable[..., list[Candidate]]] = MappingProxyType(
    {
        "actuators": _actuators,
        "armature": _joint_value("armature", "armature", (0.0, 0.01)),
        "joint_friction": _joint_value("joint_friction", "friction", (0.0, 0.05)),
        "effort_limit": _limit("effort_limit"),
        "velocity_limit": _limit("velocity_limit"),
        "solver": _solver,
        "collision": _collision,
        "timing": _timing,
        "ground": _ground,
        "action_delay": _action_delay,
        "observation_noise": _observation_noise,
    }
)
"""Every factor, by name: ``(native task dict, target task dict, target engine, target perturbation) ->
[Candidate]``."""


def candidates(
    native: Any, target: Any, engine: str, perturbation: Mapping[str, Any], factors: tuple[str, ...] | None = None
) -> list[Candidate]:
    """Every candidate of ``factors`` (default: all of :data:`FACTORS`) for the target's task ``target`` on
    ``engine`` against the native run's task ``native`` (:class:`~transfer.Task` values)."""
    unknown = sorted(set(factors or ()) - set(FACTORS))
    if unknown:
        raise ValueError(f"--factor {', '.join(unknown)}: no such factor; factors: {', '.join(FACTORS)}")
    n, t = native.to_dict(), target.to_dict()
    for d in (n, t):  # every engine's section a plain dict, the target's included when neither task sets it
        d.update({name: dict(d.get(name) or {}) for name in {engine, *native.engines, *target.engines}})
    return [c for name in (factors or tuple(FACTORS)) for c in FACTORS[name](n, t, engine, dict(perturbation))]
