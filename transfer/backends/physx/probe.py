"""PhysX's own answer: how ovphysx (CPU) orders every articulation of a USD file.

:func:`engine_orders` loads the file into ovphysx, started through :mod:`transfer.backends.physx.engine` like the
backend, and returns one :class:`~transfer.backends.base.EngineOrder` per articulation PhysX built, sorted by root
path. It is the ground truth the USD-only emulation (:func:`transfer.orders.physx_order`) is tested against, and
what ``transfer inspect --truth`` prints. Reach it through ``transfer.backends.engine_orders("physx", ...)``.

Engine behaviour worth knowing when reading the results (ovphysx 0.7):

- ``root`` is the path of the prim carrying ``PhysicsArticulationRootAPI`` (a body, a joint, or an ancestor
  Xform). PhysX gives the same root to every connected component under one ancestor root, so two entries can
  share a root.
- The probe switches ovphysx into its CPU-only mode, which is sticky for the process, and keeps one ``PhysX``
  instance for all calls (reattaching a fresh stage each time: ~20 ms a call instead of ~120 ms when an instance
  is created and destroyed per call). The instance is destroyed at interpreter exit. Calls are serialised by a
  lock. PhysX logs its own warnings (e.g. an ignored root API) to the console.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from typing import Any

from transfer._console import quiet_warp
from transfer.backends.base import EngineOrder, EngineRefusal, asset_file, select_root
from transfer.backends.physx import engine

__all__ = ["engine_orders"]

_lock = threading.Lock()
_KEY = "engine-orders"  # the engine.shared_instance every call reuses, created on first use


def _start() -> tuple[Any, bool]:
    if engine.settle_mode("cpu"):
        raise RuntimeError(
            "ovphysx cannot switch to its CPU-only mode while a PhysX instance exists (e.g. a CUDA PhysxBackend); "
            "ask for PhysX's engine orders before creating CUDA backends, or in another process."
        )
    return engine.start_physx(), False


def engine_orders(asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
    """Ask ovphysx (PhysX on the CPU) for the articulations of the USD file ``asset``.

    Returns one :class:`EngineOrder` per articulation, sorted by root path; with ``root``, only the
    articulations with that root. ``joints`` are the tensor bindings' ``dof_names``, ``bodies`` their
    ``body_names`` (leaf names, de-duplicated by PhysX with ``_k`` suffixes), ``fixed_base`` their
    ``is_fixed_base``; ``engine`` is ``"physx"``. An asset without articulations gives ``[]``.

    Raises:
        FileNotFoundError: ``asset`` is not a file.
        ImportError: ovphysx or ovstage is missing (the message names the pip extra).
        EngineRefusal: ovstage/ovphysx could not load the file (``engine == "physx"``).
        LookupError: ``root`` is given and PhysX built no articulation there.
    """
    path = asset_file(asset)
    with _lock:
        physx, _ = engine.shared_instance(_KEY, _start)
        stage = engine.new_stage("probe")
        try:
            try:
                engine.attach(physx, stage, path=path)
            except Exception as exc:
                raise EngineRefusal("physx", f"{type(exc).__name__}: {exc}") from exc
            orders = _orders(physx)
        finally:
            _close_stage(physx, stage)
    return select_root(orders, root, "physx", path)


def _close_stage(physx: Any, stage: Any) -> None:
    try:
        engine.detach(physx, stage)
    except BaseException:
        engine.release_shared(_KEY)  # destroying the instance releases the attachment, so the stage can go
        raise
    finally:
        stage.destroy()


def _orders(physx: Any) -> list[EngineOrder]:
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
        orders += _shared_root_orders(physx, bind, shared)
    return orders


def _shared_root_orders(physx: Any, bind: Any, shared: dict[str, int]) -> list[EngineOrder]:
    """Orders of the articulations that share a root prim (components under one ancestor root).

    Selecting such a root binds only its first articulation, but a link selects the articulation it
    belongs to. The session read lists every articulation link, articulation by articulation, so one
    binding per articulation walks them all.
    """
    from ovphysx.types import ObjectScope, SimObjectType

    with quiet_warp():  # the session read builds Warp arrays; keep Warp's info log off the console
        with physx.read_sync(SimObjectType.ARTICULATION_LINK, ["physxPointer"], scope=ObjectScope.ALL) as result:
            links = [
                path
                for group in result.groups
                if not group.is_delete
                for path in result.dictionary.get_path_strings(group.prim_list)
            ]

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
