"""Newton: per-step cost of the public-order step, ordered vs identity, for ANYmal C at 1 / 16 / 64 worlds.

Usage::

    .venv/bin/python benchmarks/bench_newton.py                       # table, CPU
    .venv/bin/python benchmarks/bench_newton.py --json                # the same as JSON
    .venv/bin/python benchmarks/bench_newton.py --worlds 1 --solvers mujoco_cpu
    .venv/bin/python benchmarks/bench_newton.py --device cuda:0       # captured: one CUDA graph per step

Each loop iteration is what a policy loop asks of the simulator, through :func:`transfer.open_articulation`:
write joint position targets, ``step(dt)``, read joint positions, joint velocities and body (link) poses.
The step scatters the targets, steps the solver and republishes the state in public order in one call (one
CUDA graph on a GPU). Columns:

- ``identity``: the articulation in Newton's own (MJWarp) order: no reorder at all.
- ``ordered``: the same in PhysX order (``joint_ordering=body_ordering="physx"``, as a PhysX-trained policy
  needs): the step also gathers joint positions, velocities, body poses and velocities into PhysX order and
  scatters the PhysX-order targets into Newton order.
- ``reorder``: the ordered articulation's 7 reorder launches alone (4 gathers, 3 scatters; a step runs the
  scatters of the commands in use only), per iteration.
- ``ratio``: ordered over identity; ``graph``: whether the step replayed a CUDA graph.

Solvers: ``mujoco_cpu`` (MuJoCo C; one world only, it simulates world 0 of a multi-world model; never captured)
and ``mujoco_warp`` (MuJoCo-Warp; on the CPU the first run compiles its kernels, ~1 min, then they come from
Warp's kernel cache). The scene: ANYmal C on a ground plane, base spawned 0.62 m up, drive stiffness 300 N·m/rad,
damping 10 N·m·s/rad, armature 0.06, PD targets at a standing pose, dt = 5 ms. Each figure is the best of
``--trials`` timings of at least ``--min-time`` seconds; the trials of the columns alternate.
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

BASE_HEIGHT = 0.62


def open_anymal(asset: Path, num_envs: int, solver: str, device: str, ordering: str | None) -> transfer.Articulation:
    art = transfer.open_articulation(
        asset,
        "newton",
        num_envs=num_envs,
        device=device,
        solver=solver,
        joint_ordering=ordering,
        body_ordering=ordering,
        drive_stiffness=300.0,
        drive_damping=10.0,
        armature=0.06,
        ground_plane=True,
        initial_root_pose=(0.0, 0.0, BASE_HEIGHT, 0.0, 0.0, 0.0, 1.0),
    )
    backend = art.backend
    backend.default_joint_pos.assign(np.tile(stand_pose(backend.joint_names), (num_envs, 1)))
    art.reset()
    return art


def policy_loop(art: transfer.Articulation) -> Callable[[], None]:
    target = wp.array(np.tile(stand_pose(art.joint_names), (art.num_envs, 1)), dtype=wp.float32, device=art.device)

    def it() -> None:
        art.set_joint_position_target(target)
        art.step(DT)
        art.data.joint_pos  # noqa: B018 - reads as a policy does; republished by the step
        art.data.joint_vel  # noqa: B018
        art.data.body_pose_w  # noqa: B018

    return it


def check_public_order(art: transfer.Articulation) -> None:
    """The ordered articulation's buffers equal the backend's state permuted by name."""
    b = art.backend
    joints = [list(b.joint_names).index(n) for n in art.joint_names]
    bodies = [list(b.body_names).index(n) for n in art.body_names]
    assert np.array_equal(art.data.joint_pos.numpy(), b.joint_positions().numpy()[:, joints]), "joint positions"
    assert np.array_equal(art.data.body_pose_w.numpy(), b.body_poses().numpy()[:, bodies]), "body poses"


def run(
    asset: Path, counts: list[int], solvers: list[str], device: str, min_time: float, trials: int, warmup: int
) -> list[dict]:
    rows = []
    sync = lambda: wp.synchronize_device(device)  # noqa: E731
    for solver in solvers:
        for num_envs in counts:
            if solver == "mujoco_cpu" and num_envs > 1:
                continue  # MuJoCo C simulates only world 0 of a multi-world model
            t_build = time.perf_counter()
            identity_art = open_anymal(asset, num_envs, solver, device, None)
            ordered_art = open_anymal(asset, num_envs, solver, device, "physx")
            identity, ordered = policy_loop(identity_art), policy_loop(ordered_art)
            t_first = time.perf_counter()
            identity()  # first step: MuJoCo-Warp kernels load (or compile), the graph is recorded
            ordered()
            sync()
            first_step = time.perf_counter() - t_first
            build = t_first - t_build
            for _ in range(warmup):  # let the robots settle on the ground
                identity()
                ordered()
            best = time_interleaved(
                {"identity": identity, "ordered": ordered, "reorder": ordered_art._plan.launch}, min_time, trials, sync
            )
            check_public_order(ordered_art)
            z = identity_art.data.root_pos_w.numpy()[:, 2]
            rows.append(
                {
                    "device": device,
                    "solver": solver,
                    "num_envs": num_envs,
                    "identity_ms": best["identity"] * 1e3,
                    "ordered_ms": best["ordered"] * 1e3,
                    "reorder_us": best["reorder"] * 1e6,
                    "ratio": best["ordered"] / best["identity"],
                    "identity_env_steps_per_s": num_envs / best["identity"],
                    "ordered_env_steps_per_s": num_envs / best["ordered"],
                    "graph": ordered_art.step_graph is not None,
                    "build_s": build,
                    "first_step_s": first_step,
                    "min_base_height_m": float(z.min()),
                }
            )
            identity_art.close()
            ordered_art.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asset", type=Path, default=DEFAULT_ASSET)
    parser.add_argument("--worlds", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--solvers", nargs="+", help="default: mujoco_cpu mujoco_warp (CPU), mujoco_warp (CUDA)")
    parser.add_argument("--device", default="cpu", help="Warp device: cpu (default) or cuda:0")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per timing (default 1)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20, help="steps before timing (default 20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not args.asset.is_file():
        print(f"asset not found: {args.asset} (pass --asset)", file=sys.stderr)
        return 2
    device = str(wp.get_device(args.device))
    solvers = args.solvers or (["mujoco_warp"] if device.startswith("cuda") else ["mujoco_cpu", "mujoco_warp"])
    rows = run(args.asset, args.worlds, solvers, device, args.min_time, args.trials, args.warmup)
    meta = {
        "device": device if device == "cpu" else f"{device} ({wp.get_device(device).name})",
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
    print(f"ANYmal C on Newton, {meta['device']} (CPU {meta['cpu']}, {meta['cpu_count']} cores), dt = {DT} s")
    header = f"{'solver':<12} {'worlds':>6} {'identity ms':>12} {'ordered ms':>11} {'ratio':>6} {'reorder us':>11} {'env-steps/s':>12} {'base z':>7} {'graph':>6}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['solver']:<12} {r['num_envs']:>6} {r['identity_ms']:>12.3f} {r['ordered_ms']:>11.3f} "
            f"{r['ratio']:>6.3f} {r['reorder_us']:>11.1f} {r['identity_env_steps_per_s']:>12.0f} "
            f"{r['min_base_height_m']:>7.3f} {'yes' if r['graph'] else 'no':>6}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
