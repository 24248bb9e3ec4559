"""Resolve ANYmal C's physx and mjwarp orders from USD alone vs. building a Newton model to ask it.

Usage: python benchmarks/bench_resolve.py [ASSET] [--repeat N] [--json]

Both sides start from the file on disk in the same (warm) process: ``transfer`` reads the topology with pxr
and computes both conventions; the Newton side runs ``ModelBuilder.add_usd`` + ``finalize`` +
``ArticulationView`` (what Isaac Lab does to guess an order), which yields only the mjwarp order.
Target: ours at least 50x faster.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import tyro

DEFAULT = Path(__file__).resolve().parents[2] / "shared/assets/anybotics_anymal_c/usd/anymal_c.usda"


@dataclass
class Args:
    asset: tyro.conf.Positional[Path] = DEFAULT
    repeat: int = 10
    json: bool = False


def ours(asset: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    from transfer.orders import mjwarp_order, physx_order, read_topology

    graph = read_topology(asset).articulations[0]
    return physx_order(graph).joints, mjwarp_order(graph).joints


def newton_model(asset: Path) -> tuple[str, ...]:
    import newton
    from newton.selection import ArticulationView

    builder = newton.ModelBuilder()
    builder.add_usd(str(asset))
    model = builder.finalize(device="cpu")
    view = ArticulationView(model, "*", exclude_joint_types=[newton.JointType.FREE, newton.JointType.FIXED])
    return tuple(view.joint_dof_names)


def timed(fn, asset: Path, repeat: int) -> list[float]:
    fn(asset)  # warm-up: imports, kernel caches
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(asset)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    args = tyro.cli(Args)
    import warp as wp

    wp.config.quiet = True
    physx_joints, mjwarp_joints = ours(args.asset)
    assert tuple(mjwarp_joints) == newton_model(args.asset), "emulated mjwarp order differs from Newton's"
    t_ours = timed(ours, args.asset, args.repeat)
    t_newton = timed(newton_model, args.asset, args.repeat)
    result = {
        "asset": str(args.asset),
        "repeat": args.repeat,
        "transfer_both_orders_ms": 1e3 * statistics.median(t_ours),
        "newton_model_mjwarp_only_ms": 1e3 * statistics.median(t_newton),
    }
    result["speedup"] = result["newton_model_mjwarp_only_ms"] / result["transfer_both_orders_ms"]
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"asset: {result['asset']}  (median of {args.repeat})")
    print(f"  transfer, physx + mjwarp from USD:        {result['transfer_both_orders_ms']:8.2f} ms")
    print(f"  Newton add_usd + finalize + view (mjwarp): {result['newton_model_mjwarp_only_ms']:8.2f} ms")
    print(f"  speedup: {result['speedup']:.1f}x  (target >= 50x)")


if __name__ == "__main__":
    main()
