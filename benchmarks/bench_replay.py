"""Replay throughput with the policy in the loop, beside the bare backend loop, measured in one run.

Usage::

    .venv/bin/python benchmarks/bench_replay.py                     # PhysX at 64 envs, Newton (MuJoCo-Warp) at 16
    .venv/bin/python benchmarks/bench_replay.py --physx 1 64 --newton 16 --json

One env-step is one robot advanced by one physics step. For each backend and env count, one
:class:`transfer.env.PolicyEnv` is opened (the shared ANYmal C checkpoint, in its training order on the other
backend: the MJWarp-trained TorchScript policy on PhysX, the PhysX-trained ONNX policy on Newton) and two loops
run over the same articulation, their timings interleaved:

- ``bare``: what ``benchmarks/bench_physx.py`` times: ``step`` then joint positions, joint velocities, root pose,
  root body-frame velocity read and joint position targets written, once per physics step;
- ``replay``: one policy step as ``transfer replay`` runs it: the policy on the observation, the action turned
  into targets, ``decimation`` (4) physics steps, the observation rebuilt and the walking measurements taken.

``ratio`` is replay env-steps/s over bare env-steps/s (the target is >= 0.6). Each figure is the best of
``--trials`` timings of at least ``--min-time`` seconds. Needs ``../shared`` (the checkpoints and the asset).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import cpu_name, stand_pose, time_interleaved  # noqa: E402

from transfer._console import stdout_to_stderr  # noqa: E402

SHARED = ROOT.parent / "shared"
POLICIES = SHARED / "policies/anybotics_anymal_c/rl_policies"
ASSET = SHARED / "assets/anybotics_anymal_c/usd/anymal_c.usda"
TASK = ROOT / "presets/tasks/anymal_c_flat_velocity.yaml"
CASES = {  # backend: (checkpoint, its joint order)
    "physx": (POLICIES / "mjw_anymal.pt", "mjwarp"),
    "newton": (POLICIES / "physx_anymal.onnx", "physx"),
}


ACTUATORS = {  # --actuator: the task settings that replace the engine's PD with an explicit model
    "implicit": {},
    "ideal_pd": {"actuators": [{"name": "legs", "model": "ideal_pd", "joints": [".*"]}], "effort_limit": {".*": 80.0}},
    "dc_motor": {
        "actuators": [
            {"name": "legs", "model": "dc_motor", "joints": [".*"], "saturation_effort": 120.0, "velocity_limit": 7.5}
        ],
        "effort_limit": {".*": 80.0},
    },
}


def measure(backend: str, num_envs: int, min_time: float, trials: int, actuator: str = "implicit") -> dict:
    import torch

    from transfer.env import Measure, PolicyEnv
    from transfer.formats import load_policy
    from transfer.runs.replay import resolve_inputs

    torch.set_num_threads(1)
    checkpoint, source = CASES[backend]
    inputs = resolve_inputs(checkpoint, source=source, config=TASK, asset=ASSET)
    policy = load_policy(checkpoint)
    task = inputs.task.with_settings(ACTUATORS[actuator]) if ACTUATORS[actuator] else inputs.task
    env = PolicyEnv(task, ASSET, backend, inputs.source, num_envs=num_envs)
    try:
        art, dt = env.art, env.task.sim_dt
        target = np.tile(stand_pose(art.joint_names), (num_envs, 1)).astype(np.float32)
        meter = Measure(num_envs, np.array([1.0, 0.0]), env.fall_height)
        obs = [env.observe()]

        def bare() -> None:
            art.step(dt)
            art.data.joint_pos  # noqa: B018 - reads as a policy loop does
            art.data.joint_vel  # noqa: B018
            art.data.root_pos_w  # noqa: B018
            art.data.root_lin_vel_b  # noqa: B018
            art.set_joint_position_target(target)

        def replay() -> None:
            obs[0], _ = env.step(policy(obs[0]))
            meter.record(env.time, *env.root_state())

        for _ in range(10):
            replay()
        best = time_interleaved({"bare": bare, "replay": replay}, min_time, trials)
        bare_rate = num_envs / best["bare"]
        replay_rate = num_envs * env.task.decimation / best["replay"]
        return {
            "backend": backend,
            "solver": getattr(art.backend, "solver_name", "physx"),
            "num_envs": num_envs,
            "bare_env_steps_per_s": bare_rate,
            "replay_env_steps_per_s": replay_rate,
            "ratio": replay_rate / bare_rate,
            "policy": checkpoint.name,
            "actuator": actuator,
        }
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--physx", type=int, nargs="*", default=[64], help="PhysX env counts (default 64)")
    parser.add_argument("--newton", type=int, nargs="*", default=[16], help="Newton world counts (default 16)")
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds per timing (default 2)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--actuator",
        nargs="*",
        choices=sorted(ACTUATORS),
        default=["implicit"],
        help="actuator models to replay with (explicit ones compute torque every physics step)",
    )
    args = parser.parse_args(argv)
    if not (ASSET.is_file() and POLICIES.is_dir()):
        print(f"needs the shared ANYmal C asset and checkpoints at {SHARED}", file=sys.stderr)
        return 2
    rows = []
    with warnings.catch_warnings(), stdout_to_stderr():
        warnings.simplefilter("ignore")
        for backend, counts in (("physx", args.physx), ("newton", args.newton)):
            for n in counts:
                for actuator in args.actuator:
                    rows.append(measure(backend, n, args.min_time, args.trials, actuator))
    meta = {"cpu": cpu_name(), "cpu_count": os.cpu_count(), "load": os.getloadavg()[0]}
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
        return 0
    print(f"ANYmal C replay vs bare loop (CPU {meta['cpu']}, {meta['cpu_count']} cores, load {meta['load']:.1f})")
    print(
        f"{'backend':<8} {'solver':<12} {'actuator':<9} {'envs':>5} {'bare env-steps/s':>17} "
        f"{'replay env-steps/s':>19} {'ratio':>6}"
    )
    for r in rows:
        print(
            f"{r['backend']:<8} {r['solver']:<12} {r['actuator']:<9} {r['num_envs']:>5} "
            f"{r['bare_env_steps_per_s']:>17.0f} {r['replay_env_steps_per_s']:>19.0f} {r['ratio']:>6.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
