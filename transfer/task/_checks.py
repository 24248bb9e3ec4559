"""Field checks shared by the task readers and the task value: each error names the field it found wrong."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from transfer._console import printable
from transfer.ordering import MAX_NAMES, OrderingConvention

__all__ = ["TaskError", "convention_names"]


def convention_names() -> list[str]:
    """The joint-order conventions a task may name: every registered one (:mod:`transfer.orders.conventions`)."""
    return [c.value for c in OrderingConvention]


_REGEX_CHARS = frozenset(".^$*+?{}[]\\|()")


class TaskError(ValueError):
    """A task description is malformed, or does not fit the asset it is applied to."""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if isinstance(value, str):
            try:
                float(value)
                hint = "; a number written as text: write it without quotes (1e9 and 1.0e+9 are numbers)"
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
    value = list(value)
    if len(value) > MAX_NAMES:
        raise TaskError(f"{where}: {len(value)} names, more than any robot has (at most {MAX_NAMES})")
    names = tuple(_text(n, f"{where}[{i}]") for i, n in enumerate(value))
    odd = next((n for n in names if not n.isprintable() or len(n) > 256), None)
    if odd is not None:
        raise TaskError(
            f"{where}: the name '{printable(odd, 80)}' holds control characters or is over 256 "
            "characters long; no robot's joint or body is named so"
        )
    dup = sorted(n for n, k in Counter(names).items() if k > 1)
    if dup:
        raise TaskError(f"{where}: names listed twice: {dup[:10]}")
    return names


def _values(value: Any, where: str) -> Mapping[str, float]:
    if not isinstance(value, Mapping):
        raise TaskError(f"{where}: expected a mapping from joint name or pattern to a number, got {value!r}")
    return MappingProxyType({_text(k, f"{where} key"): _number(v, f"{where}[{k!r}]") for k, v in value.items()})


def _convention(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in OrderingConvention:
        raise TaskError(f"{where}: expected one of {convention_names()} or null, got {value!r}")
    return value


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return frozenset((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _is_pattern(name: str) -> bool:
    return any(c in _REGEX_CHARS for c in name)
