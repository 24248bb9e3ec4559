"""Newton backend: per-step cost of ordered vs identity stepping for ANYmal C, 1 / 16 / 64 worlds, CPU.

Usage::

    .venv/bin/python benchmarks/bench_newton.py                       # table
    .venv/bin/python benchmarks/bench_newton.py --json                # the same as JSON
    .venv/bin/python benchmarks/bench_newton.py --worlds 1 --solvers mujoco_cpu

Each loop iteration is what a policy loop asks of the simulator: write joint position targets, ``step(dt)``,
read joint positions, joint velocities and body (link) poses. Columns:

- ``identity``: :class:`transfer.backends.newton.NewtonBackend` in its own (Newton / MJWarp) order.
- ``ordered``: the same, plus what a policy trained on PhysX needs: joint positions, joint velocities and body
  poses republished into PhysX order, and PhysX-order position targets gathered into Newton order, through one
  :class:`transfer.plan.ReorderPlan` built with ``transfer.build_name_map`` from
  ``transfer.resolve_ordering(path, "physx")`` names.
- ``reorder``: the plan's launches alone (4 gathers/scatters), per iteration.
- ``ratio``: ordered over identity.

Solvers: ``mujoco_cpu`` (MuJoCo C; one world only, it simulates world 0 of a multi-world model) and
``mujoco_warp`` (MuJoCo-Warp on Warp's CPU device; the first run compiles its kernels, ~1 min, then they
come from Warp's kernel cache). The scene: ANYmal C on a ground plane, base spawned 0.62 m up, drive stiffness
300 N·m/rad, damping 10 N·m·s/rad, armature 0.06, PD targets at a standing pose, dt = 5 ms. Each figure is the
best of ``--trials`` timings of at least ``--min-time`` seconds; the trials of the columns alternate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import warp as wp

wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)  # keep stdout for the table / JSON

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import DEFAULT_ASSET, DT, cpu_name, stand_pose, time_interleaved  # noqa: E402

import transfer  # noqa: E402
from transfer.backends.newton import NewtonBackend  # noqa: E402
from transfer.plan import ReorderPlan  # noqa: E402

BASE_HEIGHT = 0.62


def make_backend(asset: Path, num_envs: int, solver: str) -> NewtonBackend:
    backend = NewtonBackend(
        asset,
        num_envs=num_envs,
        solver=solver,
        drive_stiffness=300.0,
        drive_damping=10.0,
        armature=0.06,
        ground_plane=True,
        initial_root_pose=(0.0, 0.0, BASE_HEIGHT, 0.0, 0.0, 0.0, 1.0),
    )
    stand = np.tile(stand_pose(backend.joint_names), (num_envs, 1))
    backend.default_joint_pos.assign(stand)
    backend.reset()
    backend.set_joint_position_target(backend.default_joint_pos)
    return backend


def identity_loop(backend: NewtonBackend) -> Callable[[], None]:
    target = wp.clone(backend.default_joint_pos)  # what a policy in Newton order writes

    def it() -> None:
        backend.set_joint_position_target(target)
        backend.step(DT)
        backend.joint_positions()
        backend.joint_velocities()
        backend.body_poses()

    return it


def ordered_loop(backend: NewtonBackend, asset: Path) -> tuple[Callable[[], None], Callable[[], None], dict]:
    physx = transfer.resolve_ordering(asset, "physx")
    jmap = transfer.build_name_map("joint", backend.joint_names, physx.joints)
    bmap = transfer.build_name_map("body", backend.body_names, physx.bodies)
    plan = ReorderPlan(device=backend.device)
    q_user = plan.add_gather("joint_pos", backend.joint_positions(), jmap)  # the backend refreshes these arrays
    qd_user = plan.add_gather("joint_vel", backend.joint_velocities(), jmap)
    poses_user = plan.add_gather("body_pose", backend.body_poses(), bmap)
    target_backend = wp.clone(backend.default_joint_pos)
    target_user = plan.add_scatter("joint_target", None, target_backend, jmap)
    names = list(backend.joint_names)
    target_user.assign(backend.default_joint_pos.numpy()[:, [names.index(n) for n in physx.joints]])

    def it() -> None:
        plan.launch_scatters()  # target_user (PhysX order) -> target_backend (Newton order)
        backend.set_joint_position_target(target_backend)
        backend.step(DT)
        backend.joint_positions()
        backend.joint_velocities()
        backend.body_poses()
        plan.launch_gathers()  # q_user, qd_user, poses_user: PhysX order

    def reorder_only() -> None:
        plan.launch_scatters()
        plan.launch_gathers()

    extra = {"q_user": q_user, "qd_user": qd_user, "poses_user": poses_user, "physx": physx, "plan": plan}
    return it, reorder_only, extra


def run(asset: Path, counts: list[int], solvers: list[str], min_time: float, trials: int, warmup: int) -> list[dict]:
    rows = []
    for solver in solvers:
        for num_envs in counts:
            if solver == "mujoco_cpu" and num_envs > 1:
                continue  # MuJoCo C simulates only world 0 of a multi-world model
            t_build = time.perf_counter()
            backend = make_backend(asset, num_envs, solver)
            identity = identity_loop(backend)
            ordered, reorder_only, extra = ordered_loop(backend, asset)
            t_first = time.perf_counter()
            identity()  # first step: MuJoCo-Warp kernels load (or compile) here
            first_step = time.perf_counter() - t_first
            build = t_first - t_build
            for _ in range(warmup):  # let the robots settle on the ground
                identity()
            best = time_interleaved(
                {"identity": identity, "ordered": ordered, "reorder": reorder_only}, min_time, trials
            )
            z = backend.root_pose().numpy()[:, 2]
            names = list(backend.joint_names)
            ordered()
            permuted = backend.joint_positions().numpy()[:, [names.index(n) for n in extra["physx"].joints]]
            assert np.array_equal(extra["q_user"].numpy(), permuted), "ordered gather disagrees with the state"
            bodies = list(backend.body_names)
            poses = backend.body_poses().numpy()[:, [bodies.index(n) for n in extra["physx"].bodies]]
            assert np.array_equal(extra["poses_user"].numpy(), poses), "ordered body poses disagree with the state"
            backend.close()
            rows.append(
                {
                    "solver": solver,
                    "num_envs": num_envs,
                    "identity_ms": best["identity"] * 1e3,
                    "ordered_ms": best["ordered"] * 1e3,
                    "reorder_us": best["reorder"] * 1e6,
                    "ratio": best["ordered"] / best["identity"],
                    "identity_env_steps_per_s": num_envs / best["identity"],
                    "ordered_env_steps_per_s": num_envs / best["ordered"],
                    "build_s": build,
                    "first_step_s": first_step,
                    "min_base_height_m": float(z.min()),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asset", type=Path, default=DEFAULT_ASSET)
    parser.add_argument("--worlds", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--solvers", nargs="+", default=["mujoco_cpu", "mujoco_warp"])
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per timing (default 1)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20, help="steps before timing (default 20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not args.asset.is_file():
        print(f"asset not found: {args.asset} (pass --asset)", file=sys.stderr)
        return 2
    rows = run(args.asset, args.worlds, args.solvers, args.min_time, args.trials, args.warmup)
    meta = {
        "device": "cpu",
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "warp": wp.__version__,
        "newton": __import__("newton").__version__,
        "dt": DT,
        "asset": str(args.asset),
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
        return 0
    print(f"ANYmal C on Newton, CPU ({meta['cpu']}, {meta['cpu_count']} cores), dt = {DT} s")
    header = f"{'solver':<12} {'worlds':>6} {'identity ms':>12} {'ordered ms':>11} {'ratio':>6} {'reorder us':>11} {'env-steps/s':>12} {'base z':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['solver']:<12} {r['num_envs']:>6} {r['identity_ms']:>12.3f} {r['ordered_ms']:>11.3f} "
            f"{r['ratio']:>6.3f} {r['reorder_us']:>11.1f} {r['identity_env_steps_per_s']:>12.0f} "
            f"{r['min_base_height_m']:>7.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
