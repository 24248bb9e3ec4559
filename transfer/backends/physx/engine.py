"""The one way this process starts ovphysx: engine import, schema registration, CPU mode, threads, instances.

Both the backend (:class:`~transfer.backends.physx.PhysxBackend`) and the engine-order probe
(:func:`~transfer.backends.physx.probe.engine_orders`) start PhysX through these functions, in this order:

1. :func:`import_engine`: ``(ovphysx, ovstage)``, with the PhysX and Newton USD schemas registered for population
   (once per process, before the first population).
2. :func:`settle_mode`: ovphysx's process-wide device mode. Its CPU-only mode is sticky and can only be switched
   on before the first ``PhysX`` instance exists; a CUDA instance needs a process where it never was.
3. :func:`set_num_threads` (the backend only): PhysX's CPU worker count, process-wide, before an instance exists.
4. :func:`start_physx`: a ``PhysX`` instance, then :func:`new_stage` and :func:`attach` to populate it from a USD
   file or text; :class:`Engine` (the backend) or :func:`detach` (the probes) releases them. The probes (engine
   orders, joint movement) keep one instance each for the process: :func:`shared_instance`.

ovphysx, ovstage and pxr are imported lazily: importing this module loads none of them.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

import warp as wp

__all__ = [
    "INSTALL_HINT",
    "Engine",
    "attach",
    "detach",
    "import_engine",
    "import_pxr",
    "new_stage",
    "release_shared",
    "set_num_threads",
    "settle_mode",
    "shared_instance",
    "start_physx",
]

INSTALL_HINT = "pip install 'transfer[physx]'"
_stage_ids = itertools.count()
_schemas_lock = threading.Lock()
_schemas_registered = False
_shared_lock = threading.Lock()
_shared: dict[str, tuple[Any, bool]] = {}  # key -> (PhysX instance, cpu_scene), see shared_instance


def import_engine() -> tuple[Any, Any]:
    """``(ovphysx, ovstage)``, with PhysX and Newton schemas registered for population (once per process)."""
    global _schemas_registered
    try:
        import ovphysx
        import ovstage
        from ovphysx.samples.python_samples.schema_support import physx_schema_paths
    except ImportError as exc:
        raise ImportError(
            f"The PhysX backend needs ovphysx, ovstage and the PhysX/Newton USD schemas ({exc}). "
            f"Install them with: {INSTALL_HINT}"
        ) from exc
    with _schemas_lock:
        if not _schemas_registered:
            try:
                newton_root = [str(ovphysx.newton_schema_root())]
            except FileNotFoundError as exc:
                raise ImportError(f"newton-usd-schemas is missing ({exc}). Install it with: {INSTALL_HINT}") from exc
            ovstage.population.register_usd_schemas([*(str(p) for p in physx_schema_paths()), *newton_root])
            _schemas_registered = True
    return ovphysx, ovstage


def import_pxr() -> Any:
    try:
        import pxr
    except ImportError as exc:
        raise ImportError(
            f"PhysxBackend composes its scene with usd-core (pxr) ({exc}). Install it with: {INSTALL_HINT}"
        ) from exc
    return pxr


def settle_mode(device: str) -> bool:
    """Put ovphysx in the process-wide mode ``device`` (``"cpu"`` or ``"cuda[:N]"``) needs, before an instance.

    CPU: switch on the CPU-only mode (sticky for the process) unless it is on. ovphysx refuses that once any
    ``PhysX`` instance exists (even when the mode is already on, hence the check first); then this returns
    ``True``: the caller must ask for CPU dynamics in its scene instead. CUDA: the mode must never have been set.

    Raises:
        ImportError: the engine is missing (the message names the pip extra).
        RuntimeError: CUDA was asked for but Warp finds no CUDA device, or the CPU-only mode is on.
    """
    ovphysx, _ = import_engine()
    physx_class = ovphysx.PhysX
    if device.startswith("cuda"):
        if not wp.is_cuda_available():
            raise RuntimeError(f"PhysxBackend: device={device!r} but Warp finds no CUDA device; use device='cpu'.")
        if physx_class.get_cpu_mode():
            raise RuntimeError(
                f"PhysxBackend: device={device!r} but ovphysx is in its process-wide CPU-only mode (set by an "
                "earlier CPU PhysxBackend or engine-order probe, and sticky). Create CUDA backends in a fresh process."
            )
        return False
    if physx_class.get_cpu_mode():
        return False
    try:
        physx_class.set_cpu_mode(True)
    except RuntimeError:
        return True
    return False


def set_num_threads(num_threads: int) -> int:
    """Set PhysX's CPU worker count (process-wide) before an instance is created; return the count in effect."""
    import warnings

    from ovphysx import GlobalConfigKey, get_global_config, set_global_config

    current = get_global_config(GlobalConfigKey.NUM_THREADS)
    if current == num_threads:
        return num_threads
    try:
        set_global_config(GlobalConfigKey.NUM_THREADS, num_threads)
    except RuntimeError as exc:  # ovphysx refuses while any stage is attached (e.g. another live backend)
        warnings.warn(
            f"PhysxBackend: could not set num_threads={num_threads} ({exc}); PhysX keeps {current} worker threads. "
            "Create every backend of a process with the same num_threads, or close the others first.",
            RuntimeWarning,
            stacklevel=3,
        )
        return int(current) if current is not None else num_threads
    return num_threads


def start_physx(cuda_ordinal: int | None = None) -> Any:
    """A new ``PhysX`` instance: CPU (``None``), or GPU dynamics on CUDA device ``cuda_ordinal`` (DirectGPU
    tensors, no readback). Call :func:`settle_mode` first."""
    ovphysx, _ = import_engine()
    if cuda_ordinal is None:
        return ovphysx.PhysX()
    physx = ovphysx.PhysX(config=ovphysx.PhysXConfig(carbonite_overrides={"/physics/suppressReadback": True}))
    physx.set_config(ovphysx.ConfigKey.ACTIVE_CUDA_GPUS, str(cuda_ordinal))
    return physx


def new_stage(kind: str) -> Any:
    """A fresh ovstage stage with a name unique in this process (``transfer-<kind>-<pid>-<n>``)."""
    _, ovstage = import_engine()
    return ovstage.Stage(f"transfer-{kind}-{os.getpid()}-{next(_stage_ids)}")


def attach(physx: Any, stage: Any, *, path: str | None = None, usda: str | None = None) -> None:
    """Populate ``stage`` from the USD file ``path`` or the USDA text ``usda`` and attach it to ``physx``."""
    _, ovstage = import_engine()
    if usda is not None:
        ovstage.population.open_usd_from_string(stage, usda, ordinal=1, domains=ovstage.PopulationDomain.ALL)
    else:
        ovstage.population.open_usd(stage, path, ordinal=1, domains=ovstage.PopulationDomain.ALL)
    stage.advance_write_floor(ordinal=1).wait()
    physx.wait_task(physx.attach_ovstage(stage, read_ordinal=1))


def detach(physx: Any, stage: Any) -> None:
    """Detach ``stage`` from ``physx`` if it is attached (the stage itself stays; destroy it after)."""
    if physx.is_stage_attached(stage):
        physx.wait_task(physx.detach_ovstage())


def shared_instance(key: str, start: Callable[[], tuple[Any, bool]]) -> tuple[Any, bool]:
    """``(physx, cpu_scene)``: the process-wide ``PhysX`` instance kept under ``key``, and whether its scenes must
    ask for CPU dynamics (:func:`settle_mode`).

    ``start()`` makes the pair on first use (and after :func:`release_shared`); the instance is then reused by every
    call with ``key`` and destroyed at interpreter exit. Each key has its own instance. The caller serialises its
    use of the instance (attaching a stage, stepping) with its own lock.
    """
    with _shared_lock:
        instance = _shared.get(key)
        if instance is None:
            instance = _shared[key] = start()
            atexit.register(release_shared, key)
    return instance


def release_shared(key: str) -> None:
    """Destroy the instance :func:`shared_instance` keeps under ``key``, if any (the next call starts a new one)."""
    with _shared_lock:
        instance = _shared.pop(key, None)
    if instance is not None:
        instance[0].destroy()


class Engine:
    """The PhysX instance, its ovstage stage and the bindings; released by :meth:`close` (or at collection)."""

    def __init__(self) -> None:
        self.physx: Any = None
        self.stage: Any = None
        self.bindings: dict[str, Any] = {}

    def close(self) -> None:
        bindings, self.bindings = self.bindings, {}
        for binding in bindings.values():
            try:
                binding.destroy()
            except Exception:  # noqa: BLE001 - best effort on teardown
                pass
        physx, stage, self.physx, self.stage = self.physx, self.stage, None, None
        alive = physx is not None and getattr(physx, "_omni_physx_sdk_handle", True) is not None
        try:
            if alive and stage is not None:
                detach(physx, stage)
        finally:
            if stage is not None:
                stage.destroy()
            if alive:
                physx.destroy()
