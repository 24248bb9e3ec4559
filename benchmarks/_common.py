"""Shared bits of the benchmarks: the default robot, its standing pose, and the machine's name."""

from __future__ import annotations

import contextlib
import math
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ASSET = ROOT.parent / "shared" / "assets" / "anybotics_anymal_c" / "usd" / "anymal_c.usda"
DT = 0.005
STAND = {"HAA": 0.0, "HFE": 0.4, "KFE": -0.8}  # front legs; hind legs mirror HFE and KFE


def cpu_name() -> str:
    """The CPU model, for the record of where a number was measured."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


SECOND_JOB = (
    "import torch\ntorch.set_num_threads(1)\nx = torch.randn(512, 512)\nwhile True:\n    x = torch.tanh(x @ x)\n"
)
"""What ``--busy`` runs beside a benchmark: another job on the machine (a training process's matrix products on one
torch thread), as users' machines have."""


@contextlib.contextmanager
def second_job(busy: bool) -> Iterator[str]:
    """Within the block, :data:`SECOND_JOB` runs in its own process when ``busy`` (stopped after); yields how the
    machine was: ``"idle"`` or ``"busy (a second job on one core)"``."""
    if not busy:
        yield "idle"
        return
    job = subprocess.Popen([sys.executable, "-c", SECOND_JOB], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.0)  # torch imported, the job at work
        yield "busy (a second job on one core)"
    finally:
        job.kill()
        job.wait()


def refuse_below_one(parser: Any, args: Any, *names: str) -> None:
    """One line (argparse's) for a count flag under 1: no run, no traceback."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} {value}: give 1 or more")


def stand_pose(joint_names: tuple[str, ...]) -> np.ndarray:
    """ANYmal's standing joint positions for the given DoF names (any order)."""
    pose = np.zeros(len(joint_names), np.float32)
    for i, name in enumerate(joint_names):
        leg, kind = name.split("_", 1)
        sign = -1.0 if leg.startswith(("LH", "RH")) and kind != "HAA" else 1.0
        pose[i] = sign * STAND.get(kind, 0.0)
    return pose


def calibrate(fn: Callable[[], None], min_time: float, sync: Callable[[], None] = lambda: None) -> int:
    """Repetitions of ``fn`` that take at least ``min_time`` seconds (doubling, capped at 65536)."""
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        if time.perf_counter() - t0 >= min_time or reps >= 1 << 16:
            return reps
        reps *= 2


def time_interleaved(
    fns: dict[str, Callable[[], None]], min_time: float, trials: int, sync: Callable[[], None] = lambda: None
) -> dict[str, float]:
    """Best seconds per call of each function, trials interleaved so machine load hits all alike.

    ``sync`` waits for queued device work (e.g. ``wp.synchronize``) before a timing ends."""
    reps = {name: calibrate(fn, min_time, sync) for name, fn in fns.items()}
    best = dict.fromkeys(fns, math.inf)
    for _ in range(trials):
        for name, fn in fns.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(reps[name]):
                fn()
            sync()
            best[name] = min(best[name], (time.perf_counter() - t0) / reps[name])
    return best
