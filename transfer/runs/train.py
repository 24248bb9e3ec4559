"""``transfer.train(...)``: PPO (rsl-rl-lib's ``OnPolicyRunner``) on a task, on any backend, in the task's order.

The environment is the one replay uses (:class:`~transfer.env.PolicyEnv` over ``open_articulation``), opened in the
joint order the task names (its ``convention``; the backend's own order when it names none). So the same task
trains on PhysX or on Newton and the checkpoint's vectors mean the same joints either way. :class:`TrainEnv` adds
what training needs on top: velocity-tracking rewards (:data:`REWARDS`), terminations (a fall, a policy output that
is not finite) and per-env resets, behind rsl_rl's ``VecEnv`` interface.

What a run writes into its output folder, as Isaac Lab's ``logs/rsl_rl/...`` runs hold them:
``model_<iter>.pt`` (the RSL-RL training checkpoint: actor, critic, optimizer, observation normalizer),
``exported/policy.pt`` (TorchScript), ``rewards.png`` (the reward curve) and ``train.json`` (the command's settings
and the curve as data).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from transfer._console import is_terminal, progress_bar
from transfer._files import which_input
from transfer.backends import default_backend
from transfer.env.environment import PolicyEnv
from transfer.env.measure import fallen
from transfer.formats.checkpoint import atomic_write, build_metadata
from transfer.formats.rsl_rl import save_rsl_rl
from transfer.formats.torchscript import save_torchscript
from transfer.robot.usd_files import asset_files
from transfer.runs.inputs import resolve_task
from transfer.task.terms import OBS_TERMS
from transfer.traces.figures import pyplot, save

__all__ = ["REWARDS", "PPO_CONFIG", "RUN_FILES", "TrainEnv", "TrainResult", "check_run_folder", "train"]

INIT_NOISE = 0.1
"""Uniform noise (rad or m) on the initial joint positions of every training episode."""


def _tracking(error_sq: np.ndarray, sigma_sq: float = 0.25) -> np.ndarray:
    return np.exp(-error_sq / sigma_sq)


SOFT_LIMIT_FRACTION = 0.9
"""Joint positions beyond this fraction of the range (about its middle) are penalised: a gait that rests on the
hard limits leans on how each engine enforces them, which differs between engines and does not transfer."""


def _beyond_soft_limits(q: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    mid, half = (low + high) / 2, SOFT_LIMIT_FRACTION * (high - low) / 2
    return (np.clip(q - (mid + half), 0.0, None) + np.clip((mid - half) - q, 0.0, None)).sum(1)


REWARDS: dict[str, tuple[float, Callable[[dict[str, np.ndarray]], np.ndarray]]] = {
    # name: (weight, term over the step's quantities); the sum is scaled by the policy dt (as Isaac Lab does)
    "track_lin_vel_xy": (1.0, lambda s: _tracking(((s["cmd"][:, :2] - s["lin_b"][:, :2]) ** 2).sum(1))),
    "track_ang_vel_z": (0.5, lambda s: _tracking((s["cmd"][:, 2] - s["ang_b"][:, 2]) ** 2)),
    "lin_vel_z": (-2.0, lambda s: s["lin_b"][:, 2] ** 2),
    "ang_vel_xy": (-0.05, lambda s: (s["ang_b"][:, :2] ** 2).sum(1)),
    "flat_orientation": (-1.0, lambda s: (s["gravity_b"][:, :2] ** 2).sum(1)),
    "action_rate": (-0.01, lambda s: ((s["action"] - s["previous_action"]) ** 2).sum(1)),
    "joint_vel": (-1e-4, lambda s: (s["joint_vel"] ** 2).sum(1)),
    "joint_pos_limits": (-5.0, lambda s: _beyond_soft_limits(s["joint_pos"], s["limit_low"], s["limit_high"])),
    "termination": (-10.0, lambda s: s["terminated"].astype(np.float64)),
}
"""Velocity-tracking rewards (Isaac Lab's flat locomotion terms, by the same names)."""

OBS_NOISE: dict[str, float] = {name: term.noise for name, term in OBS_TERMS.items() if term.noise}
"""Uniform noise (+/- this, in the term's units, before its scale) on the observation while training, as Isaac Lab
adds it: a policy that does not rely on exact values transfers better. Replay and verify add none."""

PPO_CONFIG: dict[str, Any] = {
    "num_steps_per_env": 24,
    "save_interval": 50,
    "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
    "algorithm": {
        "class_name": "PPO",
        "num_learning_epochs": 5,
        "num_mini_batches": 4,
        "clip_param": 0.2,
        "gamma": 0.99,
        "lam": 0.95,
        "value_loss_coef": 1.0,
        "entropy_coef": 0.005,
        "learning_rate": 1e-3,
        "max_grad_norm": 1.0,
        "schedule": "adaptive",
        "desired_kl": 0.01,
    },
    "actor": {
        "class_name": "MLPModel",
        "hidden_dims": [128, 128],
        "activation": "elu",
        "obs_normalization": True,
        "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
    },
    "critic": {"class_name": "MLPModel", "hidden_dims": [128, 128], "activation": "elu", "obs_normalization": True},
}
"""rsl-rl-lib 5 runner configuration (what Isaac Lab's ``agent.yaml`` holds)."""


def _vec_env_base() -> type:
    from rsl_rl.env import VecEnv

    return VecEnv


class TrainEnv:
    """rsl_rl's ``VecEnv`` over a :class:`~transfer.env.PolicyEnv`: rewards, terminations, per-env resets.

    Built by :func:`make_train_env` (which mixes in rsl_rl's abstract base, imported lazily)."""

    def __init__(self, env: Any, episode_seconds: float = 10.0, seed: int = 0, obs_noise: float = 1.0) -> None:
        import torch

        self.env = env
        self._rng = np.random.default_rng(seed)
        self._noise_scale = float(obs_noise)
        self.num_envs = env.num_envs
        self.num_actions = env.action_size
        self.max_episode_length = max(1, round(episode_seconds / env.policy_dt))
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long)
        self.device = "cpu"
        self.cfg: dict[str, Any] = {}
        self._return = np.zeros(self.num_envs)
        self.episode_returns: deque[float] = deque(maxlen=200)
        self.episode_lengths: deque[float] = deque(maxlen=200)
        data = env.art.data
        low, high = data.joint_pos_limit_lower.numpy().copy(), data.joint_pos_limit_upper.numpy().copy()
        unlimited = ~np.isfinite(low) | ~np.isfinite(high) | (np.abs(low) > 1e6) | (np.abs(high) > 1e6)
        self._low, self._high = np.where(unlimited, -np.inf, low), np.where(unlimited, np.inf, high)

    def get_observations(self) -> Any:
        import torch
        from tensordict import TensorDict

        obs = self.env.observe().copy()
        for term in self.env.task.observation:
            noise = OBS_NOISE.get(term.name, 0.0) * self._noise_scale
            if noise:
                block = obs[:, self.env.slices[term.name]]
                scale = np.abs(np.asarray(term.scale, np.float32))
                scale = np.tile(scale, term.steps) if scale.ndim else scale
                block += self._rng.uniform(-noise, noise, block.shape).astype(np.float32) * scale
        return TensorDict({"policy": torch.from_numpy(obs)}, batch_size=[self.num_envs])

    def _quantities(self, action: np.ndarray, previous: np.ndarray, terminated: np.ndarray) -> dict[str, np.ndarray]:
        d = self.env.art.data
        return {
            "cmd": self.env.command,
            "lin_b": d.root_lin_vel_b.numpy(),
            "ang_b": d.root_ang_vel_b.numpy(),
            "gravity_b": d.projected_gravity_b.numpy(),
            "joint_pos": d.joint_pos.numpy(),
            "joint_vel": d.joint_vel.numpy(),
            "limit_low": self._low,
            "limit_high": self._high,
            "action": action,
            "previous_action": previous,
            "terminated": terminated,
        }

    def step(self, actions: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        import torch

        action = np.asarray(actions.detach().cpu().numpy(), dtype=np.float32)
        previous = self.env.last_action.copy()
        _, nonfinite = self.env.step(action)
        terminated = fallen(self.env.fall_causes()) | nonfinite
        q = self._quantities(np.where(np.isfinite(action), action, 0.0), previous, terminated)
        reward = np.zeros(self.num_envs)
        for weight, term in REWARDS.values():
            value = np.nan_to_num(weight * term(q), nan=0.0, posinf=0.0, neginf=0.0)
            reward += value
        reward *= self.env.policy_dt
        self.episode_length_buf += 1
        timeout = (self.episode_length_buf >= self.max_episode_length).numpy() & ~terminated
        done = terminated | timeout
        self._return += reward
        ids = np.flatnonzero(done)
        if ids.size:
            self.episode_returns.extend(self._return[ids].tolist())
            self.episode_lengths.extend(self.episode_length_buf.numpy()[ids].tolist())
            self._return[ids] = 0.0
            self.episode_length_buf[torch.from_numpy(ids)] = 0
            self.env.reset(ids)
        extras = {"time_outs": torch.from_numpy(timeout.astype(np.float32))}
        return (
            self.get_observations(),
            torch.from_numpy(reward.astype(np.float32)),
            torch.from_numpy(done.astype(np.float32)),
            extras,
        )


def make_train_env(env: Any, episode_seconds: float = 10.0, seed: int = 0, obs_noise: float = 1.0) -> Any:
    """A :class:`TrainEnv` that is also an ``rsl_rl.env.VecEnv`` (rsl_rl is imported only here)."""
    cls = type("RslRlTrainEnv", (TrainEnv, _vec_env_base()), {})
    return cls(env, episode_seconds, seed, obs_noise)


@dataclass
class TrainResult:
    """What a training run wrote and measured."""

    out_dir: str
    checkpoint: str
    """The last ``model_<iter>.pt`` (RSL-RL format, with the ordering metadata)."""
    exported: str
    """``exported/policy.pt`` (TorchScript, with the ordering metadata)."""
    backend: str
    task: str
    joint_names: list[str]
    num_envs: int
    iterations: int
    wall_seconds: float
    env_steps: int
    final_reward: float
    """Mean episode return over the last finished episodes."""
    final_episode_length: float
    curve: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def train(
    task: str | Path,
    backend: str | None = None,
    out_dir: str | Path = "runs/train",
    *,
    num_envs: int = 64,
    iterations: int = 300,
    seed: int = 0,
    episode_seconds: float = 10.0,
    asset: str | Path | None = None,
    progress: bool | TextIO = True,
    save_interval: int | None = None,
    obs_noise: float = 1.0,
    force: bool = False,
) -> TrainResult:
    """Train a policy for ``task`` (a task file) on ``backend`` and write the run into ``out_dir``.

    The checkpoint's joint vectors follow the task's ``convention`` (the backend's own order when it names none),
    whichever backend trains. Checkpoints carry the ordering metadata (trained_on, joint names, observation and
    action layout, defaults, gains, sim settings, asset hint) from the moment they are written. ``obs_noise`` scales
    the training observation noise (:data:`OBS_NOISE`; 0 turns it off).

    ``out_dir`` must be new or empty (:func:`check_run_folder`): a run never mixes with an earlier one. ``force``
    replaces the earlier run: its :data:`RUN_FILES` are deleted once the environment is up, other files are kept.
    """
    import torch
    from rsl_rl.runners import OnPolicyRunner

    backend = default_backend() if backend is None else backend

    if iterations < 1:
        raise ValueError(f"iterations: expected at least 1 PPO iteration, got {iterations}")
    out = Path(out_dir)
    check_run_folder(out, force)
    spec, path, asset_hint = _train_inputs(task, asset, episode_seconds)
    check_run_targets(out, task, path)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    trained = replace(spec, trained_on=backend)  # the base the engine training it builds (docs/replay.md)
    env = PolicyEnv(trained, path, backend, spec.convention, num_envs=num_envs, seed=seed, init_noise=INIT_NOISE)
    try:
        venv = make_train_env(env, episode_seconds, seed, obs_noise)
        cfg = json.loads(json.dumps(PPO_CONFIG))
        cfg["seed"] = seed
        runner = OnPolicyRunner(venv, cfg, log_dir=None, device="cpu")
        metadata = _metadata(env, backend, spec, asset_hint)
        _remove_previous_run(out)
        label = f"train {spec.name} on {backend}"
        curve, wall = _learn(
            runner, venv, iterations, out, metadata, save_interval or max(1, iterations // 4), progress, label
        )
        checkpoint = out / f"model_{iterations - 1}.pt"
        _save(runner, checkpoint, metadata)
        exported = _export(runner, out / "exported" / "policy.pt", metadata)
        result = TrainResult(
            out_dir=str(out),
            checkpoint=str(checkpoint),
            exported=str(exported),
            backend=backend,
            task=str(task),
            joint_names=list(env.art.joint_names),
            num_envs=num_envs,
            iterations=iterations,
            wall_seconds=wall,
            env_steps=iterations * cfg["num_steps_per_env"] * num_envs * env.task.decimation,
            final_reward=curve["reward"][-1] if curve["reward"] else float("nan"),
            final_episode_length=curve["episode_length"][-1] if curve["episode_length"] else float("nan"),
            curve=curve,
        )
        text = json.dumps(result.to_dict(), indent=2)
        atomic_write(out / "train.json", lambda tmp: tmp.write_text(text))  # a full disk: named, no half file
        plot_rewards(curve, out / "rewards.png", f"{spec.name} on {backend}")
        return result
    finally:
        env.close()


def _train_inputs(task: str | Path, asset: str | Path | None, episode_seconds: float) -> tuple[Any, Any, str | None]:
    """The task file loaded, the USD to open (``asset`` or the task's; MJCF/URDF converted) and the asset the
    checkpoint's metadata names (``asset`` as an absolute path, else the task's as written)."""
    spec, robot = resolve_task(task, asset)
    if not episode_seconds >= spec.policy_dt:
        raise ValueError(
            f"episode_seconds: {episode_seconds:g} s is shorter than one policy step ({spec.policy_dt:g} s) of "
            f"{spec.name}; give --episode-seconds of a few seconds (the default is 10)"
        )
    hint = spec.asset if asset is None else str(robot.given.resolve())
    return spec, robot, hint


def _learn(
    runner: Any,
    venv: Any,
    iterations: int,
    out: Path,
    metadata: dict[str, Any],
    interval: int,
    progress: bool | TextIO,
    label: str,
) -> tuple[dict[str, list[float]], float]:
    """``iterations`` PPO iterations, one at a time: the reward curve, a checkpoint every ``interval`` iterations
    (the last one is the caller's), a progress bar (a plain closing line when not on a terminal). Returns the curve
    and the wall time in seconds."""
    import sys

    curve: dict[str, list[float]] = {"iteration": [], "reward": [], "episode_length": [], "seconds": []}
    stream = progress if hasattr(progress, "write") else sys.stderr
    bar = progress_bar(range(iterations), progress, label, "it")
    start = time.perf_counter()
    for it in bar:
        runner.current_learning_iteration = it
        runner.learn(1, init_at_random_ep_len=it == 0)  # spread the episodes' ends over time
        reward = float(np.mean(venv.episode_returns)) if venv.episode_returns else float("nan")
        length = float(np.mean(venv.episode_lengths)) if venv.episode_lengths else float("nan")
        curve["iteration"].append(it)
        curve["reward"].append(reward)
        curve["episode_length"].append(length)
        curve["seconds"].append(time.perf_counter() - start)
        bar.set_postfix(reward=f"{reward:.2f}", ep_len=f"{length:.0f}")
        if (it + 1) % interval == 0 and it + 1 < iterations:
            _save(runner, out / f"model_{it}.pt", metadata)
    wall = time.perf_counter() - start
    if progress is not False and not is_terminal(stream):
        print(f"{label}: {iterations} iterations in {wall:.0f} s, final reward {curve['reward'][-1]:.2f}", file=stream)
    return curve, wall


RUN_FILES = ("model_<iter>.pt", "exported/policy.pt", "train.json", "rewards.png")
"""What a run writes into its folder (and what ``force`` deletes of an earlier run's): ``model_<iter>.pt`` is
``model_`` and a whole number, exactly (a ``model_best.pt`` of the user's is no run's, and is kept)."""
CHECKPOINT_NAME = re.compile(r"model_\d+\.pt")
"""The name of a checkpoint a run writes (``model_<iter>.pt``)."""


def check_run_folder(out: str | Path, force: bool = False) -> None:
    """Refuse ``out`` as a run folder when it is a file, or a folder that already holds something (unless
    ``force``): a second run would replace the first one's checkpoints or, beside an older ``model_499.pt``, add a
    ``model_0.pt`` that run-folder loading never picks."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"-o {out} is a file, not a folder; give a folder for the run (new or empty)")
    if force or not out.is_dir():
        return
    held = sorted(p.name for p in out.iterdir())
    if held:
        shown = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
        raise ValueError(
            f"-o {out} already holds {shown}: a new run would replace or mix with it. Give a new (or empty) folder, "
            "or pass --force to replace the run there (its model_<iter>.pt, exported/policy.pt, train.json and "
            "rewards.png are deleted first; other files are kept)."
        )


def check_run_targets(out: str | Path, task: str | Path, robot: Any) -> None:
    """Refuse a run whose files would land outside ``out`` (an ``exported`` that is a link to another folder: its
    policy.pt would replace a file there) or on a file the run reads: ``force`` deletes an earlier run's
    ``train.json`` and ``model_<iter>.pt``, and a task file or robot file of those names in ``out`` would go."""
    out = Path(out)
    exported = out / "exported"
    if exported.is_symlink() or (exported.exists() and not exported.is_dir()):
        what = f"a link to {exported.resolve()}" if exported.is_symlink() else "a file"
        raise ValueError(
            f"-o {out}: {exported} is {what}, where the run writes exported/policy.pt; remove it or give another folder"
        )
    reads = [("the --task file", Path(task))] if Path(task).is_file() else []
    reads += [("a file the robot is read from", p) for p in {*asset_files(robot.given), Path(robot.usd)}]
    fixed = [out / "train.json", out / "rewards.png", exported / "policy.pt"]
    for written in [*previous_run_files(out), *(p for p in fixed if p.exists())]:
        hit = which_input(written, reads)
        if hit is not None:
            raise ValueError(
                f"-o {out}: the run writes (or with --force deletes) {written}, which is {hit[0]} "
                f"({hit[1]}); move that file out of the run folder, or give another folder"
            )


def previous_run_files(out: Path) -> list[Path]:
    """The files of :data:`RUN_FILES` an earlier run left in ``out``, which ``force`` deletes: ``model_<iter>.pt``
    (``model_`` and a whole number, exactly: every checkpoint a run writes and its ``train.json`` names),
    ``exported/policy.pt``, ``train.json`` and ``rewards.png``. Nothing else (``model_best.pt``, notes, ...)."""
    if not out.is_dir():
        return []
    found = sorted(p for p in out.iterdir() if CHECKPOINT_NAME.fullmatch(p.name))
    found += [out / "exported" / "policy.pt", out / "train.json", out / "rewards.png"]
    return [p for p in found if p.is_file() or p.is_symlink()]  # a link: the link goes, not what it points to


def _remove_previous_run(out: Path) -> None:
    for path in previous_run_files(out):
        path.unlink(missing_ok=True)


def _metadata(env: Any, backend: str, spec: Any, asset: str | None) -> dict[str, Any]:
    return build_metadata(
        env.task,
        env.art.joint_names,
        body_names=env.art.body_names,
        convention=spec.convention,
        trained_on=backend,
        asset=asset,
    )


def _save(runner: Any, path: Path, metadata: dict[str, Any]) -> None:
    """The RSL-RL checkpoint as rsl_rl writes it, plus the metadata under its ``transfer`` key."""
    saved = runner.alg.save()
    saved["iter"] = runner.current_learning_iteration
    saved["infos"] = None
    save_rsl_rl(saved, path, metadata)


def _export(runner: Any, path: Path, metadata: dict[str, Any]) -> Path:
    """TorchScript export (rsl_rl's own ``as_jit``), with the metadata in its extra files."""
    import torch

    model = runner.alg.get_policy().as_jit()
    model.to("cpu")
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_torchscript(torch.jit.script(model), path, metadata)


def plot_rewards(curve: dict[str, list[float]], path: Path, title: str) -> Path:
    """Mean episode return and episode length per iteration, as a PNG."""
    plt = pyplot()

    fig, (ax_r, ax_l) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    ax_r.plot(curve["iteration"], curve["reward"], color="tab:blue")
    ax_r.set_ylabel("mean episode return")
    ax_l.plot(curve["iteration"], curve["episode_length"], color="tab:green")
    ax_l.set_ylabel("mean episode length (steps)")
    ax_l.set_xlabel("PPO iteration")
    fig.suptitle(f"transfer train: {title}")
    fig.tight_layout()
    return save(fig, path)
