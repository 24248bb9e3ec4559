"""transfer: move robot policies between physics backends with every vector meaning the same thing.

``import transfer`` is light: it loads neither torch, pxr, newton, ovphysx nor warp. The names below are
loaded on first use.
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


def _choose_gl() -> None:
    """MuJoCo's headless OpenGL (``replay --video``), chosen before anything imports mujoco, where the user chose
    none: EGL where a GPU device is present, else OSMesa (Debian's ``libosmesa6``); PyOpenGL is told the same."""
    if "MUJOCO_GL" not in os.environ:
        gpu = os.path.exists("/dev/nvidia0") or any(n.startswith("renderD") for n in _listdir("/dev/dri"))
        os.environ["MUJOCO_GL"] = "egl" if gpu else "osmesa"
    if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


_choose_gl()

_EXPORTS = {
    "OrderingConvention": "transfer.ordering",
    "parse_ordering": "transfer.ordering",
    "ArticulationNameMap": "transfer.name_map",
    "NameMapError": "transfer.name_map",
    "build_name_map": "transfer.name_map",
    "apply_articulation_ordering_preset": "transfer.presets",
    "check_ordering_overrides": "transfer.presets",
    "OrderingOverrideWarning": "transfer.presets",
    "OrderingError": "transfer.orders",
    "ResolvedOrder": "transfer.orders",
    "read_topology": "transfer.orders",
    "resolve_ordering": "transfer.orders",
    "resolve_orderings": "transfer.orders",
    "resolve_asset": "transfer.robot.assets",
    "import_asset": "transfer.robot.assets",
    "open_articulation": "transfer.articulation",
    "Articulation": "transfer.articulation",
    "Task": "transfer.task",
    "load_task": "transfer.task",
    "Policy": "transfer.formats.policy",
    "load_policy": "transfer.formats",
    "PolicyEnv": "transfer.env.environment",
    "ReplayResult": "transfer.runs.replay",
    "replay": "transfer.runs.replay",
    "compare": "transfer.runs.replay",
    "verify": "transfer.runs.verify",
    "convert": "transfer.runs.convert",
    "sweep": "transfer.runs.sweep",
    "read_metadata": "transfer.formats",
    "write_metadata": "transfer.formats",
}

__all__ = [
    "Articulation",
    "ArticulationNameMap",
    "NameMapError",
    "OrderingConvention",
    "OrderingError",
    "OrderingOverrideWarning",
    "Policy",
    "PolicyEnv",
    "ReplayResult",
    "ResolvedOrder",
    "Task",
    "apply_articulation_ordering_preset",
    "build_name_map",
    "check_ordering_overrides",
    "compare",
    "convert",
    "import_asset",
    "load_policy",
    "load_task",
    "open_articulation",
    "parse_ordering",
    "read_metadata",
    "read_topology",
    "replay",
    "resolve_asset",
    "resolve_ordering",
    "resolve_orderings",
    "sweep",
    "verify",
    "write_metadata",
]

if TYPE_CHECKING:
    from transfer.articulation import Articulation, open_articulation
    from transfer.env.environment import PolicyEnv
    from transfer.formats import load_policy, read_metadata, write_metadata
    from transfer.formats.policy import Policy
    from transfer.name_map import ArticulationNameMap, NameMapError, build_name_map
    from transfer.ordering import OrderingConvention, parse_ordering
    from transfer.orders import (
        OrderingError,
        ResolvedOrder,
        read_topology,
        resolve_ordering,
        resolve_orderings,
    )
    from transfer.presets import (
        OrderingOverrideWarning,
        apply_articulation_ordering_preset,
        check_ordering_overrides,
    )
    from transfer.robot.assets import import_asset, resolve_asset
    from transfer.runs.convert import convert
    from transfer.runs.replay import ReplayResult, compare, replay
    from transfer.runs.sweep import sweep
    from transfer.runs.verify import verify
    from transfer.task import Task, load_task


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'transfer' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
