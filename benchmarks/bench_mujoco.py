"""The MuJoCo backend's policy loop beside bare ``mujoco.mj_step`` on the same model, measured in one run.

Usage::

    .venv/bin/python benchmarks/bench_mujoco.py            # the demo quadruped (transfer/data/quadruped.xml)
    .venv/bin/python benchmarks/bench_mujoco.py --json

One env-step is one robot advanced by one physics step. The project's demo checkpoint (trained on PhysX) drives
its robot's MJCF on the MuJoCo backend (:class:`transfer.env.PolicyEnv`, ``--target mujoco``); timings interleaved:

- ``mj_step``: ``mujoco.mj_step`` on the backend's own compiled ``MjModel`` and a fresh ``MjData``, nothing else;
- ``policy loop, 1 env`` / ``2 envs``: one policy step as ``transfer replay`` runs it (the policy on the
  observation, targets, 4 physics steps, the observation and the measurements), in env-steps/s.

The acceptance (issue 30): 1 env >= 0.7x ``mj_step``; 2 envs >= 1.6x the 1-env loop on 2 cores. Then the time to a
result: ``transfer replay CHECKPOINT --seconds 0.2`` as a whole process, on ``mujoco`` and on ``physx`` (median of
``--runs``).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import cpu_name, refuse_below_one, second_job, time_interleaved  # noqa: E402

from transfer._console import stdout_to_stderr  # noqa: E402

CHECKPOINT = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"
MJCF = ROOT / "transfer/data/quadruped.xml"


def _loop(num_envs: int, threads: int | None = None):
    from transfer.env import PolicyEnv
    from transfer.runs.inputs import resolve_inputs

    inputs = resolve_inputs(CHECKPOINT, asset=MJCF)
    overrides = None if threads is None else {"threads": threads}
    env = PolicyEnv(inputs.task, inputs.robot, "mujoco", inputs.source, num_envs=num_envs, backend_overrides=overrides)
    policy, state = inputs.policy, {"obs": env.observe()}

    def step() -> None:
        obs, _ = env.step(policy(state["obs"]))
        env.root_state()
        state["obs"] = obs
        if env.episode_steps[0] > 200:
            env.reset()
            state["obs"] = env.observe()

    return env, step


def _time_to_result(target: str, runs: int) -> float:
    args = [sys.executable, "-m", "transfer.cli", "replay", str(CHECKPOINT), "--target", target, "--seconds", "0.2"]
    if target == "mujoco":
        args += ["--asset", str(MJCF)]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="whole-process replays per engine for time to a result")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--curve", action="store_true", help="also 4, 16 and 64 envs on 1 and 2 threads (issue 47)")
    parser.add_argument("--busy", action="store_true", help="with a second job on one core (_common.SECOND_JOB)")
    parser.add_argument(
        "--stepping", action="store_true", help="also 64 envs' stepping alone on 1 and 2 threads, and mujoco.rollout's"
    )
    args = parser.parse_args()
    refuse_below_one(parser, args, "trials", "runs")
    if not 0 < args.min_time < float("inf"):
        parser.error(f"--min-time {args.min_time}: give seconds > 0")
    with second_job(args.busy) as machine, stdout_to_stderr():  # Warp's banner and MuJoCo's warnings: not in the JSON
        result = _measure(args)
    result["machine"] = machine
    _print(result, args)
    return 0


def _measure(args: argparse.Namespace) -> dict:
    import mujoco

    warnings.simplefilter("ignore")
    one, step_one = _loop(1)
    two, step_two = _loop(2)
    model = one.art.backend.models[0]
    data = mujoco.MjData(model)
    decimation = one.task.decimation
    timed = time_interleaved(
        {"mj_step": lambda: mujoco.mj_step(model, data), "one": step_one, "two": step_two}, args.min_time, args.trials
    )
    rates = {
        "mj_step": 1 / timed["mj_step"],
        "policy loop, 1 env": decimation / timed["one"],
        "policy loop, 2 envs": 2 * decimation / timed["two"],
    }
    one.close()
    two.close()
    result = {
        "host": cpu_name(),
        "env_steps_per_second": rates,
        "one_env_over_mj_step": rates["policy loop, 1 env"] / rates["mj_step"],
        "two_envs_over_one": rates["policy loop, 2 envs"] / rates["policy loop, 1 env"],
        "time_to_result_seconds": {t: _time_to_result(t, args.runs) for t in ("mujoco", "physx")},
    }
    if args.curve:
        result["curve"] = _curve(decimation, args.min_time, args.trials)
    if args.stepping:
        result["stepping"] = _stepping(args.min_time, args.trials)
    return result


def _print(result: dict, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"host: {result['host']}, {result['machine']}")
    for name, rate in result["env_steps_per_second"].items():
        print(f"  {name:<20} {rate:>10.0f} env-steps/s")
    print(f"  1 env / mj_step      {result['one_env_over_mj_step']:.2f}x (target >= 0.7)")
    print(f"  2 envs / 1 env       {result['two_envs_over_one']:.2f}x (target >= 1.6 on 2 cores)")
    for target, seconds in result["time_to_result_seconds"].items():
        print(f"  time to a result     {target:<7} {seconds:.1f} s (replay --seconds 0.2, median of {args.runs})")
    for name, ratio in result.get("stepping", {}).items():
        print(f"  64 envs, {name:<38} {ratio:.2f}x")
    for row in result.get("curve", []):
        print(
            f"  {row['envs']:>3} envs, {row['threads']} thread(s) {row['env_steps_per_second']:>10.0f} env-steps/s "
            f"{row['over_mj_step']:.2f}x mj_step ({row['mj_step_per_second']:.0f} beside it), "
            f"{row['over_mj_step_on_loop_states']:.2f}x mj_step on the loop's states "
            f"({row['mj_step_on_loop_states_per_second']:.0f}), {row['over_one_thread']:.2f}x one thread"
        )


def _curve(decimation: int, min_time: float, trials: int) -> list[dict]:
    """The policy loop at 1, 4, 16 and 64 envs on 1 and 2 backend threads: for each env count the two loops and two
    bare ``mj_step`` bases on the same compiled model are timed interleaved, so that a change in the machine's speed
    hits all four alike:

    - ``mj_step``: one ``MjData`` from the spawn, stepped again and again (the robot soon lies still on its feet:
      few contacts that change, the solver warm-started from the step before);
    - ``mj_step on the loop's states``: the states the 1-thread loop went through (every env, each policy step of
      its warm-up: walking robots, their controls), each set into a ``MjData`` (``mj_setState``) and stepped
      ``decimation`` times with one call: the engine's own speed on the loop's work, nothing else."""
    import mujoco

    rows = []
    for envs in (1, 4, 16, 64):
        loops = {threads: _loop(envs, threads) for threads in (1, 2)}
        backend = loops[1][0].art.backend
        model = backend.models[0]
        data = mujoco.MjData(model)
        states = _walked_states(backend, loops[1][1], rounds=max(8, 256 // envs))
        fns = {
            "mj_step": functools.partial(mujoco.mj_step, model, data),
            "states": functools.partial(_step_states, model, mujoco.MjData(model), states, decimation),
        }
        fns.update({threads: step for threads, (_, step) in loops.items()})
        timed = time_interleaved(fns, min_time, trials)
        bare = 1 / timed["mj_step"]
        on_states = len(states) * decimation / timed["states"]
        for threads, (env, _) in loops.items():
            rate = envs * decimation / timed[threads]
            rows.append(
                {
                    "envs": envs,
                    "threads": threads,
                    "env_steps_per_second": rate,
                    "mj_step_per_second": bare,
                    "over_mj_step": rate / bare,
                    "mj_step_on_loop_states_per_second": on_states,
                    "over_mj_step_on_loop_states": rate / on_states,
                    "over_one_thread": timed[1] / timed[threads],
                }
            )
            env.close()
    return rows


def _walked_states(backend, step, rounds: int, settle: int = 50) -> list:
    """Every env's integration state (``mjSTATE_INTEGRATION``: positions, velocities, controls, warm start) after
    each of ``rounds`` policy steps of the loop ``step``, from its ``settle``-th on (before it the robots fall from
    their spawn height, with no contact to solve: cheaper steps than the loop's)."""
    import mujoco

    for _ in range(settle):
        step()
    states = []
    for _ in range(rounds):
        step()
        states.extend(_states_of(backend, mujoco.mjtState.mjSTATE_INTEGRATION))
    return states


def _states_of(backend, spec) -> np.ndarray:
    """``(E, size)``: every env's state of kind ``spec`` (``mj_getState``), now."""
    import mujoco

    states = np.empty((backend.num_envs, mujoco.mj_stateSize(backend.models[0], spec)))
    for e, (m, d) in enumerate(zip(backend.models, backend.datas, strict=True)):
        mujoco.mj_getState(m, d, states[e], spec)
    return states


def _step_states(model, data, states: list, decimation: int) -> None:
    """``decimation`` ``mj_step`` from each of ``states`` (one ``mj_setState`` each, as the loop takes one
    ``mj_getState`` per env and policy step)."""
    import mujoco

    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    for state in states:
        mujoco.mj_setState(model, data, state, spec)
        mujoco.mj_step(model, data, decimation)


def _stepping(min_time: float, trials: int, envs: int = 64) -> dict[str, float]:
    """Two threads over one at ``envs`` envs, timed interleaved: the policy loops; the backend's ``steps(4)`` alone;
    and MuJoCo's own threads (``mujoco.rollout``, the GIL released for the whole batch) stepping the same states 4
    steps, which says whether the GIL holds the backend's threads back."""
    import mujoco
    from mujoco import rollout

    (one, loop_one), (two, loop_two) = _loop(envs, 1), _loop(envs, 2)
    for _ in range(30):
        loop_one(), loop_two()
    b1, b2 = one.art.backend, two.art.backend
    model = b1.models[0]
    state = _states_of(b1, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    control = np.tile(b1.datas[0].ctrl, (envs, 4, 1))
    out, sensors = np.zeros((envs, 4, state.shape[1])), np.zeros((envs, 4, model.nsensordata))
    runners = {
        n: (rollout.Rollout(nthread=0 if n == 1 else n), [mujoco.MjData(model) for _ in range(n)]) for n in (1, 2)
    }

    def rolled(n: int) -> None:
        runner, scratch = runners[n]
        runner.rollout([model] * envs, scratch, state, control, nstep=4, state=out, sensordata=sensors)

    timed = time_interleaved(
        {
            "loop 1": loop_one,
            "loop 2": loop_two,
            "steps 1": lambda: b1.steps(4),
            "steps 2": lambda: b2.steps(4),
            "rollout 1": functools.partial(rolled, 1),
            "rollout 2": functools.partial(rolled, 2),
        },
        min_time,
        trials,
    )
    for runner, _ in runners.values():
        runner.close()
    one.close()
    two.close()
    return {
        "policy loop, 2 threads / 1": timed["loop 1"] / timed["loop 2"],
        "backend steps(4), 2 threads / 1": timed["steps 1"] / timed["steps 2"],
        "mujoco.rollout, 2 threads / 1": timed["rollout 1"] / timed["rollout 2"],
        "mujoco.rollout / backend steps(4), 1 thread": timed["steps 1"] / timed["rollout 1"],
    }


if __name__ == "__main__":
    raise SystemExit(main())
