"""Reorder bandwidth: the transfer kernels against ``wp.copy`` of the same bytes (and ``numpy.take`` on CPU).

Usage::

    .venv/bin/python benchmarks/bench_reorder.py                 # CPU, table
    .venv/bin/python benchmarks/bench_reorder.py --device cuda:0 --json

Bandwidth counts the bytes read plus the bytes written (``2 * num_envs * N * itemsize``); the index map is not
counted. Each figure is the best of ``--trials`` timings, each the mean over enough launches to take
``--min-time`` seconds; the trials of the columns alternate, so load from other processes hits them alike.
Columns:

- ``elementwise``: the public kernel ``reorder_2d_backend_to_user`` launched with ``dim=(num_envs, N)``.
- ``plan``: what :class:`transfer.kernels.plan.ReorderPlan` (and the helper functions) launch on this device: the
  elementwise kernel on CUDA, one thread per environment row on CPU.
- ``copy``: ``wp.copy`` of the same array; ``numpy``: ``numpy.take(src, index, axis=1, out=dst)`` (CPU only).
- ``plan/copy``: plan bandwidth over copy bandwidth (GPU target >= 0.80); ``plan/numpy``: numpy time over plan
  time (CPU target >= 1.00, i.e. no slower than numpy.take).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import warp as wp
from _common import cpu_name, time_interleaved

from transfer import kernels
from transfer.kernels.plan import ReorderPlan
from transfer.name_map import build_name_map

DTYPES: dict[str, tuple[Any, tuple[int, ...]]] = {
    "float32": (wp.float32, ()),
    "float64": (wp.float64, ()),
    "vec3": (wp.vec3, (3,)),
    "quat": (wp.quat, (4,)),
    "transform": (wp.transform, (7,)),
    "spatial_vector": (wp.spatial_vector, (6,)),
}


def run(device_name: str, num_envs: int, joints: list[int], dtypes: list[str], min_time: float, trials: int) -> dict:
    wp.init()
    device = wp.get_device(device_name)
    rng = np.random.default_rng(0)
    rows = []
    for dtype_name in dtypes:
        dtype, comp = DTYPES[dtype_name]
        scalar = np.float64 if dtype_name == "float64" else np.float32
        for n in joints:
            names = [f"joint_{i}" for i in range(n)]
            user = [names[i] for i in rng.permutation(n)]
            nmap = build_name_map("joint", names, user, device=device)
            if nmap is None:  # the random permutation came out as the identity (n == 1)
                continue
            host = rng.standard_normal((num_envs, n, *comp)).astype(scalar)
            src = wp.array(host, dtype=dtype, device=device)
            dst = wp.empty_like(src)
            elementwise = wp.launch(
                kernels.reorder_2d_backend_to_user,
                dim=(num_envs, n),
                inputs=[src, nmap.user_to_backend],
                outputs=[dst],
                device=device,
                record_cmd=True,
            )
            plan = ReorderPlan(device)
            out = plan.add_gather("x", src, nmap)

            elementwise.launch()
            expected = np.take(host, nmap.user_to_backend_indices, axis=1)
            np.testing.assert_array_equal(dst.numpy(), expected)
            plan.launch()
            np.testing.assert_array_equal(out.numpy(), expected)

            fns: dict[str, Callable[[], None]] = {
                "elementwise": elementwise.launch,
                "plan": plan.launch,
                "copy": lambda d=dst, s=src: wp.copy(d, s),
            }
            if device.is_cpu:
                src_np, dst_np = src.numpy(), dst.numpy()  # zero-copy views of the same memory
                index = np.asarray(nmap.user_to_backend_indices, dtype=np.intp)
                fns["numpy"] = lambda s=src_np, i=index, d=dst_np: np.take(s, i, axis=1, out=d)
            for fn in fns.values():  # first launches load the kernels
                fn()
            t = time_interleaved(fns, min_time, trials, sync=lambda: wp.synchronize_device(device))
            nbytes = 2 * host.nbytes
            row: dict[str, Any] = {
                "dtype": dtype_name,
                "num_envs": num_envs,
                "N": n,
                "MB": host.nbytes / 1e6,
                "elementwise_GBps": nbytes / t["elementwise"] / 1e9,
                "plan_GBps": nbytes / t["plan"] / 1e9,
                "copy_GBps": nbytes / t["copy"] / 1e9,
                "plan_over_copy": t["copy"] / t["plan"],
                "elementwise_over_copy": t["copy"] / t["elementwise"],
            }
            if device.is_cpu:
                row["numpy_GBps"] = nbytes / t["numpy"] / 1e9
                row["plan_over_numpy"] = t["numpy"] / t["plan"]
                row["elementwise_over_numpy"] = t["numpy"] / t["elementwise"]
            rows.append(row)
    return {
        "device": str(device),
        "device_name": device.name if device.is_cuda else cpu_name(),
        "warp": wp.__version__,
        "numpy": np.__version__,
        "rows": rows,
    }


def format_table(result: dict) -> str:
    rows = result["rows"]
    cpu = bool(rows) and "numpy_GBps" in rows[0]
    head = ["dtype", "N", "MB", "elementwise GB/s", "plan GB/s", "copy GB/s", "plan/copy"]
    if cpu:
        head += ["numpy GB/s", "plan/numpy", "elementwise/numpy"]
    lines = [
        f"device: {result['device']} ({result['device_name']}), warp {result['warp']}, numpy {result['numpy']}",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    for r in rows:
        cells = [
            r["dtype"],
            str(r["N"]),
            f"{r['MB']:.2f}",
            f"{r['elementwise_GBps']:.1f}",
            f"{r['plan_GBps']:.1f}",
            f"{r['copy_GBps']:.1f}",
            f"{r['plan_over_copy']:.2f}",
        ]
        if cpu:
            cells += [f"{r['numpy_GBps']:.1f}", f"{r['plan_over_numpy']:.2f}", f"{r['elementwise_over_numpy']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--device", default="cpu", help="Warp device, e.g. cpu or cuda:0")
    parser.add_argument("--envs", type=int, default=4096, help="number of environments (rows)")
    parser.add_argument("--joints", type=int, nargs="+", default=[12, 37, 64, 256], help="articulation sizes N")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "transform"], choices=sorted(DTYPES))
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per timing trial")
    parser.add_argument("--trials", type=int, default=15, help="timing trials (interleaved); the best is kept")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    # Warp's own messages (init banner, module loads) go to stderr so that stdout is only the result.
    with contextlib.redirect_stdout(sys.stderr):
        result = run(args.device, args.envs, args.joints, args.dtypes, args.min_time, args.trials)
    print(json.dumps(result, indent=2) if args.json else format_table(result))


if __name__ == "__main__":
    main()
