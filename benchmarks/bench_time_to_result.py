"""Time to a result beside the community's own loop: legged_gym's H1-2 on MuJoCo for 8 simulated seconds.

Usage::

    .venv/bin/python benchmarks/bench_time_to_result.py             # needs ../shared/community/unitree_rl_gym
    .venv/bin/python benchmarks/bench_time_to_result.py --runs 5 --busy --json

Two whole processes, run alternately ``--runs`` times each (a change in the machine's load hits both alike), timed
from start to exit:

- ``hand loop``: the repository's ``deploy/deploy_mujoco/deploy_mujoco.py`` on ``configs/h1_2.yaml``, its text as
  shipped, run with the viewer replaced by a headless stand-in that ends after 8 simulated seconds, ``time.sleep``
  (its real-time pacing) made a no-op, and ``legged_gym.LEGGED_GYM_ROOT_DIR`` set to the repository's folder;
- ``transfer``: ``transfer replay motion.pt --config h1_2.yaml --target mujoco --num-envs 1 --seconds 8``.

The hand loop calls its policy on torch's default threads as written; ``--one-thread`` also times it with
``torch.set_num_threads(1)`` (what ``transfer`` does for a batch of one). Prints the minimum and median of each and
``transfer``'s minimum over the hand loop's (the acceptance, issue 47: <= 1.0x).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import cpu_name, refuse_below_one, second_job  # noqa: E402

SECONDS = 8.0
HAND_LOOP = """
import runpy, sys, time, types
root, config, seconds, one_thread = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
sys.modules["legged_gym"] = types.SimpleNamespace(LEGGED_GYM_ROOT_DIR=root)
import mujoco, mujoco.viewer, yaml
if one_thread:
    import torch
    torch.set_num_threads(1)
with open(f"{root}/deploy/deploy_mujoco/configs/{config}") as f:
    dt = yaml.safe_load(f)["simulation_dt"]

class Headless:
    def __init__(self, model, data):
        self.syncs = 0
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def is_running(self):
        return self.syncs < round(seconds / dt)
    def sync(self):
        self.syncs += 1

mujoco.viewer.launch_passive = Headless
time.sleep = lambda s: None
sys.argv = ["deploy_mujoco.py", config]
runpy.run_path(f"{root}/deploy/deploy_mujoco/deploy_mujoco.py", run_name="__main__")
"""


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def commands(repository: Path) -> dict[str, list[str]]:
    """The whole-process command of each contender."""
    hand = [sys.executable, "-c", HAND_LOOP, str(repository), "h1_2.yaml", str(SECONDS)]
    transfer = [
        str(Path(sys.executable).parent / "transfer"),
        "replay",
        str(repository / "deploy/pre_train/h1_2/motion.pt"),
        "--config",
        str(repository / "deploy/deploy_mujoco/configs/h1_2.yaml"),
        "--target",
        "mujoco",
        "--num-envs",
        "1",
        "--seconds",
        str(SECONDS),
    ]
    return {"hand loop": [*hand, "0"], "hand loop, one torch thread": [*hand, "1"], "transfer": transfer}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one-thread", action="store_true", help="also the hand loop on one torch thread")
    parser.add_argument("--busy", action="store_true", help="with a second job on one core (_common.SECOND_JOB)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("TRANSFER_SHARED", ROOT.parent / "shared")))
    args = parser.parse_args()
    refuse_below_one(parser, args, "runs")
    repository = args.shared / "community" / "unitree_rl_gym"
    if not (repository / "deploy/deploy_mujoco/deploy_mujoco.py").is_file():
        raise SystemExit(f"{repository}: unitree_rl_gym not found (give --shared or set TRANSFER_SHARED)")
    chosen = commands(repository)
    if not args.one_thread:
        del chosen["hand loop, one torch thread"]
    times: dict[str, list[float]] = {name: [] for name in chosen}
    with second_job(args.busy) as machine:
        for _ in range(args.runs):
            for name, command in chosen.items():
                times[name].append(_timed(command))
    result = {
        "host": f"{cpu_name()}, {os.cpu_count()} cores, {machine}",
        "seconds": {name: {"min": min(t), "median": statistics.median(t), "runs": t} for name, t in times.items()},
        "transfer_over_hand_loop": min(times["transfer"]) / min(times["hand loop"]),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"host: {result['host']}; 8 s of H1-2 on MuJoCo, whole process, {args.runs} runs each, alternately")
    for name, row in result["seconds"].items():
        print(f"  {name:<28} min {row['min']:.2f} s  median {row['median']:.2f} s")
    print(f"  transfer / hand loop         {result['transfer_over_hand_loop']:.2f}x (target <= 1.0, by minimum)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
