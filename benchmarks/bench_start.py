"""Time to a result on every engine, as a user meets it: one whole ``transfer replay`` process, warm and cold.

Usage::

    .venv/bin/python benchmarks/bench_start.py                 # physx, mujoco, newton: 3 warm rounds, 1 cold
    .venv/bin/python benchmarks/bench_start.py --runs 5 --cold 0 --json

``warm``: ``transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target T --seconds 0.2
--num-envs 1`` after one unmeasured run (the caches filled), the engines interleaved round by round, median of
``--runs``. ``cold``: the same with every cache the run keeps between runs cleared (a fresh ``XDG_CACHE_HOME``,
which holds Warp's compiled kernels and transfer's MuJoCo export; the operating system's file cache is left).

``newton floor`` is what Newton itself needs for the same result, with nothing of ``transfer``: a script that imports
torch and loads the same policy, builds the same USD with ``ModelBuilder.add_usd`` and a ground, makes
``SolverMuJoCo(use_mujoco_cpu=True)`` and steps it 40 times (0.2 s), then ends without the interpreter's teardown as
the replay does. Issue 33's target is Newton <= 4.5 s with PhysX <= 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import cpu_name  # noqa: E402

CHECKPOINT = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"
ROBOT = ROOT / "transfer/data/quadruped.usda"
TARGETS = ("physx", "mujoco", "newton")

NEWTON_FLOOR = """
import os, sys
import torch
policy = torch.jit.load(sys.argv[1])
import newton
builder = newton.ModelBuilder()
builder.add_usd(sys.argv[2])
builder.add_ground_plane()
model = builder.finalize(device="cpu")
solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True)
state, next_state, control = model.state(), model.state(), model.control()
for _ in range(40):
    solver.step(state, next_state, control, None, 0.005)
    state, next_state = next_state, state
sys.stdout.flush()
os._exit(0)
"""


def _timed(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def _replay(target: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "transfer.cli",
        "replay",
        str(CHECKPOINT),
        "--target",
        target,
        "--seconds",
        "0.2",
        "--num-envs",
        "1",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="warm rounds (each engine once a round)")
    parser.add_argument("--cold", type=int, default=1, help="cold runs per engine (0: none)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ)
    load = os.getloadavg()[0]
    floor = [sys.executable, "-c", NEWTON_FLOOR, str(CHECKPOINT), str(ROBOT)]
    commands = {**{t: _replay(t) for t in TARGETS}, "newton floor": floor}
    for command in commands.values():  # fill the caches
        _timed(command, env)
    warm: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            warm[name].append(_timed(command, env))
    cold: dict[str, list[float]] = {name: [] for name in TARGETS}
    for _ in range(args.cold):
        for name in TARGETS:
            with tempfile.TemporaryDirectory(prefix="bench-start-") as fresh:
                cold[name].append(_timed(commands[name], {**env, "XDG_CACHE_HOME": fresh}))
    result = {
        "host": cpu_name(),
        "load": load,
        "warm_median_s": {n: statistics.median(v) for n, v in warm.items()},
        "warm_s": warm,
        "cold_median_s": {n: statistics.median(v) for n, v in cold.items() if v},
        "cold_s": cold,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"host: {result['host']} (1-minute load {result['load']:.2f} at the start)")
    print(f"{'run':<14} {'warm median s':>14} {'warm runs':>22} {'cold s':>10}")
    for name, times in warm.items():
        runs = " ".join(f"{t:.1f}" for t in times)
        colds = " ".join(f"{t:.1f}" for t in cold.get(name, [])) or "-"
        print(f"{name:<14} {statistics.median(times):>14.1f} {runs:>22} {colds:>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
