"""Resolve ANYmal C's physx and mjwarp orders from USD alone, as a user meets it: from a file never read before.

Usage::

    .venv/bin/python benchmarks/bench_resolve.py                 # ANYmal C, table
    .venv/bin/python benchmarks/bench_resolve.py ASSET --repeat 30 --json
    .venv/bin/python benchmarks/bench_resolve.py --no-newton     # skip the Newton comparison
    .venv/bin/python benchmarks/bench_resolve.py --no-new-process

Every repetition copies the asset's directory (the USD file with what it references, e.g. ANYmal C's
``Props/instanceable_meshes.usd``) to a new temporary directory, so neither ``transfer``'s read cache nor USD's
layer registry has seen the path; the copy is not timed. Rows (median and min over ``--repeat``, in one warm
process: pxr is imported and its plugins loaded before timing):

- ``fresh, resolve_orderings``: ``transfer.resolve_orderings(copy, ("physx", "mjwarp"))``, one call.
- ``fresh, resolve_ordering x2``: ``resolve_ordering(copy, "physx")`` then ``(copy, "mjwarp")``; the second
  call is served from the read cache.
- ``warm, layers held (old figure)``: what this benchmark used to report (3.7 ms): one path read again and
  again while its layers stay open in USD's layer registry (the old benchmark's Newton run kept them alive),
  so USD neither parses the .usda nor opens the referenced crate file; the read cache is cleared each time.
- ``same path, cached``: both orders of a path already read (the cache hit: a few ``stat`` calls).
- ``new process, first call``: ``import transfer`` + ``resolve_orderings`` in a fresh interpreter (pxr import
  and plugin loading included), median of 3.
- ``Newton``: ``ModelBuilder.add_usd`` + ``finalize`` + ``ArticulationView`` on a fresh copy (what Isaac Lab does
  to learn the mjwarp order only), checked to give the same mjwarp order.

Target: both orders of ANYmal C from a fresh file in <= 8 ms.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tyro
from _common import DEFAULT_ASSET, cpu_name

import transfer

CONVENTIONS = ("physx", "mjwarp")
TARGET_MS = 8.0


@dataclass
class Args:
    asset: tyro.conf.Positional[Path] = DEFAULT_ASSET
    repeat: int = 30
    newton: bool = True
    """also time Newton's model build (needs newton and warp)"""
    new_process: bool = True
    """also time the first call in a new interpreter"""
    json: bool = False


@contextmanager
def fresh_copy(asset: Path):
    """The asset at a path no one has read: its directory copied into a new temporary directory."""
    with tempfile.TemporaryDirectory(prefix="bench_resolve_") as tmp:
        target = Path(tmp) / asset.parent.name
        shutil.copytree(asset.parent, target)
        yield target / asset.name


def both_orders(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    resolve_orderings = getattr(transfer, "resolve_orderings", None)
    if resolve_orderings is None:  # a checkout before resolve_orderings existed
        return tuple(transfer.resolve_ordering(path, c).joints for c in CONVENTIONS)
    orders = resolve_orderings(path, CONVENTIONS)
    return tuple(orders[c].joints for c in CONVENTIONS)


def one_by_one(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(transfer.resolve_ordering(path, c).joints for c in CONVENTIONS)


def clear_cache() -> None:
    from transfer.robot import usd

    getattr(usd, "clear_cache", lambda: None)()


def newton_model(path: Path) -> tuple[str, ...]:
    import newton
    from newton.selection import ArticulationView

    builder = newton.ModelBuilder()
    builder.add_usd(str(path))
    model = builder.finalize(device="cpu")
    view = ArticulationView(model, "*", exclude_joint_types=[newton.JointType.FREE, newton.JointType.FIXED])
    return tuple(view.joint_dof_names)


def time_fresh(fn: Callable[[Path], object], asset: Path, repeat: int) -> list[float]:
    from pxr import Sdf

    out = []
    for _ in range(repeat):
        with fresh_copy(asset) as path:
            assert Sdf.Layer.Find(str(path)) is None, "the fresh copy is already in USD's layer registry"
            t0 = time.perf_counter()
            fn(path)
            out.append(time.perf_counter() - t0)
    return out


def time_same_path(fn: Callable[[Path], object], path: Path, repeat: int, *, cached: bool) -> list[float]:
    from pxr import Usd

    held = None if cached else Usd.Stage.Open(str(path))  # keeps every layer in USD's registry
    out = []
    fn(path)
    for _ in range(repeat):
        if not cached:
            clear_cache()
        t0 = time.perf_counter()
        fn(path)
        out.append(time.perf_counter() - t0)
    del held
    return out


def time_new_process(asset: Path, runs: int = 3) -> list[float]:
    code = (
        "import sys, time; t0 = time.perf_counter(); import transfer; "
        f"f = getattr(transfer, 'resolve_orderings', None); c = {CONVENTIONS!r}; "
        "f(sys.argv[1], c) if f else [transfer.resolve_ordering(sys.argv[1], x) for x in c]; "
        "print(time.perf_counter() - t0)"
    )
    out = []
    for _ in range(runs):
        with fresh_copy(asset) as path:
            done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
            out.append(float(done.stdout.split()[-1]))
    return out


def stats(times: list[float]) -> dict[str, float]:
    return {"median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times), "n": len(times)}


def main() -> None:
    args = tyro.cli(Args)
    load = os.getloadavg()[0]  # before we add ours: other processes competing for the cores
    asset = args.asset.resolve()
    with fresh_copy(asset) as path:  # warm-up: pxr import, plugin loading; and the reference answer
        expected = one_by_one(path)
        clear_cache()
        assert both_orders(path) == expected
    rows: dict[str, dict[str, float]] = {}
    rows["fresh, resolve_orderings"] = stats(time_fresh(both_orders, asset, args.repeat))
    rows["fresh, resolve_ordering x2"] = stats(time_fresh(one_by_one, asset, args.repeat))
    with fresh_copy(asset) as path:
        rows["warm, layers held (old figure)"] = stats(time_same_path(both_orders, path, args.repeat, cached=False))
        rows["same path, cached"] = stats(time_same_path(both_orders, path, args.repeat, cached=True))
        assert both_orders(path) == expected
    if args.new_process:
        rows["new process, first call"] = stats(time_new_process(asset))
    if args.newton:
        import warp as wp

        wp.config.quiet = True
        with fresh_copy(asset) as path, contextlib.redirect_stdout(io.StringIO()):  # warp's kernel-load log
            assert newton_model(path) == expected[1], "emulated mjwarp order differs from Newton's"
        rows["Newton add_usd + finalize + view (mjwarp only)"] = stats(
            time_fresh(newton_model, asset, max(3, args.repeat // 4))
        )
    fresh = rows["fresh, resolve_orderings"]["median_ms"]
    result = {
        "asset": str(asset),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load_average_1min": load,
        "date": time.strftime("%Y-%m-%d"),
        "repeat": args.repeat,
        "rows": rows,
        "target_fresh_ms": TARGET_MS,
        "meets_target": fresh <= TARGET_MS,
    }
    if args.newton:
        result["speedup_vs_newton"] = rows["Newton add_usd + finalize + view (mjwarp only)"]["median_ms"] / fresh
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"asset: {result['asset']}")
    print(
        f"cpu:   {result['cpu']}, {result['cores']} cores, load average {result['load_average_1min']:.2f} at start "
        f"({result['date']}; physx + mjwarp orders)"
    )
    print(f"{'':48s} {'median ms':>10s} {'min ms':>8s} {'n':>4s}")
    for name, row in rows.items():
        print(f"{name:48s} {row['median_ms']:10.2f} {row['min_ms']:8.2f} {row['n']:4d}")
    verdict = "meets" if result["meets_target"] else "MISSES"
    print(f"fresh file, both orders: {fresh:.2f} ms median, {verdict} the target (<= {TARGET_MS:g} ms)")
    if args.newton:
        print(f"speedup over Newton's model build: {result['speedup_vs_newton']:.0f}x")


if __name__ == "__main__":
    main()
