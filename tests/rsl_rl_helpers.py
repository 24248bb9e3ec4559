"""rsl_rl's own trainer on a tiny random environment: checkpoints written by rsl-rl-lib itself, for the tests.

Import it after ``pytest.importorskip("torch")`` and ``pytest.importorskip("rsl_rl")``: it imports both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from rsl_rl.env import VecEnv
from rsl_rl.runners import OnPolicyRunner
from tensordict import TensorDict

OBS, ACT = 7, 3  # the default environment's observation and action sizes


class RandomEnv(VecEnv):
    """The smallest VecEnv rsl_rl trains on: random observations (mean 1, std 3) and rewards."""

    def __init__(self, num_envs: int = 4, obs: int = OBS, act: int = ACT):
        self.num_envs, self.num_actions, self.max_episode_length = num_envs, act, 10
        self._obs_size = obs
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)
        self.device, self.cfg = "cpu", {}
        self.gen = torch.Generator().manual_seed(0)

    def get_observations(self) -> TensorDict:
        obs = torch.randn(self.num_envs, self._obs_size, generator=self.gen) * 3 + 1
        return TensorDict({"policy": obs}, batch_size=[self.num_envs])

    def step(self, actions):
        n = self.num_envs
        return (
            self.get_observations(),
            torch.randn(n, generator=self.gen),
            torch.zeros(n),
            {"time_outs": torch.zeros(n)},
        )


def make_runner(
    distribution: str | None = "GaussianDistribution",
    activation: str = "elu",
    model: str = "MLPModel",
    *,
    obs: int = OBS,
    act: int = ACT,
    hidden: Sequence[int] = (8, 6),
    critic_hidden: Sequence[int] = (8,),
    critic_normalization: bool = False,
    **extra,
) -> OnPolicyRunner:
    """A PPO ``OnPolicyRunner`` (seeded, untrained) over a :class:`RandomEnv` of ``obs`` observations and ``act``
    actions: the actor is ``model`` with ``hidden`` layers, ``activation``, an observation normalizer, the
    ``distribution`` head (``None``: none) and ``extra`` keywords; the critic an MLP with ``critic_hidden`` layers."""
    actor = {
        "class_name": model,
        "hidden_dims": list(hidden),
        "activation": activation,
        "obs_normalization": True,
        **extra,
    }
    if distribution:
        actor["distribution_cfg"] = {"class_name": distribution}
    critic = {"class_name": "MLPModel", "hidden_dims": list(critic_hidden), "activation": "elu"}
    if critic_normalization:
        critic["obs_normalization"] = True
    cfg = {
        "num_steps_per_env": 4,
        "save_interval": 100,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {"class_name": "PPO", "num_learning_epochs": 1, "num_mini_batches": 1},
        "actor": actor,
        "critic": critic,
    }
    torch.manual_seed(0)
    return OnPolicyRunner(RandomEnv(obs=obs, act=act), cfg, log_dir=None, device="cpu")


def rsl_rl_actions(runner: OnPolicyRunner, obs: np.ndarray) -> np.ndarray:
    """The runner's own deterministic actions for ``obs`` (``(n, obs)`` float32)."""
    actor = runner.get_inference_policy()
    with torch.no_grad():
        return actor(TensorDict({"policy": torch.from_numpy(obs)}, batch_size=[len(obs)])).numpy()
