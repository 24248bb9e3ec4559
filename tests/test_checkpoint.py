"""Self-describing checkpoints: the metadata document, stored in TorchScript, ONNX and RSL-RL files and read back.

The document round-trips exactly through every format (hypothesis), gives its task back, refuses formats of
another version, and is written atomically into a copy: never over the input, never over an existing file unless
forced. ``transfer info`` prints it, or how to add it. The tiny networks built here (``torchscript_mlp``,
``onnx_mlp``, ``rsl_rl_checkpoint``) are reused by tests/test_convert.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transfer.actuators import ActuatorGroup
from transfer.backends.scene import COMBINE_MODES, GroundMaterial
from transfer.cli import main
from transfer.formats import load_policy, read_metadata, write_metadata
from transfer.formats.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    atomic_write,
    build_metadata,
    check_metadata,
    merge_config,
    metadata_to_task,
)
from transfer.runs.info import checkpoint_info
from transfer.task import OBS_TERMS, ActionTerm, ObsTerm, Task, load_task

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch.set_num_threads(1)

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning")]

PRESET = Path(__file__).resolve().parents[1] / "presets/tasks/anymal_c_flat_velocity.yaml"

# ------------------------------------------------------------------------------------------------ tiny networks


def random_mlp(rng: np.random.Generator, sizes: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Weights ``(out, in)`` and biases of an MLP through ``sizes`` (float32)."""
    return [
        (rng.standard_normal((o, i)).astype(np.float32), rng.standard_normal(o).astype(np.float32))
        for i, o in zip(sizes[:-1], sizes[1:], strict=True)
    ]


def torchscript_mlp(path: Path, layers, mean=None, std=None, scramble: bool = False) -> Path:
    """A scripted module: a normalizer holding ``_mean``/``_std`` buffers, then Linear/ELU layers (rsl_rl's export
    layout). ``scramble``: the module reverses its input before the first layer (what convert cannot see)."""
    import torch.nn as nn

    class Normalizer(nn.Module):
        def __init__(self, n: int):
            super().__init__()
            self.register_buffer("_mean", torch.zeros(1, n) if mean is None else torch.from_numpy(mean).reshape(1, -1))
            self.register_buffer("_std", torch.ones(1, n) if std is None else torch.from_numpy(std).reshape(1, -1))

        def forward(self, x):
            return (x - self._mean) / (self._std + 0.01)

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.obs_normalizer = Normalizer(layers[0][0].shape[1])
            mods: list[nn.Module] = []
            for i, (w, b) in enumerate(layers):
                lin = nn.Linear(w.shape[1], w.shape[0])
                lin.weight.data, lin.bias.data = torch.from_numpy(w.copy()), torch.from_numpy(b.copy())
                mods += [lin] + ([nn.ELU()] if i < len(layers) - 1 else [])
            self.mlp = nn.Sequential(*mods)
            self.scramble = scramble

        def forward(self, x):
            x = self.obs_normalizer(x)
            if self.scramble:
                x = x.flip(-1)
            return self.mlp(x)

    torch.jit.save(torch.jit.script(Policy()), str(path))
    return path


def onnx_mlp(path: Path, layers, mean=None, std=None, first: str = "gemm_t", last: str = "gemm_t", batch=None) -> Path:
    """An ONNX graph: optional Sub/Div normalizer, then per layer Gemm (``gemm_t``: transB=1 with an (out, in)
    weight; ``gemm``: transB=0 with (in, out)) or MatMul + Add (``matmul``), Elu between layers. ``first`` and
    ``last`` choose the first and last layers' form (hidden ones use Gemm transB=1)."""
    from onnx import TensorProto, helper, numpy_helper

    n_in, n_out = layers[0][0].shape[1], layers[-1][0].shape[0]
    inits, nodes = [], []
    x = "obs"
    if mean is not None:
        inits += [
            numpy_helper.from_array(mean.reshape(1, -1), "norm_mean"),
            numpy_helper.from_array((std + 0.01).reshape(1, -1).astype(np.float32), "norm_std"),
        ]
        nodes += [
            helper.make_node("Sub", [x, "norm_mean"], ["centered"]),
            helper.make_node("Div", ["centered", "norm_std"], ["normalized"]),
        ]
        x = "normalized"
    for i, (w, b) in enumerate(layers):
        kind = first if i == 0 else last if i == len(layers) - 1 else "gemm_t"
        out = "actions" if i == len(layers) - 1 else f"h{i}"
        pre = out if i == len(layers) - 1 else f"z{i}"
        if kind == "matmul":
            inits += [numpy_helper.from_array(w.T.copy(), f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
            nodes += [
                helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                helper.make_node("Add", [f"m{i}", f"b{i}"], [pre]),
            ]
        else:
            trans = kind == "gemm_t"
            inits += [numpy_helper.from_array(w if trans else w.T.copy(), f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
            nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [pre], transB=int(trans)))
        if i < len(layers) - 1:
            nodes.append(helper.make_node("Elu", [pre], [out]))
        x = out
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [batch or "batch", n_in])],
        [helper.make_tensor_value_info("actions", TensorProto.FLOAT, [batch or "batch", n_out])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def rsl_rl_checkpoint(path: Path, layers, mean, std, critic, std_param, rng: np.random.Generator) -> Path:
    """An rsl-rl-lib 5 training checkpoint: actor (normalizer, std, MLP), critic, Adam state with moments."""
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    actor = {
        "obs_normalizer._mean": t(mean.reshape(1, -1)),
        "obs_normalizer._var": t(std.reshape(1, -1) ** 2),
        "obs_normalizer._std": t(std.reshape(1, -1)),
        "obs_normalizer.count": torch.tensor(7),
        "distribution.std_param": t(std_param),
    }
    for i, (w, b) in enumerate(layers):
        actor[f"mlp.{2 * i}.weight"], actor[f"mlp.{2 * i}.bias"] = t(w), t(b)
    crit = {}
    for i, (w, b) in enumerate(critic):
        crit[f"mlp.{2 * i}.weight"], crit[f"mlp.{2 * i}.bias"] = t(w), t(b)
    params = [v for k, v in actor.items() if not k.startswith("obs_normalizer.")] + list(crit.values())
    state = {
        i: {
            "step": torch.tensor(3.0),
            "exp_avg": t(rng.standard_normal(tuple(p.shape))),
            "exp_avg_sq": t(rng.random(tuple(p.shape))),
        }
        for i, p in enumerate(params)
    }
    optimizer = {"state": state, "param_groups": [{"lr": 1e-3, "params": list(range(len(params)))}]}
    torch.save(
        {
            "actor_state_dict": actor,
            "critic_state_dict": crit,
            "optimizer_state_dict": optimizer,
            "iter": 3,
            "infos": None,
        },
        str(path),
    )
    return path


def tiny_files(folder: Path, n_in: int = 6, n_out: int = 2) -> dict[str, Path]:
    """One small network per format (the metadata does not depend on the weights)."""
    rng = np.random.default_rng(0)
    layers = random_mlp(rng, [n_in, 5, n_out])
    mean, std = rng.standard_normal(n_in).astype(np.float32), rng.random(n_in).astype(np.float32) + 0.5
    critic = random_mlp(rng, [n_in, 4, 1])
    return {
        "torchscript": torchscript_mlp(folder / "policy.pt", layers, mean, std),
        "onnx": onnx_mlp(folder / "policy.onnx", layers, mean, std),
        "rsl_rl": rsl_rl_checkpoint(folder / "model_3.pt", layers, mean, std, critic, np.ones(n_out, np.float32), rng),
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    return tiny_files(tmp_path_factory.mktemp("tiny"))


# ------------------------------------------------------------------------------------------------ documents

FLOATS = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
PHYSICAL = st.floats(-100, 100, allow_nan=False)  # a default pose or a command no robot has is refused
NAMES = st.lists(
    st.sampled_from(["LF_HAA", "LF_HFE", "hip", "knee", "a.b", "x[1]", "wrist:rot_x", "j"]),
    min_size=1,
    max_size=6,
    unique=True,
)


@st.composite
def documents(draw) -> tuple[dict, Task]:
    """A metadata document built from a random task and joint order (and, sometimes, a body order)."""
    names = draw(NAMES)
    terms = draw(st.lists(st.sampled_from(list(OBS_TERMS)), min_size=1, max_size=7, unique=True))
    per_joint = lambda values=FLOATS: st.fixed_dictionaries({n: values for n in names})  # noqa: E731
    gains, limits = st.floats(0, 1e3), st.floats(1e-3, 1e3)
    acting = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True).map(tuple))
    task = Task(
        name=draw(st.text(min_size=1, max_size=6)),
        observation=tuple(
            ObsTerm(
                t,
                scale=draw(FLOATS),
                clip=draw(st.none() | st.tuples(FLOATS, FLOATS).map(sorted)),
                history_length=draw(st.integers(0, 5)),
                params={k: draw(st.floats(0.1, 2.0)) for k in OBS_TERMS[t].params},
            )
            for t in terms
        ),
        action=ActionTerm(
            scale=draw(st.floats(0, 100).filter(bool)), use_default_offset=draw(st.booleans()), joints=acting
        ),
        default_joint_pos=draw(per_joint(PHYSICAL)) if draw(st.booleans()) else {".*": draw(PHYSICAL)},
        stiffness=draw(st.just({}) | per_joint(gains)),
        damping=draw(st.just({}) | per_joint(gains)),
        armature=draw(st.just({}) | per_joint(gains)),
        friction=draw(st.just({}) | per_joint(gains)),
        effort_limit=draw(st.none() | per_joint(limits)),
        sim_dt=draw(st.floats(1e-4, 0.05)),
        decimation=draw(st.integers(1, 10)),
        engines={
            "physx": draw(st.fixed_dictionaries({}, optional={"solver_position_iterations": st.integers(1, 64)})),
            "newton": draw(
                st.fixed_dictionaries({}, optional={"solver": st.sampled_from(["mujoco_cpu", "mujoco_warp"])})
            ),
        },
        spawn_height=draw(st.none() | st.floats(0.1, 2.0)),
        command=draw(st.tuples(PHYSICAL, PHYSICAL, PHYSICAL)),
        ground=draw(
            st.none()
            | st.builds(
                GroundMaterial, static_friction=st.floats(0, 2), friction_combine=st.sampled_from(COMBINE_MODES)
            )
        ),
        self_collisions=draw(st.none() | st.booleans()),
        actuators=draw(
            st.just(())
            | st.just((ActuatorGroup("legs", "dc_motor", (".*",), saturation_effort=20.0, velocity_limit=30.0),))
        ),
    )
    bodies = draw(st.none() | st.lists(st.sampled_from(["base", "thigh", "shank", "foot"]), min_size=1, unique=True))
    meta = build_metadata(
        task,
        names,
        body_names=bodies,
        convention=draw(st.sampled_from([None, "physx", "mjwarp", "robot_schema"])),
        trained_on=draw(st.none() | st.sampled_from(["physx", "newton"])),
        asset=draw(st.none() | st.sampled_from(["newton:ant", "/robots/a.usda"])),
        history=draw(
            st.lists(st.fixed_dictionaries({"convert": st.sampled_from(["physx -> mjwarp", "x -> y"])}), max_size=2)
        ),
    )
    return meta, task


@settings(max_examples=40)
@given(doc=documents())
def test_metadata_round_trips_through_every_format(tiny, doc):
    meta, _ = doc
    assert json.loads(json.dumps(meta)) == meta and meta["format"] == CHECKPOINT_FORMAT
    with tempfile.TemporaryDirectory() as folder:
        for fmt, path in tiny.items():
            out = Path(folder) / f"out_{path.name}"
            before = path.read_bytes()
            write_metadata(path, out, meta)
            assert path.read_bytes() == before  # the input is never written
            assert read_metadata(out) == meta, fmt
            policy = load_policy(out)
            assert policy.metadata == meta and policy.read_metadata() == meta, fmt
            assert not [p for p in os.listdir(folder) if p.endswith(".tmp")]


@settings(max_examples=60)
@given(doc=documents())
def test_the_document_gives_its_task_back(doc):
    meta, task = doc
    back = metadata_to_task(meta)
    assert back.joint_names == tuple(meta["joint_names"]) and back.convention == meta["convention"]
    assert (back.sim_dt, back.decimation) == (meta["sim"]["dt"], meta["sim"]["decimation"])
    again = build_metadata(
        back, meta["joint_names"], body_names=meta["body_names"], convention=meta["convention"], history=meta["history"]
    )
    assert again == meta
    # the document is the task expanded for its joints: the same task expanded the same way
    expanded = task.with_joint_names(meta["joint_names"])
    for field in ("default_joint_pos", "stiffness", "damping", "armature", "friction"):
        assert dict(getattr(back, field)) == dict(getattr(expanded, field))
    assert [t.name for t in back.observation] == [t.name for t in task.observation]
    assert all(t.size is not None for t in back.observation)


def anymal_document(**overrides) -> dict:
    task = load_task(PRESET)
    names = [
        "LF_HAA",
        "LH_HAA",
        "RF_HAA",
        "RH_HAA",
        "LF_HFE",
        "LH_HFE",
        "RF_HFE",
        "RH_HFE",
        "LF_KFE",
        "LH_KFE",
        "RF_KFE",
        "RH_KFE",
    ]
    return {**build_metadata(task, names, convention="physx", trained_on="newton"), **overrides}


def test_schema_keys_and_sizes():
    meta = anymal_document()
    assert list(meta)[:14] == [
        "format",
        "joint_names",
        "body_names",
        "convention",
        "trained_on",
        "asset",
        "observation",
        "action",
        "default_joint_pos",
        "stiffness",
        "damping",
        "armature",
        "effort_limit",
        "sim",
    ]
    assert [(t["name"], t["size"], t["axis"]) for t in meta["observation"]][4:] == [
        ("joint_pos_rel", 12, "joint"),
        ("joint_vel_rel", 12, "joint"),
        ("last_action", 12, "joint"),
    ]
    assert meta["sim"] == {"dt": 0.005, "decimation": 4}
    assert meta["default_joint_pos"]["LH_HFE"] == -0.4 and list(meta["stiffness"]) == meta["joint_names"]
    assert meta["action"] == {
        "kind": "joint_position",
        "scale": 0.5,
        "use_default_offset": True,
        "joints": None,
        "offset": 0.0,
        "clip": None,
        "clip_actions": None,
    }


def test_other_versions_and_malformed_documents_are_refused(tiny, tmp_path):
    meta = anymal_document()
    with pytest.raises(CheckpointError, match=r"'transfer-checkpoint/2' is not one this version.*Upgrade transfer"):
        check_metadata({**meta, "format": "transfer-checkpoint/2"})
    with pytest.raises(CheckpointError, match="not transfer checkpoint metadata"):
        check_metadata({**meta, "format": "something-else/1"})
    with pytest.raises(CheckpointError, match="not transfer checkpoint metadata"):
        check_metadata({k: v for k, v in meta.items() if k != "format"})
    with pytest.raises(CheckpointError, match=r"unknown fields \['colour'\]"):
        check_metadata({**meta, "colour": "red"})
    with pytest.raises(CheckpointError, match="`sim` must be a mapping"):
        check_metadata({**meta, "sim": {"dt": 0.005}})
    with pytest.raises(CheckpointError, match="`joint_names` is null"):
        check_metadata({**meta, "joint_names": None})
    with pytest.raises(CheckpointError, match="no value for joints"):
        check_metadata({**meta, "default_joint_pos": {"LF_HAA": 0.0}})
    with pytest.raises(CheckpointError, match="declares 12 entries"):
        check_metadata(
            {
                **meta,
                "joint_names": meta["joint_names"][:6],
                **{
                    k: dict(list(meta[k].items())[:6])
                    for k in ("default_joint_pos", "stiffness", "damping", "armature")
                },
            }
        )

    # a future version stored in each format: reading it says so, for the file, the policy and `transfer info`
    future = json.dumps({**meta, "format": "transfer-checkpoint/2"})
    model = onnx.load(str(tiny["onnx"]))
    entry = model.metadata_props.add()
    entry.key, entry.value = "transfer", future
    onnx.save(model, str(tmp_path / "future.onnx"))
    module = torch.jit.load(str(tiny["torchscript"]))
    torch.jit.save(module, str(tmp_path / "future.pt"), _extra_files={"transfer.json": future})
    torch.save(
        {**torch.load(tiny["rsl_rl"], weights_only=True), "transfer": json.loads(future)}, tmp_path / "model_9.pt"
    )
    for name in ("future.onnx", "future.pt", "model_9.pt"):
        with pytest.raises(CheckpointError, match="transfer-checkpoint/2"):
            read_metadata(tmp_path / name)
        with pytest.raises(CheckpointError, match="transfer-checkpoint/2"):
            load_policy(tmp_path / name).metadata  # noqa: B018
    torch.jit.save(module, str(tmp_path / "garbled.pt"), _extra_files={"transfer.json": "{not json"})
    with pytest.raises(CheckpointError, match="not valid JSON"):
        read_metadata(tmp_path / "garbled.pt")


def test_checkpoints_without_metadata_say_none(tiny):
    for path in tiny.values():
        assert read_metadata(path) is None and load_policy(path).metadata is None


@pytest.mark.parametrize("name", ["mjw_anymal.pt", "physx_anymal.onnx"])
def test_shared_checkpoints_without_metadata_say_none(shared, name):
    path = shared / "policies/anybotics_anymal_c/rl_policies" / name
    if not path.is_file():
        pytest.skip(f"shared checkpoint not found: {path}")
    assert read_metadata(path) is None and load_policy(path).metadata is None


# ------------------------------------------------------------------------------------------------ writing safely


def test_write_refuses_the_input_and_an_existing_output(tiny, tmp_path):
    meta = build_metadata(
        load_task(PRESET).__class__(
            name="t",
            observation=(ObsTerm("projected_gravity"), ObsTerm("joint_pos_rel")),
            action=ActionTerm(scale=1.0),
            default_joint_pos={".*": 0.0},
        ),
        ["a", "b", "c"],
    )
    src = tmp_path / "policy.pt"
    src.write_bytes(tiny["torchscript"].read_bytes())
    before = src.read_bytes()
    for same in (src, tmp_path / "." / "policy.pt", tmp_path / "sub" / ".." / "policy.pt"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(CheckpointError, match="is the input checkpoint"):
            write_metadata(src, same, meta, force=True)
    os.link(src, tmp_path / "hardlink.pt")
    with pytest.raises(CheckpointError, match="is the input checkpoint"):
        write_metadata(src, tmp_path / "hardlink.pt", meta, force=True)
    (tmp_path / "symlink.pt").symlink_to(src)
    with pytest.raises(CheckpointError, match="is the input checkpoint"):
        write_metadata(src, tmp_path / "symlink.pt", meta, force=True)
    assert src.read_bytes() == before
    out = tmp_path / "out.pt"
    out.write_bytes(b"precious")
    with pytest.raises(CheckpointError, match="exists; pass --force"):
        write_metadata(src, out, meta)
    assert out.read_bytes() == b"precious"
    write_metadata(src, out, meta, force=True)
    assert read_metadata(out) == meta and src.read_bytes() == before
    with pytest.raises(CheckpointError, match="does not exist"):
        write_metadata(src, tmp_path / "no" / "out.pt", meta)
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        write_metadata(tmp_path / "missing.pt", tmp_path / "x.pt", meta)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hardlink.pt", "out.pt", "policy.pt", "sub", "symlink.pt"]


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path):
    out = tmp_path / "out.bin"
    out.write_bytes(b"old")

    def fail(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(out, fail)
    assert out.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]
    atomic_write(out, lambda tmp: tmp.write_bytes(b"new"))
    assert out.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


# ------------------------------------------------------------------------------------------------ config vs metadata


def test_a_config_is_merged_where_the_metadata_is_silent_and_refused_where_it_contradicts(tmp_path):
    meta = anymal_document(physx={}, spawn_height=None)
    task = metadata_to_task(meta)
    merged = merge_config(task, load_task(PRESET), where="--config preset")
    assert dict(merged.engines["physx"]) == {"solver_position_iterations": 4, "solver_velocity_iterations": 0}
    assert merged.spawn_height == 0.7 and merged.joint_names == task.joint_names
    assert merge_config(metadata_to_task(anymal_document()), load_task(PRESET), where="x") == metadata_to_task(
        anymal_document()
    )
    stiff = tmp_path / "stiff.yaml"
    stiff.write_text(PRESET.read_text().replace('stiffness: {".*": 300.0}', 'stiffness: {".*": 80.0}'))
    with pytest.raises(CheckpointError) as err:
        merge_config(task, load_task(stiff), where="--config stiff.yaml contradicts policy.pt's metadata")
    text = str(err.value)
    assert "--config stiff.yaml contradicts" in text and "stiffness['LF_HAA']: checkpoint 300.0, config 80.0" in text
    mjw = tmp_path / "mjw.yaml"
    mjw.write_text(PRESET.read_text().replace("convention: null", "convention: mjwarp"))
    with pytest.raises(CheckpointError, match="convention: checkpoint 'physx', config 'mjwarp'"):
        merge_config(task, load_task(mjw), where="x")


def test_newton_policy_yaml_agrees_with_the_preset_document(shared):
    yaml_task = load_task(shared / "policies/anybotics_anymal_c/rl_policies/anymal.yaml")
    merged = merge_config(metadata_to_task(anymal_document()), yaml_task, where="x")
    assert merged == metadata_to_task(anymal_document())


# ------------------------------------------------------------------------------------------------ transfer info


def test_info_without_and_with_metadata(tiny, tmp_path, capsys):
    assert main(["info", str(tiny["onnx"])]) == 0
    out = capsys.readouterr().out
    assert "onnx" in out and "6 observations -> 2 actions" in out and "metadata  none" in out
    assert "transfer convert policy.onnx --source CONVENTION --to CONVENTION --config TASK.yaml" in out
    meta = anymal_document()
    big = onnx_mlp(tmp_path / "big.onnx", random_mlp(np.random.default_rng(1), [48, 8, 12]))
    write_metadata(big, tmp_path / "described.onnx", meta)
    assert main(["info", str(tmp_path / "described.onnx")]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # the key column's width follows the longest key
    assert "joint order physx (12): LF_HAA LH_HAA" in flat and "trained on newton" in flat
    assert "= 48" in out and "stiffness 300 (every joint)" in flat and "decimation 4 (policy 50 Hz)" in out
    assert main(["info", str(tmp_path / "described.onnx"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metadata"] == meta and (report["input_size"], report["output_size"]) == (48, 12)
    assert report["observation_size"] == 48 and report["notes"] == []
    assert main(["info", str(tiny["rsl_rl"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "rsl_rl" and report["metadata"] is None and "transfer convert" in report["hint"]
    assert main(["info", str(tmp_path / "none.pt")]) == 2
    assert "none.pt" in capsys.readouterr().err


def test_info_notes_a_document_that_does_not_fit_the_network(tiny, tmp_path):
    write_metadata(tiny["torchscript"], tmp_path / "x.pt", anymal_document())
    info = checkpoint_info(tmp_path / "x.pt")
    assert info["notes"] == ["the metadata's observation has 48 entries, the network reads 6"]


def test_info_never_prints_a_checkpoints_text_raw(tiny, tmp_path, capsys):
    """Issue 31: metadata is the file's: an escape sequence (retitle, clear the screen), a newline that forges a
    line, a huge value: escaped and cut on the terminal, kept whole in --json."""
    from transfer.cli import main
    from transfer.formats import write_metadata

    meta = anymal_document(history=[{"tool": "y" * 100_000}])
    meta["name"] = "x\x1b]0;pwned\x07\x1b[2J\nforged: line"
    out = write_metadata(tiny["torchscript"], tmp_path / "evil.pt", meta)
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text and "\nforged: line" not in text and "\\x1b]0;pwned" in text
    assert "(100005 characters)" in text and len(text) < 20_000
    assert main(["info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["name"] == meta["name"]
