"""mjlab's ONNX policies: the task they describe in ``metadata_props``, read as a transfer task.

mjlab (Isaac Lab's manager API on MuJoCo-Warp) exports a policy with its training conditions attached as string
entries of the ONNX model's ``metadata_props`` (``mjlab/rl/exporter_utils.py``): ``joint_names``,
``joint_stiffness``, ``joint_damping``, ``default_joint_pos``, ``command_names``, ``observation_names``,
``observation_terms_scale``, ``observation_terms_clip``, ``observation_terms_history_length``,
``observation_terms_flatten_history_dim``, ``action_scale`` and ``run_path``. Lists are comma-separated; numbers
carry three decimals; a list inside a list (a per-entry scale, a clip) is written as ``[a, b]``. Every
joint-indexed value follows ``joint_names``, the MuJoCo model's joint order the policy was trained in.

:func:`is_mjlab` tells such a file by its keys, :func:`read_props` parses the strings, :func:`mjlab_task` gives the
task (trained on Newton / MuJoCo-Warp, in the listed joint order), and :func:`write_props` writes the same layout
(for tests and for users who export by hand). Observation terms map to transfer's by name (:data:`MJLAB_TERMS`);
an unknown term is refused naming it. What the metadata does not carry takes mjlab's velocity-task defaults
(:func:`mjlab_defaults`: 5 ms physics step, decimation 4, MuJoCo-Warp with 10 / 20 solver iterations).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transfer.backends import native_backend, training_settings
from transfer.formats.checkpoint import CheckpointError, build_metadata
from transfer.ordering import OrderingConvention
from transfer.task import ActionTerm, ObsTerm, Task, TaskError
from transfer.task.terms import mjlab_names

__all__ = [
    "mjlab_defaults",
    "MJLAB_KEYS",
    "MJLAB_TERMS",
    "MjlabError",
    "is_mjlab",
    "mjlab_metadata",
    "mjlab_task",
    "read_props",
    "write_props",
]

MJLAB_KEYS: Mapping[str, bool] = {
    "joint_names": True,
    "default_joint_pos": True,
    "observation_names": True,
    "action_scale": True,
    "joint_stiffness": False,
    "joint_damping": False,
    "command_names": False,
    "observation_terms_scale": False,
    "observation_terms_clip": False,
    "observation_terms_history_length": False,
    "observation_terms_flatten_history_dim": False,
    "run_path": False,
}
"""The ``metadata_props`` keys mjlab writes: name -> required."""

MJLAB_TERMS: Mapping[str, str] = mjlab_names()
"""mjlab observation term name -> transfer's (the ``mjlab`` names of :data:`transfer.task.terms.OBS_TERMS`: in
mjlab's velocity task ``joint_pos`` is ``joint_pos_rel``, ``joint_vel`` is ``joint_vel_rel``, ``actions`` the last
action, ``command`` the twist command)."""


def mjlab_defaults() -> dict[str, Any]:
    """What mjlab's velocity task trains with and its metadata does not say, as task fields: 5 ms physics, decimation
    4, and each engine's settings for an mjlab training (:func:`transfer.backends.training_settings` of ``mjlab``:
    MuJoCo-Warp at 10 / 20 iterations; on PhysX, where it never trained, the iterations Isaac Lab gives legged
    robots)."""
    return {"sim_dt": 0.005, "decimation": 4, **training_settings("mjlab")}


def trained_on() -> str | None:
    """The backend an mjlab policy replays natively on: the one whose engine orders as MuJoCo does on the MJCF
    mjlab trains on (the ``mujoco`` convention), else the one that stands in for it."""
    return native_backend(OrderingConvention.MUJOCO)


_INF = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf, "-infinity": -math.inf}


class MjlabError(TaskError):
    """mjlab metadata that cannot be read as a task; the message names the key and the fix."""


def is_mjlab(props: Mapping[str, str]) -> bool:
    """Whether ``metadata_props`` look like mjlab's (its joint names and at least its observation or action)."""
    return "joint_names" in props and ("observation_names" in props or "action_scale" in props)


# ---------------------------------------------------------------------------------------------------- strings


def _split(text: str) -> list[str]:
    """Top-level comma-separated items; ``[a, b]`` stays one item."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [] if items == [""] else items


def _number(text: str, where: str) -> float:
    text = text.strip()
    if text.lower() in _INF:
        return _INF[text.lower()]
    try:
        return float(text)
    except ValueError:
        raise MjlabError(f"{where}: {text!r} is not a number") from None


def _item(text: str, where: str) -> float | list[float]:
    if text.startswith("["):
        if not text.endswith("]"):
            raise MjlabError(f"{where}: unbalanced brackets in {text!r}")
        return [_number(t, where) for t in _split(text[1:-1])]
    return _number(text, where)


def read_props(props: Mapping[str, str], where: str = "mjlab metadata") -> dict[str, Any]:
    """The mjlab entries of ``metadata_props`` parsed: name lists as ``list[str]``, numbers as floats (a list
    for a list), nested lists as lists. Unknown keys are ignored (mjlab tasks may add their own)."""
    missing = [k for k, required in MJLAB_KEYS.items() if required and k not in props]
    if missing:
        raise MjlabError(f"{where}: missing keys {missing}; an mjlab policy lists {list(MJLAB_KEYS)}")
    out: dict[str, Any] = {}
    for key in MJLAB_KEYS:
        if key not in props:
            continue
        text, at = str(props[key]), f"{where}: {key}"
        if key in ("joint_names", "command_names", "observation_names"):  # names: no nesting ('[' is a character)
            out[key] = [t.strip() for t in text.split(",") if t.strip()]
        elif key == "run_path":
            out[key] = text
        elif key == "observation_terms_flatten_history_dim":
            out[key] = [_flag(t, at) for t in _split(text)]  # mjlab writes a bool as a number: 1.000
        elif key == "action_scale":
            items = _split(text)
            out[key] = _number(items[0], at) if len(items) == 1 else [_number(t, at) for t in items]
        else:
            out[key] = [_item(t, at) for t in _split(text)]
    return out


def _flag(text: str, where: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "false"):
        return word == "true"
    return _number(word, where) != 0.0


def _csv(values: Sequence[Any]) -> str:
    def one(v: Any) -> str:
        if isinstance(v, (int, float)):  # a bool too, as mjlab's list_to_csv_str writes it (True -> 1.000)
            return f"{v:.3f}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(one(x) for x in v) + "]"
        return str(v)

    return ",".join(one(v) for v in values)


def write_props(metadata: Mapping[str, Any]) -> dict[str, str]:
    """``metadata_props`` strings in mjlab's layout (lists comma-separated, numbers with three decimals)."""
    return {k: _csv(v) if isinstance(v, (list, tuple)) else str(v) for k, v in metadata.items()}


# ---------------------------------------------------------------------------------------------------- task


def _per_term(parsed: Mapping[str, Any], key: str, count: int, default: Any, where: str) -> list[Any]:
    values = parsed.get(key)
    if values is None:
        return [default] * count
    if len(values) != count:
        raise MjlabError(f"{where}: {key} has {len(values)} entries for {count} observation terms")
    return list(values)


def _term(name: str, scale: Any, clip: Any, history: Any, flatten: Any, where: str, motion: bool = False) -> ObsTerm:
    """The term mjlab's ``name`` is; ``motion``: the policy's command is a reference motion (``command_names``
    ``["motion"]``, mjlab's tracking task), so its ``command`` term is ``motion_command``."""
    ours = "motion_command" if motion and name == "command" else MJLAB_TERMS.get(name)
    if ours is None:
        raise MjlabError(
            f"{where}: observation term {name!r} has no transfer equivalent; known mjlab terms: {sorted(MJLAB_TERMS)}. "
            "Replay it with a task file (--config) that describes the observation with transfer's terms."
        )
    steps = history or 0
    if isinstance(steps, list) or not float(steps).is_integer() or steps < 0:
        raise MjlabError(f"{where}: observation term {name!r}: history length {history!r} is not a whole number")
    if steps > 0 and flatten is False:
        raise MjlabError(
            f"{where}: observation term {name!r} keeps its {int(steps)}-step history as a separate axis "
            "(flatten_history_dim false); a policy reading one flat vector cannot take it"
        )
    low, high = clip if isinstance(clip, list) and len(clip) == 2 else (None, None)
    if clip is not None and (low is None or math.isnan(low) or math.isnan(high)):  # [nan, inf] read as no clip
        raise MjlabError(
            f"{where}: observation term {name!r}: clip {clip!r} is not [low, high] (two numbers; inf for no bound)"
        )
    bounded = clip is not None and (math.isfinite(low) or math.isfinite(high))
    try:
        return ObsTerm(
            ours,
            scale=tuple(scale) if isinstance(scale, list) else float(scale),
            clip=(low, high) if bounded else None,
            history_length=int(steps),
        )
    except TaskError as exc:
        raise MjlabError(f"{where}: observation term {name!r}: {exc}") from None


def _by_joint(parsed: Mapping[str, Any], key: str, joints: Sequence[str], where: str) -> dict[str, float]:
    values = parsed.get(key)
    if values is None:
        return {}
    if len(values) != len(joints) or any(isinstance(v, list) for v in values):
        raise MjlabError(f"{where}: {key} has {len(values)} numbers for {len(joints)} joint_names")
    return dict(zip(joints, map(float, values), strict=True))


def mjlab_task(props: Mapping[str, str], *, source: str = "mjlab metadata") -> Task:
    """The task an mjlab policy's ``metadata_props`` describe: its joint order (``joint_names``), defaults, gains,
    per-joint action scale, observation terms by name with their scale and clip, trained on Newton/MuJoCo-Warp.

    Values mjlab does not record (physics step, decimation, solver) are :func:`mjlab_defaults`; the command is
    1 m/s forward. Raises :class:`MjlabError` naming the key or term.
    """
    parsed = read_props(props, source)
    joints = parsed["joint_names"]
    if len(set(joints)) != len(joints):
        raise MjlabError(f"{source}: joint_names lists a joint twice: {joints}")
    names = parsed["observation_names"]
    motion = list(parsed.get("command_names") or []) == ["motion"]
    terms = [
        _term(name, scale, clip, history, flatten, source, motion)
        for name, scale, clip, history, flatten in zip(
            names,
            _per_term(parsed, "observation_terms_scale", len(names), 1.0, source),
            _per_term(parsed, "observation_terms_clip", len(names), None, source),
            _per_term(parsed, "observation_terms_history_length", len(names), 0, source),
            _per_term(parsed, "observation_terms_flatten_history_dim", len(names), True, source),
            strict=True,
        )
    ]
    scale = parsed["action_scale"]
    if isinstance(scale, list):
        if len(scale) != len(joints):
            raise MjlabError(f"{source}: action_scale has {len(scale)} numbers for {len(joints)} joint_names")
        scale = dict(zip(joints, scale, strict=True)) if len(set(scale)) > 1 else scale[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", parsed.get("run_path") or "") or "mjlab"
    try:
        action = ActionTerm(scale=scale).to_dict()
    except TaskError as exc:  # named by the file and mjlab's key, not only the task's field
        raise MjlabError(f"{source}: action_scale: {exc}") from None
    return Task.from_dict(
        {
            "name": name,
            "observation": [t.to_dict() for t in terms],
            "action": action,
            "joint_names": joints,
            "default_joint_pos": _by_joint(parsed, "default_joint_pos", joints, source),
            "stiffness": _by_joint(parsed, "joint_stiffness", joints, source),
            "damping": _by_joint(parsed, "joint_damping", joints, source),
            "trained_on": trained_on(),
            "command": [1.0, 0.0, 0.0],
            **mjlab_defaults(),
        },
        source=source,
    )


def mjlab_metadata(props: Mapping[str, str], path: str | Path) -> dict[str, Any]:
    """The metadata document (:func:`transfer.formats.checkpoint.build_metadata`) of an mjlab ONNX policy at ``path``, from
    the task its ``metadata_props`` describe (:func:`mjlab_task`)."""
    path = Path(path)
    task = mjlab_task(props, source=f"{path.name} (mjlab metadata)")
    history = [{"tool": "mjlab", "run_path": props.get("run_path", ""), "file": path.name}]
    try:
        return build_metadata(task, task.joint_names, trained_on=trained_on(), history=history)
    except TaskError as exc:
        raise CheckpointError(str(exc)) from None
