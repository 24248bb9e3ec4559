"""PhysX backend throughput: env-steps per second for ANYmal C on ovphysx, identity vs ordered.

Usage::

    .venv/bin/python benchmarks/bench_physx.py                      # 1, 16, 64 envs, table
    .venv/bin/python benchmarks/bench_physx.py --json               # the same as JSON
    .venv/bin/python benchmarks/bench_physx.py --compare-apis       # also session read/write vs tensor bindings

One env-step is one robot advanced by one physics step. Each loop iteration does what a policy loop needs
from the simulator: ``step(dt)``, read joint positions, joint velocities, root pose and root velocity, and
write joint position targets. Columns:

- ``identity``: :class:`transfer.backends.physx.PhysxBackend` in its own (PhysX) order.
- ``ordered``: the same, plus the permutation a policy trained on MJWarp needs: joint positions and
  velocities gathered into MJWarp order and the targets scattered back into PhysX order, through a
  :class:`transfer.kernels.plan.ReorderPlan` built from ``transfer.build_name_map`` by name.
- ``overhead``: ``ordered`` time over ``identity`` time, minus one.
- ``public`` / ``public ordered``: the same iteration through the public API (:class:`transfer.Articulation`
  over the same backend, in PhysX order and in MJWarp order): ``step``, ``data.joint_pos``, ``data.joint_vel``,
  ``data.root_pos_w``, ``data.root_lin_vel_b`` (root pose and velocity read, body-frame velocity computed),
  ``set_joint_position_target``. The difference to the first two columns is the public layer's own cost.

The scene: ANYmal C standing on a ground plane (z = 0, base spawned 0.66 m up), drive stiffness 300 N·m/rad,
damping 10 N·m·s/rad, armature 0.06, PD targets at a standing pose, 4/0 solver iterations (as the replay in
ENGINES.md), dt = 5 ms, PhysX on the calling thread (``num_threads=0``). Each figure is the best of
``--trials`` timings of at least ``--min-time`` seconds; the trials of the two columns alternate.

``--compare-apis`` times the same iteration written directly against ovphysx's two APIs (one backend per
count; both loops return the state in radians, in DoF order): tensor bindings (what the backend uses) and
the session ``query``/``read``/``write`` API (degrees, one array per joint prim, converted and scattered in
Python).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import warp as wp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import DEFAULT_ASSET, DT, cpu_name, stand_pose, time_interleaved  # noqa: E402

import transfer  # noqa: E402
from transfer._console import stdout_to_stderr  # noqa: E402
from transfer.backends.physx import PhysxBackend  # noqa: E402
from transfer.kernels.plan import ReorderPlan  # noqa: E402

BASE_HEIGHT = 0.66  # straight legs reach 0.62 m below the base, plus the foot spheres


def make_backend(asset: Path, num_envs: int, num_threads: int) -> PhysxBackend:
    """ANYmal C standing on a ground plane under PD control (see the module docstring)."""
    backend = PhysxBackend(
        asset,
        num_envs=num_envs,
        num_threads=num_threads,
        drive_stiffness=300.0,
        drive_damping=10.0,
        solver_position_iterations=4,
        solver_velocity_iterations=0,
        dt=DT,
        ground_height=0.0,
        spawn_offset=(0.0, 0.0, BASE_HEIGHT),  # the asset's base is at z = 0, its straight legs below it
    )
    E, D = num_envs, backend.num_joints
    backend.write_joint_properties(armature=wp.array(np.full((E, D), 0.06, np.float32), dtype=wp.float32))
    stand = np.tile(stand_pose(backend.joint_names), (E, 1))
    backend.default_joint_pos.assign(stand)
    backend.reset()
    backend.set_joint_position_target(backend.default_joint_pos)
    return backend


def identity_loop(backend: PhysxBackend) -> Callable[[], None]:
    target = wp.clone(backend.default_joint_pos)  # what a policy in PhysX order writes

    def it() -> None:
        backend.step(DT)
        backend.joint_positions()
        backend.joint_velocities()
        backend.root_pose()
        backend.root_velocity()
        backend.set_joint_position_target(target)

    return it


def ordered_loop(backend: PhysxBackend, asset: Path) -> tuple[Callable[[], None], dict[str, Any]]:
    mjwarp = transfer.resolve_ordering(asset, "mjwarp", backend.root).joints
    nmap = transfer.build_name_map("joint", backend.joint_names, mjwarp)
    plan = ReorderPlan(device=backend.device)
    q_user = plan.add_gather("joint_pos", backend.joint_positions(), nmap)  # the backend refreshes these arrays
    qd_user = plan.add_gather("joint_vel", backend.joint_velocities(), nmap)
    target_backend = wp.clone(backend.default_joint_pos)
    target_user = plan.add_scatter("joint_target", None, target_backend, nmap)
    # What a policy in MJWarp order writes: the standing pose, permuted by name.
    names = list(backend.joint_names)
    target_user.assign(backend.default_joint_pos.numpy()[:, [names.index(n) for n in mjwarp]])

    def it() -> None:
        backend.step(DT)
        backend.joint_positions()
        backend.joint_velocities()
        backend.root_pose()
        backend.root_velocity()
        plan.launch_gathers()  # q_user, qd_user: MJWarp order
        plan.launch_scatters()  # target_user (MJWarp order) -> target_backend (PhysX order)
        backend.set_joint_position_target(target_backend)

    return it, {"plan": plan, "plan_map": nmap, "q_user": q_user, "qd_user": qd_user, "mjwarp": mjwarp}


def public_loop(art: transfer.Articulation) -> Callable[[], None]:
    target = wp.array(np.tile(stand_pose(art.joint_names), (art.num_envs, 1)), dtype=wp.float32, device=art.device)

    def it() -> None:
        art.step(DT)
        art.data.joint_pos  # noqa: B018 - reads as a policy does
        art.data.joint_vel  # noqa: B018
        art.data.root_pos_w  # noqa: B018
        art.data.root_lin_vel_b  # noqa: B018
        art.set_joint_position_target(target)

    return it


def session_loop(backend: PhysxBackend) -> tuple[Callable[[], None], np.ndarray]:
    """The same iteration on ovphysx's session read/write API (degrees at the boundary, one array per joint)."""
    from ovphysx.types import ObjectScope, SimObjectType

    from transfer.orders import JointType, read_topology

    px = backend._px
    E, D = backend.num_envs, backend.num_joints
    types = {j.name: j.type for j in read_topology(backend.usd_path, backend.root).articulations[0].joints}
    to_si = np.array(
        [math.pi / 180 if types[n] is JointType.REVOLUTE else 1.0 for n in backend.joint_names], np.float32
    )
    rel = backend.root[len(backend.clone_source) :]
    prefixes = [root[: len(root) - len(rel)] if rel else root for root in backend.env_root_paths]
    joints = px.query(SimObjectType.ARTICULATION_JOINT, scope=ObjectScope.ALL).wait()
    roots = px.query(SimObjectType.ARTICULATION, scope=ObjectScope.ALL).wait()

    def locate(path: str) -> tuple[int, int]:
        env = next(k for k, p in enumerate(prefixes) if path.startswith(p + "/"))
        return env, backend.joint_names.index(path.rsplit("/", 1)[-1])

    with px.read(joints, ["jointPosition"]).wait() as result:
        group = result.fetch_next().wait()
        slots = [locate(p) for p in result.dictionary.get_path_strings(group.prim_list)]
        del group
    with px.read(roots, ["rootPosition"]).wait() as result:
        group = result.fetch_next().wait()
        row_env = [
            prefixes.index(p[: len(p) - len(rel)] if rel else p)
            for p in result.dictionary.get_path_strings(group.prim_list)
        ]
        del group
    px.wait_all()
    env_idx = np.array([e for e, _ in slots])
    col_idx = np.array([c for _, c in slots])
    q, qd = np.zeros((E, D), np.float32), np.zeros((E, D), np.float32)
    pose, vel = np.zeros((E, 7), np.float32), np.zeros((E, 6), np.float32)
    target_usd = (backend.default_joint_pos.numpy() / to_si)[env_idx, col_idx]  # degrees for revolute DoFs

    def it() -> None:
        px.step_sync(DT)
        with px.read(joints, ["jointPosition", "jointVelocity"]).wait() as result:
            for dst in (q, qd):
                group = result.fetch_next().wait()
                dst[env_idx, col_idx] = np.array([t.numpy()[0] for t in group.tensors], np.float32)
                dst *= to_si
            del group
        with px.read(
            roots, ["rootPosition", "rootOrientation", "rootLinearVelocity", "rootAngularVelocity"]
        ).wait() as result:
            for dst, cols in ((pose, slice(0, 3)), (pose, slice(3, 7)), (vel, slice(0, 3)), (vel, slice(3, 6))):
                group = result.fetch_next().wait()
                dst[row_env, cols] = group.tensors[0].numpy()
            del group
        with px.write(joints, ["jointPositionTarget"]).wait() as session:
            while (group := session.fetch_next().wait()) is not None:
                for value, tensor in zip(target_usd, group.tensors, strict=True):
                    tensor.fill_(float(value))
                session.commit(group).wait()
            del group
        px.wait_all()

    return it, q


def run(asset: Path, counts: list[int], min_time: float, trials: int, warmup: int, num_threads: int) -> list[dict]:
    rows = []
    for num_envs in counts:
        backend = make_backend(asset, num_envs, num_threads)
        try:
            identity = identity_loop(backend)
            ordered, extra = ordered_loop(backend, asset)
            bmap = transfer.build_name_map(
                "body", backend.body_names, transfer.resolve_ordering(asset, "mjwarp", backend.root).bodies
            )
            public = public_loop(transfer.Articulation(backend, None, None))
            public_ordered = public_loop(transfer.Articulation(backend, extra["plan_map"], bmap))
            for _ in range(warmup):  # let the robots settle on the ground
                identity()
            loops = {"identity": identity, "ordered": ordered, "public": public, "public_ordered": public_ordered}
            best = time_interleaved(loops, min_time, trials)
            # Sanity: the robots still stand, and the ordered view is the PhysX state permuted by name.
            ordered()  # the last timed loop stepped after ordered's gathers
            z = backend.root_pose().numpy()[:, 2]
            names = list(backend.joint_names)
            permuted = backend.joint_positions().numpy()[:, [names.index(n) for n in extra["mjwarp"]]]
            assert np.array_equal(extra["q_user"].numpy(), permuted), "ordered gather disagrees with the PhysX state"
        finally:
            backend.close()
        rows.append(
            {
                "num_envs": num_envs,
                "identity_ms": best["identity"] * 1e3,
                "ordered_ms": best["ordered"] * 1e3,
                "identity_env_steps_per_s": num_envs / best["identity"],
                "ordered_env_steps_per_s": num_envs / best["ordered"],
                "overhead": best["ordered"] / best["identity"] - 1.0,
                "public_ms": best["public"] * 1e3,
                "public_ordered_ms": best["public_ordered"] * 1e3,
                "public_overhead": best["public_ordered"] / best["public"] - 1.0,
                "min_base_height_m": float(z.min()),
            }
        )
    return rows


def run_api_comparison(
    asset: Path, counts: list[int], min_time: float, trials: int, warmup: int, num_threads: int
) -> list[dict]:
    rows = []
    for num_envs in counts:
        backend = make_backend(asset, num_envs, num_threads)
        try:
            bindings = identity_loop(backend)
            session, session_q = session_loop(backend)
            for _ in range(warmup):
                bindings()
            best = time_interleaved({"bindings": bindings, "session": session}, min_time, trials)
            session()  # the session loop's state, converted to radians, is the bindings' state
            np.testing.assert_allclose(session_q, backend.joint_positions().numpy(), atol=1e-4)
        finally:
            backend.close()
        rows.append(
            {
                "num_envs": num_envs,
                "bindings_ms": best["bindings"] * 1e3,
                "session_ms": best["session"] * 1e3,
                "bindings_env_steps_per_s": num_envs / best["bindings"],
                "session_env_steps_per_s": num_envs / best["session"],
                "session_over_bindings": best["session"] / best["bindings"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asset", type=Path, default=DEFAULT_ASSET, help="ANYmal C USD (default: ../shared)")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per timing (default 1)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=200, help="steps before timing (robots settle)")
    parser.add_argument("--num-threads", type=int, default=0, help="PhysX CPU workers (0: calling thread)")
    parser.add_argument("--compare-apis", action="store_true", help="also time the session API (1 and 64 envs)")
    parser.add_argument("--api-num-envs", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not args.asset.is_file():
        print(f"ANYmal C asset not found: {args.asset} (pass --asset)", file=sys.stderr)
        return 2

    import ovphysx

    wp.config.quiet = True
    with warnings.catch_warnings(), stdout_to_stderr():  # keep stdout for the table / JSON
        warnings.simplefilter("ignore", RuntimeWarning)  # session reads: "Warp built with CUDA" notice
        wp.init()
        rows = run(args.asset, args.num_envs, args.min_time, args.trials, args.warmup, args.num_threads)
        apis = []
        if args.compare_apis:
            apis = run_api_comparison(
                args.asset, args.api_num_envs, args.min_time, args.trials, args.warmup, args.num_threads
            )
    report = {
        "device": f"cpu ({cpu_name()})",
        "cpu_count": os.cpu_count(),
        "ovphysx": getattr(ovphysx, "__version__", "?"),
        "warp": wp.config.version,
        "asset": str(args.asset),
        "dt": DT,
        "solver_iterations": [4, 0],
        "num_threads": args.num_threads,
        "results": rows,
        "api_comparison": apis,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"PhysxBackend, ANYmal C, {report['device']}, {report['cpu_count']} cores, ovphysx {report['ovphysx']}")
    print("step + read (joint pos/vel, root pose/vel) + position-target write, 4/0 iterations, dt 5 ms")
    print(
        f"{'envs':>5} {'identity ms':>12} {'env-steps/s':>12} {'ordered ms':>11} {'env-steps/s':>12} {'overhead':>9}"
        f" {'public ms':>10} {'public ordered ms':>18} {'overhead':>9}"
    )
    for r in rows:
        print(
            f"{r['num_envs']:>5} {r['identity_ms']:>12.3f} {r['identity_env_steps_per_s']:>12,.0f} "
            f"{r['ordered_ms']:>11.3f} {r['ordered_env_steps_per_s']:>12,.0f} {r['overhead']:>8.1%}"
            f" {r['public_ms']:>10.3f} {r['public_ordered_ms']:>18.3f} {r['public_overhead']:>8.1%}"
        )
    if apis:
        print("\nsame iteration, raw API: tensor bindings vs session read/write")
        print(
            f"{'envs':>5} {'bindings ms':>12} {'env-steps/s':>12} {'session ms':>11} {'env-steps/s':>12} {'ratio':>7}"
        )
        for r in apis:
            print(
                f"{r['num_envs']:>5} {r['bindings_ms']:>12.3f} {r['bindings_env_steps_per_s']:>12,.0f} "
                f"{r['session_ms']:>11.3f} {r['session_env_steps_per_s']:>12,.0f} {r['session_over_bindings']:>6.1f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
