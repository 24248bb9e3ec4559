"""The task model: terms and sizes, pattern expansion, listed-order checks, the dict round trip, the readers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.conftest import SHARED
from transfer.actuators import ActuatorGroup
from transfer.backends.scene import COMBINE_MODES, GroundMaterial
from transfer.task import (
    FLAT_VELOCITY_OBSERVATION,
    OBS_TERMS,
    ActionTerm,
    ObsTerm,
    Task,
    TaskError,
    check_listed_order,
    expand_joint_values,
    load_task,
    resolve_asset,
)
from transfer.task.model import MAX_SIM_DT

ROOT = Path(__file__).resolve().parents[1]
PRESET = ROOT / "presets/tasks/anymal_c_flat_velocity.yaml"
MJW = tuple(f"{leg}_{j}" for leg in ("LF", "LH", "RF", "RH") for j in ("HAA", "HFE", "KFE"))
PHYSX = tuple(f"{leg}_{j}" for j in ("HAA", "HFE", "KFE") for leg in ("LF", "LH", "RF", "RH"))


def shared_policy_file(relative: str) -> Path:
    path = SHARED / "policies" / relative
    if not path.is_file():
        pytest.skip(f"shared policy file not found: {path}")
    return path


def minimal(**overrides) -> dict:
    data = {
        "format": "transfer-task/1",
        "name": "t",
        "observation": ["base_ang_vel", "joint_pos_rel"],
        "action": {"scale": 0.25},
        "default_joint_pos": {".*": 0.0},
        "sim_dt": 0.01,
        "decimation": 2,
    }
    data.update(overrides)
    return data


def write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------------ terms and sizes


def test_registry_fills_axis_and_size_and_refuses_unknown_terms():
    assert ObsTerm("base_lin_vel") == ObsTerm("base_lin_vel", 3, "none")
    assert ObsTerm("joint_pos_rel").axis == "joint" and ObsTerm("joint_pos_rel").size is None
    with pytest.raises(TaskError) as err:
        ObsTerm("joint_position")
    for name in OBS_TERMS:
        assert name in str(err.value)
    with pytest.raises(TaskError, match="indexes 'joint'"):
        ObsTerm("joint_vel_rel", axis="none")
    with pytest.raises(TaskError, match="has 3 entries"):
        ObsTerm("projected_gravity", size=4)
    with pytest.raises(TaskError, match="clip low"):
        ObsTerm("base_lin_vel", clip=(1.0, -1.0))
    with pytest.raises(TaskError, match="expected a number"):
        ObsTerm("base_lin_vel", scale="2")


def test_flat_velocity_layout_is_48_for_12_joints_and_follows_the_action():
    task = Task("t", FLAT_VELOCITY_OBSERVATION, ActionTerm(scale=0.5), default_joint_pos={".*": 0.0})
    assert task.observation_size(12) == 48
    slices = task.term_slices(12)
    assert list(slices) == [t.name for t in FLAT_VELOCITY_OBSERVATION]
    assert slices["velocity_commands"] == slice(9, 12)
    assert slices["joint_pos_rel"] == slice(12, 24) and slices["last_action"] == slice(36, 48)
    assert task.observation_size(16) == 12 + 3 * 16
    assert task.policy_dt == pytest.approx(0.02)
    # last_action is action-sized: an action on 4 of 12 joints
    sub = Task(
        "t", FLAT_VELOCITY_OBSERVATION, ActionTerm(scale=0.5, joints=("LF_.*", "RH_KFE")), default_joint_pos={".*": 0.0}
    )
    with pytest.raises(TaskError, match="with_joint_names"):
        sub.observation_size(12)  # patterns: the count depends on the asset
    sub = sub.with_joint_names(MJW)
    assert sub.action.joints == ("LF_HAA", "LF_HFE", "LF_KFE", "RH_KFE")
    assert sub.term_slices(12)["last_action"] == slice(36, 40)


def test_per_joint_action_scale_expands_by_name_and_pattern():
    """Isaac Lab and mjlab give per-joint action scales: a mapping, expanded for the action's joints."""
    task = Task(
        "t",
        FLAT_VELOCITY_OBSERVATION,
        ActionTerm(scale={".*_HAA": 0.25, ".*_(HFE|KFE)": 0.5}),
        default_joint_pos={".*": 0.0},
    )
    expanded = task.with_joint_names(MJW)
    assert tuple(expanded.action.scale) == tuple(MJW)
    assert expanded.action.scale_vector(["LF_HAA", "LF_KFE"]) == (0.25, 0.5)
    assert Task.from_dict(expanded.to_dict()) == expanded
    with pytest.raises(TaskError, match=r"action.scale.*RH_KFE"):
        Task(
            "t", FLAT_VELOCITY_OBSERVATION, ActionTerm(scale={"LF_.*": 0.5}), default_joint_pos={".*": 0.0}
        ).with_joint_names(MJW)
    with pytest.raises(TaskError, match="empty mapping"):
        ActionTerm(scale={})
    # only the driven joints need a scale
    sub = Task(
        "t",
        FLAT_VELOCITY_OBSERVATION,
        ActionTerm(scale={"LF_.*": 0.5}, joints=("LF_.*",)),
        default_joint_pos={".*": 0.0},
    ).with_joint_names(MJW)
    assert sub.action.scale_vector(sub.action.joints) == (0.5, 0.5, 0.5)


def test_declared_joint_term_size_is_checked_against_the_articulation():
    task = Task("t", (ObsTerm("joint_pos_rel", size=12),), ActionTerm(), default_joint_pos={".*": 0.0})
    assert task.observation_size(12) == 12
    with pytest.raises(TaskError, match="declares 12 entries, the articulation gives 16"):
        task.observation_size(16)


def test_duplicate_terms_and_bad_task_fields_are_refused():
    with pytest.raises(TaskError, match="twice"):
        Task("t", (ObsTerm("base_lin_vel"), ObsTerm("base_lin_vel")), ActionTerm())
    with pytest.raises(TaskError, match="sim_dt"):
        Task("t", FLAT_VELOCITY_OBSERVATION, ActionTerm(), sim_dt=0.0)
    with pytest.raises(TaskError, match="decimation"):
        Task("t", FLAT_VELOCITY_OBSERVATION, ActionTerm(), decimation=0)
    with pytest.raises(TaskError, match="convention"):
        Task("t", FLAT_VELOCITY_OBSERVATION, ActionTerm(), convention="bullet")
    with pytest.raises(TaskError, match="kind"):
        ActionTerm(kind="joint_velocity")
    with pytest.raises(TaskError, match=r"physx: unknown settings \['solver_iterations'\]"):
        Task("t", FLAT_VELOCITY_OBSERVATION, ActionTerm(), engines={"physx": {"solver_iterations": 4}})


# ------------------------------------------------------------------------------------------------ patterns

NAME_CHARS = st.sampled_from(list("abLR_.1+"))
JOINT_NAMES = st.lists(st.text(NAME_CHARS, min_size=1, max_size=5), min_size=1, max_size=8, unique=True)


def _matches(key: str, name: str, names: list[str]) -> bool:
    if key in names:
        return key == name
    try:
        return re.fullmatch(key, name) is not None
    except re.error:
        return False


@given(names=JOINT_NAMES, data=st.data(), require_all=st.booleans())
def test_expansion_gives_every_joint_exactly_one_value_or_an_error(names, data, require_all):
    keys = data.draw(
        st.lists(
            st.one_of(st.sampled_from(names), st.sampled_from([".*", "a.*", ".*1", "(a|b)", "L.", "zz", "a+"])),
            max_size=5,
            unique=True,
        )
    )
    values = {k: float(i) for i, k in enumerate(keys)}
    matched = {n: [k for k in keys if _matches(k, n, names)] for n in names}
    ok = (
        all(len(ks) <= 1 for ks in matched.values())
        and all(any(_matches(k, n, names) for n in names) for k in keys)
        and (not require_all or not keys or all(matched.values()))
    )
    try:
        out = expand_joint_values(values, names, field="f", source="src.yaml", require_all=require_all)
    except TaskError as exc:
        assert not ok
        assert "f (from src.yaml)" in str(exc)
        return
    assert ok
    assert list(out) == [n for n in names if matched[n]]  # asset order
    assert all(out[n] == values[matched[n][0]] for n in out)
    if require_all and keys:
        assert list(out) == names


@given(names=JOINT_NAMES, data=st.data())
def test_a_partition_of_the_joints_expands_to_its_values(names, data):
    groups = data.draw(st.lists(st.integers(0, 3), min_size=len(names), max_size=len(names)))
    values, expected = {}, {}
    for g in sorted(set(groups)):
        members = [n for n, k in zip(names, groups, strict=True) if k == g]
        key = members[0] if len(members) == 1 else "(?:" + "|".join(map(re.escape, members)) + ")"
        values[key] = float(g)
        expected.update(dict.fromkeys(members, float(g)))
    out = expand_joint_values(values, names, field="f")
    assert out == expected and list(out) == names
    extra = data.draw(st.sampled_from(names))  # one more key for a covered joint: a conflict
    with pytest.raises(TaskError, match=f"joint {re.escape(repr(extra))} is matched by both"):
        expand_joint_values({**values, re.escape(extra) + "(?:)": 9.0}, names, field="f")


def test_expansion_errors_name_the_keys_and_joints():
    with pytest.raises(TaskError) as err:
        expand_joint_values({".*_HFE": 1.0, "LF_.*": 2.0, "XX_.*": 3.0, "LF_FOOT": 0.0}, MJW, field="stiffness")
    text = str(err.value)
    assert "'LF_HFE' is matched by both '.*_HFE' and 'LF_.*'" in text
    assert "'XX_.*': the pattern matches no joint" in text
    assert "'LF_FOOT': the name is no joint" in text
    assert "no value for joints ['LH_HAA'" in text
    with pytest.raises(TaskError, match="not a valid regular expression"):
        expand_joint_values({"(": 1.0}, MJW, field="damping")
    assert expand_joint_values({}, MJW, field="armature") == {}


def test_exact_names_win_over_patterns():
    names = ["j.1", "jx1"]
    assert expand_joint_values({"j.1": 1.0, "jx1": 2.0}, names, field="f") == {"j.1": 1.0, "jx1": 2.0}
    with pytest.raises(TaskError, match="matched by both"):
        expand_joint_values({"j.1": 1.0, "j.*": 2.0}, names, field="f")


# ------------------------------------------------------------------------------------------------ listed order


@given(perm=st.permutations(PHYSX))
def test_check_listed_order_refuses_exactly_the_other_orders(perm):
    perm = tuple(perm)
    if perm == PHYSX:
        check_listed_order(PHYSX, perm, "x.yaml")
        return
    first = next(i for i, (a, b) in enumerate(zip(PHYSX, perm, strict=True)) if a != b)
    with pytest.raises(ValueError) as err:
        check_listed_order(PHYSX, perm, "x.yaml (physx_joint_names)")
    assert f"[{first}] listed {PHYSX[first]!r}, resolved {perm[first]!r}" in str(err.value)
    assert "x.yaml (physx_joint_names)" in str(err.value)


def test_check_listed_order_names_missing_and_extra_joints():
    with pytest.raises(
        ValueError, match=r"listed but not on the asset: \['LF_HAA'\]; on the asset but not listed: \['LF_FOOT'\]"
    ):
        check_listed_order(MJW, ("LF_FOOT",) + MJW[1:], "src")


# ------------------------------------------------------------------------------------------------ resolution


@given(perm=st.permutations(MJW))
def test_with_joint_names_expands_in_asset_order_and_is_idempotent(perm):
    task = load_task(PRESET)
    resolved = task.with_joint_names(perm)
    assert resolved.joint_names == tuple(perm)
    assert list(resolved.default_joint_pos) == list(perm)
    for name in perm:
        hfe = 0.4 if name[0] in "LR" and name[1] == "F" else -0.4
        expected = {"HAA": 0.0, "HFE": hfe, "KFE": -2 * hfe}[name[3:]]
        assert resolved.default_joint_pos[name] == pytest.approx(expected)
        assert resolved.stiffness[name] == 300.0 and resolved.damping[name] == 10.0
        assert resolved.armature[name] == 0.06
    assert resolved.with_joint_names(perm) == resolved
    # once the order is listed, only that order resolves
    if tuple(perm) != MJW:
        with pytest.raises(ValueError, match="another order"):
            resolved.with_joint_names(MJW)


def test_with_joint_names_names_the_missing_joint_and_the_file(tmp_path):
    path = write(tmp_path, json.dumps(minimal(default_joint_pos={"LF_HAA": 0.1, "LF_FOOT": 0.0, ".*": 0.0})))
    task = load_task(path)
    with pytest.raises(TaskError) as err:
        task.with_joint_names(MJW)
    assert "'LF_FOOT'" in str(err.value) and str(path) in str(err.value) and "default_joint_pos" in str(err.value)
    uncovered = load_task(write(tmp_path, json.dumps(minimal(default_joint_pos={"LF_.*": 0.0})), "u.yaml"))
    with pytest.raises(TaskError, match=r"no value for joints \['LH_HAA'"):
        uncovered.with_joint_names(MJW)


# ------------------------------------------------------------------------------------------------ dict round trip

FLOATS = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
NONZERO = st.floats(0.0, 100.0, allow_nan=False).filter(bool)  # a scale of 0, negative or over 100, is refused
PHYSICAL = st.floats(-100.0, 100.0, allow_nan=False)  # a default pose or a command no robot has is refused
JOINTS = st.lists(st.sampled_from(MJW + ("a.b", "x[1]")), min_size=1, max_size=6, unique=True)


@st.composite
def terms(draw):
    names = draw(st.lists(st.sampled_from(list(OBS_TERMS)), min_size=1, max_size=7, unique=True))
    out = []
    for name in names:
        clip = draw(st.none() | st.tuples(FLOATS, FLOATS).map(sorted).map(tuple))
        size = draw(st.none() | st.integers(1, 30)) if OBS_TERMS[name].size is None else None
        known = OBS_TERMS[name].size or size
        scale = draw(FLOATS | st.lists(FLOATS, min_size=known, max_size=known)) if known else draw(FLOATS)
        params = {k: draw(st.floats(0.1, 5.0)) for k in OBS_TERMS[name].params}
        history = draw(st.integers(0, 6))
        out.append(ObsTerm(name, size=size, scale=scale, clip=clip, history_length=history, params=params))
    return tuple(out)


@st.composite
def actions(draw, keys):
    default = draw(st.booleans())
    bounds = st.tuples(FLOATS, FLOATS).filter(lambda b: b[0] != b[1]).map(sorted).map(tuple)  # [x, x] moves nothing
    return ActionTerm(
        scale=draw(NONZERO | st.dictionaries(keys, NONZERO, min_size=1, max_size=3)),
        use_default_offset=default,
        joints=draw(st.none() | JOINTS.map(tuple)),
        offset=0.0 if default else draw(FLOATS | st.dictionaries(keys, FLOATS, min_size=1, max_size=3)),
        clip=draw(st.none() | bounds | st.dictionaries(keys, bounds, min_size=1, max_size=3)),
        clip_actions=draw(st.none() | st.floats(0.1, 100.0)),
    )


@st.composite
def tasks(draw):
    keys = st.sampled_from(MJW + (".*", "(LF|RF)_.*"))
    values = st.dictionaries(keys, PHYSICAL, max_size=4)
    gains = st.dictionaries(keys, st.floats(0, 1e3), max_size=4)
    limits = st.dictionaries(keys, st.floats(1e-3, 1e6), max_size=4)
    groups = st.lists(
        st.builds(
            ActuatorGroup,
            name=st.sampled_from(["legs", "arms", "hands"]),
            model=st.sampled_from(["implicit", "ideal_pd", "delayed_pd", "dc_motor"]),
            joints=JOINTS.map(tuple),
            saturation_effort=st.floats(1.0, 500.0),
            velocity_limit=st.floats(0.5, 50.0),
            min_delay=st.integers(0, 2),
            max_delay=st.integers(2, 6),
        ),
        max_size=2,
        unique_by=lambda g: g.name,
    )
    return Task(
        name=draw(st.text(min_size=1, max_size=8)),
        observation=draw(terms()),
        action=draw(actions(keys)),
        joint_names=draw(st.none() | JOINTS.map(tuple)),
        convention=draw(st.sampled_from([None, "physx", "mjwarp", "robot_schema"])),
        default_joint_pos=draw(values),
        stiffness=draw(gains),
        damping=draw(gains),
        armature=draw(gains),
        friction=draw(gains),
        effort_limit=draw(st.none() | limits),
        sim_dt=draw(st.floats(1e-4, MAX_SIM_DT / 2)),
        decimation=draw(st.integers(1, 20)),
        engines={
            "physx": draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "solver_position_iterations": st.integers(1, 255),
                        "solver_velocity_iterations": st.integers(0, 255),
                    },
                )
            ),
            "newton": draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "solver": st.sampled_from(["mujoco_cpu", "mujoco_warp"]),
                        "solver_options": st.dictionaries(
                            st.sampled_from(["iterations", "ls_iterations"]), st.integers(1, 50)
                        )
                        | st.dictionaries(st.just("use_mujoco_contacts"), st.booleans()),
                    },
                )
            ),
        },
        spawn_height=draw(st.none() | st.floats(1e-3, 10.0)),
        command=draw(st.tuples(PHYSICAL, PHYSICAL, PHYSICAL)),
        asset=draw(st.none() | st.sampled_from(["newton:ant", "/robots/a.usda"])),
        trained_on=draw(st.none() | st.sampled_from(["physx", "newton"])),
        joint_names_by_convention=draw(
            st.dictionaries(st.sampled_from(["physx", "mjwarp"]), JOINTS.map(tuple), max_size=2)
        ),
        gravity=draw(st.none() | st.tuples(FLOATS, FLOATS, FLOATS)),
        ground=draw(
            st.none()
            | st.builds(
                GroundMaterial,
                static_friction=st.floats(0, 2),
                dynamic_friction=st.floats(0, 2),
                restitution=st.floats(0, 1),
                friction_combine=st.sampled_from(COMBINE_MODES),
                restitution_combine=st.sampled_from(COMBINE_MODES),
            )
        ),
        self_collisions=draw(st.none() | st.booleans()),
        actuators=tuple(draw(groups)),
    )


@given(task=tasks())
def test_to_dict_round_trips_exactly_through_json(task):
    data = task.to_dict()
    text = json.dumps(data, allow_nan=False)
    back = Task.from_dict(json.loads(text), source="metadata")
    assert back == task and hash(back) == hash(task)
    assert back.to_dict() == data
    assert json.dumps(back.to_dict(), allow_nan=False) == text
    assert back.source == "metadata"


@given(task=tasks(), data=st.data())
def test_changing_any_field_breaks_equality(task, data):
    d = task.to_dict()
    key = data.draw(st.sampled_from(["sim_dt", "decimation", "command", "name"]))
    d[key] = {
        "sim_dt": d["sim_dt"] * 2,
        "decimation": d["decimation"] + 1,
        "name": d["name"] + "x",
        "command": [d["command"][0] + (1.0 if d["command"][0] < 0 else -1.0), *d["command"][1:]],
    }[key]
    assume(d[key] != task.to_dict()[key])
    assert Task.from_dict(d) != task


def test_from_dict_errors_name_source_and_field():
    cases = [
        (minimal(observation_terms=[]), "unknown fields ['observation_terms']"),
        ({k: v for k, v in minimal().items() if k != "sim_dt"}, "missing fields ['sim_dt']"),
        (minimal(action={"scale": "half"}), "action.scale: expected a number, got 'half'"),
        (minimal(action={"kind": "joint_position"}), "action: missing 'scale'"),
        (
            minimal(observation=["base_lin_vel", {"name": "joint_pos_rel", "scael": 2}]),
            "observation[1]: unknown keys ['scael']",
        ),
        (
            minimal(observation=["base_lin_vel", "feet_contact"]),
            "observation[1]: unknown observation term 'feet_contact'",
        ),
        (minimal(decimation=2.5), "decimation: expected an integer"),
        (minimal(command=[1, 0]), "command: expected [vx, vy, wz]"),
        (minimal(stiffness=[300.0]), "stiffness: expected a mapping"),
        (minimal(format="transfer-task/9"), "format: 'transfer-task/9' is not a format"),
        (minimal(decimation=1000000), "decimation: 1000000 physics steps of 0.01 s make a policy step of 10000 s"),
        (minimal(spawn_height=1e6), "spawn_height: 1000000.0 m puts the base above 10 m"),
        (minimal(spawn_height=-0.1), "spawn_height: -0.1 m puts the base at or below the ground"),
        (minimal(action={"scale": 0}), "action.scale: 0.0 makes every action a no-op"),
        (minimal(action={"scale": {".*": 0.0}}), "action.scale: {'.*': 0.0} makes every action a no-op"),
        (minimal(sim_dt="5e-3"), "sim_dt: expected a number, got '5e-3' (str); a number written as text"),
    ]
    for data, message in cases:
        with pytest.raises(TaskError) as err:
            Task.from_dict(data, source="f.yaml")
        assert str(err.value).startswith("f.yaml: ")
        assert message in str(err.value), (message, str(err.value))


# ------------------------------------------------------------------------------------------------ readers


def test_preset_matches_the_newton_policy_yaml_by_name():
    preset = load_task(PRESET)
    newton = load_task(shared_policy_file("anybotics_anymal_c/rl_policies/anymal.yaml"))
    assert preset.observation == newton.observation
    assert preset.action == newton.action and preset.action.scale == 0.5
    assert (preset.sim_dt, preset.decimation) == (newton.sim_dt, newton.decimation) == (0.005, 4)
    assert preset.policy_dt == pytest.approx(0.02)
    for convention in ("physx", "mjwarp"):
        a = preset.with_convention(convention)
        b = newton.with_convention(convention)
        order = b.joint_names
        a, b = a.with_joint_names(order), b.with_joint_names(order)
        for field in ("default_joint_pos", "stiffness", "damping", "armature"):
            assert dict(getattr(a, field)) == pytest.approx(dict(getattr(b, field))), field
        assert a.observation_size(len(order)) == b.observation_size(len(order)) == 48
    assert dict(preset.engines["physx"]) == {"solver_position_iterations": 4, "solver_velocity_iterations": 0}
    assert preset.spawn_height is not None and 0.5 < preset.spawn_height < 1.0  # the base clear of the ground
    assert preset.command == (1.0, 0.0, 0.0) and preset.asset is None


def test_newton_policy_yaml_keeps_both_orders_and_refuses_the_other():
    task = load_task(shared_policy_file("anybotics_anymal_c/rl_policies/anymal.yaml"))
    assert task.joint_names is None and task.convention is None
    assert task.joint_names_by_convention == {"mjwarp": MJW, "physx": PHYSX}
    assert task.default_joint_pos["LH_HFE"] == -0.4 and task.default_joint_pos["RF_KFE"] == -0.8
    physx = task.with_convention("PhysX")
    assert physx.convention == "physx" and physx.joint_names == PHYSX
    physx.with_joint_names(PHYSX)
    with pytest.raises(ValueError) as err:
        physx.with_joint_names(MJW)
    text = str(err.value)
    assert "anymal.yaml (the physx joint order it lists)" in text
    assert "[1] listed 'LH_HAA', resolved 'LF_HFE'" in text
    go2 = load_task(shared_policy_file("unitree_go2/rl_policies/go2.yaml")).with_convention("mjwarp")
    resolved = go2.with_joint_names(go2.joint_names)
    assert resolved.default_joint_pos["FR_hip_joint"] == -0.1 and resolved.action.scale == 0.25
    assert resolved.observation_size(12) == 48


NEWTON_YAML = """\
num_dofs: 2
action_scale: 0.5
mjw_joint_names: [a, b]
physx_joint_names: [b, a]
mjw_joint_pos: [0.1, 0.2]
"""


def test_newton_policy_yaml_bad_input(tmp_path):
    good = load_task(write(tmp_path, NEWTON_YAML))
    assert dict(good.default_joint_pos) == {"a": 0.1, "b": 0.2} and good.stiffness == {}
    cases = [
        (NEWTON_YAML.replace("action_scale: 0.5\n", ""), "missing fields ['action_scale']"),
        (NEWTON_YAML + "mjw_joint_gains: [1, 2]\n", "unknown fields ['mjw_joint_gains']"),
        (NEWTON_YAML.replace("[0.1, 0.2]", "[0.1]"), "field `mjw_joint_pos`: 1 entries, but num_dofs is 2"),
        (NEWTON_YAML.replace("[0.1, 0.2]", "[0.1, high]"), "field `mjw_joint_pos`[1] (b): expected a number"),
        (NEWTON_YAML.replace("action_scale: 0.5", "action_scale: big"), "field `action_scale`: expected a number"),
        (NEWTON_YAML.replace("[b, a]", "[b, c]"), "only in physx_joint_names: ['c']"),
        (NEWTON_YAML.replace("num_dofs: 2", "num_dofs: two"), "field `num_dofs`: expected a positive integer"),
    ]
    for i, (text, message) in enumerate(cases):
        path = write(tmp_path, text, f"bad{i}.yaml")
        with pytest.raises(TaskError) as err:
            load_task(path)
        assert str(path) in str(err.value) and message in str(err.value), (message, str(err.value))


def test_load_task_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        load_task(tmp_path / "nope.yaml")
    broken = write(tmp_path, "format: transfer-task/1\nobservation: [base_lin_vel\n", "broken.yaml")
    with pytest.raises(TaskError, match=r"broken.yaml: not valid YAML, line 3, column 1: expected ',' or ']'"):
        load_task(broken)
    other = write(tmp_path, "robot: anymal\n", "other.yaml")
    with pytest.raises(TaskError, match=r"not a task file this version reads.*found keys \['robot'\]"):
        load_task(other)
    listed = write(tmp_path, "- a\n- b\n", "list.yaml")
    with pytest.raises(TaskError, match="expected a mapping"):
        load_task(listed)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(TaskError, match="bin.yaml"):
        load_task(binary)


def test_task_yaml_asset_paths_and_default_name(tmp_path):
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "r.usda").write_text("#usda 1.0\n")
    data = minimal(asset="robots/r.usda")
    del data["name"]
    path = write(tmp_path, json.dumps(data), "mytask.yaml")
    task = load_task(path)
    assert task.name == "mytask" and task.asset == str((tmp_path / "robots/r.usda").resolve())
    assert resolve_asset(task.asset) == Path(task.asset)
    missing = write(tmp_path, json.dumps(minimal(asset="robots/gone.usda")), "m.yaml")
    with pytest.raises(TaskError, match=r"m.yaml: field `asset`: 'robots/gone.usda' resolves to"):
        load_task(missing)
    token = load_task(write(tmp_path, json.dumps(minimal(asset="newton:ant")), "n.yaml"))
    assert token.asset == "newton:ant"


def test_newton_asset_token_resolves_without_importing_newton():
    import importlib.util

    if importlib.util.find_spec("newton") is None:
        pytest.skip("newton is not installed")
    code = (
        "import sys; from transfer.task import resolve_asset; p = resolve_asset('newton:ant'); "
        "print(p.name, p.is_file(), 'newton' in sys.modules, 'warp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["ant.usda", "True", "False", "False"]
    with pytest.raises(FileNotFoundError, match=r"available: \["):
        resolve_asset("newton:no_such_robot")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            {"physx.solver_position_iterations": 0},
            r"solver_position_iterations: expected an integer in \[1, 255\], got 0",
        ),
        ({"physx.solver_velocity_iterations": 100_000_000}, "at most 255 iterations"),
        ({"trained_on": "bullet"}, "trained_on: 'bullet' is not a backend"),
        ({"asset": "other.usda"}, "give --asset instead"),
        ({"convention": "physx"}, "give --source instead"),
        ({"velocity_limit": {".*": 0.0}}, r"velocity_limit: values \{'\.\*': 0\.0\} are not positive"),
        ({"sim_dt": 1e-7}, r"sim_dt: 1e-07 s is not a physics time step this replays \(expected 0\.0001 <= sim_dt"),
    ],
)
def test_settings_the_engines_would_not_take_are_refused(change, match):
    """Issue 31: PhysX iteration counts of 0 or 1e8 passed unchecked, ``trained_on`` named no backend, ``--set asset``
    was ignored."""
    task = load_task("presets/tasks/quadruped_flat_velocity.yaml")
    with pytest.raises(TaskError, match=match):
        task.with_settings(change, where="--set")


def test_a_velocity_limit_round_trips_and_expands_per_joint():
    """``velocity_limit`` (rad/s, every joint or none) is a task field like ``effort_limit``: in the dict form, by
    pattern, expanded for the asset's joints."""
    task = load_task("presets/tasks/quadruped_flat_velocity.yaml").with_settings(
        {"velocity_limit": {".*_KFE": 9.0, ".*_H..": 7.5}}
    )
    assert Task.from_dict(task.to_dict()) == task
    names = ("LF_HAA", "LF_HFE", "LF_KFE")
    assert task.with_joint_names(names).velocity_limit == {"LF_HAA": 7.5, "LF_HFE": 7.5, "LF_KFE": 9.0}
    assert task.with_settings({"velocity_limit": None}).velocity_limit is None
    with pytest.raises(TaskError, match="NO_SUCH_JOINT"):
        task.with_settings({"velocity_limit": {"NO_SUCH_JOINT": 1.0}}).with_joint_names(names)
