"""A sweep's grid: the cells a checked spec expands into (:func:`expand`), each named by a hash of its parameters
(:func:`cell_key`, what ``--resume`` matches records by), and whether a spec has grown from an earlier one
(:func:`not_grown_from`)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from transfer.env.perturbations import PERTURBATIONS, Perturbation

if TYPE_CHECKING:
    from transfer.runs.sweep.spec import Checkpoint

__all__ = ["KEY_FIELDS", "canonical_cell", "cell_key", "expand", "not_grown_from"]

KEY_FIELDS = (
    "checkpoint",
    "source",
    "config",
    "asset",
    "settings",
    "target",
    "seed",
    "num_envs",
    "seconds",
    "command",
    "perturbation",
    "device",
)
"""The parameters that name a cell (its label is only how it is shown); a tracker's cell adds ``motion``, its clip
(a velocity cell's key stays what it was)."""

_SCALARS = {"num_envs": 1, "seconds": 10.0, "device": "cpu", "record": False, "video": False}
"""The fields of a checked spec that a resumed sweep must keep (with their defaults, for a ``spec.json`` written
before the field existed); every other field is a list that may grow."""


def _shown(values: Any) -> str:
    return ", ".join(json.dumps(v) for v in values)


def _canon(value: Any) -> str:
    """``value`` as text in which equal specs are equal: numbers as floats (``1`` is ``1.0``), mappings sorted."""

    def plain(v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        return [plain(x) for x in v] if isinstance(v, (list, tuple)) else v

    return json.dumps(plain(value), sort_keys=True)


def not_grown_from(earlier: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """Why the checked spec ``now`` is neither ``earlier`` (an ``OUT/spec.json``) nor grown from it (``None``: it
    is one of them). Grown: every list of ``earlier`` (checkpoints, their labels aside; targets, seeds, commands,
    each perturbation's values, a perturbation it lacks counting as its neutral value) is held by ``now``, and
    ``num_envs``, ``seconds``, ``device`` and ``record`` are equal: every cell of ``earlier`` is a cell of ``now``."""
    now = json.loads(json.dumps(now))  # as spec.json holds it: lists, not tuples
    for key, default in _SCALARS.items():
        there, here = earlier.get(key, default), now.get(key, default)
        if _canon(there) != _canon(here):
            return f"{key} {json.dumps(there)} there, {json.dumps(here)} here"
    if (earlier.get("commands") is None) != (now.get("commands") is None):
        return f"commands {json.dumps(earlier.get('commands'))} there, {json.dumps(now.get('commands'))} here"
    entry = lambda c: _canon({k: v for k, v in c.items() if k != "name"} if isinstance(c, Mapping) else c)  # noqa: E731
    lists = [(key, earlier.get(key) or [], now.get(key) or [], _canon) for key in ("targets", "seeds", "commands")]
    lists.append(("checkpoints", earlier.get("checkpoints") or [], now.get("checkpoints") or [], entry))
    before, after = earlier.get("perturbations") or {}, now.get("perturbations") or {}
    for name in dict.fromkeys([*before, *after]):
        neutral = [PERTURBATIONS[name].neutral] if name in PERTURBATIONS else []
        lists.append((f"perturbations.{name}", before.get(name, neutral), after.get(name, neutral), _canon))
    for key, there, here, named in lists:
        held = {named(v) for v in here}
        lost = [v for v in there if named(v) not in held]
        if lost:
            shown = (
                _shown(c.get("path") if isinstance(c, Mapping) else c for c in lost)
                if key == "checkpoints"
                else _shown(lost)
            )
            return f"{key} {shown} there, missing here"
    return None


def canonical_cell(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that name a cell (:data:`KEY_FIELDS`), in canonical types: integers where a field counts
    (seed, envs, delay), floats where it measures (``1`` and ``1.0`` are one cell), every perturbation present."""
    perturbation = {k: v + 0 for k, v in Perturbation.from_dict(cell.get("perturbation")).to_dict().items()}
    motion = {} if cell.get("motion") is None else {"motion": dict(cell["motion"])}  # a velocity cell's key as before
    return motion | {
        "checkpoint": str(cell["checkpoint"]),
        "source": cell.get("source"),
        "config": cell.get("config"),
        "asset": cell.get("asset"),
        "settings": dict(cell.get("settings") or {}),
        "target": str(cell["target"]),
        "seed": int(cell["seed"]),
        "num_envs": int(cell["num_envs"]),
        "seconds": float(cell["seconds"]),
        "command": [float(c) + 0.0 for c in cell["command"]],  # + 0.0: -0.0 is 0.0
        "perturbation": perturbation,
        "device": str(cell.get("device", "cpu")),
    }


def cell_key(cell: Mapping[str, Any]) -> str:
    """A cell's name: a hash of all its parameters (:func:`canonical_cell`), the same for equal cells however
    their mappings are ordered or their numbers spelt. ``--resume`` matches ``cells.jsonl`` records by it."""
    text = json.dumps(canonical_cell(cell), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def expand(spec: Mapping[str, Any], checkpoints: Sequence[Checkpoint]) -> tuple[list[dict[str, Any]], int]:
    """The cells of a checked spec: the product of checkpoints, targets, seeds, commands and every perturbation's
    values (in that order), then a native reference for each checkpoint, seed and command the grid lacks.
    Returns ``(cells, references added)``; each cell carries its ``key`` and ``label``."""
    names = list(spec["perturbations"])
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*spec["perturbations"].values())]
    cells: list[dict[str, Any]] = []
    keys: set[str] = set()
    references: list[dict[str, Any]] = []
    for c in checkpoints:
        commands = spec["commands"] or [list(c.command)]
        for seed, command in itertools.product(spec["seeds"], commands):
            base = {
                "checkpoint": c.path,
                "source": c.source,
                "config": c.config,
                "asset": c.asset,
                "settings": c.settings,
                "seed": seed,
                "num_envs": spec["num_envs"],
                "seconds": spec["seconds"],
                "command": command,
                "device": spec["device"],
                "motion": c.motion,
            }
            for target, combo in itertools.product(spec["targets"], combos):
                cells.append(_cell(base, target, combo, c.label, keys) | {"inputs": c.inputs})
            reference = _cell(base, c.native, {}, c.label, set()) | {"inputs": c.inputs}
            if reference["key"] not in keys:
                keys.add(reference["key"])
                references.append(reference)
    return cells + references, len(references)


def _cell(base: dict[str, Any], target: str, combo: dict[str, Any], label: str, keys: set[str]) -> dict[str, Any]:
    cell = canonical_cell({**base, "target": target, "perturbation": combo})
    cell["key"] = cell_key(cell)
    cell["label"] = label
    keys.add(cell["key"])
    return cell
