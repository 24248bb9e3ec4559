"""Recurrent policies as the community exports them (issue 28), batched over every env with a state per env.

The exporters are written here as their projects write them: legged_gym's ``PolicyExporterLSTM``
(``legged_gym/utils/helpers.py``: the actor MLP registered before the LSTM ``memory``, so the first 2-D weight
reads the hidden state; ``reset_memory()``), Isaac Lab's ``_TorchPolicyExporter`` (``isaaclab_rl/rsl_rl/exporter.py``:
``rnn`` + ``actor`` + ``normalizer``; the scripted module keeps no ``reset``), and rsl_rl's own
``export_policy_to_jit`` / ``export_policy_to_onnx`` (``obs, h_in, c_in -> actions, h_out, c_out``, batch fixed at 1).
Each batched run is held to the export run one env at a time (a fresh module per env, as the robot runs it).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from transfer.formats import load_policy  # noqa: E402
from transfer.formats.policy import PolicyError  # noqa: E402


class _ActorCritic(torch.nn.Module):
    """What the exporters read of rsl_rl's ``ActorCriticRecurrent``: ``actor``, ``memory_a.rnn``, ``is_recurrent``."""

    def __init__(self, obs: int, act: int, hidden: int, rnn: str = "lstm", layers: int = 1):
        super().__init__()
        self.actor = torch.nn.Sequential(torch.nn.Linear(hidden, 32), torch.nn.ELU(), torch.nn.Linear(32, act))
        self.memory_a = torch.nn.Module()
        cls = torch.nn.LSTM if rnn == "lstm" else torch.nn.GRU
        self.memory_a.rnn = cls(input_size=obs, hidden_size=hidden, num_layers=layers)
        self.is_recurrent = True


class PolicyExporterLSTM(torch.nn.Module):  # legged_gym/utils/helpers.py, verbatim
    def __init__(self, actor_critic):
        super().__init__()
        self.actor = copy.deepcopy(actor_critic.actor)
        self.is_recurrent = actor_critic.is_recurrent
        self.memory = copy.deepcopy(actor_critic.memory_a.rnn)
        self.memory.cpu()
        self.register_buffer("hidden_state", torch.zeros(self.memory.num_layers, 1, self.memory.hidden_size))
        self.register_buffer("cell_state", torch.zeros(self.memory.num_layers, 1, self.memory.hidden_size))

    def forward(self, x):
        out, (h, c) = self.memory(x.unsqueeze(0), (self.hidden_state, self.cell_state))
        self.hidden_state[:] = h
        self.cell_state[:] = c
        return self.actor(out.squeeze(0))

    @torch.jit.export
    def reset_memory(self):
        self.hidden_state[:] = 0.0
        self.cell_state[:] = 0.0


class _Normalizer(torch.nn.Module):  # rsl_rl's EmpiricalNormalization at inference
    def __init__(self, obs: int):
        super().__init__()
        self.register_buffer("_mean", torch.randn(1, obs))
        self.register_buffer("_std", torch.rand(1, obs) + 0.5)

    def forward(self, x):
        return (x - self._mean) / (self._std + 1e-2)


class IsaacLabTorchPolicyExporter(torch.nn.Module):  # isaaclab_rl/rsl_rl/exporter.py (recurrent branch)
    def __init__(self, policy, normalizer=None):
        super().__init__()
        self.is_recurrent = policy.is_recurrent
        self.actor = copy.deepcopy(policy.actor)
        self.rnn = copy.deepcopy(policy.memory_a.rnn)
        self.rnn.cpu()
        self.rnn_type = type(self.rnn).__name__.lower()
        self.register_buffer("hidden_state", torch.zeros(self.rnn.num_layers, 1, self.rnn.hidden_size))
        if self.rnn_type == "lstm":
            self.register_buffer("cell_state", torch.zeros(self.rnn.num_layers, 1, self.rnn.hidden_size))
            self.forward = self.forward_lstm
            self.reset = self.reset_memory
        else:
            self.forward = self.forward_gru
            self.reset = self.reset_memory
        self.normalizer = copy.deepcopy(normalizer) if normalizer else torch.nn.Identity()

    def forward_lstm(self, x):
        x = self.normalizer(x)
        x, (h, c) = self.rnn(x.unsqueeze(0), (self.hidden_state, self.cell_state))
        self.hidden_state[:] = h
        self.cell_state[:] = c
        x = x.squeeze(0)
        return self.actor(x)

    def forward_gru(self, x):
        x = self.normalizer(x)
        x, h = self.rnn(x.unsqueeze(0), self.hidden_state)
        self.hidden_state[:] = h
        x = x.squeeze(0)
        return self.actor(x)

    def forward(self, x):
        return self.actor(self.normalizer(x))

    @torch.jit.export
    def reset(self):
        pass

    def reset_memory(self):
        self.hidden_state[:] = 0.0
        if hasattr(self, "cell_state"):
            self.cell_state[:] = 0.0


def _export(module: torch.nn.Module, path: Path) -> Path:
    module.to("cpu")
    torch.jit.script(module).save(str(path))
    return path


def _one_env_at_a_time(path: Path, obs_seq: list[np.ndarray], resets: dict[int, list[int]]) -> np.ndarray:
    """The export as a robot runs it: one fresh module per env, its state reset (reloaded) when that env resets."""
    n = obs_seq[0].shape[0]
    modules = [torch.jit.load(str(path)) for _ in range(n)]
    out = []
    for k, obs in enumerate(obs_seq):
        for i in resets.get(k, []):
            modules[i] = torch.jit.load(str(path))
        with torch.no_grad():
            out.append(np.concatenate([modules[i](torch.from_numpy(obs[i : i + 1])).numpy() for i in range(n)]))
    return np.stack(out)


@settings(max_examples=8, deadline=None)
@given(
    layout=st.sampled_from(["legged_gym", "isaaclab_lstm", "isaaclab_gru"]),
    num_envs=st.integers(1, 4),
    layers=st.integers(1, 2),
    steps=st.integers(2, 5),
    resets=st.dictionaries(st.integers(1, 4), st.lists(st.integers(0, 3), max_size=2), max_size=2),
    seed=st.integers(0, 1000),
)
def test_recurrent_exports_run_batched_as_one_env_at_a_time(
    tmp_path_factory, layout, num_envs, layers, steps, resets, seed
):
    torch.manual_seed(seed)
    obs_dim, act, hidden = 47, 12, 16  # legged_gym's G1: 47 observations, LSTM 64 (smaller here), actor [32]
    rnn = "gru" if layout == "isaaclab_gru" else "lstm"
    ac = _ActorCritic(obs_dim, act, hidden, rnn, layers)
    module = PolicyExporterLSTM(ac) if layout == "legged_gym" else IsaacLabTorchPolicyExporter(ac, _Normalizer(obs_dim))
    path = _export(module, tmp_path_factory.mktemp("rnn") / "policy_lstm_1.pt")
    policy = load_policy(path)
    assert policy.recurrent and (policy.input_size, policy.output_size) == (obs_dim, act)
    rng = np.random.default_rng(seed)
    obs_seq = [rng.normal(size=(num_envs, obs_dim)).astype(np.float32) for _ in range(steps)]
    resets = {k: sorted({i for i in ids if i < num_envs}) for k, ids in resets.items() if k < steps}
    got = []
    for k, obs in enumerate(obs_seq):
        if resets.get(k):
            policy.reset(resets[k])
        got.append(policy(obs))
    expected = _one_env_at_a_time(path, obs_seq, resets)
    np.testing.assert_allclose(np.stack(got), expected, atol=2e-5, rtol=0)
    assert steps < 2 or np.abs(expected[0] - expected[1]).max() > 1e-6  # the state carried over
    policy.reset()
    np.testing.assert_allclose(policy(obs_seq[0]), expected[0], atol=2e-5, rtol=0)


def test_the_observation_size_is_the_recurrent_layers_input(tmp_path):
    """legged_gym's export registers the actor first: its first weight reads the 64 hidden units, not the 47
    observations (what the input-size probe used to feed it)."""
    module = PolicyExporterLSTM(_ActorCritic(47, 12, 64))
    policy = load_policy(_export(module, tmp_path / "policy_lstm_1.pt"))
    assert (policy.input_size, policy.output_size) == (47, 12)


def test_rsl_rl_onnx_and_jit_recurrent_exports_agree(tmp_path):
    pytest.importorskip("rsl_rl")
    pytest.importorskip("onnxruntime")
    from tests.rsl_rl_helpers import OBS, make_runner

    for rnn in ("lstm", "gru"):
        runner = make_runner(model="RNNModel", rnn_type=rnn, rnn_hidden_dim=5)
        runner.export_policy_to_jit(str(tmp_path), f"{rnn}.pt")
        runner.export_policy_to_onnx(str(tmp_path), f"{rnn}.onnx")
        jit, onnx = load_policy(tmp_path / f"{rnn}.pt"), load_policy(tmp_path / f"{rnn}.onnx")
        assert onnx.recurrent and onnx.input_size == OBS
        obs = np.random.default_rng(1).normal(size=(3, OBS)).astype(np.float32)
        first = jit(obs)
        np.testing.assert_allclose(first, onnx(obs), atol=1e-5, rtol=0)
        for _ in range(3):
            np.testing.assert_allclose(jit(obs), onnx(obs), atol=1e-5, rtol=0)
        jit.reset([2])
        onnx.reset([2])
        both = jit(obs), onnx(obs)
        np.testing.assert_allclose(*both, atol=1e-5, rtol=0)
        np.testing.assert_allclose(both[0][2], first[2], atol=1e-5, rtol=0)  # env 2 started over


class _Unbatchable(torch.nn.Module):
    """A recurrent module whose forward only takes one env (it flattens the state)."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(4, 3)
        self.head = torch.nn.Linear(3, 2)
        self.register_buffer("hidden_state", torch.zeros(1, 1, 3))

    def forward(self, x):
        y, h = self.rnn(x.view(1, 1, 4), self.hidden_state.view(1, 1, 3))
        self.hidden_state[:] = h
        return self.head(y.view(1, 3))


def test_a_module_that_cannot_batch_runs_one_env_at_a_time_and_says_so(tmp_path):
    path = _export(_Unbatchable(), tmp_path / "one.pt")
    policy = load_policy(path)
    obs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    with pytest.warns(UserWarning, match="one env at a time"):
        got = [policy(obs), policy(obs)]
    assert policy.per_env
    np.testing.assert_allclose(np.stack(got), _one_env_at_a_time(path, [obs, obs], {}), atol=1e-6, rtol=0)


def test_a_module_that_fails_on_zeros_says_so_in_one_line(tmp_path):
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.lin(x.view(2, 2))

    with pytest.raises(PolicyError, match="probing the module") as err:
        load_policy(_export(Broken(), tmp_path / "b.pt"))
    assert "\n" not in str(err.value)


class _RaisesInScript(torch.nn.Module):
    """A recurrent module that refuses a batch in its own TorchScript code (``torch.jit.Error``, no RuntimeError)."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(4, 3)
        self.head = torch.nn.Linear(3, 2)
        self.register_buffer("hidden_state", torch.zeros(1, 1, 3))

    def forward(self, x):
        if x.shape[0] != 1:
            raise ValueError("one env at a time")
        y, h = self.rnn(x.view(1, 1, 4), self.hidden_state)
        self.hidden_state[:] = h
        return self.head(y.view(1, 3))


class _Cell(torch.nn.Module):
    """A GRUCell actor with a 2-D hidden state ``(1, hidden)``: the batch is its first axis."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.GRUCell(4, 3)
        self.head = torch.nn.Linear(3, 2)
        self.register_buffer("hidden_state", torch.zeros(1, 3))

    def forward(self, x):
        h = self.cell(x, self.hidden_state)
        self.hidden_state = h
        return self.head(h)


def test_a_module_that_raises_in_its_own_script_falls_back_to_one_env_at_a_time(tmp_path):
    path = _export(_RaisesInScript(), tmp_path / "raises.pt")
    policy = load_policy(path)
    obs = np.random.default_rng(1).normal(size=(2, 4)).astype(np.float32)
    with pytest.warns(UserWarning, match="one env at a time"):
        got = [policy(obs), policy(obs)]
    assert policy.per_env
    np.testing.assert_allclose(np.stack(got), _one_env_at_a_time(path, [obs, obs], {}), atol=1e-6, rtol=0)


def test_a_cell_with_a_two_dimensional_state_runs_batched_with_one_state_per_env(tmp_path):
    import warnings

    path = _export(_Cell(), tmp_path / "cell.pt")
    policy = load_policy(path)
    rng = np.random.default_rng(2)
    steps = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # batched: no fallback said
        got = [policy(obs) for obs in steps]
    assert not policy.per_env
    np.testing.assert_allclose(np.stack(got), _one_env_at_a_time(path, steps, {}), atol=1e-6, rtol=0)
    policy.reset([1])
    again = policy(steps[0])
    fresh = _one_env_at_a_time(path, [steps[0]], {})[0]
    np.testing.assert_allclose(again[1], fresh[1], atol=1e-6, rtol=0)  # env 1 started over, the others did not
    assert not np.allclose(again[0], fresh[0], atol=1e-4)
