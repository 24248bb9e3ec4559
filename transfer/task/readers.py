"""Readers: each turns one description of a task into the same :class:`~transfer.task.Task` value.

- the project's task YAML (``format: transfer-task/1``; see ``presets/tasks/README.md``): the fields of
  :meth:`Task.to_dict`, with observation entries allowed as bare term names and ``asset`` as a path relative to
  the file or a ``newton:<name>`` token;
- Newton's policy YAML (``mjw_joint_names``, ``physx_joint_names``, ``mjw_joint_pos``, ...), read by joint name.

:func:`load_task` tells them apart by content. Later readers (an Isaac Lab run's ``params/env.yaml``,
checkpoint metadata) produce the same value.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer.task._checks import TaskError, _names, _number
from transfer.task.model import FLAT_VELOCITY_OBSERVATION, TASK_FORMAT, ActionTerm, Task

__all__ = ["NEWTON_POLICY_FIELDS", "load_task", "read_newton_policy_yaml", "read_task_yaml", "resolve_asset"]

NEWTON_ASSET_PREFIX = "newton:"
PACKAGE_ASSETS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "newton": ("examples/assets", "transfer[newton]"),
        "ovphysx": ("samples/data", "transfer[physx]"),
    }
)
"""Asset hints ``<package>:<name>``: the folder inside the installed package, and the extra that installs it."""


def _package_hint(asset: str) -> str | None:
    package = asset.split(":", 1)[0] if ":" in asset else None
    return package if package in PACKAGE_ASSETS else None


#: Newton policy YAML fields: name -> required. The ``mjw_*`` lists follow ``mjw_joint_names``.
NEWTON_POLICY_FIELDS: Mapping[str, bool] = MappingProxyType(
    {
        "num_dofs": True,
        "action_scale": True,
        "mjw_joint_names": True,
        "physx_joint_names": True,
        "mjw_joint_pos": True,
        "mjw_joint_stiffness": False,
        "mjw_joint_damping": False,
        "mjw_joint_armature": False,
    }
)
_NEWTON_VALUES = {
    "mjw_joint_pos": "default_joint_pos",
    "mjw_joint_stiffness": "stiffness",
    "mjw_joint_damping": "damping",
    "mjw_joint_armature": "armature",
}


def load_task(path: str | Path) -> Task:
    """Read the task a file describes, whichever supported format it is in (decided by content).

    Raises:
        FileNotFoundError: no such file.
        TaskError: not YAML, not a format this reads, or a missing, unknown or mistyped field (the message
            names the file and the field).
    """
    path = Path(path)
    data = _read_yaml(path)
    if "format" in data:
        return read_task_yaml(path, data)
    if "mjw_joint_names" in data or "physx_joint_names" in data:
        return read_newton_policy_yaml(path, data)
    raise TaskError(
        f"{path}: not a task file this version reads. Expected the project's task YAML (first key "
        f"`format: {TASK_FORMAT}`; see presets/tasks/README.md) or Newton's policy YAML (keys mjw_joint_names, "
        f"physx_joint_names, mjw_joint_pos, action_scale, num_dofs); found keys {sorted(map(str, data))}."
    )


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    if not path.is_file():
        raise FileNotFoundError(
            f"Task file not found: {path}. Pass a task YAML (presets/tasks/*.yaml) or a Newton policy YAML."
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise TaskError(f"{path}: not a text (UTF-8 YAML) file") from None
    except yaml.YAMLError as exc:
        raise TaskError(f"{path}: not valid YAML; fix the syntax: {exc}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{path}: expected a mapping of fields at the top level, got {type(data).__name__}")
    return data


def read_task_yaml(path: str | Path, data: Mapping[str, Any] | None = None) -> Task:
    """Read the project's task YAML (``format: transfer-task/1``); ``data``: its parsed content, if at hand.

    ``name`` defaults to the file's stem. ``asset``: a path relative to the file (made absolute; it must exist)
    or a ``newton:<name>`` token (kept as is; :func:`resolve_asset` finds the file).
    """
    path = Path(path)
    data = dict(_read_yaml(path) if data is None else data)
    data.setdefault("name", path.stem)
    asset = data.get("asset")
    if isinstance(asset, str) and _package_hint(asset) is None:
        resolved = (path.parent / asset).resolve()
        if not resolved.is_file():
            raise TaskError(
                f"{path}: field `asset`: {asset!r} resolves to {resolved}, which does not exist. Give a path "
                f"relative to the task file, a `<package>:<name>` token ({', '.join(PACKAGE_ASSETS)}), or null."
            )
        data["asset"] = str(resolved)
    return Task.from_dict(data, source=str(path))


def resolve_asset(asset: str) -> Path:
    """The file an asset hint names: a path, or ``<package>:<name>`` for an asset shipped inside an installed
    engine package: ``newton:<name>`` (Newton's ``examples/assets``), ``ovphysx:<name>`` (ovphysx's
    ``samples/data``).

    The package is located with ``importlib.util.find_spec`` (it is not imported). ``<name>`` may omit the
    extension (``.usda``, ``.usd``, ``.usdc`` are tried in turn).
    """
    package = _package_hint(asset)
    if package is None:
        path = Path(asset)
        if not path.is_file():
            raise FileNotFoundError(f"Asset file not found: {path}")
        return path
    subdir, extra = PACKAGE_ASSETS[package]
    name = asset[len(package) + 1 :]
    if not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"Asset {asset!r}: expected {package}:<name> with a file name from {package}'s {subdir}")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"Asset {asset!r} is bundled with {package}, which is not installed: pip install '{extra}', "
            "or give the asset's path."
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / subdir
    candidates = [folder / name] + [folder / f"{name}{ext}" for ext in (".usda", ".usd", ".usdc")]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    available = sorted(p.name for p in folder.glob("*.usd*")) if folder.is_dir() else []
    raise FileNotFoundError(f"Asset {asset!r}: no {name}(.usda|.usd|.usdc) in {folder}; available: {available}")


def read_newton_policy_yaml(path: str | Path, data: Mapping[str, Any] | None = None) -> Task:
    """Read Newton's policy YAML (its ``examples/assets``-style ``anymal.yaml``, ``go2.yaml``) by joint name.

    The file lists both joint orders (``mjw_joint_names``, ``physx_joint_names``: kept in
    ``joint_names_by_convention``; choose with :meth:`Task.with_convention`), and default positions and gains as
    lists in ``mjw_joint_names`` order (read into mappings by name). It describes no observation, so the task
    gets Isaac Lab's flat-terrain velocity layout (:data:`FLAT_VELOCITY_OBSERVATION`: 48 entries for 12
    joints), physics at 200 Hz (``sim_dt`` 0.005) with decimation 4 (policy at 50 Hz), Newton's MuJoCo-Warp
    solver, and a 1 m/s forward command. ``spawn_height`` and PhysX solver settings are left unset.
    """
    path = Path(path)
    data = _read_yaml(path) if data is None else data
    src = str(path)
    unknown = sorted(set(map(str, data)) - set(NEWTON_POLICY_FIELDS))
    if unknown:
        raise TaskError(
            f"{src}: unknown fields {unknown} for a Newton policy YAML; known: {list(NEWTON_POLICY_FIELDS)}"
        )
    missing = [k for k, required in NEWTON_POLICY_FIELDS.items() if required and k not in data]
    if missing:
        raise TaskError(f"{src}: missing fields {missing}; a Newton policy YAML needs {list(NEWTON_POLICY_FIELDS)[:5]}")
    num = data["num_dofs"]
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise TaskError(f"{src}: field `num_dofs`: expected a positive integer, got {num!r}")
    lists: dict[str, list[Any]] = {}
    for key in ("mjw_joint_names", "physx_joint_names", *_NEWTON_VALUES):
        if key not in data:
            continue
        value = data[key]
        if not isinstance(value, list):
            raise TaskError(f"{src}: field `{key}`: expected a list, got {value!r}")
        if len(value) != num:
            raise TaskError(f"{src}: field `{key}`: {len(value)} entries, but num_dofs is {num}; one per DoF")
        lists[key] = value
    try:
        mjw = _names(lists["mjw_joint_names"], "field `mjw_joint_names`")
        physx = _names(lists["physx_joint_names"], "field `physx_joint_names`")
        scale = _number(data["action_scale"], "field `action_scale`")
        values = {
            field: {
                n: _number(v, f"field `{key}`[{i}] ({n})") for i, (n, v) in enumerate(zip(mjw, lists[key], strict=True))
            }
            for key, field in _NEWTON_VALUES.items()
            if key in lists
        }
        if set(physx) != set(mjw):
            raise TaskError(
                "physx_joint_names and mjw_joint_names must list the same joints; only in physx_joint_names: "
                f"{sorted(set(physx) - set(mjw))}, only in mjw_joint_names: {sorted(set(mjw) - set(physx))}"
            )
        return Task(
            name=path.stem,
            observation=FLAT_VELOCITY_OBSERVATION,
            action=ActionTerm(kind="joint_position", scale=scale, use_default_offset=True),
            sim_dt=0.005,
            decimation=4,
            newton={"solver": "mujoco_warp"},
            command=(1.0, 0.0, 0.0),
            joint_names_by_convention={"mjwarp": mjw, "physx": physx},
            source=src,
            **values,
        )
    except TaskError as exc:
        raise TaskError(f"{src}: {exc}") from None
