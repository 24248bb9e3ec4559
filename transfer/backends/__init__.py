"""The engines, each behind one door: a registry of :class:`~transfer.backends.base.Backend` classes.

Every engine the project talks to (ovphysx, Newton) is reached only through this package. A backend class
declares who it is (:attr:`~transfer.backends.base.Backend.name`, its
:attr:`~transfer.backends.base.Backend.native_convention`, the pip extra that installs its engine) and how to ask
its engine for the true articulation order of an asset (:meth:`~transfer.backends.base.Backend.engine_orders`).

Importing this package imports no engine: a class module is imported on first use of :func:`backend_class`.
Adding a backend: write ``transfer/backends/<name>/`` with a :class:`~transfer.backends.base.Backend` subclass and
add one line to :data:`REGISTRY`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transfer.backends.base import Backend, EngineOrder

__all__ = ["REGISTRY", "backend_class", "backend_names", "engine_orders"]

REGISTRY: dict[str, tuple[str, str, str]] = {
    # name: (module, class, pip extra that installs the engine)
    "physx": ("transfer.backends.physx", "PhysxBackend", "physx"),
    "newton": ("transfer.backends.newton", "NewtonBackend", "newton"),
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
    module_name, class_name, extra = REGISTRY[key]
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"The {key} backend needs its engine: pip install 'transfer[{extra}]' ({exc})") from exc
    return getattr(module, class_name)


def engine_orders(name: str, asset: Any, root: str | None = None) -> list[EngineOrder]:
    """Ask backend ``name``'s engine how it orders the articulations of the USD file ``asset``."""
    return backend_class(name).engine_orders(asset, root)
