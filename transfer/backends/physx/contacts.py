"""The contact force PhysX applied to each link, read through an ovphysx contact binding.

The scene (:mod:`transfer.backends.physx.scene`) applies ``PhysxContactReportAPI`` (threshold 0) to every link of
the articulation (clones copy it), which makes each a contact sensor; reporting changes nothing of the dynamics
(a test: the same joint positions to the bit after 1 s). :class:`ContactSensors` binds exactly the backend's links
the first time forces are asked for (a run that never asks pays nothing), and a read is the binding's net normal
plus net friction force (N, world frame, the last step): ~17 us for 26 links on the CPU here. ovphysx marks its
contact bindings deprecated in favour of ``CONTACT_SENSOR`` session reads, which give the same forces (measured:
137.48 N either way on the standing demo) at ~0.5 ms a read (its task plumbing): too slow for a trace's every step.

A body PhysX has put to sleep stops reporting its persistent contacts (ovphysx's docs: "a settled sensor can have
zero forces ... while still touching the ground"); a walking robot does not sleep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ContactSensors", "link_paths", "sensor_map"]


class ContactSensors:
    """Per-link contact forces of the links at ``paths`` (``{prim path: (env, body)}``, covering every env's every
    body). :meth:`destroy` releases the binding (before the PhysX instance is destroyed)."""

    def __init__(self, px: Any, paths: dict[str, tuple[int, int]], num_envs: int, num_bodies: int) -> None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self._binding = px.create_contact_binding(sensor_patterns=list(paths))
        bound = list(self._binding.sensor_paths)
        order = [paths.get(p, (-1, -1)) for p in bound]
        if sorted(order) != sorted(paths.values()):
            self.destroy()
            raise ValueError(f"PhysX bound the contact sensors {bound} for the links {sorted(paths)}")
        self._env = np.array([e for e, _ in order])
        self._body = np.array([b for _, b in order])
        self._normal = np.zeros((len(order), 3), np.float32)
        self._friction = np.zeros((len(order), 3), np.float32)
        self._out = np.zeros((num_envs, num_bodies, 3))

    def read(self, bodies: Sequence[int]) -> np.ndarray:
        """``(num_envs, len(bodies), 3)`` float64: each body's net normal + friction contact force."""
        self._binding.read_net_normal_forces(self._normal)
        self._binding.read_net_friction_forces(self._friction)
        self._out[self._env, self._body] = self._normal + self._friction
        return self._out[:, np.asarray(bodies, dtype=np.int64)].copy()

    def destroy(self) -> None:
        """Release the binding (idempotent)."""
        binding, self._binding = getattr(self, "_binding", None), None
        if binding is not None:
            binding.destroy()


def link_paths(px: Any) -> list[str]:
    """Every articulation link's prim path in the scene (``ARTICULATION_LINK`` rows, never collider rows)."""
    from ovphysx.types import ObjectScope, SimObjectType

    with px.read_sync(SimObjectType.ARTICULATION_LINK, ["mass"], scope=ObjectScope.ALL) as links:
        names = links.dictionary
        return [
            p
            for g in links.groups
            for p in names.get_path_strings(g.prim_list)[g.prim_offset : g.prim_offset + g.prim_count]
        ]


def sensor_map(
    links: Sequence[str], env_prefixes: Sequence[str], body_names: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """``{link prim path: (env, body)}`` for ``links``: the env whose clone prefix (``env_prefixes[k]``; ``""`` for
    a single env at the asset's place) holds it or is it (a root link cloned as the env's prim), the body by its prim's leaf (PhysX's link names). ``ValueError``
    unless every env's every body is covered once (a repeated leaf PhysX renamed, a clone not found)."""
    index = {name: i for i, name in enumerate(body_names)}
    out: dict[str, tuple[int, int]] = {}
    for path in links:
        # a clone prefix may be the root link itself (an MJCF robot whose joints sit under its root body, next to
        # a ground plane the clone must leave out: H1-2's pelvis): that link's path is the prefix, not under it
        envs = [k for k, p in enumerate(env_prefixes) if not p or path == p or path.startswith(p + "/")]
        leaf = path.rsplit("/", 1)[-1]
        if envs and leaf in index:
            out[path] = (max(envs, key=lambda k: len(env_prefixes[k])), index[leaf])
    wanted = [(e, b) for e in range(len(env_prefixes)) for b in range(len(body_names))]
    if sorted(out.values()) != wanted:
        raise ValueError(f"PhysX contact sensors {sorted(out)} do not cover every env's links {list(body_names)}")
    return out
