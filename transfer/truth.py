"""Truth adapters: ask the real engines how they order an asset's articulations.

:func:`physx_order` loads a USD file into ovphysx (PhysX, CPU) and :func:`newton_order` into Newton
(``ModelBuilder.add_usd`` with its defaults, then ``ArticulationView`` without FREE and FIXED joints).
Both return one :class:`EngineOrder` per articulation the engine built, sorted by root path. They are the
ground truth that the USD-only emulation of each engine's ordering is tested against, and what
``transfer inspect --truth`` prints.

Both engines load lazily inside the functions; importing this module imports neither.

Engine behaviour worth knowing when reading the results (ovphysx 0.7, Newton 1.8):

- ``root`` is the path of the prim carrying ``PhysicsArticulationRootAPI`` (a body, a joint, or an
  ancestor Xform) as both engines label it. PhysX gives the same root to every connected component under
  one ancestor root, so two entries can share a root; Newton refuses such an asset. Newton also makes a
  one-body articulation (root = the body's path) for every rigid body outside any articulation.
- ``physx_order`` switches ovphysx into its CPU-only mode, which is sticky for the process, and keeps one
  ``PhysX`` instance for all calls (reattaching a fresh stage each time: ~20 ms a call instead of ~120 ms
  when an instance is created and destroyed per call). The instance is destroyed at interpreter exit.
  Calls are serialised by a lock. PhysX logs its own warnings (e.g. an ignored root API) to the console.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EngineOrder", "EngineRefusal", "physx_order", "newton_order"]


@dataclass(frozen=True)
class EngineOrder:
    """One articulation as an engine orders it."""

    engine: str
    """``"physx"`` or ``"mjwarp"``."""
    root: str
    """USD path of the prim carrying ``PhysicsArticulationRootAPI``, as the engine labels the articulation."""
    joints: tuple[str, ...]
    """DoF names in DoF order, spelled as the engine spells them (multi-DoF joints: ``name:0``, ``name:1``...)."""
    bodies: tuple[str, ...]
    """Link (body) names in the engine's link order."""
    fixed_base: bool | None
    """Whether the engine fixes the root link to the world; ``None`` if it does not say."""


class EngineRefusal(RuntimeError):
    """The engine refused the asset; :attr:`reason` is the engine's own message."""

    def __init__(self, engine: str, reason: str):
        self.engine = engine
        self.reason = reason
        super().__init__(f"{engine} refused the asset: {reason}")

    def __reduce__(self):  # keep engine and reason across pickling (e.g. multiprocessing workers)
        return (type(self), (self.engine, self.reason))


def _asset_file(asset: str | os.PathLike) -> str:
    path = Path(os.fspath(asset)).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"USD asset not found: {path}")
    return str(path)


def _select(orders: list[EngineOrder], root: str | None, engine: str, asset: str) -> list[EngineOrder]:
    orders = sorted(orders, key=lambda order: order.root)  # stable: entries sharing a root keep engine order
    if root is None:
        return orders
    chosen = [order for order in orders if order.root == root]
    if not chosen:
        found = ", ".join(sorted({order.root for order in orders})) or "none"
        raise LookupError(
            f"{engine} built no articulation rooted at {root!r} in {asset}; articulation roots found: {found}. "
            "Pass one of those as root, or root=None for all."
        )
    return chosen


# --- PhysX (ovphysx) -----------------------------------------------------------------------------------

_physx_lock = threading.Lock()
_physx: Any = None  # the PhysX instance every call reuses, created on first use
_stage_ids = itertools.count()


def _physx_instance() -> Any:
    global _physx
    if _physx is None:
        import ovphysx
        import ovstage
        from ovphysx import PhysX
        from ovphysx.samples.python_samples.schema_support import physx_schema_paths

        # Once per process, before the first population; registering again is harmless.
        ovstage.population.register_usd_schemas(
            [*(str(p) for p in physx_schema_paths()), str(ovphysx.newton_schema_root())]
        )
        if not PhysX.get_cpu_mode():  # process-wide; refused once any instance (e.g. a live backend) exists
            PhysX.set_cpu_mode(True)
        _physx = PhysX()
        atexit.register(_release_physx)
    return _physx


def _release_physx() -> None:
    global _physx
    instance, _physx = _physx, None
    if instance is not None:
        instance.destroy()


def physx_order(asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
    """Ask ovphysx (PhysX on the CPU) for the articulations of the USD file ``asset``.

    Returns one :class:`EngineOrder` per articulation, sorted by root path; with ``root``, only the
    articulations with that root. ``joints`` are the tensor bindings' ``dof_names``, ``bodies`` their
    ``body_names`` (leaf names, de-duplicated by PhysX with ``_k`` suffixes), ``fixed_base`` their
    ``is_fixed_base``. An asset without articulations gives ``[]``.

    Raises:
        FileNotFoundError: ``asset`` is not a file.
        EngineRefusal: ovstage/ovphysx could not load the file (``engine == "physx"``).
        LookupError: ``root`` is given and PhysX built no articulation there.
    """
    path = _asset_file(asset)
    import ovstage

    with _physx_lock:
        physx = _physx_instance()
        stage = ovstage.Stage(f"transfer-truth-{next(_stage_ids)}")
        try:
            try:
                ovstage.population.open_usd(stage, path, ordinal=1, domains=ovstage.PopulationDomain.ALL)
                stage.advance_write_floor(ordinal=1).wait()
                physx.wait_task(physx.attach_ovstage(stage, read_ordinal=1))
            except Exception as exc:
                raise EngineRefusal("physx", f"{type(exc).__name__}: {exc}") from exc
            orders = _physx_orders(physx)
        finally:
            _physx_close_stage(physx, stage)
    return _select(orders, root, "physx", path)


def _physx_close_stage(physx: Any, stage: Any) -> None:
    try:
        if physx.is_stage_attached(stage):
            physx.wait_task(physx.detach_ovstage())
    except BaseException:
        _release_physx()  # destroying the instance releases the attachment, so the stage can go
        raise
    finally:
        stage.destroy()


def _physx_orders(physx: Any) -> list[EngineOrder]:
    # Tensor bindings are deprecated since ovphysx 0.6, but they are the one API that names links in link
    # order: the session read's dofJointPath gives DoF joints only, and its link rows come in creation
    # (depth-first) order, not PhysX's breadth-first link order.
    from ovphysx.types import TensorType

    def bind(**selection: Any) -> tuple[str, EngineOrder, int]:
        binding = physx.create_tensor_binding(tensor_type=TensorType.ARTICULATION_ROOT_POSE, **selection)
        try:
            (root,) = binding.prim_paths
            order = EngineOrder(
                "physx", root, tuple(binding.dof_names), tuple(binding.body_names), bool(binding.is_fixed_base)
            )
            return root, order, binding.body_count
        finally:
            binding.destroy()

    everything = physx.create_tensor_binding(pattern="/**", tensor_type=TensorType.ARTICULATION_ROOT_POSE)
    try:
        roots = Counter(everything.prim_paths)  # one entry per articulation: the prim carrying the root API
    finally:
        everything.destroy()

    orders = [bind(prim_paths=[root])[1] for root, count in roots.items() if count == 1]
    shared = {root: count for root, count in roots.items() if count > 1}
    if shared:
        orders += _physx_shared_root_orders(physx, bind, shared)
    return orders


def _physx_shared_root_orders(physx: Any, bind: Any, shared: dict[str, int]) -> list[EngineOrder]:
    """Orders of the articulations that share a root prim (components under one ancestor root).

    Selecting such a root binds only its first articulation, but a link selects the articulation it
    belongs to. The session read lists every articulation link, articulation by articulation, so one
    binding per articulation walks them all.
    """
    import warp as wp
    from ovphysx.types import ObjectScope, SimObjectType

    log_level, wp.config.log_level = wp.config.log_level, max(wp.config.log_level, wp.LOG_WARNING)
    try:
        with physx.read_sync(SimObjectType.ARTICULATION_LINK, ["physxPointer"], scope=ObjectScope.ALL) as result:
            links = [
                path
                for group in result.groups
                if not group.is_delete
                for path in result.dictionary.get_path_strings(group.prim_list)
            ]
    finally:
        wp.config.log_level = log_level

    orders, row = [], 0
    while row < len(links):
        root, order, link_count = bind(prim_paths=[links[row]])
        if root in shared:
            orders.append(order)
        row += max(link_count, 1)
    found = Counter(order.root for order in orders)
    if found != Counter(shared):
        raise RuntimeError(
            f"Could not tell apart the PhysX articulations sharing a root: expected {shared}, found "
            f"{dict(found)}. ovphysx's link listing may no longer come articulation by articulation."
        )
    return orders


# --- Newton (MuJoCo-Warp order) ------------------------------------------------------------------------


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def newton_order(asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
    """Ask Newton for the articulations of the USD file ``asset``, as MuJoCo-Warp would order them.

    Imports with ``newton.ModelBuilder().add_usd(asset)`` (defaults: depth-first joint ordering, bodies
    follow joints), ``finalize(device="cpu")``, then one ``ArticulationView`` per articulation (selected
    by index) excluding FREE and FIXED joints: ``joints`` are its ``joint_dof_names``, ``bodies`` its
    ``link_names`` and ``fixed_base`` its ``is_fixed_base`` (``False`` also for a root on a revolute,
    prismatic, ball or D6 joint to the world, which Newton keeps as DoFs). Results are sorted by root path
    (the articulation label); with ``root``, only that articulation.

    Raises:
        FileNotFoundError: ``asset`` is not a file.
        EngineRefusal: Newton raised while importing the asset or building its views
            (``engine == "mjwarp"``; e.g. reversed joints, a joint cycle, composition errors).
        LookupError: ``root`` is given and Newton built no articulation there.
    """
    path = _asset_file(asset)
    import newton
    import warp as wp
    from newton.selection import ArticulationView

    log_level, wp.config.log_level = wp.config.log_level, max(wp.config.log_level, wp.LOG_WARNING)
    try:
        builder = newton.ModelBuilder()
        builder.add_usd(path)
        model = builder.finalize(device="cpu")
        orders = []
        for index, label in enumerate(model.articulation_label):
            view = ArticulationView(model, [index], exclude_joint_types=[newton.JointType.FREE, newton.JointType.FIXED])
            orders.append(
                EngineOrder(
                    "mjwarp", label, tuple(view.joint_dof_names), tuple(view.link_names), _flag(view.is_fixed_base)
                )
            )
    except Exception as exc:
        raise EngineRefusal("mjwarp", str(exc)) from exc
    finally:
        wp.config.log_level = log_level
    return _select(orders, root, "mjwarp", path)
