"""Policies: TorchScript, ONNX and RSL-RL checkpoints behind one interface, checked against rsl_rl itself.

The RSL-RL checkpoints are written by rsl-rl-lib's own OnPolicyRunner (trained two iterations on a tiny random
environment so the observation normalizer holds real statistics), and our actions are compared with its actor's
deterministic output; the same runner's TorchScript and ONNX exports must give the same actions.
"""

from __future__ import annotations

import functools
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SHARED
from transfer.formats import detect_format, load_policy
from transfer.formats.policy import PolicyError
from transfer.formats.rsl_rl import RslRlPolicy

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")
pytest.importorskip("onnxruntime")
torch.set_num_threads(1)

from tests.rsl_rl_helpers import ACT, OBS, make_runner, rsl_rl_actions  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def observations(n: int = 5, seed: int = 1) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, OBS)) * 3 + 1).astype(np.float32)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A PPO runner trained two iterations, its checkpoint, and its TorchScript and ONNX exports."""
    folder = tmp_path_factory.mktemp("rsl_rl")
    runner = make_runner()
    runner.learn(2)
    runner.save(str(folder / "model_1.pt"))
    runner.export_policy_to_jit(str(folder), "policy.pt")
    runner.export_policy_to_onnx(str(folder), "policy.onnx")
    return runner, folder


def shared_policy_file(relative: str) -> Path:
    path = SHARED / "policies" / relative
    if not path.is_file():
        pytest.skip(f"shared policy file not found: {path}")
    return path


# ------------------------------------------------------------------------------------------------ RSL-RL


def test_rsl_rl_checkpoint_matches_rsl_rls_own_actor(trained):
    runner, folder = trained
    ckpt = torch.load(folder / "model_1.pt", weights_only=True)
    assert {"actor_state_dict", "critic_state_dict", "optimizer_state_dict", "iter", "infos"} <= set(ckpt)
    mean = ckpt["actor_state_dict"]["obs_normalizer._mean"]
    assert mean.abs().max() > 0.3  # the normalizer learned from the (mean 1) observations: applying it matters
    policy = load_policy(folder / "model_1.pt")
    assert isinstance(policy, RslRlPolicy) and policy.format == "rsl_rl"
    assert (policy.input_size, policy.output_size, policy.path) == (OBS, ACT, folder / "model_1.pt")
    assert policy.metadata is None and policy.read_metadata() is None and not policy.recurrent
    obs = observations()
    expected = rsl_rl_actions(runner, obs)
    out = policy(obs)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (5, ACT)
    np.testing.assert_allclose(out, expected, atol=1e-6, rtol=0)
    tout = policy(torch.from_numpy(obs))
    assert isinstance(tout, torch.Tensor) and tout.dtype == torch.float32
    np.testing.assert_allclose(tout.numpy(), expected, atol=1e-6, rtol=0)
    policy.reset()  # feed-forward: a no-op
    np.testing.assert_allclose(policy(obs), expected, atol=1e-6, rtol=0)


def test_exports_of_the_same_runner_give_the_same_actions(trained):
    runner, folder = trained
    obs = observations(6, seed=2)
    expected = rsl_rl_actions(runner, obs)
    for name, fmt in (("policy.pt", "torchscript"), ("policy.onnx", "onnx"), ("model_1.pt", "rsl_rl")):
        assert detect_format(folder / name) == fmt
        policy = load_policy(folder / name)
        assert policy.format == fmt and (policy.input_size, policy.output_size) == (OBS, ACT)
        np.testing.assert_allclose(policy(obs), expected, atol=1e-5, rtol=0, err_msg=name)
        np.testing.assert_allclose(policy(torch.from_numpy(obs)).numpy(), expected, atol=1e-5, rtol=0, err_msg=name)


@settings(max_examples=25)
@given(n=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_each_environment_is_answered_alone(trained, n, seed):
    _, folder = trained
    obs = observations(n, seed)
    for name in ("model_1.pt", "policy.onnx"):  # the ONNX graph has a fixed batch of 1: run env by env
        policy = load_policy(folder / name)
        batch = policy(obs)
        rows = np.concatenate([policy(obs[i : i + 1]) for i in range(n)])
        np.testing.assert_allclose(batch, rows, atol=1e-6, rtol=0)


@pytest.mark.parametrize("distribution", ["HeteroscedasticGaussianDistribution", "BetaDistribution"])
def test_state_dependent_distributions_need_the_keyword(tmp_path, distribution):
    runner = make_runner(distribution)
    path = tmp_path / "model.pt"
    runner.save(str(path))
    with pytest.raises(PolicyError, match="distribution='heteroscedastic_gaussian', 'beta' or 'none'"):
        load_policy(path)
    key = "beta" if distribution.startswith("Beta") else "heteroscedastic_gaussian"
    policy = load_policy(path, distribution=key)
    assert policy.output_size == ACT
    obs = observations()
    np.testing.assert_allclose(policy(obs), rsl_rl_actions(runner, obs), atol=1e-6, rtol=0)
    wrong = load_policy(path, distribution="none")  # the raw head: twice the actions
    assert wrong.output_size == 2 * ACT


def test_activation_is_read_from_the_keyword(tmp_path):
    runner = make_runner(activation="tanh")
    path = tmp_path / "model.pt"
    runner.save(str(path))
    obs = observations()
    expected = rsl_rl_actions(runner, obs)
    np.testing.assert_allclose(load_policy(path, activation="tanh")(obs), expected, atol=1e-6, rtol=0)
    assert np.abs(load_policy(path)(obs) - expected).max() > 1e-3  # elu (the default) is another network
    with pytest.raises(ValueError, match="rsl_rl's names"):
        load_policy(path, activation="leaky")


def test_recurrent_actor_is_refused_and_its_torchscript_export_resets(tmp_path):
    runner = make_runner(model="RNNModel", rnn_type="gru", rnn_hidden_dim=5)
    runner.save(str(tmp_path / "model.pt"))
    with pytest.raises(NotImplementedError, match="recurrent.*export_policy_to_jit"):
        load_policy(tmp_path / "model.pt")
    runner.export_policy_to_jit(str(tmp_path), "policy.pt")
    policy = load_policy(tmp_path / "policy.pt")
    assert policy.recurrent and (policy.input_size, policy.output_size) == (OBS, ACT)
    obs = observations(1)
    first, second = policy(obs), policy(obs)
    assert np.abs(first - second).max() > 1e-6  # the hidden state carried over
    policy.reset()
    np.testing.assert_allclose(policy(obs), first, atol=1e-6, rtol=0)


def test_older_and_distillation_layouts(trained, tmp_path):
    runner, folder = trained
    v5 = torch.load(folder / "model_1.pt", weights_only=True)
    actor = v5["actor_state_dict"]
    obs = observations()
    expected = rsl_rl_actions(runner, obs)
    renamed = {
        k.replace("mlp.", "actor.")
        .replace("obs_normalizer.", "actor_obs_normalizer.")
        .replace("distribution.std_param", "std"): v
        for k, v in actor.items()
    }
    norm = {k.split(".", 1)[1]: v for k, v in actor.items() if k.startswith("obs_normalizer.")}
    no_norm = {k: v for k, v in renamed.items() if not k.startswith("actor_obs_normalizer.")}
    layouts = {
        "v3.pt": {"model_state_dict": renamed, "iter": 1},
        "v2.pt": {"model_state_dict": no_norm, "obs_norm_state_dict": norm, "iter": 1},
        "student.pt": {"student_state_dict": actor, "teacher_state_dict": actor, "iter": 1},
    }
    for name, data in layouts.items():
        torch.save(data, tmp_path / name)
        np.testing.assert_allclose(load_policy(tmp_path / name)(obs), expected, atol=1e-6, rtol=0, err_msg=name)
    torch.save({"model_state_dict": no_norm}, tmp_path / "unnormalized.pt")
    assert np.abs(load_policy(tmp_path / "unnormalized.pt")(obs) - expected).max() > 1e-3


# ------------------------------------------------------------------------------------------------ bad input


class Payload:
    """Unpickling this object would write a marker file: the arbitrary code weights_only refuses to run."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_arbitrary_pickle_code_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"actor_state_dict": {}, "extra": Payload(str(marker))}, path)
    assert not marker.exists()  # torch.save does not run it
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    text = str(err.value)
    assert str(path) in text and "arbitrary pickle code" in text and "weights_only=True" in text
    assert not marker.exists()
    torch.load(path, weights_only=False)  # what the refusal prevents: unpickling runs the payload
    assert marker.exists()


def test_unreadable_files_name_the_file_and_what_was_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_policy(tmp_path / "nope.pt")
    with pytest.raises(PolicyError, match="is a folder"):
        load_policy(tmp_path)
    rng = np.random.default_rng(0)
    for name, message in (
        ("noise.pt", "not a policy file this version reads"),
        ("noise.onnx", "not a valid ONNX model"),
    ):
        (tmp_path / name).write_bytes(rng.bytes(4096))
        with pytest.raises(PolicyError, match=message) as err:
            load_policy(tmp_path / name)
        assert name in str(err.value)
    torch.save({"weights": torch.zeros(3)}, tmp_path / "dict.pt")
    with pytest.raises(
        PolicyError, match=r"not an RSL-RL checkpoint: expected the key 'actor_state_dict'.*\['weights'\]"
    ):
        load_policy(tmp_path / "dict.pt")
    torch.save(torch.zeros(3), tmp_path / "tensor.pt")
    with pytest.raises(PolicyError, match="holding Tensor"):
        load_policy(tmp_path / "tensor.pt")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(PolicyError, match="neither a TorchScript module nor a torch.save checkpoint"):
        load_policy(tmp_path / "other.zip")
    with pytest.raises(ValueError, match="Unknown policy format 'pickle'"):
        load_policy(tmp_path / "dict.pt", format="pickle")


def test_truncated_checkpoint_is_reported_as_corrupt(trained, tmp_path):
    _, folder = trained
    data = (folder / "model_1.pt").read_bytes()
    path = tmp_path / "cut.pt"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(PolicyError, match="cut.pt"):
        load_policy(path)


def test_observation_size_mismatch_names_both_sizes(trained):
    _, folder = trained
    for name in ("model_1.pt", "policy.pt", "policy.onnx"):
        policy = load_policy(folder / name)
        with pytest.raises(ValueError, match=f"got {OBS + 1} entries per env, the policy expects {OBS}"):
            policy(np.zeros((2, OBS + 1), np.float32))
        with pytest.raises(ValueError, match=r"shaped \(num_envs, 7\)"):
            policy(np.zeros(OBS, np.float32))
    with pytest.raises(TypeError, match="RSL-RL checkpoints only"):
        load_policy(folder / "policy.onnx", activation="tanh")


# ------------------------------------------------------------------------------------------------ shared policies


def test_shared_anymal_torchscript_and_onnx_agree():
    pt = load_policy(shared_policy_file("anybotics_anymal_c/rl_policies/physx_anymal.pt"))
    onnx = load_policy(shared_policy_file("anybotics_anymal_c/rl_policies/physx_anymal.onnx"))
    assert (pt.format, onnx.format) == ("torchscript", "onnx")
    assert (pt.input_size, pt.output_size) == (onnx.input_size, onnx.output_size) == (48, 12)
    obs = np.random.default_rng(3).standard_normal((16, 48)).astype(np.float32)
    np.testing.assert_allclose(pt(obs), onnx(obs), atol=1e-5, rtol=0)
    mjw = load_policy(shared_policy_file("anybotics_anymal_c/rl_policies/mjw_anymal.pt"))
    assert np.abs(mjw(obs) - pt(obs)).max() > 1e-3  # two different checkpoints


def test_shared_go2_torchscript_loads():
    for prefix in ("physx", "mjw"):
        policy = load_policy(shared_policy_file(f"unitree_go2/rl_policies/{prefix}_go2.pt"))
        assert (policy.input_size, policy.output_size) == (48, 12)
        assert policy(torch.zeros(2, 48)).shape == (2, 12)


def test_import_transfer_stays_light():
    import subprocess
    import sys

    code = "import sys, transfer; transfer.Policy; transfer.load_policy; print('torch' in sys.modules, 'onnxruntime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ})
    assert out.stdout.split() == ["False", "False"]


QUADRUPED = Path(__file__).resolve().parents[1] / "checkpoints/quadruped_flat_physx/exported/policy.pt"


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 64), seed=st.integers(0, 2**31 - 1))
def test_a_frozen_torchscript_policy_acts_bit_for_bit_as_the_module(n, seed):
    """The feed-forward TorchScript policy runs frozen (``torch.jit.freeze``, faster) only because it gives the very
    actions the loaded module gives: checked here on any batch, not only on the 16 observations checked at load."""
    import torch

    policy = _quadruped_policy()
    assert policy._run is not policy.module  # frozen
    x = np.random.default_rng(seed).standard_normal((n, policy.input_size)).astype(np.float32) * 3
    with torch.no_grad():
        expected = policy.module(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(policy(x), expected)


@functools.lru_cache(maxsize=1)
def _quadruped_policy():
    return load_policy(QUADRUPED)


def test_a_cpu_arrays_host_view_is_kept_and_follows_the_array():
    import warp as wp

    from transfer._arrays import host

    a = wp.zeros((2, 3), dtype=wp.float32, device="cpu")
    view = host(a)
    assert host(a) is view
    a.fill_(2.5)  # written through Warp: the kept view sees it (the same memory)
    assert (view == 2.5).all()
    wp.copy(a, wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu"))
    np.testing.assert_array_equal(host(a), np.arange(6).reshape(2, 3))
