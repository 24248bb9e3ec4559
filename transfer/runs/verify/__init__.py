"""``transfer.verify(...)``: the transfer guide's troubleshooting checklist, automated.

Three checks of one checkpoint on one asset (:func:`verify` returns a :class:`VerifyReport`):

1. **Sizes and names** (:func:`check_sizes`, no engine): every joint the config names (its listed orders,
   the keys of its defaults and gains, the action's joints, an explicit ``--source`` list) exists on the asset,
   the config fits the asset, and the checkpoint's input and output sizes match the observation and action
   the config describes there. Each observation term's slice is reported.
2. **Same named state, same observation, same action**: a :class:`~transfer.env.PolicyEnv` on PhysX and one
   on Newton, both in the checkpoint's order. Several seeded random states (joint positions inside the limits,
   joint velocities, root poses with a small roll and pitch and any yaw, root velocities, commands, last
   actions) are written by name into both, without a physics step; the observations are compared term by
   term, each entry labelled by the joint the checkpoint reads there, between the backends and against the
   observation computed directly from the named state. The policy's actions are compared by the joint each
   drives. :data:`TOLERANCES` says how close is the same (float32).
3. **Trace** (``trace=SECONDS``): both run the policy closed-loop from the same standing state; the per-joint
   divergence (joint position difference by name) over time is reported (:class:`TraceResult`) and, with
   ``plot``, drawn (:func:`plot_trace`). Right order but drifting trajectories is a dynamics difference, and the
   verdict says so.

``ok`` is checks 1 and 2; the trace informs, it does not fail. The ``transfer verify`` command is a thin layer.

Layout: this module is the API (:func:`verify`); :mod:`~transfer.runs.verify.checks` checks 1 and 2 (sizes and
names, same named state) with their tolerances; :mod:`~transfer.runs.verify.trace` check 3;
:mod:`~transfer.runs.verify.report` the result values, the verdict in words and the plot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from transfer.backends import backend_names
from transfer.env.environment import PolicyEnv
from transfer.orders.conventions import MEMBERS
from transfer.runs.inputs import Inputs, ReplayError, one_torch_thread, resolve_inputs, without_listed_order
from transfer.runs.replay import read_clip
from transfer.runs.verify.checks import (
    ACTION_TOLERANCE,
    BACKENDS,
    DEFAULT_TOLERANCE,
    SAMPLING,
    TOLERANCES,
    _compare,
    check_sizes,
)
from transfer.runs.verify.report import (
    Largest,
    SizeCheck,
    TermCheck,
    TraceResult,
    VerifyReport,
    _verdict,
    plot_trace,
)
from transfer.runs.verify.trace import DRIFT_THRESHOLD, _trace

__all__ = [
    "ACTION_TOLERANCE",
    "BACKENDS",
    "DEFAULT_TOLERANCE",
    "DRIFT_THRESHOLD",
    "SAMPLING",
    "TOLERANCES",
    "Largest",
    "SizeCheck",
    "TermCheck",
    "TraceResult",
    "VerifyReport",
    "check_engines",
    "check_finite_actions",
    "check_sizes",
    "plot_trace",
    "verify",
]


# ---------------------------------------------------------------------------------------------------- verify


def _resolve(checkpoint, source, config, asset) -> tuple[Inputs, Exception | None]:
    """The inputs; when only the checkpoint's order is unknown, inputs good for check 1 (names need no order) and
    the error to raise if check 1 passes."""
    try:
        return resolve_inputs(checkpoint, source=source, config=config, asset=asset), None
    except ReplayError as exc:
        if source is not None:
            raise
        try:  # is the order the only thing missing? names can be checked in any order
            return resolve_inputs(checkpoint, source=MEMBERS, config=config, asset=asset), exc
        except Exception:
            raise exc from None


def verify(
    checkpoint: str | Path,
    *,
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    samples: int = 8,
    seed: int = 0,
    trace: float = 0.0,
    plot: str | Path | None = None,
    tolerances: Mapping[str, float] | None = None,
    backend_orders: Mapping[str, Any] | None = None,
    progress: bool | TextIO = False,
    inputs: Inputs | None = None,
    engines: Sequence[str] | None = None,
    motion: str | Path | None = None,
    motion_fps: float | None = None,
    motion_anchor: str | None = None,
) -> VerifyReport:
    """Check ``checkpoint`` on ``asset`` on two engines (see the module docstring) and report.

    ``source``, ``config``, ``asset``: as :func:`transfer.replay` takes them. ``samples`` random named states
    (seeded by ``seed``) for check 2; ``trace`` seconds of closed-loop divergence (0: no trace) and ``plot`` a PNG
    of it. ``tolerances``: per-term overrides of :data:`TOLERANCES` (key ``action`` for the actions).
    ``backend_orders``: ``{backend: order}`` opens that backend in another order than the checkpoint's (a
    convention, a name list, or ``None`` for the engine's own): the control experiment that shows check 2 catches
    a wrong order. ``engines``: the two registered engines held against each other (default :data:`BACKENDS`).
    ``motion``, ``motion_fps``, ``motion_anchor``: a motion-tracking policy's clip, as :func:`transfer.replay` takes
    them (its motion terms are re-derived from the clip and the written state). Raises ``ValueError`` /
    ``FileNotFoundError`` for inputs that do not fit together enough to check (no config, no order, a missing
    file); a failed check is ``ok=False`` in the report.
    """

    engines = check_engines(engines)

    if samples < 1:
        raise ValueError(f"samples: expected at least one random state, got {samples}")
    if trace < 0 or not math.isfinite(trace):
        raise ValueError(f"trace: expected a duration in seconds (0: no trace), got {trace}")
    if plot is not None and trace <= 0:
        raise ValueError("plot: the plot draws the trace; give trace SECONDS too")
    pending = None
    if inputs is None:
        inputs, pending = _resolve(checkpoint, source, config, asset)
    tol = {**TOLERANCES, **dict(tolerances or {})}
    sizes = check_sizes(inputs)
    if pending is not None and sizes.ok:
        raise pending
    label = "unknown" if pending is not None else inputs.source_label
    common = dict(
        checkpoint=str(inputs.policy.path),
        asset=str(inputs.asset_given),
        source=label,
        backends=engines,
        samples=samples,
        seed=seed,
        sizes=sizes,
        warnings=list(inputs.warnings),
    )
    if not sizes.ok:
        return VerifyReport(ok=False, terms=[], orders={}, trace=None, verdict=_verdict(sizes, [], None), **common)
    check_finite_actions(inputs.policy, seed)
    clip = read_clip(motion, motion_fps, inputs)
    one_torch_thread()
    engines_opened = _open(inputs, engines, dict(backend_orders or {}), seed, clip, motion_anchor)
    terms, traced, orders = _check_on(engines_opened, inputs, sizes, samples, seed, tol, clip, trace, progress)
    ok = all(t.ok for t in terms)
    verdict = _verdict(sizes, terms, traced, orders)
    report = VerifyReport(ok=ok, terms=terms, orders=orders, trace=traced, verdict=verdict, **common)
    if plot is not None and traced is not None:
        plot_trace(report, plot)
    return report


def _open(
    inputs: Inputs, engines: Sequence[str], overrides: Mapping[str, Any], seed: int, clip: Any, anchor: str | None
) -> dict[str, Any]:
    """One environment per engine, in the checkpoint's order (or the order ``overrides`` gives an engine); those
    opened are closed when one fails to open."""

    envs: dict[str, Any] = {}
    try:
        for name in engines:
            ordering, task = inputs.source, inputs.task
            if name in overrides:
                ordering, task = overrides[name], without_listed_order(task)
            envs[name] = PolicyEnv(
                task, inputs.robot, name, ordering, seed=seed, init_noise=0.0, motion=clip, motion_anchor=anchor
            )
    except BaseException:
        for env in envs.values():
            env.close()
        raise
    return envs


def _check_on(
    envs: dict[str, Any],
    inputs: Inputs,
    sizes: SizeCheck,
    samples: int,
    seed: int,
    tol: Mapping[str, float],
    clip: Any,
    trace: float,
    progress: Any,
) -> tuple[list[TermCheck], TraceResult | None, dict]:
    """Checks 2 and 3 on the opened environments (closed after): the terms, the trace, each engine's orders."""
    try:
        commands = {name: env.command.copy() for name, env in envs.items()}
        terms = _compare(envs, inputs, sizes, samples, seed, tol, clip)
        for name, env in envs.items():
            env.command[:] = commands[name]
        traced = _trace(envs, inputs.policy, sizes.order, trace, progress) if trace > 0 else None
        orders = {
            n: {"public": list(e.art.joint_names), "backend": list(e.art.backend_joint_names)} for n, e in envs.items()
        }
    finally:
        for env in envs.values():
            env.close()
    return terms, traced, orders


def check_engines(engines: Sequence[str] | None) -> tuple[str, str]:
    """The two engines verify compares: two different registered names (default :data:`BACKENDS`)."""

    if engines is None:
        return BACKENDS  # type: ignore[return-value]
    known = backend_names()
    engines = tuple(engines)
    unknown = [e for e in engines if e not in known]
    if unknown or len(engines) != 2 or engines[0] == engines[1]:
        raise ValueError(f"--engines {' '.join(map(str, engines))}: give two different engines of {', '.join(known)}")
    return engines  # type: ignore[return-value]


def check_finite_actions(policy: Any, seed: int, count: int = 64) -> None:
    """Refuse, before the engines start, a policy that writes NaN or inf on ordinary observations (zeros and
    standard-normal draws): NaN equals nothing, so check 2 could only report an infinite difference."""
    import numpy as np

    rng = np.random.default_rng(seed)
    obs = np.concatenate([np.zeros((1, policy.input_size)), rng.standard_normal((count - 1, policy.input_size))])
    policy.reset()
    actions = np.asarray(policy(obs.astype(np.float32)), np.float64)
    policy.reset()
    bad = ~np.isfinite(actions.reshape(count, -1)).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{policy.path.name}: the policy writes non-finite actions (NaN or inf) on {int(bad.sum())} of {count} "
            "ordinary observations (zeros and standard-normal draws): its weights or normalizer hold NaN or inf. "
            "No engine setting changes that: retrain or re-export the checkpoint."
        )
