"""The MuJoCo backend: MuJoCo C stepping the robot's own MJCF (or URDF), as the community's sim2sim checks do.

- :class:`MujocoBackend` (:mod:`~transfer.backends.mujoco.backend`): the :class:`~transfer.backends.base.Backend`
  contract over one ``MjModel``/``MjData`` per environment, stepped on threads;
- :mod:`~transfer.backends.mujoco.model`: the robot file read with ``MjSpec`` and changed only where the scene asks
  (ground, gravity, base, friction, self-collisions, motors driven as ideal PD);
- :mod:`~transfer.backends.mujoco.settings`: the task's ``mujoco:`` section (light: no mujoco import);
- :mod:`~transfer.backends.mujoco.render`: pictures of recorded runs of any engine, drawn on the robot's own file.

``MUJOCO_GL`` (MuJoCo's choice of OpenGL) is set by ``import transfer``, before ``mujoco`` is imported, unless it
is set already: rendering is headless.

Importing this package imports nothing heavy; :class:`MujocoBackend` imports ``mujoco`` and ``warp`` on first use.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "MujocoBackend":
        from transfer.backends.mujoco.backend import MujocoBackend

        return MujocoBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
