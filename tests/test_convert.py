"""``transfer convert``: a joint order baked into the weights equals the same order applied at run time.

Acceptance (issue 12): the shared ANYmal C checkpoints (TorchScript ``mjw_anymal.pt`` to PhysX order, ONNX
``physx_anymal.onnx`` to MuJoCo-Warp order) and an RSL-RL checkpoint written by rsl_rl itself give, on 2,000
random observations, the original's actions under the runtime permutation (to 1e-5); the runtime permutation
here is built from the joint lists of Newton's ``anymal.yaml``, not by convert. A converted checkpoint replays on
its new backend, in that backend's own order, as fast as the runtime-reordered replay (±5 %), with no --source.
Convert then the inverse convert gives back the original weights exactly (hypothesis, every format). Bad input:
the input as output, an existing output, graphs whose layers cannot be identified, flags contradicting metadata.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_checkpoint import onnx_mlp, random_mlp, rsl_rl_checkpoint, torchscript_mlp
from transfer.cli import main
from transfer.formats import load_policy, read_metadata
from transfer.formats.checkpoint import CheckpointError, build_metadata
from transfer.runs.convert import ConvertError, Reorder, convert, reorder_checkpoint
from transfer.runs.inputs import ReplayError, resolve_inputs
from transfer.task import ActionTerm, ObsTerm, Task

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("rsl_rl")
torch.set_num_threads(1)

from tensordict import TensorDict  # noqa: E402

from tests.rsl_rl_helpers import make_runner as rsl_rl_runner  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

ROOT = Path(__file__).resolve().parents[1]
PRESET = ROOT / "presets/tasks/anymal_c_flat_velocity.yaml"
JOINT_BLOCKS = (12, 24, 36)  # joint_pos_rel, joint_vel_rel, last_action in the 48-entry flat-velocity observation


@pytest.fixture(scope="module")
def anymal(anymal_files):
    import yaml

    names = yaml.safe_load(anymal_files["yaml"].read_text())
    return {**anymal_files, "mjwarp": names["mjw_joint_names"], "physx": names["physx_joint_names"]}


def runtime(policy, x_new: np.ndarray, source: list[str], target: list[str]) -> np.ndarray:
    """What runtime reordering does: the target-order observation's joint blocks put back in the checkpoint's
    (source) order, the original run, its actions put in the target order."""
    to_source = [target.index(n) for n in source]
    x_old = x_new.copy()
    for start in JOINT_BLOCKS:
        x_old[:, start : start + 12] = x_new[:, start : start + 12][:, to_source]
    return policy(x_old)[:, [source.index(n) for n in target]]


def observations(n: int = 2000, size: int = 48, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, size)) * 2.0).astype(np.float32)


# ------------------------------------------------------------------------------------------------ acceptance


@pytest.fixture(scope="module")
def converted_pt(anymal, tmp_path_factory):
    """mjw_anymal.pt (MuJoCo-Warp order) converted to PhysX order."""
    out = tmp_path_factory.mktemp("convert") / "anymal_physx.pt"
    result = convert(anymal["mjw_pt"], "physx", source="mjwarp", config=PRESET, asset=anymal["asset"], out=out)
    return result


def test_torchscript_mjwarp_to_physx_equals_runtime_permutation(anymal, converted_pt):
    result = converted_pt
    original, converted = load_policy(anymal["mjw_pt"]), load_policy(result.path)
    x = observations()
    expected = runtime(original, x, anymal["mjwarp"], anymal["physx"])
    np.testing.assert_allclose(converted(x), expected, atol=1e-5, rtol=0)
    assert np.abs(original(x) - expected).max() > 0.1  # the permutation matters
    meta = converted.metadata
    assert meta["joint_names"] == anymal["physx"] and meta["convention"] == "physx" and meta["trained_on"] == "newton"
    assert meta["asset"] == str(anymal["asset"].resolve()) and meta["history"][-1]["convert"] == "mjwarp -> physx"
    assert (result.format, result.source, result.to, result.checked) == ("torchscript", "mjwarp", "physx", 256)
    assert result.edits == (
        "actor.0.weight (128, 48): columns (observation)",
        "actor.6.weight (12, 128): rows (action)",
        "actor.6.bias (12,): entries (action)",
    )


def test_onnx_physx_to_mjwarp_equals_runtime_permutation(anymal, tmp_path):
    out = tmp_path / "anymal_mjwarp.onnx"
    before = anymal["physx_onnx"].read_bytes()
    assert (
        main(
            [
                "convert",
                str(anymal["physx_onnx"]),
                "--source",
                "physx",
                "--to",
                "mjwarp",
                "--config",
                str(PRESET),
                "--asset",
                str(anymal["asset"]),
                "-o",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    assert anymal["physx_onnx"].read_bytes() == before
    original, converted = load_policy(anymal["physx_onnx"]), load_policy(out)
    x = observations(seed=1)
    np.testing.assert_allclose(converted(x), runtime(original, x, anymal["physx"], anymal["mjwarp"]), atol=1e-5, rtol=0)
    meta = converted.metadata
    assert meta["joint_names"] == anymal["mjwarp"] and meta["trained_on"] == "physx"
    model = onnx.load(str(out))
    assert [n.op_type for n in model.graph.node] == [n.op_type for n in onnx.load(str(anymal["physx_onnx"])).graph.node]


def make_runner(distribution: str):
    """rsl_rl's runner for the 48-observation, 12-action flat-velocity layout, a normalizer on actor and critic."""
    return rsl_rl_runner(distribution, obs=48, act=12, hidden=(16, 16), critic_hidden=(16,), critic_normalization=True)


@pytest.mark.parametrize("distribution", ["GaussianDistribution", "HeteroscedasticGaussianDistribution"])
def test_rsl_rl_checkpoint_equals_runtime_permutation_in_rsl_rls_own_classes(anymal, tmp_path, distribution):
    runner = make_runner(distribution)
    runner.learn(2)
    runner.save(str(tmp_path / "model_1.pt"))
    result = convert(
        tmp_path / "model_1.pt",
        "physx",
        source="mjwarp",
        config=PRESET,
        asset=anymal["asset"],
        out=tmp_path / "model_1_physx.pt",
    )
    assert any("optimizer_state_dict: moments permuted" in e for e in result.edits)
    assert any(e.startswith("critic_state_dict[mlp.0.weight]") for e in result.edits)
    assert any(e.startswith("actor_state_dict[obs_normalizer._mean]") for e in result.edits)
    fresh = make_runner(distribution)
    fresh.load(str(tmp_path / "model_1_physx.pt"))  # rsl_rl loads it: actor, critic and optimizer, strictly
    x = observations(seed=2)

    def actor(r):
        policy = r.get_inference_policy()
        return lambda obs: policy(TensorDict({"policy": torch.from_numpy(obs)}, [len(obs)])).detach().numpy()

    def critic(r):
        return lambda obs: r.alg.critic(TensorDict({"policy": torch.from_numpy(obs)}, [len(obs)])).detach().numpy()

    np.testing.assert_allclose(
        actor(fresh)(x), runtime(actor(runner), x, anymal["mjwarp"], anymal["physx"]), atol=1e-5, rtol=0
    )
    to_source = [anymal["physx"].index(n) for n in anymal["mjwarp"]]
    x_old = x.copy()
    for start in JOINT_BLOCKS:
        x_old[:, start : start + 12] = x[:, start : start + 12][:, to_source]
    np.testing.assert_allclose(critic(fresh)(x), critic(runner)(x_old), atol=1e-5, rtol=0)
    assert read_metadata(tmp_path / "model_1_physx.pt")["joint_names"] == anymal["physx"]
    if distribution == "GaussianDistribution":
        std_old = runner.alg.actor.state_dict()["distribution.std_param"].numpy()
        std_new = fresh.alg.actor.state_dict()["distribution.std_param"].numpy()
        np.testing.assert_array_equal(std_new, std_old[[anymal["mjwarp"].index(n) for n in anymal["physx"]]])


@pytest.mark.engines
@pytest.mark.filterwarnings("ignore")
def test_a_converted_checkpoint_replays_in_the_backends_own_order_like_runtime_reordering(anymal, converted_pt, capsys):
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import replay

    assert (
        main(["replay", str(converted_pt.path), "--target", "physx", "--num-envs", "2", "--seconds", "4", "--json"])
        == 0
    )
    baked = json.loads(capsys.readouterr().out)
    assert (baked["source"], baked["order"], baked["reordered"]) == ("physx", "physx", True)  # PhysX's own order
    runtime_run = replay(
        anymal["mjw_pt"],
        "physx",
        source="mjwarp",
        config=PRESET,
        asset=anymal["asset"],
        num_envs=2,
        seconds=4.0,
        progress=False,
    )
    assert baked["fall_fraction"] == 0.0 and runtime_run.fall_fraction == 0.0
    assert runtime_run.forward_velocity > 0.7
    assert abs(baked["forward_velocity"] - runtime_run.forward_velocity) <= 0.05 * runtime_run.forward_velocity


# ------------------------------------------------------------------------------------------------ exact inverse


@st.composite
def cases(draw):
    n = draw(st.integers(1, 5))
    names = [f"j{i}" for i in range(n)]
    terms = draw(
        st.lists(
            st.sampled_from(["projected_gravity", "joint_pos_rel", "joint_vel_rel", "last_action"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    acting = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True))
    task = Task(
        name="t",
        observation=tuple(ObsTerm(t, history_length=draw(st.integers(0, 3))) for t in terms),
        action=ActionTerm(scale=0.5, joints=None if acting is None else tuple(acting)),
        default_joint_pos={".*": 0.1},
    )
    target = draw(st.permutations(names))
    hidden = draw(st.integers(1, 6))
    return task, names, list(target), hidden, draw(st.integers(0, 2**16))


def _weights(path: Path) -> dict[str, np.ndarray]:
    fmt = load_policy(path, **({"distribution": "none"} if path.name.startswith("model") else {})).format
    if fmt == "torchscript":
        return {k: v.numpy().copy() for k, v in torch.jit.load(str(path)).state_dict().items()}
    if fmt == "onnx":
        from onnx import numpy_helper

        return {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    ckpt = torch.load(str(path), weights_only=True)
    out = {f"{k}/{n}": t.numpy() for k in ("actor_state_dict", "critic_state_dict") for n, t in ckpt[k].items()}
    for i, s in ckpt["optimizer_state_dict"]["state"].items():
        out.update({f"opt/{i}/{n}": t.numpy() for n, t in s.items()})
    return out


@settings(max_examples=30)
@given(case=cases(), fmt=st.sampled_from(["torchscript", "onnx_gemm_t", "onnx_gemm", "onnx_matmul", "rsl_rl"]))
def test_convert_then_the_inverse_gives_back_the_weights_exactly(case, fmt):
    task, names, target, hidden, seed = case
    rng = np.random.default_rng(seed)
    n_obs, n_act = task.observation_size(len(names)), task.action_size(len(names))
    layers = random_mlp(rng, [n_obs, hidden, n_act])
    mean, std = rng.standard_normal(n_obs).astype(np.float32), (rng.random(n_obs) + 0.5).astype(np.float32)
    forward, back = Reorder.from_names(task, names, target), Reorder.from_names(task, target, names)
    assert back == forward.inverse() and forward.inverse().inverse() == forward
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        if fmt == "torchscript":
            src = torchscript_mlp(folder / "policy.pt", layers, mean, std)
        elif fmt == "rsl_rl":
            critic = random_mlp(rng, [n_obs, 3, 1])
            src = rsl_rl_checkpoint(folder / "model_1.pt", layers, mean, std, critic, rng.random(n_act) + 0.1, rng)
        else:
            kind = fmt.split("_", 1)[1]
            src = onnx_mlp(folder / "policy.onnx", layers, mean, std, first=kind, last=kind)
        there, again = folder / f"there{src.suffix}", folder / f"again{src.suffix}"
        if fmt == "rsl_rl":
            there, again = folder / "model_there.pt", folder / "model_again.pt"
        reorder_checkpoint(src, there, forward, build_metadata(task, target))
        reorder_checkpoint(there, again, back, build_metadata(task, names))
        original, returned = _weights(src), _weights(again)
        assert original.keys() == returned.keys()
        for key, value in original.items():
            np.testing.assert_array_equal(returned[key], value, err_msg=key)
        assert read_metadata(again)["joint_names"] == names and read_metadata(there)["joint_names"] == target


# ------------------------------------------------------------------------------------------------ bad input


def test_the_input_as_output_is_refused_and_the_input_is_unchanged(anymal, tmp_path, capsys):
    src = tmp_path / "mjw_anymal.pt"
    shutil.copyfile(anymal["mjw_pt"], src)
    before = src.read_bytes()
    common = ["--source", "mjwarp", "--to", "physx", "--config", str(PRESET), "--asset", str(anymal["asset"])]
    for out in (src, tmp_path / "." / "mjw_anymal.pt"):
        assert main(["convert", str(src), *common, "-o", str(out), "--force"]) == 2
        assert (
            "is the input" in (err := capsys.readouterr().err)
            and "refusing to write over a file this command reads" in err
        )
    assert src.read_bytes() == before == anymal["mjw_pt"].read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mjw_anymal.pt"]


def test_an_existing_output_needs_force(anymal, tmp_path, capsys):
    out = tmp_path / "out.pt"
    out.write_bytes(b"keep me")
    args = [
        "convert",
        str(anymal["mjw_pt"]),
        "--source",
        "mjwarp",
        "--to",
        "physx",
        "--config",
        str(PRESET),
        "--asset",
        str(anymal["asset"]),
        "-o",
        str(out),
    ]
    assert main(args) == 2
    assert "exists; pass --force" in capsys.readouterr().err and out.read_bytes() == b"keep me"
    assert main([*args, "--force"]) == 0
    assert "wrote" in capsys.readouterr().out and read_metadata(out)["convention"] == "physx"
    assert [p.name for p in tmp_path.iterdir()] == ["out.pt"]  # no temporary file left


def test_same_order_adds_metadata_and_leaves_the_weights(anymal, tmp_path, capsys):
    out = tmp_path / "described.pt"
    assert (
        main(
            [
                "convert",
                str(anymal["mjw_pt"]),
                "--source",
                "mjwarp",
                "--to",
                "mjwarp",
                "--config",
                str(PRESET),
                "--asset",
                str(anymal["asset"]),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "untouched" in capsys.readouterr().out
    a, b = torch.jit.load(str(anymal["mjw_pt"])).state_dict(), torch.jit.load(str(out)).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    meta = read_metadata(out)
    assert meta["convention"] == "mjwarp" and meta["joint_names"] == anymal["mjwarp"] and meta["trained_on"] == "newton"
    inputs = resolve_inputs(out)  # nothing else needed: order, task and asset come from the file
    assert inputs.source_label == "mjwarp" and inputs.asset == anymal["asset"].resolve()


def test_a_metadata_only_conversion_detects_the_format_and_checks_the_output_once(anymal, tmp_path, monkeypatch):
    import transfer.formats
    import transfer.formats.checkpoint
    import transfer.runs.convert as run

    originals = {
        "detect_format": transfer.formats.detect_format,
        "check_output": transfer.formats.checkpoint.check_output,
    }
    calls = dict.fromkeys(originals, 0)

    def counted(name):
        def call(*args, **kwargs):
            calls[name] += 1
            return originals[name](*args, **kwargs)

        return call

    for module in (transfer.formats, transfer.formats.checkpoint, run):
        for name in originals:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counted(name))
    result = convert(
        anymal["mjw_pt"], "mjwarp", source="mjwarp", config=PRESET, asset=anymal["asset"], out=tmp_path / "described.pt"
    )
    assert calls == {"detect_format": 1, "check_output": 1}
    assert result.edits == () and read_metadata(result.path)["convention"] == "mjwarp"


def _small(tmp_path: Path):
    task = Task(
        name="t",
        observation=(ObsTerm("projected_gravity"), ObsTerm("joint_pos_rel")),
        action=ActionTerm(scale=1.0),
        default_joint_pos={".*": 0.0},
    )
    names, target = ["a", "b", "c"], ["c", "a", "b"]
    return task, Reorder.from_names(task, names, target), build_metadata(task, target)


def test_graphs_whose_layers_cannot_be_identified_are_refused(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    task, reorder, meta = _small(tmp_path)
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)

    def graph(nodes, inits, name):
        g = helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["n", 6])],
            [helper.make_tensor_value_info("act", TensorProto.FLOAT, ["n", 3])],
            [numpy_helper.from_array(a, k) for k, a in inits.items()],
        )
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(tmp_path / name))
        return tmp_path / name

    skip = graph(
        [
            helper.make_node("Gemm", ["obs", "w1"], ["h"], transB=1),
            helper.make_node("Concat", ["h", "obs"], ["hx"], axis=1),
            helper.make_node("Gemm", ["hx", "w2"], ["act"], transB=1),
        ],
        {"w1": w1, "w2": rng.standard_normal((3, 10)).astype(np.float32)},
        "skip.onnx",
    )
    transposed = graph(
        [
            helper.make_node("Transpose", ["obs"], ["t"], perm=[1, 0]),
            helper.make_node("MatMul", ["w1", "t"], ["h"]),
            helper.make_node("Transpose", ["h"], ["ht"], perm=[1, 0]),
            helper.make_node("Gemm", ["ht", "w2"], ["act"], transB=1),
        ],
        {"w1": w1, "w2": w2},
        "transposed.onnx",
    )
    softmax = graph(
        [
            helper.make_node("Gemm", ["obs", "w1"], ["h"], transB=1),
            helper.make_node("Gemm", ["h", "w2"], ["z"], transB=1),
            helper.make_node("Softmax", ["z"], ["act"]),
        ],
        {"w1": w1, "w2": w2},
        "softmax.onnx",
    )
    expected = {skip: "feeds 2 places", transposed: "reaches Transpose", softmax: "written by Softmax"}
    for path, why in expected.items():
        with pytest.raises(ConvertError) as err:
            reorder_checkpoint(path, tmp_path / "out.onnx", reorder, meta)
        assert why in str(err.value) and "transfer replay" in str(err.value) and "--source" in str(err.value)
    scrambled = torchscript_mlp(
        tmp_path / "scrambled.pt", [(w1, np.zeros(4, np.float32)), (w2, np.zeros(3, np.float32))], scramble=True
    )
    with pytest.raises(ConvertError, match="does not reproduce the original.*Nothing written.*transfer replay"):
        reorder_checkpoint(scrambled, tmp_path / "out.pt", reorder, meta)
    assert not (tmp_path / "out.onnx").exists() and not (tmp_path / "out.pt").exists()
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_inputs_that_do_not_fit_are_named(anymal, tmp_path):
    task, reorder, meta = _small(tmp_path)
    with pytest.raises(ConvertError, match=r"reads 48 observation entries .*has 6"):
        reorder_checkpoint(anymal["mjw_pt"], tmp_path / "x.pt", reorder, meta)
    with pytest.raises(ConvertError, match="carries no metadata: pass --config"):
        convert(anymal["mjw_pt"], "physx", source="mjwarp", asset=anymal["asset"], out=tmp_path / "x.pt")
    with pytest.raises(ConvertError, match="--source is needed"):
        convert(anymal["mjw_pt"], "physx", config=PRESET, asset=anymal["asset"], out=tmp_path / "x.pt")
    with pytest.raises(ConvertError, match="--asset is needed"):
        convert(anymal["mjw_pt"], "physx", source="mjwarp", config=PRESET, out=tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


def test_flags_that_contradict_the_metadata_are_refused_showing_both(anymal, converted_pt, tmp_path, capsys):
    path = converted_pt.path
    # replay: --source
    with pytest.raises(ReplayError) as err:
        resolve_inputs(path, source="mjwarp")
    text = str(err.value)
    assert "--source mjwarp contradicts anymal_physx.pt's metadata" in text
    assert f"joint order is physx {anymal['physx']}" in text and f"gives {anymal['mjwarp']}" in text
    assert main(["replay", str(path), "--target", "physx", "--source", "mjwarp"]) == 2
    assert "contradicts" in capsys.readouterr().err
    assert resolve_inputs(path, source="physx").source_label == "physx"  # agreeing flags are fine
    # replay: --config
    stiff = tmp_path / "stiff.yaml"
    stiff.write_text(PRESET.read_text().replace('stiffness: {".*": 300.0}', 'stiffness: {".*": 80.0}'))
    with pytest.raises(CheckpointError, match=r"stiffness\['LF_HAA'\]: checkpoint 300.0, config 80.0"):
        resolve_inputs(path, config=stiff)
    assert resolve_inputs(path, config=PRESET).task == resolve_inputs(path).task
    # replay: an asset whose joints are not the checkpoint's
    go2 = anymal["asset"].parents[2] / "unitree_go2/usd/go2.usda"
    if go2.is_file():
        with pytest.raises(ReplayError, match="Is this the checkpoint's robot"):
            resolve_inputs(path, asset=go2)
    # convert: --source against the metadata
    with pytest.raises(ConvertError, match=r"--source mjwarp contradicts anymal_physx.pt's metadata.*physx \["):
        convert(path, "mjwarp", source="mjwarp", out=tmp_path / "back.pt")


def test_a_moved_asset_needs_asset_and_only_then(anymal, converted_pt, tmp_path):
    meta = dict(read_metadata(converted_pt.path), asset="/nowhere/anymal_c.usda")
    moved = tmp_path / "moved.pt"
    from transfer.formats import write_metadata

    write_metadata(converted_pt.path, moved, meta)
    with pytest.raises(FileNotFoundError, match="named by moved.pt's metadata.*pass --asset"):
        resolve_inputs(moved)
    inputs = resolve_inputs(moved, asset=anymal["asset"])
    assert inputs.asset == anymal["asset"] and inputs.task.joint_names == tuple(anymal["physx"])


def test_onnx_external_data_is_found_beside_the_model_from_any_folder(tmp_path, monkeypatch):
    """``policy.onnx`` + ``policy.onnx.data`` (onnx's ``save_as_external_data``): loaded and converted from another
    current folder; data that is missing, or that points outside the model's folder, is refused naming the tensor."""
    import onnx

    from transfer.formats.policy import PolicyError

    task = Task(
        name="t",
        observation=(ObsTerm("projected_gravity"), ObsTerm("joint_pos_rel")),
        action=ActionTerm(scale=0.5),
        default_joint_pos={".*": 0.1},
    )
    names, target = ["j0", "j1", "j2"], ["j2", "j0", "j1"]
    rng = np.random.default_rng(0)
    layers = random_mlp(rng, [task.observation_size(3), 4, 3])
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    inline = onnx_mlp(tmp_path / "inline.onnx", layers)
    src = model_dir / "policy.onnx"
    onnx.save(
        onnx.load(str(inline)),
        str(src),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="policy.onnx.data",
        size_threshold=0,
    )
    stored = onnx.load(str(src), load_external_data=False).graph.initializer
    assert (model_dir / "policy.onnx.data").is_file() and all(
        t.data_location == onnx.TensorProto.EXTERNAL for t in stored
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    x = rng.standard_normal((2, task.observation_size(3))).astype(np.float32)
    np.testing.assert_allclose(load_policy(src)(x), load_policy(inline)(x), atol=1e-6)
    out = tmp_path / "out" / "there.onnx"
    out.parent.mkdir()
    reorder_checkpoint(src, out, Reorder.from_names(task, names, target), build_metadata(task, target))
    assert read_metadata(out)["joint_names"] == target
    (model_dir / "policy.onnx.data").rename(model_dir / "moved.data")
    with pytest.raises(PolicyError, match=r"keeps its data in 'policy.onnx.data', which is not beside the model"):
        load_policy(src)
    outside = onnx.load(str(src), load_external_data=False)
    for tensor in outside.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../secrets.data"
    (tmp_path / "secrets.data").write_bytes(b"x")
    onnx.save(outside, str(model_dir / "escape.onnx"))
    with pytest.raises(PolicyError, match="outside the model's folder"):
        load_policy(model_dir / "escape.onnx")
    # inside an If's branch: only the main graph was searched, and onnx's own ValidationError was "unexpected"
    from onnx import TensorProto, helper, numpy_helper

    hidden = numpy_helper.from_array(np.zeros((1, 2), np.float32), "C")
    hidden.ClearField("raw_data")
    hidden.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "../../../../etc/passwd"), ("offset", "0"), ("length", "8")):
        entry = hidden.external_data.add()
        entry.key, entry.value = key, value
    info = helper.make_tensor_value_info
    branch = helper.make_graph(
        [helper.make_node("Add", ["x", "C"], ["t"])], "then", [], [info("t", TensorProto.FLOAT, [1, 2])], [hidden]
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])], "else", [], [info("e", TensorProto.FLOAT, [1, 2])]
    )
    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["obs"], ["x"]),
            helper.make_node("If", ["cond"], ["actions"], then_branch=branch, else_branch=other),
        ],
        "g",
        [info("obs", TensorProto.FLOAT, [1, 2])],
        [info("actions", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(np.array(True), "cond")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model_dir / "branch.onnx"))
    with pytest.raises(PolicyError, match=r"tensor 'C' keeps its data in '../../../../etc/passwd', outside"):
        load_policy(model_dir / "branch.onnx")


def test_a_self_describing_checkpoint_inside_a_run_folder_converts_once(tmp_path):
    """Issue 29's recursion: ``convert run/exported/policy.pt`` on a checkpoint that carries its metadata, inside an
    Isaac Lab run folder, used to find the run again and call itself until Python's recursion limit."""
    from tests.test_isaaclab_runs import write_run

    run = write_run(tmp_path / "run", "physx", exported=ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt")
    result = convert(run / "exported/policy.pt", "mjwarp", out=tmp_path / "out.pt")
    assert read_metadata(tmp_path / "out.pt")["convention"] == "mjwarp" and result is not None


@pytest.mark.usefixtures("converters")
def test_a_deploy_yaml_checkpoint_converts_to_the_engines_order(tmp_path):
    """A unitree_rl_lab export (values by position, ``--source physx``) converted to MuJoCo-Warp order: the
    metadata names the joints, and the converted weights act as the original with its vectors permuted."""
    from tests.test_deploy_configs import export_deploy_cfg
    from transfer.orders import resolve_ordering
    from transfer.task import load_task, resolve_asset

    asset = resolve_asset(load_task("presets/tasks/quadruped_flat_velocity.yaml").asset)
    names = list(resolve_ordering(asset, "physx").joints)
    export_deploy_cfg(tmp_path / "run", names, names, history=2)
    rng = np.random.default_rng(0)
    src = torchscript_mlp(tmp_path / "policy.pt", random_mlp(rng, [2 * (9 + 36), 8, 12]))
    convert(
        src, "mjwarp", out=tmp_path / "mjw.pt", source="physx", config=tmp_path / "run/params/deploy.yaml", asset=asset
    )
    meta = read_metadata(tmp_path / "mjw.pt")
    assert meta["joint_names"] == list(resolve_ordering(asset, "mjwarp").joints)
    assert [t["history_length"] for t in meta["observation"]] == [2] * 6
    assert meta["history"][-1]["config"].endswith("deploy.yaml")


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_the_permutation_moves_each_stacked_step_by_joint_name(case):
    """Every entry of the converted observation is, by term, history step and joint name, the entry the source order
    held for the same term, step and joint (histories permuted block by block)."""
    task, names, target, _, _ = case
    n = len(names)
    expanded = task.with_joint_names(names)
    acting = list(expanded.action.joints or names)
    labels: list[tuple[str, int, str]] = []  # the source order's entries
    for term in expanded.observation:
        frame = 3 if term.axis == "none" else (len(acting) if term.name == "last_action" else n)
        joints = acting if term.name == "last_action" else names
        for k in range(term.steps):
            labels += [(term.name, k, joints[i] if term.axis == "joint" else str(i)) for i in range(frame)]
    index = Reorder.from_names(task, names, target).observation
    moved = [labels[i] for i in index]
    target_acting = [j for j in target if j in set(acting)]
    expected = []
    for term in expanded.observation:
        frame = 3 if term.axis == "none" else (len(acting) if term.name == "last_action" else n)
        joints = target_acting if term.name == "last_action" else target
        for k in range(term.steps):
            expected += [(term.name, k, joints[i] if term.axis == "joint" else str(i)) for i in range(frame)]
    assert moved == expected
