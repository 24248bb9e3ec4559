"""What a run measures per env, once per policy step (:class:`Measure`): the velocity along the command in the base's
yaw frame after a warm-up, and falls by the one fall rule (:func:`fallen`) with their causes. Replay, training and
verify measure the same way (:class:`transfer.env.PolicyEnv` keeps one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from transfer._rotations import yaw

__all__ = ["BASE_CONTACT_HEIGHT", "FALL_CAUSES", "FALL_HEIGHT_FRACTION", "FALL_TILT_COS", "Measure", "fallen"]

FALL_TILT_COS = 0.5
"""A base tilted past 60° (projected gravity's z above -cos 60°) has fallen (Isaac Lab's ``bad_orientation``)."""
BASE_CONTACT_HEIGHT = 0.01
"""A base whose collision geometry reaches this close to the ground (m) touches it: it has fallen (Isaac Lab's
``base_contact``, an illegal contact on the base)."""
FALL_HEIGHT_FRACTION = 0.5
"""For a base with no collision geometry of its own: below this fraction of its spawn height it has fallen."""
FALL_CAUSES: tuple[str, ...] = ("base_contact", "bad_orientation", "nonfinite")
"""Why an env fell, as a replay reports it: its base touched the ground (or sank below half its spawn height, for a
base with no collision geometry), it tilted past 60°, or its state stopped being finite."""


def fallen(causes: Mapping[str, np.ndarray]) -> np.ndarray:
    """The one fall rule (replay, training, verify): per env, any of :meth:`PolicyEnv.fall_causes`."""
    return np.logical_or.reduce([np.asarray(c, bool) for c in causes.values()])


def _nanmean(values: np.ndarray) -> float:
    """``np.nanmean`` to the bit (its own sum over the values with NaN as 0, divided by the count as it divides), nan
    (and no "Mean of empty slice" warning) where every value is nan: no env to average. Twice a policy step: written
    out, it takes 14 us where ``np.nanmean`` took 23."""
    missing = np.isnan(values)
    count = np.sum(~missing, dtype=np.intp)
    if count == 0:
        return float("nan")
    total = np.sum(np.where(missing, 0, values))
    return float(total.dtype.type(total / count))


@dataclass
class Measure:
    """Per-env measurements over a run, updated once per policy step (``record``)."""

    num_envs: int
    direction: np.ndarray
    """Unit commanded direction in the yaw frame (x forward when the command has no planar part)."""
    warmup: float = 1.0
    """Seconds before velocities count."""
    fallen_at: np.ndarray = field(init=False)
    cause: np.ndarray = field(init=False)
    """Per env, why it fell (one of :data:`FALL_CAUSES`), or ``""``."""
    nonfinite: np.ndarray = field(init=False)
    sums: dict[str, np.ndarray] = field(init=False)
    samples: np.ndarray = field(init=False)
    trace: dict[str, list[float]] = field(init=False)

    def __post_init__(self) -> None:
        n = self.num_envs
        self.fallen_at = np.full(n, np.inf)
        self.cause = np.full(n, "", dtype=object)
        self.nonfinite = np.zeros(n, bool)
        self.sums = {k: np.zeros(n) for k in ("forward", "lateral", "yaw_rate")}
        self.samples = np.zeros(n)
        self.trace = {"time": [], "forward": [], "height": []}

    def record(self, t: float, state: Sequence[np.ndarray], causes: Mapping[str, np.ndarray]) -> None:
        """Take one sample at time ``t`` (s) from the root ``state`` (:meth:`PolicyEnv.root_state`: position,
        quaternion xyzw, world velocities, gravity) and the fall ``causes`` (:meth:`PolicyEnv.fall_causes`)."""
        pos, quat, lin_w, ang_w, _ = state
        alive = ~np.isfinite(self.fallen_at)
        causes = {**causes, "nonfinite": np.asarray(causes.get("nonfinite", False)) | self.nonfinite}
        down = fallen(causes)
        if down.any():
            for name in FALL_CAUSES:  # the first cause that holds names the fall
                hit = alive & down & np.asarray(causes.get(name, False), bool) & (self.cause == "")
                self.cause[hit] = name
        self.fallen_at[alive & down] = t
        alive &= ~down
        heading = yaw(quat)
        c, s = np.cos(heading), np.sin(heading)
        vx, vy = c * lin_w[:, 0] + s * lin_w[:, 1], -s * lin_w[:, 0] + c * lin_w[:, 1]
        d = self.direction
        forward, lateral = vx * d[0] + vy * d[1], -vx * d[1] + vy * d[0]
        if t > self.warmup:
            self.samples += alive
            for key, value in (("forward", forward), ("lateral", lateral), ("yaw_rate", ang_w[:, 2])):
                self.sums[key] += np.where(alive, value, 0.0)
        self.trace["time"].append(t)
        self.trace["forward"].append(_nanmean(np.where(alive, forward, np.nan)))
        self.trace["height"].append(_nanmean(pos[:, 2]))

    def causes(self) -> dict[str, int]:
        """How many envs fell of each cause (only the causes that happened)."""
        return {name: int((self.cause == name).sum()) for name in FALL_CAUSES if (self.cause == name).any()}

    def mean(self, key: str) -> float:
        """Mean of ``key`` over the envs' standing samples after the warm-up (nan if none)."""
        n = self.samples.sum()
        return float(self.sums[key].sum() / n) if n else float("nan")
