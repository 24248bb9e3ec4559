"""Readers: each turns one description of a task into the same :class:`~transfer.task.Task` value.

- the project's task YAML (``format: transfer-task/1``; see ``presets/tasks/README.md``): the fields of
  :meth:`Task.to_dict`, with observation entries allowed as bare term names and ``asset`` as a path relative to
  the file (USD, MJCF ``.xml`` or URDF ``.urdf``) or a ``newton:<name>`` token;
- Newton's policy YAML (``mjw_joint_names``, ``physx_joint_names``, ``mjw_joint_pos``, ...), read by joint name.

:func:`load_task` tells them apart by content. Later readers (an Isaac Lab run's ``params/env.yaml``,
checkpoint metadata) produce the same value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer.backends import native_backend
from transfer.errors import read_yaml_mapping, slice_loader
from transfer.ordering import OrderingConvention
from transfer.robot.assets import PACKAGE_ASSETS, package_hint, resolve_asset
from transfer.task._checks import TaskError, _names, _number
from transfer.task.deploy import (
    LEGGED_GYM_KEYS,
    UNITREE_KEYS,
    DeployConfig,
    is_deploy_config,
    isaaclab_legged_settings,
    read_deploy_config,
)
from transfer.task.model import FLAT_VELOCITY_OBSERVATION, TASK_FORMAT, ActionTerm, Task

__all__ = [
    "isaaclab_legged_settings",
    "NEWTON_POLICY_FIELDS",
    "load_task",
    "read_config",
    "read_newton_policy_yaml",
    "read_task_yaml",
    "resolve_asset",
]

#: Newton policy YAML fields: name -> required. The ``mjw_*`` lists follow ``mjw_joint_names``.
NEWTON_POLICY_FIELDS: Mapping[str, bool] = MappingProxyType(
    {
        "num_dofs": True,
        "action_scale": True,
        "mjw_joint_names": False,
        "physx_joint_names": False,
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
    found = read_config(path)
    if isinstance(found, DeployConfig):
        raise TaskError(
            f"{path}: a {found.kind} deploy config lists its values by position in the policy's joint order: give it "
            "to replay, verify, convert or info as --config with the checkpoint (and --source, --asset where the "
            "config does not say them)"
        )
    return found


def read_config(
    path: str | Path, roots: Sequence[str | Path] = (), aliases: Mapping[str, str] | None = None
) -> Task | DeployConfig:
    """:func:`load_task`, with the deploy configs (:mod:`transfer.task.deploy`) read as :class:`DeployConfig`: a
    task once the policy's joint names are known. ``roots``: folders ``{LEGGED_GYM_ROOT_DIR}`` may stand for.
    ``aliases``: observation term names -> the term each is, added to a task file's own ``observation_aliases``
    (a deploy config takes them in :meth:`DeployConfig.task`)."""
    path = Path(path)
    data = _read_yaml(path)
    if "format" in data:
        if aliases:
            own = data.get("observation_aliases")
            data = {**data, "observation_aliases": {**aliases, **own} if isinstance(own, Mapping) else own or aliases}
        return read_task_yaml(path, data)
    if "mjw_joint_names" in data or "physx_joint_names" in data:
        return read_newton_policy_yaml(path, data)
    if is_deploy_config(data):
        return read_deploy_config(path, data, roots)
    raise TaskError(
        f"{path}: not a task file this version reads. Expected the project's task YAML (first key "
        f"`format: {TASK_FORMAT}`; see presets/tasks/README.md) or Newton's policy YAML (keys mjw_joint_names, "
        f"physx_joint_names, mjw_joint_pos, action_scale, num_dofs), Unitree's deploy.yaml ({', '.join(UNITREE_KEYS)}) or "
        f"a legged_gym deploy_mujoco config ({', '.join(LEGGED_GYM_KEYS)}); found keys {sorted(map(str, data))}."
    )


def _read_yaml(path: Path) -> dict[str, Any]:

    if not path.is_file():
        found = f"{path} is a folder, not a task file" if path.is_dir() else f"Task file not found: {path}"
        raise FileNotFoundError(
            f"{found}. Pass a task YAML (presets/tasks/*.yaml), a Newton policy YAML, Unitree's deploy.yaml or a "
            "legged_gym deploy_mujoco config."
        )
    return read_yaml_mapping(path, TaskError, "a mapping of fields at the top level", slice_loader())


def read_task_yaml(path: str | Path, data: Mapping[str, Any] | None = None) -> Task:
    """Read the project's task YAML (``format: transfer-task/1``); ``data``: its parsed content, if at hand.

    ``name`` defaults to the file's stem. ``asset``: a path relative to the file (made absolute; it must exist)
    or a ``newton:<name>`` token (kept as is; :func:`resolve_asset` finds the file).
    """
    path = Path(path)
    data = dict(_read_yaml(path) if data is None else data)
    data.setdefault("name", path.stem)
    asset = data.get("asset")
    if isinstance(asset, str) and package_hint(asset) is None:
        resolved = (path.parent / asset).resolve()
        if not resolved.is_file():
            raise TaskError(
                f"{path}: field `asset`: {asset!r} resolves to {resolved}, which does not exist. Give a path "
                f"relative to the task file, a `<package>:<name>` token ({', '.join(PACKAGE_ASSETS)}), or null."
            )
        data["asset"] = str(resolved)
    return Task.from_dict(data, source=str(path))


def _newton_lists(data: Mapping[str, Any], src: str) -> dict[str, list[Any]]:
    """The per-DoF lists of a Newton policy YAML (joint orders and values), after checking its fields: none
    unknown, none missing, ``num_dofs`` a positive integer and every list that long."""
    unknown = sorted(set(map(str, data)) - set(NEWTON_POLICY_FIELDS))
    if unknown:
        raise TaskError(
            f"{src}: unknown fields {unknown} for a Newton policy YAML; known: {list(NEWTON_POLICY_FIELDS)}"
        )
    missing = [k for k, required in NEWTON_POLICY_FIELDS.items() if required and k not in data]
    if "mjw_joint_names" not in data and "physx_joint_names" not in data:
        missing.insert(0, "mjw_joint_names or physx_joint_names")
    if missing:
        raise TaskError(
            f"{src}: missing fields {missing}; a Newton policy YAML needs num_dofs, action_scale, mjw_joint_pos and "
            "the checkpoint's joint order (mjw_joint_names, physx_joint_names, or both)"
        )
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
    return lists


def read_newton_policy_yaml(path: str | Path, data: Mapping[str, Any] | None = None) -> Task:
    """Read Newton's policy YAML (its ``examples/assets``-style ``anymal.yaml``, ``go2.yaml``) by joint name.

    The file lists both joint orders (``mjw_joint_names``, ``physx_joint_names``: kept in
    ``joint_names_by_convention``; choose with :meth:`Task.with_convention`), or only the one its checkpoint uses
    (Newton's G1 file lists ``mjw_joint_names``): that order is then the task's ``convention`` (and its engine
    ``trained_on``), and the other order comes from the asset. Default positions and gains are lists in
    ``mjw_joint_names`` order (in ``physx_joint_names`` order when only that is listed), read into mappings by
    name. It describes no observation, so the task gets Isaac Lab's flat-terrain velocity layout
    (:data:`FLAT_VELOCITY_OBSERVATION`: 48 entries for 12 joints), a 1 m/s forward command, and the simulation
    settings Isaac Lab trains legged robots under (:func:`isaaclab_legged_settings`). ``spawn_height`` is left
    unset (computed from the asset).
    """
    path = Path(path)
    data = _read_yaml(path) if data is None else data
    src = str(path)
    lists = _newton_lists(data, src)
    physx_, mjw_ = OrderingConvention.PHYSX.value, OrderingConvention.MJWARP.value
    try:
        orders = {
            convention: _names(lists[key], f"field `{key}`")
            for convention, key in ((mjw_, "mjw_joint_names"), (physx_, "physx_joint_names"))
            if key in lists
        }
        # The value lists follow mjw_joint_names; a file listing only physx_joint_names has them in that order.
        values_order = orders.get(mjw_, orders.get(physx_))
        scale = _number(data["action_scale"], "field `action_scale`")
        values = {
            field: {
                n: _number(v, f"field `{key}`[{i}] ({n})")
                for i, (n, v) in enumerate(zip(values_order, lists[key], strict=True))
            }
            for key, field in _NEWTON_VALUES.items()
            if key in lists
        }
        if len(orders) == 2 and set(orders[physx_]) != set(orders[mjw_]):
            physx, mjw = orders[physx_], orders[mjw_]
            raise TaskError(
                "physx_joint_names and mjw_joint_names must list the same joints; only in physx_joint_names: "
                f"{sorted(set(physx) - set(mjw))}, only in mjw_joint_names: {sorted(set(mjw) - set(physx))}"
            )
        # One listed order is the checkpoint's: its convention (and training engine) is the task's.
        only = next(iter(orders)) if len(orders) == 1 else None
        return Task(
            name=path.stem,
            observation=FLAT_VELOCITY_OBSERVATION,
            action=ActionTerm(kind="joint_position", scale=scale, use_default_offset=True),
            convention=only,
            trained_on=None if only is None else native_backend(only),
            command=(1.0, 0.0, 0.0),
            joint_names_by_convention=orders,
            source=src,
            **isaaclab_legged_settings(),
            **values,
        )
    except TaskError as exc:
        raise TaskError(f"{src}: {exc}") from None
