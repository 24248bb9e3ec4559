"""What recording costs: the same replay with and without ``--record`` (issue 32's target: >= 0.8x), interleaved.

Every replay computes the metrics (the recorder always samples the run); ``--record`` adds the observation columns
and writing the Parquet file. Time is the whole ``replay()`` call, the file write included, median of ``--repeats``.
Run: ``.venv/bin/python benchmarks/bench_traces.py [--target physx] [--num-envs 4] [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "checkpoints" / "quadruped_flat_physx" / "exported" / "policy.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="physx")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from transfer.runs.replay import replay

    times: dict[str, list[float]] = {"without": [], "with": []}
    loop: dict[str, list[float]] = {"without": [], "with": []}
    size = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for kind in ("without", "with"):
                record = Path(tmp) / f"t{i}.parquet" if kind == "with" else None
                start = time.perf_counter()
                r = replay(
                    DEMO, args.target, num_envs=args.num_envs, seconds=args.seconds, progress=False, record=record
                )
                times[kind].append(time.perf_counter() - start)
                loop[kind].append(r.env_steps_per_second)
                if record is not None:
                    size = record.stat().st_size
    w, wo = statistics.median(times["with"]), statistics.median(times["without"])
    print(
        f"host: {platform.node()} ({platform.processor() or platform.machine()}), target {args.target}, "
        f"{args.num_envs} envs, {args.seconds:g} s, median of {args.repeats}"
    )
    print(f"replay without --record: {wo:.2f} s ({statistics.median(loop['without']):.0f} env-steps/s in the loop)")
    print(
        f"replay with --record:    {w:.2f} s ({statistics.median(loop['with']):.0f} env-steps/s), file {size / 1e6:.2f} MB"
    )
    print(f"speed with / without: {wo / w:.2f}x (target >= 0.8x)")


if __name__ == "__main__":
    main()
