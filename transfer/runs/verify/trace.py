"""Check 3 of :func:`transfer.verify`: both backends run the policy closed-loop from the same standing state;
the per-joint divergence by name over time (:class:`~transfer.runs.verify.report.TraceResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from transfer._console import progress_bar
from transfer.env.measure import fallen
from transfer.runs.verify.report import TraceResult

DRIFT_THRESHOLD = 0.1
"""rad (or m): a joint whose positions on the two backends differ by more has drifted apart (check 3)."""


def _trace(envs: Mapping[str, Any], policy: Any, order: Sequence[str], seconds: float, progress: Any) -> TraceResult:

    q: dict[str, np.ndarray] = {}
    height: dict[str, list[float]] = {}
    xy: dict[str, np.ndarray] = {}
    fell: dict[str, float | None] = {}
    times: list[float] = []
    for name, env in envs.items():
        env.reset()  # the spawn pose and the default joint state (no noise: both start in the same state)
        policy.reset()
        idx = [env.art.joint_names.index(n) for n in order]
        steps = max(1, round(seconds / env.policy_dt))
        rows, heights, fell[name] = [], [], None
        obs = env.observe()
        bar = progress_bar(range(steps + 1), progress, f"trace {name}", "step", delay=2.0)
        times = []
        for k in bar:
            if k:
                obs, _ = env.step(policy(obs))
            pos = env.root_state()[0]
            rows.append(env.art.data.joint_pos.numpy()[0, idx].astype(np.float64))
            heights.append(float(pos[0, 2]))
            times.append(env.time)
            if fell[name] is None and fallen(env.fall_causes())[0]:
                fell[name] = env.time
        q[name], height[name], xy[name] = np.array(rows), heights, pos[0, :2].astype(np.float64)
    a, b = tuple(envs)
    div = np.abs(q[a] - q[b])
    div = np.where(np.isnan(div), np.inf, div)
    worst = div.max(axis=1)
    k, j = np.unravel_index(int(np.argmax(div)), div.shape)
    over = np.flatnonzero(worst > DRIFT_THRESHOLD)
    return TraceResult(
        seconds=times[-1],
        threshold=DRIFT_THRESHOLD,
        joints=list(order),
        time=times,
        divergence={n: div[:, i].tolist() for i, n in enumerate(order)},
        height=height,
        max_divergence=float(div[k, j]),
        joint=order[j],
        at=times[k],
        first_over=None if not over.size else times[over[0]],
        final=float(worst[-1]),
        base_offset=float(np.linalg.norm(xy[a] - xy[b])),
        fell=fell,
    )
