"""PhysX backend: one articulation from a USD file, cloned into ``num_envs`` environments, on ovphysx.

:class:`PhysxBackend` implements :class:`transfer.backends.base.Backend` on ovphysx (PhysX 5 through the
ovstage scene description) with **tensor bindings**, the engine API that hands out whole ``(num_envs, ...)``
tensors in PhysX's own DoF and link order. The session read/write API was measured as well and is 14-20x
(1 env) to 25-28x (64 envs) slower for step + state read + target write, because it returns one array per
joint prim per attribute; see ``docs/physx.md`` for the numbers.

What the backend does with the asset, without ever writing to the user's file:

1. It composes an in-memory (anonymous) USD layer that sublayers the asset and adds, only where needed,
   a ``PhysicsScene`` (gravity 9.81 m/s^2 against the stage up axis) when the asset has none, a ground plane
   (``ground_height``), solver iteration overrides on the articulation root, a drive (zero gains, force limit
   ``drive_max_force``) on every articulation joint that authors none, so that gains written later give position
   control on every joint, and the scene flags for the chosen device. ovstage populates the engine from that
   layer.
2. It clones the asset's environment prim (the highest ancestor of the articulation that holds no
   ``PhysicsScene``, static collider or other articulation, e.g. ``/anymal``) into
   ``/World/envs/env_<k>/<name>`` for ``k = 1 .. num_envs - 1`` with ``PhysX.clone`` before the first step,
   spaced ``env_spacing`` metres apart on a square grid in the ground plane (CPU clones are not collision
   filtered, so they must not overlap). Environment 0 is the asset at its authored place.
3. It binds every tensor it needs to the ``num_envs`` root prims, in environment order.

Units. Tensor bindings are SI already, which the tests and ``docs/physx.md`` verify against the session API
(which is not): joint positions in rad (revolute) or m (prismatic), velocities in rad/s or m/s, drive
stiffness per rad (USD authors angular gains per degree: 5.235988 in USD reads 300 here), damping per rad/s,
limits in rad/m, velocity limits in rad/s or m/s. Root and link velocities are world-frame, linear velocity
of the centre of mass first, then angular velocity (rad/s). Quaternions are ``x, y, z, w``. PhysX reports
"unlimited" as the float32 maximum (3.4028235e38), not ``inf``.

Modules: :mod:`~transfer.backends.physx.engine` (the one start-up path of ovphysx in the process: engine import,
schema registration, CPU mode, threads, instance and stage lifetime), :mod:`~transfer.backends.physx.scene` (the
in-memory layer composition), :mod:`~transfer.backends.physx.backend` (:class:`PhysxBackend`) and
:mod:`~transfer.backends.physx.probe` (:func:`~transfer.backends.physx.probe.engine_orders`: PhysX's own
articulation orders, what :meth:`PhysxBackend.engine_orders` and ``transfer.backends.engine_orders("physx", ...)``
return).

ovphysx, ovstage and pxr are imported lazily: importing this package loads none of them.
"""

from typing import Any


def __getattr__(name: str) -> Any:  # the class on first use: importing the package (for settings.py) loads nothing
    if name == "PhysxBackend":
        from transfer.backends.physx.backend import PhysxBackend

        return PhysxBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PhysxBackend"]
