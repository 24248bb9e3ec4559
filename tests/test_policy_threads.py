"""A policy loaded anywhere (the API, an env, a sweep's worker) runs a small batch on one torch thread (issue 47):
on a busy machine, torch's thread pool spin-waiting for a core another process holds made a batch-1 call of the
demo policy ~7 ms instead of ~20 us."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"

BUSY = """
import time, torch
module = torch.jit.load({path!r})
obs = torch.zeros(1, {size})
end = time.monotonic() + {seconds}
print("busy", torch.get_num_threads(), flush=True)
with torch.no_grad():
    while time.monotonic() < end:
        module(obs)
"""


def test_a_batch_one_call_does_not_stall_beside_another_process_calling_torch():
    torch = pytest.importorskip("torch")
    from transfer.formats import load_policy
    from transfer.formats.policy import THREADED_BATCH

    policy = load_policy(DEMO)
    busy = subprocess.Popen(
        [sys.executable, "-c", BUSY.format(path=str(DEMO), size=policy.input_size, seconds=20)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert busy.stdout.readline().startswith("busy")  # the other process calls torch on its default threads
        obs = np.zeros((1, policy.input_size), np.float32)
        for _ in range(50):
            policy(obs)
        medians = []
        for _ in range(3):  # up to three tries: a neighbour's burst slows one (the stall slows every one, ~7 ms)
            times = []
            for _ in range(300):
                start = time.perf_counter()
                policy(obs)
                times.append(time.perf_counter() - start)
            medians.append(statistics.median(times))
            if medians[-1] < 200e-6:
                break
    finally:
        busy.kill()
        busy.wait()
    assert min(medians) < 200e-6, f"medians {[round(m * 1e6) for m in medians]} us"
    before = torch.get_num_threads()
    seen = []
    policy._forward, forward = (lambda x: seen.append(torch.get_num_threads()) or forward(x)), policy._forward
    policy(obs)
    policy(np.zeros((THREADED_BATCH, policy.input_size), np.float32))
    assert seen == [1, before] and torch.get_num_threads() == before  # the caller's count is left as it was
