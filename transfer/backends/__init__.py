"""The engines, each behind one door: a registry of :class:`~transfer.backends.base.Backend` classes.

Every engine the project talks to (ovphysx, Newton) is reached only through this package. A backend class
declares who it is (:attr:`~transfer.backends.base.Backend.name`, its
:attr:`~transfer.backends.base.Backend.native_convention`, the pip extra that installs its engine) and how to ask
its engine for the true articulation order of an asset (:meth:`~transfer.backends.base.Backend.engine_orders`).

Importing this package imports no engine: a class module is imported on first use of :func:`backend_class`.
Adding a backend: write ``transfer/backends/<name>/`` with a :class:`~transfer.backends.base.Backend` subclass (and
its joint movement probe, :mod:`transfer.backends.probes`) and add one entry to :data:`REGISTRY`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transfer.backends.base import Backend, EngineOrder

__all__ = ["REGISTRY", "BackendEntry", "backend_class", "backend_names", "engine_orders", "movement_probe"]


@dataclass(frozen=True)
class BackendEntry:
    """One registered backend: where its class lives, the pip extra that installs its engine, and its joint movement
    probe (a module with ``probe(asset, joints, plan)``, :mod:`transfer.backends.probes`)."""

    module: str
    cls: str
    extra: str
    movement_probe: str


REGISTRY: dict[str, BackendEntry] = {
    "physx": BackendEntry("transfer.backends.physx", "PhysxBackend", "physx", "transfer.backends.physx.movement"),
    "newton": BackendEntry("transfer.backends.newton", "NewtonBackend", "newton", "transfer.backends.newton.movement"),
}


def backend_names() -> tuple[str, ...]:
    """The registered backend names."""
    return tuple(REGISTRY)


def _key(name: str) -> str:
    key = str(name).strip().lower()
    if key not in REGISTRY:
        raise ValueError(f"Unknown backend {name!r}; valid backends: {', '.join(REGISTRY)}")
    return key


def backend_class(name: str) -> type[Backend]:
    """The :class:`~transfer.backends.base.Backend` subclass registered as ``name`` (imports its module).

    Raises:
        ValueError: no backend of that name.
        ImportError: its engine is not installed (the message names the pip extra).
    """
    key = _key(name)
    entry = REGISTRY[key]
    return getattr(_import(key, entry.module), entry.cls)


def _import(key: str, module: str) -> Any:
    try:
        return import_module(module)
    except ImportError as exc:
        extra = REGISTRY[key].extra
        raise ImportError(f"The {key} backend needs its engine: pip install 'transfer[{extra}]' ({exc})") from exc


def movement_probe(name: str) -> Any:
    """The joint movement probe of backend ``name`` (``probe(asset, joints, plan) -> MovementTrace``; imports its
    engine on first use)."""
    key = str(name).strip().lower()
    if key not in REGISTRY:
        raise ValueError(f"No joint movement probe for backend {name!r}; probes: {', '.join(REGISTRY)}")
    return _import(key, REGISTRY[key].movement_probe).probe


def engine_orders(name: str, asset: Any, root: str | None = None) -> list[EngineOrder]:
    """Ask backend ``name``'s engine how it orders the articulations of the USD file ``asset``."""
    return backend_class(name).engine_orders(asset, root)
