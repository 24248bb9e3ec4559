"""mjlab's ONNX policies describe their task in ``metadata_props``; transfer reads it as the checkpoint's task.

The layout is mjlab's exporter's (``mjlab/rl/exporter_utils.py``): comma-separated lists, three decimals, nested
lists as ``[a, b]``. The files here are ONNX models written with that layout: a tiny MLP for the Ant that ships
with ovphysx (no ../shared needed), and the real MuJoCo-Warp-trained ANYmal C policy from ../shared given mjlab's
metadata, which walks on PhysX with nothing but ``--asset`` while its naive control falls.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer.formats.mjlab import MJLAB_TERMS, MjlabError, is_mjlab, mjlab_task, read_props, write_props
from transfer.task import TaskError

ISAACLAB_LAYOUT = ["base_lin_vel", "base_ang_vel", "projected_gravity", "command", "joint_pos", "joint_vel", "actions"]
MJLAB_LAYOUT = ["base_lin_vel", "base_ang_vel", "projected_gravity", "joint_pos", "joint_vel", "actions", "command"]
ANYMAL_MJW = [
    "LF_HAA",
    "LF_HFE",
    "LF_KFE",
    "LH_HAA",
    "LH_HFE",
    "LH_KFE",
    "RF_HAA",
    "RF_HFE",
    "RF_KFE",
    "RH_HAA",
    "RH_HFE",
    "RH_KFE",
]
ANYMAL_DEFAULTS = [0.0, 0.4, -0.8, 0.0, -0.4, 0.8, 0.0, 0.4, -0.8, 0.0, -0.4, 0.8]


def mjlab_metadata(joints, defaults, terms=ISAACLAB_LAYOUT, action_scale=0.5, **extra):
    """The dict mjlab's ``get_base_metadata`` builds (before it is turned into strings)."""
    n = len(terms)
    return {
        "run_path": "user/project/run0",
        "joint_names": list(joints),
        "joint_stiffness": [300.0] * len(joints),
        "joint_damping": [10.0] * len(joints),
        "default_joint_pos": list(defaults),
        "command_names": ["twist"],
        "observation_names": list(terms),
        "observation_terms_scale": [1.0] * n,
        "observation_terms_flatten_history_dim": [True] * n,
        "observation_terms_history_length": [0] * n,
        "observation_terms_clip": [[-math.inf, math.inf]] * n,
        "action_scale": action_scale,
        **extra,
    }


def attach(onnx_path: Path, out: Path, metadata: dict) -> Path:
    """A copy of ``onnx_path`` with ``metadata`` attached as mjlab attaches it."""
    import onnx

    model = onnx.load(str(onnx_path))
    for key, value in write_props(metadata).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(out))
    return out


# ---------------------------------------------------------------------------------------------------- reading strings


def test_reads_mjlab_strings_as_written():
    props = write_props(mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS))
    assert props["observation_terms_clip"].startswith("[-inf, inf],[-inf, inf]")
    assert props["default_joint_pos"].startswith("0.000,0.400,-0.800")
    parsed = read_props(props)
    assert parsed["joint_names"] == ANYMAL_MJW
    assert parsed["observation_terms_clip"][0] == [-math.inf, math.inf]
    assert parsed["observation_terms_flatten_history_dim"] == [True] * 7
    assert parsed["action_scale"] == 0.5


def test_task_follows_the_listed_order_and_maps_terms_by_name():
    task = mjlab_task(write_props(mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS, terms=MJLAB_LAYOUT)))
    assert task.joint_names == tuple(ANYMAL_MJW) and task.trained_on == "mujoco"
    assert [t.name for t in task.observation] == [MJLAB_TERMS[n] for n in MJLAB_LAYOUT]
    assert task.observation[-1].name == "velocity_commands"  # mjlab puts the command last
    assert dict(task.default_joint_pos)["LH_HFE"] == -0.4 and set(task.stiffness.values()) == {300.0}
    assert all(t.clip is None for t in task.observation)  # [-inf, inf] is no clip
    assert task.sim_dt == 0.005 and task.decimation == 4 and task.engines["newton"]["solver"] == "mujoco_warp"


def test_per_joint_action_scale_and_a_bounded_clip():
    scales = [0.25 + 0.05 * i for i in range(12)]
    meta = mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS, action_scale=scales)
    meta["observation_terms_clip"] = [[-math.inf, math.inf]] * 6 + [[-100.0, 100.0]]
    meta["observation_terms_scale"] = [1.0, 0.25, 1.0, 1.0, 0.05, 1.0, 1.0]
    task = mjlab_task(write_props(meta))
    assert task.action.scale_vector(ANYMAL_MJW) == pytest.approx(scales, abs=1e-3)
    assert task.observation[6].clip == (-100.0, 100.0)
    assert task.observation[1].scale == 0.25 and task.observation[4].scale == 0.05


def test_an_infinite_action_scale_is_named_by_its_file_and_key():
    meta = mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS, action_scale=math.inf)
    with pytest.raises(MjlabError, match=r"^p.onnx \(mjlab metadata\): action_scale: .*expected a finite number"):
        mjlab_task(write_props(meta), source="p.onnx (mjlab metadata)")


def test_a_bracket_in_a_joint_name_does_not_join_the_names():
    """A ``[`` inside an mjlab joint name made the whole list one name ("12 numbers for 1 joint_names")."""
    names = ["LF_HAA[0]", *ANYMAL_MJW[1:]]
    assert read_props(write_props(mjlab_metadata(names, ANYMAL_DEFAULTS)))["joint_names"] == names


@pytest.mark.parametrize("clip", [[math.nan, math.inf], [math.nan, math.nan], [-math.inf, math.nan]])
def test_a_clip_with_nan_is_refused_not_read_as_no_clip(clip):
    """Battery 5: ``[nan, inf]`` and ``[nan, nan]`` were read as "no clip" (exit 0) while ``[nan, 5]`` was refused."""
    meta = mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS)
    meta["observation_terms_clip"] = [clip] + [[-math.inf, math.inf]] * 6
    with pytest.raises(MjlabError, match=r"observation term 'base_lin_vel': clip .* is not \[low, high\]"):
        mjlab_task(write_props(meta))


@given(
    perm=st.permutations(range(12)),
    defaults=st.lists(st.floats(-3, 3, allow_nan=False), min_size=12, max_size=12),
    scale=st.one_of(st.floats(0.01, 2), st.lists(st.floats(0.01, 2), min_size=12, max_size=12)),
)
def test_round_trip_through_mjlab_strings(perm, defaults, scale):
    """Whatever the order, defaults and scale, the task read back names each value by the joint it belongs to
    (to mjlab's three decimals)."""
    joints = [ANYMAL_MJW[i] for i in perm]
    task = mjlab_task(write_props(mjlab_metadata(joints, defaults, action_scale=scale)))
    assert task.joint_names == tuple(joints)
    for name, value in zip(joints, defaults, strict=True):
        assert task.default_joint_pos[name] == pytest.approx(value, abs=5e-4)
    expected = [scale] * 12 if isinstance(scale, float) else scale
    got = task.action.scale_vector(joints)
    assert (list(got) if isinstance(got, tuple) else [got] * 12) == pytest.approx(expected, abs=5e-4)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"observation_names": ISAACLAB_LAYOUT[:-1] + ["height_scan"]}, r"'height_scan' has no transfer equivalent"),
        ({"observation_terms_history_length": [0] * 6 + [2.5]}, r"'actions': history length 2.5"),
        (
            {
                "observation_terms_history_length": [0] * 6 + [3],
                "observation_terms_flatten_history_dim": [True] * 6 + [False],
            },
            r"'actions' keeps its 3-step history as a separate axis",
        ),
        ({"default_joint_pos": ANYMAL_DEFAULTS[:11]}, r"default_joint_pos has 11 numbers for 12 joint_names"),
        ({"action_scale": [0.5] * 5}, r"action_scale has 5 numbers for 12 joint_names"),
        ({"observation_terms_scale": [1.0] * 3}, r"observation_terms_scale has 3 entries for 7"),
        ({"observation_terms_scale": [1.0] * 3 + [[1.0, 2.0]] + [1.0] * 3}, r"'command': .*2 scales for a term of 3"),
        ({"joint_stiffness": ["x"] * 12}, r"joint_stiffness: 'x' is not a number"),
        ({"joint_names": ANYMAL_MJW[:11] + ["LF_HAA"]}, r"lists a joint twice"),
    ],
)
def test_bad_metadata_is_refused_naming_the_key(change, match):
    meta = {**mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS), **change}
    with pytest.raises(MjlabError, match=match):
        mjlab_task(write_props(meta), source="policy.onnx")


def test_histories_and_per_entry_scales_as_mjlab_writes_them():
    """PR #903's exporter: history lengths and flags as numbers with three decimals (True -> 1.000), a per-entry
    scale as a bracketed list."""
    n = len(ISAACLAB_LAYOUT)
    meta = mjlab_metadata(
        ANYMAL_MJW,
        ANYMAL_DEFAULTS,
        observation_terms_history_length=[5] * n,
        observation_terms_scale=[1.0] * 3 + [[2.0, 2.0, 0.25]] + [1.0] * 3,
    )
    props = write_props(meta)
    assert props["observation_terms_flatten_history_dim"].startswith("1.000,")
    assert props["observation_terms_history_length"].startswith("5.000,")
    task = mjlab_task(props)
    assert {t.history_length for t in task.observation} == {5} and task.observation_size(12) == 5 * 48
    assert task.observation[3].name == "velocity_commands" and task.observation[3].scale == (2.0, 2.0, 0.25)


def test_missing_keys_are_named():
    props = write_props(mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS))
    del props["default_joint_pos"]
    assert is_mjlab(props)
    with pytest.raises(TaskError, match=r"missing keys \['default_joint_pos'\]"):
        mjlab_task(props)
    assert not is_mjlab({"producer": "torch"})


# ---------------------------------------------------------------------------------------------------- real files

onnxruntime = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def ant_mjlab(tmp_path_factory) -> tuple[Path, Path]:
    """A random MLP for ovphysx's Ant, exported in mjlab's layout (joint order: MuJoCo's, i.e. mjwarp)."""
    pytest.importorskip("ovphysx")
    from tests.test_checkpoint import onnx_mlp
    from transfer.orders import resolve_ordering
    from transfer.task import resolve_asset

    asset = resolve_asset("ovphysx:Ant")
    joints = resolve_ordering(asset, "mjwarp").joints
    rng = np.random.default_rng(0)
    n_obs, n_act = 12 + 3 * len(joints), len(joints)
    layers = [
        (rng.normal(0, 0.1, (16, n_obs)).astype(np.float32), np.zeros(16, np.float32)),
        (rng.normal(0, 0.1, (n_act, 16)).astype(np.float32), np.zeros(n_act, np.float32)),
    ]
    folder = tmp_path_factory.mktemp("ant_mjlab")
    plain = onnx_mlp(folder / "plain.onnx", layers)
    policy = attach(plain, folder / "policy.onnx", mjlab_metadata(joints, [0.0] * n_act, terms=MJLAB_LAYOUT))
    return policy, asset


def test_info_shows_the_mjlab_task(ant_mjlab, capsys):
    from transfer.cli import main

    policy, _ = ant_mjlab
    assert main(["info", str(policy)]) == 0
    text = capsys.readouterr().out
    assert "mjlab's metadata_props" in text and "trained on   mujoco" in text
    assert main(["info", str(policy), "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)["metadata"]
    assert meta["trained_on"] == "mujoco" and meta["history"][0]["tool"] == "mjlab"
    assert [t["name"] for t in meta["observation"]][-1] == "velocity_commands"


@pytest.mark.engines
def test_replay_on_physx_needs_only_the_asset(ant_mjlab, capsys):
    from transfer.cli import main

    policy, asset = ant_mjlab
    code = main(
        [
            "replay",
            str(policy),
            "--target",
            "physx",
            "--asset",
            str(asset),
            "--num-envs",
            "1",
            "--seconds",
            "0.2",
            "--json",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["order"] == "explicit list" and result["target"] == "physx"
    assert result["settings"]["physx"] == {"solver_position_iterations": 4, "solver_velocity_iterations": 0}


def test_without_an_asset_the_error_says_pass_asset(ant_mjlab, capsys):
    from transfer.cli import main

    policy, _ = ant_mjlab
    assert main(["replay", str(policy), "--target", "physx"]) == 2
    assert "--asset is needed" in capsys.readouterr().err


@pytest.mark.engines
def test_real_mjwarp_policy_with_mjlab_metadata_walks_on_physx(anymal_files, tmp_path):
    """The real ANYmal C policy trained on MuJoCo-Warp, given mjlab's metadata (its own order, defaults, gains,
    action scale): reordered on PhysX it walks without falling (native Newton: 0.91 m/s at 4 envs, 6 s); fed
    PhysX's order it does not."""
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import replay

    onnx_path = anymal_files["mjw_pt"].with_suffix(".onnx")
    if not onnx_path.is_file():
        pytest.skip(f"{onnx_path} not found")
    policy = attach(
        shutil.copy(onnx_path, tmp_path / "plain.onnx"),
        tmp_path / "policy.onnx",
        mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS),
    )
    common = dict(asset=anymal_files["asset"], num_envs=4, seconds=4.0, progress=False)
    walked = replay(policy, "physx", **common)
    naive = replay(policy, "physx", reorder=False, **common)
    assert walked.fall_fraction == 0.0 and walked.forward_velocity > 0.7
    assert naive.fall_fraction > 0 or naive.forward_velocity < 0.3 * walked.forward_velocity


@pytest.mark.engines
def test_replay_with_an_mjcf_robot_needs_nothing_else(converters, tmp_path, capsys):
    """mjlab's robots are MJCF: ``transfer replay policy.onnx --target physx --asset robot.xml`` reads the task from
    the ONNX and converts the robot through the official converter (issue 20: nothing else needed)."""
    pytest.importorskip("ovphysx")
    from tests.robotgen import mjcf_robot
    from tests.test_checkpoint import onnx_mlp
    from transfer.cli import main
    from transfer.orders import resolve_ordering

    robot = mjcf_robot(tmp_path, name="walker", walker=True)
    joints = resolve_ordering(robot, "mjwarp").joints  # MuJoCo's order: the one mjlab trains in
    rng = np.random.default_rng(0)
    n_obs, n_act = 12 + 3 * len(joints), len(joints)
    layers = [
        (rng.normal(0, 0.1, (16, n_obs)).astype(np.float32), np.zeros(16, np.float32)),
        (rng.normal(0, 0.1, (n_act, 16)).astype(np.float32), np.zeros(n_act, np.float32)),
    ]
    policy = attach(
        onnx_mlp(tmp_path / "plain.onnx", layers),
        tmp_path / "policy.onnx",
        mjlab_metadata(joints, [0.0] * n_act, terms=MJLAB_LAYOUT),
    )
    code = main(
        [
            "replay",
            str(policy),
            "--target",
            "physx",
            "--asset",
            str(robot),
            "--num-envs",
            "1",
            "--seconds",
            "0.2",
            "--json",
        ]
    )
    assert code == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["target"] == "physx" and result["order"] == "explicit list"


def test_a_metadata_key_listed_twice_is_refused(tmp_path):
    """Issue 31: two ``joint_names`` entries were read last-one-wins (the order reversed, the robot fell, exit 0)."""
    import onnx

    from tests.test_checkpoint import onnx_mlp, random_mlp
    from transfer.formats import load_policy
    from transfer.formats.policy import PolicyError

    src = onnx_mlp(tmp_path / "p.onnx", random_mlp(np.random.default_rng(0), [48, 4, 12]))
    model = onnx.load(str(src))
    for value in (",".join(ANYMAL_MJW), ",".join(reversed(ANYMAL_MJW))):
        entry = model.metadata_props.add()
        entry.key, entry.value = "joint_names", value
    onnx.save(model, str(tmp_path / "twice.onnx"))
    with pytest.raises(PolicyError, match=r"lists \['joint_names'\] more than once"):
        load_policy(tmp_path / "twice.onnx").read_metadata()
