"""The Newton backend: batched views over a Newton model and the :class:`~transfer.backends.base.Backend` on top.

- :class:`JointView`, :class:`BodyView`, :class:`MechanismView`: one asset per world, ``(num_worlds, n)`` batches,
  partial writes by ``env_ids`` and element ids, an explicit root/base policy and declared capabilities.
- :func:`import_usd`: ``ModelBuilder.add_usd`` plus ``rootless_articulation_policy="infer_tree"`` for assets without
  an articulation root; returns the builder (or model) and an :class:`ImportSummary`.
- :class:`NewtonBackend`: one USD asset cloned into ``num_envs`` worlds, stepped by a Newton solver.
- :func:`~transfer.backends.newton.probe.engine_orders`: Newton's own articulation orders (what
  :meth:`NewtonBackend.engine_orders` and ``transfer.backends.engine_orders("newton", ...)`` return).

Importing this package imports nothing heavy (its settings module, :mod:`~transfer.backends.newton.settings`, is read
by the task model); each name above imports ``newton`` and ``warp`` on first use. Every Newton path goes through
:mod:`~transfer.backends.newton.importer`, which routes MuJoCo's warnings to Python logging
(:mod:`transfer.backends._mujoco_log`): no ``MUJOCO_LOG.TXT`` in the working directory.
"""

from importlib import import_module
from typing import Any

_HOMES = {
    "SOLVERS": "settings",
    "NewtonBackend": "backend",
    "CoordinateMove": "importer",
    "ImportSummary": "importer",
    "InferredTree": "importer",
    "import_usd": "importer",
    "infer_trees": "importer",
    "BASE_POLICIES": "mechanism",
    "CapabilityError": "mechanism",
    "MechanismView": "mechanism",
    "JOINT_PROPERTY_ATTRIBUTES": "views",
    "BodyView": "views",
    "JointView": "views",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_HOMES)
