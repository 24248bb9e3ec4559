"""Observation histories, per-entry scales, the gait clock and the action's offset and clips (issue 28).

- :class:`~transfer.task.observation.ObservationBuffer` against a second implementation of Isaac Lab's semantics
  (``CircularBuffer``: oldest first, term by term, the first push after a reset fills the history), on random
  sequences of pushes and per-env resets (hypothesis);
- on both real engines: a stacked term holds the term's last values, oldest first, and after a reset of one env
  that env's history holds its new first value only; ``gait_phase`` is sin/cos of the episode clock; the action's
  raw clip, offset and target clip reach the joint targets.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transfer.task import ActionTerm, ObsTerm, TaskError, load_task
from transfer.task.observation import ObservationBuffer
from transfer.task.terms import gait_phase

# ---------------------------------------------------------------------------------------------------- the buffer


class IsaacLabHistory:
    """Isaac Lab's ObservationManager, written again from its documented semantics for one group: each term clipped,
    scaled, appended to a deque of ``history_length`` per env (a reset env's next value fills it), flattened oldest
    first, terms concatenated in order."""

    def __init__(self, terms, num_envs):
        self.terms = terms
        self.hist = {t.name: [deque(maxlen=t.steps) for _ in range(num_envs)] for t in terms}
        self.fresh = [True] * num_envs

    def reset(self, ids):
        for i in ids:
            self.fresh[i] = True

    @staticmethod
    def _process(t, v):
        v = np.asarray(v, np.float32)
        if t.clip is not None:
            v = np.clip(v, *t.clip)
        return v * np.asarray(t.scale, np.float32)

    def push(self, values):
        rows = []
        for env in range(len(self.fresh)):
            row = []
            for t in self.terms:
                v = self._process(t, values[t.name][env])
                d = self.hist[t.name][env]
                if self.fresh[env]:
                    d.extend([v] * t.steps)
                else:
                    d.append(v)
                row.extend(np.concatenate(list(d)))
            rows.append(row)
        self.fresh = [False] * len(self.fresh)
        self.rows = np.array(rows, np.float32)
        return self.rows

    def push_some(self, values, ids):
        """Only ``ids`` (just reset) take ``values``; the other envs' rows stay."""
        kept = self.rows.copy()
        for env in ids:
            row = []
            for t in self.terms:
                v = self._process(t, values[t.name][env])
                self.hist[t.name][env].extend([v] * t.steps)
                row.extend(np.concatenate(list(self.hist[t.name][env])))
            kept[env] = row
            self.fresh[env] = False
        self.rows = kept
        return kept


@st.composite
def histories(draw):
    names = draw(
        st.lists(
            st.sampled_from(["base_ang_vel", "projected_gravity", "joint_pos_rel"]), min_size=1, max_size=3, unique=True
        )
    )
    sizes = {"base_ang_vel": 3, "projected_gravity": 3, "joint_pos_rel": draw(st.integers(1, 4))}
    terms = []
    for name in names:
        scale = draw(
            st.floats(-3, 3, allow_nan=False) | st.lists(st.floats(-3, 3), min_size=sizes[name], max_size=sizes[name])
        )
        clip = draw(st.none() | st.just((-0.5, 0.5)))
        terms.append(ObsTerm(name, scale=scale, clip=clip, history_length=draw(st.integers(0, 5))))
    num_envs = draw(st.integers(1, 3))
    events = draw(st.lists(st.none() | st.lists(st.integers(0, num_envs - 1), max_size=num_envs), max_size=12))
    return terms, {n: sizes[n] for n in names}, num_envs, events, draw(st.integers(0, 2**16))


@settings(max_examples=60, deadline=None)
@given(histories())
def test_the_buffer_is_isaac_labs_history(case):
    terms, sizes, num_envs, events, seed = case
    rng = np.random.default_rng(seed)
    ours, ref = ObservationBuffer(terms, sizes, num_envs), IsaacLabHistory(terms, num_envs)
    assert ours.size == sum(sizes[t.name] * t.steps for t in terms)
    for event in [None, *events]:
        values = {n: rng.normal(size=(num_envs, s)).astype(np.float32) for n, s in sizes.items()}
        np.testing.assert_allclose(ours.push(values), ref.push(values), rtol=1e-6, atol=1e-6)
        if event:  # a reset of these envs within the step: their observation computed once more, the others kept
            ours.reset(event)
            ref.reset(event)
            after = {n: rng.normal(size=(num_envs, s)).astype(np.float32) for n, s in sizes.items()}
            expected = ref.push_some(after, sorted(set(event)))
            np.testing.assert_allclose(ours.push(after, env_ids=sorted(set(event))), expected, rtol=1e-6, atol=1e-6)


def test_a_stacked_layout_is_term_major_oldest_first():
    terms = (ObsTerm("base_ang_vel", history_length=3), ObsTerm("projected_gravity", history_length=2))
    buf = ObservationBuffer(terms, {"base_ang_vel": 3, "projected_gravity": 3}, 1)
    for k in range(1, 5):
        obs = buf.push({"base_ang_vel": np.full((1, 3), k), "projected_gravity": np.full((1, 3), 10 * k)})
    assert obs[0].tolist() == [2] * 3 + [3] * 3 + [4] * 3 + [30] * 3 + [40] * 3  # not time-major [2,20,3,30,...]


def test_term_and_action_fields_are_checked():
    with pytest.raises(TaskError, match="2 scales for a term of 3 entries"):
        ObsTerm("base_ang_vel", scale=(1.0, 2.0))
    with pytest.raises(TaskError, match="params.period is required"):
        ObsTerm("gait_phase")
    with pytest.raises(TaskError, match="period.*> 0"):
        ObsTerm("gait_phase", params={"period": 0.0})
    with pytest.raises(TaskError, match="unknown.*takes no parameters"):
        ObsTerm("base_ang_vel", params={"period": 1.0})
    with pytest.raises(TaskError, match="history_length 5000"):
        ObsTerm("base_ang_vel", history_length=5000)
    with pytest.raises(TaskError, match="use_default_offset: false"):
        ActionTerm(scale=0.5, offset=0.1)
    with pytest.raises(TaskError, match="clip_actions"):
        ActionTerm(scale=0.5, clip_actions=-1.0)
    with pytest.raises(TaskError, match=r"action.clip\['a'\]: low 1.0 is above high -1.0"):
        ActionTerm(scale=0.5, clip={"a": (1.0, -1.0)})
    assert ObsTerm("velocity_commands", scale=[2.0, 2.0, 2.0]).scale == 2.0  # equal entries: one number
    assert ObsTerm("gait_phase", params={"period": 0.8}).params == {"period": 0.8, "offset": 0.0}


def test_gait_phase_is_legged_gyms_clock():
    t = np.array([0.0, 0.2, 0.8, 1.0])
    phase = (t % 0.8) / 0.8  # deploy_mujoco.py: count % period / period
    np.testing.assert_allclose(
        gait_phase(t, 0.8), np.stack([np.sin(2 * np.pi * phase), np.cos(2 * np.pi * phase)], 1), atol=1e-6
    )


# ---------------------------------------------------------------------------------------------------- on the engines


QUADRUPED = load_task("presets/tasks/quadruped_flat_velocity.yaml")


@pytest.mark.engines
@pytest.mark.parametrize("engine", ["physx", "newton"])
def test_histories_clock_and_action_clips_on_the_engines(engine):
    pytest.importorskip("ovphysx" if engine == "physx" else "newton")
    from transfer.env import PolicyEnv
    from transfer.task import resolve_asset

    obs = (
        ObsTerm("projected_gravity", history_length=3),
        ObsTerm("joint_pos", history_length=2, scale=2.0),
        ObsTerm("gait_phase", params={"period": 0.5}),
        ObsTerm("last_action"),
    )
    task = dataclasses.replace(
        QUADRUPED,
        observation=obs,
        action=ActionTerm(scale=0.5, use_default_offset=False, offset=0.1, clip=(-0.2, 0.3), clip_actions=1.0),
    )
    with PolicyEnv(task, resolve_asset(task.asset), engine, "physx", num_envs=2, init_noise=0.0) as env:
        n, s = env.art.num_joints, env.slices
        first = env.observe().copy()
        assert env.observation_size == 3 * 3 + 2 * n + 2 + n
        np.testing.assert_allclose(
            first[:, s["projected_gravity"]].reshape(2, 3, 3),
            np.repeat(first[:, None, s["projected_gravity"].start : s["projected_gravity"].start + 3], 3, axis=1),
        )
        np.testing.assert_allclose(first[:, s["gait_phase"]], [[0.0, 1.0]] * 2, atol=1e-6)
        assert env.observe() is env.observe() and np.array_equal(env.observe(), first)  # no second push
        sent = []
        real = env.art.set_joint_position_target
        env.art.set_joint_position_target = lambda t, **kw: (sent.append(np.array(t)), real(t, **kw))  # a spy
        joint_frames = []
        actions = np.full((2, env.action_size), 5.0, np.float32)  # clipped to 1, target 0.1 + 0.5 -> 0.3 (clip)
        actions[1] = -5.0  # clipped to -1, target 0.1 - 0.5 -> -0.2 (clip)
        for _ in range(3):
            o, _ = env.step(actions)
            joint_frames.append(2.0 * env.art.data.joint_pos.numpy())
        np.testing.assert_allclose(o[:, s["joint_pos"]], np.concatenate(joint_frames[-2:], axis=1), atol=1e-5)
        np.testing.assert_allclose(o[:, s["last_action"]], np.sign(actions))
        targets = sent[-1]
        np.testing.assert_allclose(targets[0], 0.3, atol=1e-6)
        np.testing.assert_allclose(targets[1], -0.2, atol=1e-6)
        t = 3 * task.policy_dt
        np.testing.assert_allclose(
            o[:, s["gait_phase"]], [[np.sin(2 * np.pi * t / 0.5), np.cos(2 * np.pi * t / 0.5)]] * 2, atol=1e-5
        )
        reset = env.reset([1])  # env 1's histories start anew; env 0 keeps its own
        g = s["projected_gravity"]
        assert np.allclose(reset[1, g].reshape(3, 3), reset[1, g.stop - 3 : g.stop])
        assert not np.allclose(reset[0, s["joint_pos"]][:n], reset[0, s["joint_pos"]][n:])
        np.testing.assert_allclose(reset[1, s["gait_phase"]], [0.0, 1.0], atol=1e-6)


@pytest.mark.engines
def test_verify_checks_stacked_histories_and_the_clock_on_both_engines(tmp_path):
    """``transfer verify`` on a task that stacks histories (and reads the gait clock, absolute joint positions and a
    per-entry scale): every term's stacked block matches its own reference on PhysX and on Newton; fed the wrong
    order on one engine, a stacked joint term fails."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    torch = pytest.importorskip("torch")
    import yaml

    from transfer.runs.verify import verify

    task = load_task("presets/tasks/quadruped_flat_velocity.yaml")
    data = task.to_dict()
    data["observation"] = [
        {"name": "base_ang_vel", "history_length": 3, "scale": [0.25, 0.5, 1.0]},
        {"name": "projected_gravity", "history_length": 3},
        {"name": "velocity_commands", "scale": [2.0, 2.0, 0.25]},
        {"name": "joint_pos_rel", "history_length": 2},
        {"name": "joint_pos", "history_length": 2},
        {"name": "last_action", "history_length": 2},
        {"name": "gait_phase", "params": {"period": 0.8}},
    ]
    config = tmp_path / "task.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    n = 12
    size = 3 * 3 + 3 * 3 + 3 + 2 * n * 3 + 2
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(size, 32), torch.nn.ELU(), torch.nn.Linear(32, n))
    policy = tmp_path / "policy.pt"
    torch.jit.script(mlp).save(str(policy))
    report = verify(policy, source="physx", config=config, samples=3)
    assert report.ok, report.verdict
    assert {t.term for t in report.terms} >= {"base_ang_vel", "joint_pos", "gait_phase", "action"}
    assert all(all(v is not None for v in t.expected.values()) for t in report.terms)  # each its own reference
    wrong = verify(policy, source="physx", config=config, samples=3, backend_orders={"newton": "mjwarp"})
    assert not wrong.ok and not next(t for t in wrong.terms if t.term == "joint_pos").ok


def test_every_term_has_verifys_own_reference():
    """A term verify cannot derive again from the named state would go unchecked: the two tables name the same
    (the motion terms' references re-derive them from the clip given with ``--motion``)."""
    from transfer.runs.verify.checks import REFERENCES
    from transfer.task.terms import OBS_TERMS

    assert set(REFERENCES) == set(OBS_TERMS)
    assert {name for name, term in OBS_TERMS.items() if term.motion} == {
        "motion_command",
        "motion_anchor_ori_b",
        "motion_anchor_pos_b",
    }


@pytest.mark.engines
def test_a_go2_authored_with_every_joint_at_zero_walks_on_physx(shared, tmp_path):
    """Issue 28's acceptance: the shared Go2 with its joint state removed (every joint authored at 0, its calves
    outside [-2.72, -0.84] rad) used to blow up on PhysX at the first step ("fell" at 0.0 s in every env). Created
    in the task's default pose, at the height that pose needs, ``mjw_go2.pt`` walks on it (measured 1.11 m/s, 0 %
    fell; Newton's native run 1.17 m/s)."""
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import replay

    policies = shared / "policies/unitree_go2/rl_policies"
    text = (shared / "assets/unitree_go2/usd/go2_collide.usda").read_text()
    zero = tmp_path / "go2_zero.usda"
    zero.write_text("\n".join(line for line in text.splitlines() if "state:angular:physics:position" not in line))
    result = replay(
        policies / "mjw_go2.pt",
        "physx",
        source="mjwarp",
        config=policies / "go2.yaml",
        asset=zero,
        num_envs=2,
        seconds=3.0,
        progress=False,
    )
    assert result.fall_fraction == 0.0 and result.nonfinite_envs == 0 and result.forward_velocity > 0.8, result
