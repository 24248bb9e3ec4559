"""``transfer train``: PPO on a task, on any backend, with checkpoints that know their joint order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import engine_output, print_error
from transfer.backends import default_backend
from transfer.cli._checks import (
    ASSET,
    BACKEND_METAVAR,
    DURATION,
    ENVS,
    ITERATIONS,
    SCALE,
    SEED,
    Backend,
    InputFile,
    OutputDir,
)
from transfer.cli._help import DEFAULT_IN_TEXT


@dataclass(frozen=True)
class Train:
    """Train a policy for --task on --backend with rsl-rl-lib's PPO, in the joint order the task names.

    Writes an Isaac Lab-style run into -o DIR: model_<iter>.pt (RSL-RL), exported/policy.pt (TorchScript), both
    carrying the ordering metadata, rewards.png and train.json. DIR must be new or empty unless --force.

    Examples, from the repository root (a short run first; the shipped quadruped policy took --num-envs 128
    --iterations 1000 --obs-noise 0, about 16 minutes on 2 CPU cores):
      transfer train --task presets/tasks/quadruped_flat_velocity.yaml --backend physx --iterations 20 -o runs/quadruped
      transfer train --task presets/tasks/quadruped_flat_velocity.yaml --backend newton --num-envs 16 --iterations 5 -o runs/quadruped_newton
      transfer replay runs/quadruped/exported/policy.pt --target newton --compare

    Read docs/train.md."""

    task: Annotated[Path, tyro.conf.arg(metavar="FILE.yaml"), InputFile("a task file (presets/tasks/*.yaml)")]
    """Task file (presets/tasks/*.yaml) naming the asset, observation, action, defaults and gains."""
    backend: Annotated[Backend, tyro.conf.arg(metavar=BACKEND_METAVAR)] = default_backend()  # type: ignore[valid-type]
    """The backend to train on."""
    out: Annotated[Path, tyro.conf.arg(aliases=("-o",), metavar="DIR"), OutputDir()] = Path("runs/train")
    """Output folder for the run (new or empty; an earlier run there only with --force)."""
    asset: Annotated[Path | None, tyro.conf.arg(metavar="ROBOT.usd"), ASSET, DEFAULT_IN_TEXT] = None
    """The robot's USD, MJCF (.xml) or URDF (.urdf) file (docs/import.md; default: the task's asset)."""
    force: bool = False
    """Replace the run in a non-empty -o DIR: its model_<iter>.pt, exported/policy.pt, train.json and rewards.png are
    deleted first (other files are kept)."""
    num_envs: Annotated[int, ENVS] = 64
    """Environments simulated at once."""
    iterations: Annotated[int, ITERATIONS] = 300
    """PPO iterations (24 policy steps per environment each)."""
    seed: Annotated[int, SEED] = 0
    """Seeds torch, the initial-state noise and the run."""
    episode_seconds: Annotated[float, DURATION] = 10.0
    """Episode length before a time-out reset."""
    obs_noise: Annotated[float, SCALE] = 1.0
    """Scale of the training observation noise (Isaac Lab's ranges; 0 turns it off)."""
    json: bool = False
    """Print the run's summary as one JSON object on stdout."""
    verbose: bool = False
    """Show what the engines, Warp and rsl_rl print (kept off the terminal by default)."""


def run_train(cmd: Train) -> int:
    from transfer.runs.train import check_run_folder, train

    try:
        check_run_folder(cmd.out, cmd.force)  # before the engines start
        with engine_output(cmd.verbose) as terminal:
            result = train(
                cmd.task,
                cmd.backend,
                cmd.out,
                num_envs=cmd.num_envs,
                iterations=cmd.iterations,
                seed=cmd.seed,
                episode_seconds=cmd.episode_seconds,
                obs_noise=cmd.obs_noise,
                asset=cmd.asset,
                force=cmd.force,
                progress=terminal,
            )
    except (FileNotFoundError, ValueError) as exc:
        print_error(exc)
        return 2
    summary = result.to_dict()
    summary.pop("curve")
    if cmd.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"trained {result.task} on {result.backend}: {result.iterations} iterations x {result.num_envs} envs in "
            f"{result.wall_seconds:.0f} s; final mean episode return {result.final_reward:.2f}, "
            f"episode length {result.final_episode_length:.0f}"
        )
        print(
            f"checkpoint: {result.checkpoint}\nexported:   {result.exported}\nreward curve: {cmd.out / 'rewards.png'}"
        )
    return 0
