"""Apply one ordering convention to an articulation config, and catch inconsistent overrides.

Isaac Lab selects the public order of an articulation with two config fields, ``joint_ordering`` and
``body_ordering``. Setting one without the other is the silent failure its transfer guide warns about:
joint vectors follow the checkpoint while body vectors keep the backend's order. The helpers here set
both together and flag command lines that do not.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import warnings
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, TypeVar

from transfer.ordering import OrderingConvention, parse_ordering

__all__ = [
    "ORDERING_FIELDS",
    "OrderingOverrideWarning",
    "apply_articulation_ordering_preset",
    "check_ordering_overrides",
]

ORDERING_FIELDS = ("joint_ordering", "body_ordering")
C = TypeVar("C")


class OrderingOverrideWarning(UserWarning):
    """Joint and body orderings were overridden inconsistently for one articulation."""


def _is_omegaconf(cfg: Any) -> bool:
    return type(cfg).__module__.startswith("omegaconf")


def apply_articulation_ordering_preset(cfg: C, ordering: str | OrderingConvention | None) -> C:
    """Return a copy of ``cfg`` with ``joint_ordering`` and ``body_ordering`` both set to ``ordering``.

    ``ordering`` is a convention (member or case-insensitive name); ``None`` returns ``cfg`` itself,
    unchanged. ``cfg`` may be a dataclass, an Isaac Lab-style config object (``replace(**kw)`` or
    ``copy()`` + attributes), a dict, or an OmegaConf ``DictConfig``. The input is never modified.
    OmegaConf configs receive the plain string value; all others receive the :class:`OrderingConvention`
    member (a ``str``).
    """
    parsed = parse_ordering(ordering)
    if parsed is None:
        return cfg
    if not isinstance(parsed, OrderingConvention):
        raise TypeError(
            "A preset sets joints and bodies from one convention; an explicit name list only fits one of them. "
            "Set joint_ordering and body_ordering separately for explicit lists."
        )
    if _is_omegaconf(cfg):
        from omegaconf import open_dict

        out = copy.deepcopy(cfg)
        with open_dict(out):
            for name in ORDERING_FIELDS:
                out[name] = parsed.value
        return out
    values = dict.fromkeys(ORDERING_FIELDS, parsed)
    if isinstance(cfg, Mapping):
        out = dict(cfg) if not isinstance(cfg, MutableMapping) else copy.copy(cfg)
        out.update(values)
        return out  # type: ignore[return-value]
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        names = {f.name for f in dataclasses.fields(cfg)}
        _require_fields(cfg, names)
        return dataclasses.replace(cfg, **values)
    if callable(getattr(cfg, "replace", None)):
        _require_fields(cfg, set(dir(cfg)))
        return cfg.replace(**values)
    if callable(getattr(cfg, "copy", None)):
        _require_fields(cfg, set(dir(cfg)))
        out = cfg.copy()
        for name, value in values.items():
            setattr(out, name, value)
        return out
    raise TypeError(
        f"Cannot apply an ordering preset to {type(cfg).__name__}: expected a dataclass, a dict, an OmegaConf "
        "config, or a config object with replace() or copy()."
    )


def _require_fields(cfg: Any, names: set[str]) -> None:
    missing = [name for name in ORDERING_FIELDS if name not in names]
    if missing:
        raise AttributeError(
            f"{type(cfg).__name__} has no field(s) {missing}; an ordering preset applies to an articulation "
            "config (Isaac Lab's ArticulationCfg) that declares joint_ordering and body_ordering."
        )


_OVERRIDE = re.compile(r"^(?P<op>\+\+|\+|~)?(?P<key>[^=]+?)(?:=(?P<value>.*))?$")


def _ordering_key(value: str) -> str:
    text = value.strip().strip("'\"")
    if text.lower() in ("null", "none", ""):
        return "None"
    if text.startswith("["):
        return "explicit list"
    try:
        return str(parse_ordering(text))
    except ValueError:
        return text


def check_ordering_overrides(overrides: Iterable[str], *, warn: bool = True) -> list[str]:
    """Check Hydra-style overrides for joint and body orderings that disagree.

    For every config prefix (``env.scene.robot`` in ``env.scene.robot.joint_ordering=mjwarp``) that
    overrides one of ``joint_ordering`` / ``body_ordering``, both must be overridden, to the same
    convention (explicit lists are accepted as they are). Each problem is returned as a message and,
    with ``warn=True``, emitted as an :class:`OrderingOverrideWarning`.
    """
    seen: dict[str, dict[str, str]] = {}
    for raw in overrides:
        match = _OVERRIDE.match(raw.strip())
        if match is None:
            continue
        key = match["key"].strip()
        prefix, _, field = key.rpartition(".")
        if field not in ORDERING_FIELDS:
            continue
        value = "None" if match["op"] == "~" else _ordering_key(match["value"] or "")
        seen.setdefault(prefix, {})[field] = value

    problems = []
    for prefix, fields in seen.items():
        where = f"{prefix}." if prefix else ""
        joint, body = fields.get("joint_ordering"), fields.get("body_ordering")
        if joint is None or body is None:
            have, lack = ("joint_ordering", "body_ordering") if body is None else ("body_ordering", "joint_ordering")
            problems.append(
                f"{where}{have}={fields[have]} is overridden but {where}{lack} is not: joint and body vectors "
                f"would follow different orders. Add {where}{lack}={fields[have]}."
            )
        elif joint != body and "explicit list" not in (joint, body):
            problems.append(
                f"{where}joint_ordering={joint} but {where}body_ordering={body}: joint and body vectors would "
                "follow different checkpoints' orders. Set both to the convention the checkpoint was trained with."
            )
    if warn:
        for message in problems:
            warnings.warn(message, OrderingOverrideWarning, stacklevel=2)
    return problems
