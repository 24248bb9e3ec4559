"""The Newton backend: batched views over a Newton model and the :class:`~transfer.backends.base.Backend` on top.

- :class:`JointView`, :class:`BodyView`, :class:`MechanismView`: one asset per world, ``(num_worlds, n)`` batches,
  partial writes by ``env_ids`` and element ids, an explicit root/base policy and declared capabilities.
- :func:`import_usd`: ``ModelBuilder.add_usd`` plus ``rootless_articulation_policy="infer_tree"`` for assets without
  an articulation root; returns the builder (or model) and an :class:`ImportSummary`.
- :class:`NewtonBackend`: one USD asset cloned into ``num_envs`` worlds, stepped by a Newton solver.
- :func:`~transfer.backends.newton.probe.engine_orders`: Newton's own articulation orders (what
  :meth:`NewtonBackend.engine_orders` and ``transfer.backends.engine_orders("newton", ...)`` return).

Importing this package imports ``newton`` and ``warp`` (``import transfer`` does not) and routes MuJoCo's warnings to
Python logging (:mod:`transfer.backends.newton._mujoco_log`): no ``MUJOCO_LOG.TXT`` in the working directory.
"""

from transfer.backends.newton._mujoco_log import install as _install_mujoco_log
from transfer.backends.newton.backend import SOLVERS, NewtonBackend
from transfer.backends.newton.importer import CoordinateMove, ImportSummary, InferredTree, import_usd, infer_trees
from transfer.backends.newton.mechanism import BASE_POLICIES, CapabilityError, MechanismView
from transfer.backends.newton.views import JOINT_PROPERTY_ATTRIBUTES, BodyView, JointView

# MuJoCo's warnings to Python logging, never to MUJOCO_LOG.TXT in the user's working directory (every Newton path
# of transfer imports this package first): transfer.backends.newton._mujoco_log.
_install_mujoco_log()

__all__ = [
    "BASE_POLICIES",
    "JOINT_PROPERTY_ATTRIBUTES",
    "SOLVERS",
    "BodyView",
    "CapabilityError",
    "CoordinateMove",
    "ImportSummary",
    "InferredTree",
    "JointView",
    "MechanismView",
    "NewtonBackend",
    "import_usd",
    "infer_trees",
]
