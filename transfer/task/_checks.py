"""Field checks shared by the task readers and the task value: each error names the field it found wrong."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from transfer.ordering import OrderingConvention

__all__ = ["CONVENTIONS", "TaskError"]

CONVENTIONS: tuple[str, ...] = tuple(c.value for c in OrderingConvention)
"""The joint-order conventions a task may name."""

_REGEX_CHARS = frozenset(".^$*+?{}[]\\|()")


class TaskError(ValueError):
    """A task description is malformed, or does not fit the asset it is applied to."""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if isinstance(value, str):
            try:
                float(value)
                hint = "; YAML reads a number with an exponent but no dot (1e9) as text: write 1.0e9"
            except ValueError:
                pass
        raise TaskError(f"{where}: expected a number, got {value!r} ({type(value).__name__}){hint}")
    out = float(value)
    if not math.isfinite(out):
        raise TaskError(f"{where}: expected a finite number, got {value!r}")
    return out


def _integer(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TaskError(f"{where}: expected an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise TaskError(f"{where}: expected an integer >= {minimum}, got {value}")
    return int(value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TaskError(f"{where}: expected a non-empty string, got {value!r} ({type(value).__name__})")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TaskError(f"{where}: expected a list of names, got {value!r} ({type(value).__name__})")
    names = tuple(_text(n, f"{where}[{i}]") for i, n in enumerate(value))
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TaskError(f"{where}: names listed twice: {dup}")
    return names


def _values(value: Any, where: str) -> Mapping[str, float]:
    if not isinstance(value, Mapping):
        raise TaskError(f"{where}: expected a mapping from joint name or pattern to a number, got {value!r}")
    return MappingProxyType({_text(k, f"{where} key"): _number(v, f"{where}[{k!r}]") for k, v in value.items()})


def _convention(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in CONVENTIONS:
        raise TaskError(f"{where}: expected one of {list(CONVENTIONS)} or null, got {value!r}")
    return value


_PHYSX_KEYS = {"solver_position_iterations": (1, 255), "solver_velocity_iterations": (0, 255)}
"""PhysX articulation solver iterations: the range PhysX accepts (``PxArticulationReducedCoordinate``)."""


def _physx(value: Any, where: str) -> Mapping[str, int]:
    if not isinstance(value, Mapping):
        raise TaskError(f"{where}: expected a mapping, got {value!r}")
    unknown = sorted(set(value) - set(_PHYSX_KEYS))
    if unknown:
        raise TaskError(f"{where}: unknown settings {unknown}; known: {sorted(_PHYSX_KEYS)}")
    out = {k: _integer(v, f"{where}.{k}", _PHYSX_KEYS[k][0]) for k, v in value.items()}
    high = {k: v for k, v in out.items() if v > _PHYSX_KEYS[k][1]}
    if high:
        raise TaskError(f"{where}: {high}: PhysX takes at most 255 iterations (Isaac Lab's legged robots: 4 and 0)")
    return MappingProxyType(out)


def _newton(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TaskError(f"{where}: expected a mapping, got {value!r}")
    unknown = sorted(set(value) - {"solver", "solver_options"})
    if unknown:
        raise TaskError(f"{where}: unknown settings {unknown}; known: ['solver', 'solver_options']")
    out: dict[str, Any] = {}
    if "solver" in value:
        out["solver"] = _text(value["solver"], f"{where}.solver")
    if "solver_options" in value:
        opts = value["solver_options"]
        if not isinstance(opts, Mapping) or not all(
            isinstance(k, str) and (isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v)))
            for k, v in opts.items()
        ):
            raise TaskError(f"{where}.solver_options: expected a mapping from name to a number, bool or string")
        out["solver_options"] = MappingProxyType(dict(opts))
    return MappingProxyType(out)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return frozenset((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _is_pattern(name: str) -> bool:
    return any(c in _REGEX_CHARS for c in name)
