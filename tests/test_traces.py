"""Recorded traces and the control and gait metrics (issue 32), on the shipped demo checkpoint and on synthetic
recordings.

- ``replay(record=...)`` writes one Parquet row per policy step and env, by joint and body name, with the task and
  settings in the metadata; its values are the run's; PhysX and Newton write the same columns;
- a destination that is a folder, in a missing folder, or one of the run's own inputs is refused before the run
  (the input stays as it was);
- ``transfer traces A B`` finds the quantity and the time two traces part at, and plots them;
- the metrics measure what they say on recordings whose answer is known (property-based).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from transfer.traces import Recording, TraceError, metrics, read_trace  # noqa: E402
from transfer.traces.compare import compare_traces  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "checkpoints" / "quadruped_flat_physx" / "exported" / "policy.pt"
DT = 0.02


def recording(steps: int, envs: int = 1, *, joints=("a", "b"), feet=("f",), **arrays) -> Recording:
    """A synthetic recording: zeros everywhere but the arrays given, every env standing."""
    j, f = len(joints), len(feet)
    full = {
        "action": np.zeros((steps, envs, j), np.float32),
        "target": np.zeros((steps, envs, j), np.float32),
        "position": np.zeros((steps, envs, j), np.float32),
        "velocity": np.zeros((steps, envs, j), np.float32),
        "effort": np.zeros((steps, envs, j), np.float32),
        "saturated": np.zeros((steps, envs, j), bool),
        "base": np.zeros((steps, envs, 13), np.float32),
        "contact": np.zeros((steps, envs, f), bool),
        "foot_height": np.zeros((steps, envs, f), np.float32),
        "foot_speed": np.zeros((steps, envs, f), np.float32),
        "alive": np.ones((steps, envs), bool),
    }
    full.update(arrays)
    return Recording(
        "synthetic", DT, list(joints), list(joints), list(feet), [], np.arange(1, steps + 1) * DT, full, {}
    )


# -- metrics ----------------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(period=st.integers(4, 40), stance=st.floats(0.2, 0.8), phase=st.integers(0, 39))
def test_duty_factor_and_stride_period_of_a_square_wave(period, stance, phase):
    steps = 400
    k = np.arange(steps) + phase
    on = max(1, min(period - 1, round(stance * period)))
    contact = ((k % period) < on)[:, None, None]
    m = metrics(recording(steps, contact=contact), warmup=0.0)
    foot = m["feet"]["f"]
    assert foot["stride_period"] == pytest.approx(period * DT)
    assert foot["duty_factor"] == pytest.approx(contact.mean(), abs=0.02)


@settings(max_examples=25, deadline=None)
@given(offset=st.floats(-1.0, 1.0), gain=st.floats(1.0, 50.0), limit=st.floats(0.5, 100.0))
def test_tracking_error_effort_and_saturation(offset, gain, limit):
    steps = 100
    target = np.full((steps, 1, 2), offset, np.float32)
    raw = gain * target
    effort = np.clip(raw, -limit, limit)
    m = metrics(recording(steps, target=target, effort=effort, saturated=np.abs(raw) >= limit), warmup=0.0)
    joint = m["joints"]["a"]
    assert joint["tracking_error"] == pytest.approx(abs(offset), rel=1e-5, abs=1e-6)
    assert joint["effort_rms"] == pytest.approx(min(abs(gain * offset), limit), rel=1e-4, abs=1e-5)
    assert joint["saturation"] == (1.0 if abs(gain * offset) >= limit else 0.0)
    assert m["summary"]["effort_peak"] == pytest.approx(min(abs(gain * offset), limit), rel=1e-4, abs=1e-5)


def test_an_action_that_zigzags_every_step_is_all_reversals_and_high_frequency():
    steps = 200
    t = np.arange(steps)
    zigzag = np.where(t % 2 == 0, 1.0, -1.0)
    smooth = np.sin(2 * np.pi * 1.0 * t * DT)  # a 1 Hz gait at 50 Hz
    action = np.stack([zigzag, smooth], axis=-1)[:, None, :].astype(np.float32)
    joints = metrics(recording(steps, action=action), warmup=0.0)["joints"]
    assert joints["a"]["sign_changes"] == pytest.approx(1.0)
    assert joints["a"]["high_frequency"] > 0.99
    assert joints["b"]["sign_changes"] < 0.05
    assert joints["b"]["high_frequency"] < 0.01


def test_slip_counts_the_foot_speed_over_steps_that_begin_and_end_in_contact():
    steps = 100
    contact = np.zeros((steps, 1, 1), bool)
    contact[10:60] = True
    speed = np.full((steps, 1, 1), 0.05, np.float32)
    speed[10] = 3.0  # the touchdown step: its travel was made in the air
    speed[60:] = 2.0  # swing
    m = metrics(recording(steps, contact=contact, foot_speed=speed), warmup=0.0)
    assert m["feet"]["f"]["slip"] == pytest.approx(0.05)


def test_collider_points_give_the_exact_lowest_point_of_spheres_and_capsules(tmp_path):
    pytest.importorskip("pxr")
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    from transfer._rotations import rotation_matrices
    from transfer.robot.usd import collider_points

    path = tmp_path / "feet.usda"
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    body = UsdGeom.Xform.Define(stage, "/robot/foot")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    sphere = UsdGeom.Sphere.Define(stage, "/robot/foot/ball")
    sphere.CreateRadiusAttr(0.03)
    sphere.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, -0.2))
    capsule = UsdGeom.Capsule.Define(stage, "/robot/foot/shin")
    capsule.CreateRadiusAttr(0.02)
    capsule.CreateHeightAttr(0.1)
    capsule.CreateAxisAttr("Z")
    capsule.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, -0.1))
    for prim in (sphere.GetPrim(), capsule.GetPrim()):
        UsdPhysics.CollisionAPI.Apply(prim)
    stage.Save()
    points = np.asarray(collider_points(path)["/robot/foot"])
    assert points[:, 3].tolist() == pytest.approx([0.03, 0.02, 0.02])
    rng = np.random.default_rng(0)
    for q in rng.normal(size=(50, 4)):
        q /= np.linalg.norm(q)
        r = rotation_matrices(q)
        lowest = (r[2] @ points[:, :3].T - points[:, 3]).min()
        ends = [r @ np.array([0, 0, -0.1 + s * 0.05]) for s in (-1, 1)]
        exact = min((r @ np.array([0, 0, -0.2]))[2] - 0.03, min(e[2] for e in ends) - 0.02)
        assert lowest == pytest.approx(exact, abs=1e-9)


def test_fallen_envs_and_the_warm_up_do_not_count():
    steps = 100
    target = np.zeros((steps, 2, 2), np.float32)
    target[:, 1] = 5.0  # env 1 tracks terribly, but it fell at the first step
    alive = np.ones((steps, 2), bool)
    alive[:, 1] = False
    target[:10, 0] = 3.0  # env 0's first 0.2 s are in the warm-up
    m = metrics(recording(steps, 2, target=target, alive=alive), warmup=0.2)
    assert m["joints"]["a"]["tracking_error"] == pytest.approx(0.0)
    nothing = metrics(recording(steps, 2, alive=np.zeros((steps, 2), bool)))
    assert nothing["summary"]["tracking_error"] is None


# -- recording a replay -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def physx_trace(tmp_path_factory):
    pytest.importorskip("ovphysx")
    pytest.importorskip("torch")
    from transfer.runs.replay import replay

    path = tmp_path_factory.mktemp("traces") / "physx.parquet"
    result = replay(DEMO, "physx", num_envs=2, seconds=2.0, progress=False, record=path)
    return result, path


@pytest.mark.engines
def test_a_recorded_replay_is_one_row_per_step_and_env_by_name(physx_trace):
    import pandas as pd

    result, path = physx_trace
    df = pd.read_parquet(path)
    rec = result.recording
    steps = len(rec.time)
    assert len(df) == steps * 2 and result.record == str(path)
    for joint in rec.joint_names:
        for kind in ("target", "position", "velocity", "effort", "saturated"):
            assert f"{kind}.{joint}" in df.columns
    assert [c for c in df.columns if c.startswith("action.")] == [f"action.{n}" for n in rec.action_names]
    assert sorted(rec.foot_names) == ["LF_SHANK", "LH_SHANK", "RF_SHANK", "RH_SHANK"]
    # the sphere feet stand on the ground, read exactly: not centimetres into it (as box corners would say)
    standing = rec.arrays["foot_height"][rec.time > 1.0]
    assert standing.min() > -0.005 and np.percentile(standing, 10) < 0.002
    assert {f"contact.{f}" for f in rec.foot_names} <= set(df.columns)
    assert sum(c.startswith("obs.") for c in df.columns) == len(rec.observation_names) == 48
    # the values are the run's: env 1's knee at the last step, and the base height the replay's trace saw
    last = df[(df.step == steps - 1) & (df.env == 1)]
    knee = rec.joint_names[2]
    assert float(last[f"position.{knee}"].iloc[0]) == pytest.approx(float(rec.arrays["position"][-1, 1, 2]))
    heights = df.groupby("step")["base.pos.z"].mean().to_numpy()
    assert heights == pytest.approx(np.asarray(result.trace["height"]), abs=1e-5)
    table, meta = read_trace(path)
    assert meta["schema"] == "transfer.trace/1" and meta["engine"] == "physx"
    assert meta["task"]["name"] and meta["settings"]["sim_dt"] == result.settings["sim_dt"]
    assert meta["joint_names"] == rec.joint_names


@pytest.mark.engines
def test_the_recorded_observation_is_the_one_the_policy_acted_on(physx_trace):
    from transfer.runs.inputs import resolve_inputs

    result, _ = physx_trace
    inputs = resolve_inputs(DEMO)
    policy, clip = inputs.policy, inputs.task.action.clip_actions
    rec = result.recording
    for k in (0, 1, len(rec.time) - 1):
        acted = np.asarray(policy(rec.arrays["observation"][k]), np.float32)
        if clip is not None:
            acted = np.clip(acted, -clip, clip)
        assert acted == pytest.approx(rec.arrays["action"][k], abs=1e-5), k


@pytest.mark.engines
def test_every_replay_reports_the_metrics(physx_trace):
    result, _ = physx_trace
    m = result.metrics
    assert set(m["joints"]) == set(result.recording.joint_names)
    assert 0 < m["summary"]["tracking_error"] < 1.0 and m["summary"]["effort_rms"] > 0
    assert json.loads(json.dumps(result.to_dict()))["metrics"]["summary"] == m["summary"]


@pytest.mark.engines
def test_physx_and_newton_traces_have_the_same_columns(physx_trace, tmp_path):
    pytest.importorskip("newton")
    import pandas as pd

    from transfer.runs.replay import replay

    _, physx_path = physx_trace
    newton_path = tmp_path / "newton.parquet"
    replay(DEMO, "newton", num_envs=2, seconds=2.0, progress=False, record=newton_path)
    a, b = pd.read_parquet(physx_path), pd.read_parquet(newton_path)
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    found = compare_traces(physx_path, newton_path)
    assert found.rows == len(a) and not found.only_in_a and not found.only_in_b
    # the same checkpoint walking on two engines: joint positions stay within a few tenths of a radian
    assert max(d.rms for d in found.divergences if d.column.startswith("position.")) < 0.3


@pytest.mark.engines
@pytest.mark.parametrize("where", ["folder", "missing", "checkpoint", "user_parquet", "no_suffix"])
def test_a_bad_destination_is_refused_before_the_run(tmp_path, where):
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import replay

    copy = tmp_path / "policy.pt"
    copy.write_bytes(DEMO.read_bytes())
    mine = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), mine)
    before = mine.read_bytes()
    dest = {
        "folder": tmp_path,
        "missing": tmp_path / "nowhere" / "t.parquet",
        "checkpoint": copy,
        "user_parquet": mine,
        "no_suffix": tmp_path / "trace",
    }[where]
    message = {
        "folder": "is a folder",
        "missing": "does not exist",
        "checkpoint": "never overwritten",
        "user_parquet": "is not a transfer trace; it is never overwritten",
        "no_suffix": "ending in .parquet",
    }
    with pytest.raises(TraceError, match=message[where]):
        replay(copy, "physx", seconds=0.1, progress=False, record=dest)
    assert copy.read_bytes() == DEMO.read_bytes() and mine.read_bytes() == before
    assert not (tmp_path / "trace").exists()


@pytest.mark.engines
def test_an_earlier_trace_is_replaced_and_compare_checks_every_file_first(physx_trace, tmp_path):
    from transfer.runs.replay import compare, replay

    _, path = physx_trace
    again = tmp_path / "again.parquet"
    again.write_bytes(path.read_bytes())
    replay(DEMO, "physx", seconds=0.2, progress=False, record=again)
    assert len(read_trace(again)[0]) == 10  # 10 policy steps of 1 env, not the 2-env trace it replaced
    taken = tmp_path / "demo.naive-newton.parquet"
    taken.write_text("the user's notes")
    with pytest.raises(TraceError, match="demo.naive-newton.parquet: exists and is not a transfer trace"):
        compare(DEMO, "newton", seconds=0.2, progress=False, record=tmp_path / "demo.parquet")
    assert not list(tmp_path.glob("demo.native*")) and taken.read_text() == "the user's notes"


# -- two traces ---------------------------------------------------------------------------------------------------


def _shifted(path: Path, out: Path, column: str, after: float, by: float) -> None:
    table = pq.read_table(path)
    values = table.column(column).to_numpy().copy()
    values[table.column("time").to_numpy() > after] += by
    table = table.set_column(table.column_names.index(column), column, pa.array(values))
    pq.write_table(table, out)


@pytest.mark.engines
def test_traces_finds_the_joint_and_time_two_traces_part(physx_trace, tmp_path, capsys):
    from transfer.cli import main

    _, path = physx_trace
    same = compare_traces(path, path)
    assert same.first is None and all(d.rms == 0 for d in same.divergences)
    knee = read_trace(path)[1]["joint_names"][5]
    other = tmp_path / "other.parquet"
    _shifted(path, other, f"position.{knee}", 1.0, 0.3)
    found = compare_traces(path, other)
    assert found.first.column == f"position.{knee}"
    assert found.first.first_time == pytest.approx(1.0 + DT, abs=1e-6)
    assert main(["traces", str(path), str(other), "--json", "--plot", str(tmp_path / "t.png")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["first"] == f"position.{knee}" and (tmp_path / "t.png").stat().st_size > 10_000
    assert main(["traces", str(path), str(other)]) == 0
    assert f"first parted: position.{knee} at 1.02 s" in capsys.readouterr().out


def test_a_trace_is_written_and_read_in_a_folder_whose_name_is_no_utf8(tmp_path):
    """A folder name of bytes that are no UTF-8 (Linux allows them; ``--record t.parquet`` run from inside it): the
    trace is written after the run and read back, not lost to pyarrow's path handling."""
    from transfer.traces.parquet import write_trace

    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    folder.mkdir()
    rec = recording(5, 2, position=np.arange(20, dtype=np.float32).reshape(5, 2, 2))
    path = write_trace(rec, folder / "t.parquet")
    table, meta = read_trace(path)
    assert table.num_rows == 10 and meta["joint_names"] == ["a", "b"]
    assert write_trace(rec, path) == path  # an earlier trace there is recognised and replaced


def test_traces_refuses_files_that_are_no_trace(tmp_path, capsys):
    from transfer.cli import main

    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), plain)
    text = tmp_path / "text.parquet"
    text.write_text("not parquet")
    with pytest.raises(TraceError, match="without transfer's trace metadata"):
        read_trace(plain)
    with pytest.raises(TraceError, match="not a Parquet file"):
        read_trace(text)
    assert main(["traces", str(plain), str(tmp_path / "missing.parquet")]) == 2
    assert "missing.parquet: file not found" in capsys.readouterr().err  # checked before either is read
    assert main(["traces", str(plain), str(plain)]) == 2
    assert "plain.parquet" in capsys.readouterr().err


def test_a_fifo_is_refused_as_a_trace_and_as_a_record_destination_without_blocking(tmp_path, capsys):
    """``--record f.parquet`` onto a FIFO blocked for ever (the destination's schema was read to see whether it was
    an earlier trace); ``traces`` called a FIFO or /dev/zero "no such file"."""
    from transfer.cli import main
    from transfer.traces.parquet import check_destination

    fifo = tmp_path / "f.parquet"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        check_destination(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        read_trace(fifo)
    assert main(["traces", str(fifo), "/dev/zero"]) == 2
    assert f"{fifo}: not a regular file (a FIFO, a device or a socket)" in capsys.readouterr().err
    demo = ROOT / "checkpoints" / "quadruped_flat_physx" / "exported" / "policy.pt"
    assert main(["replay", str(demo), "--target", "physx", "--record", str(fifo)]) == 2
    assert f"--record {fifo}: not a regular file" in capsys.readouterr().err


@pytest.mark.engines
def test_a_trace_whose_names_hold_escape_sequences_is_refused_and_a_long_label_is_cut(physx_trace, tmp_path, capsys):
    """Joint names of a forged trace reached the terminal raw (``LF\x1b[31m...``: colours, a retitled window); a
    100 kB label was printed whole. Names come from the robot, which holds none: such a file is no trace of ours."""
    from transfer.cli import main

    _, path = physx_trace
    table, meta = read_trace(path)
    forged = tmp_path / "forged.parquet"
    renamed = table.rename_columns([c.replace("LF_HAA", "LF\x1b]0;pwned\x07_HAA") for c in table.column_names])
    pq.write_table(renamed.replace_schema_metadata(table.schema.metadata), forged)
    assert main(["traces", str(path), str(forged)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "holds control characters" in err and "LF\\x1b]0;pwned\\x07_HAA" in err, err
    long = tmp_path / "long.parquet"
    raw = json.loads(table.schema.metadata[b"transfer.trace"])
    raw["label"] = "x" * 100_000
    pq.write_table(table.replace_schema_metadata({b"transfer.trace": json.dumps(raw).encode()}), long)
    assert main(["traces", str(path), str(long)]) == 0
    out = capsys.readouterr().out
    assert "... (100000 characters)" in out and len(out.splitlines()[1]) < 400


@pytest.mark.engines
def test_mujoco_and_physx_traces_hold_the_engines_foot_forces_and_a_metrics_run_reads_none(physx_trace, tmp_path):
    """Issue 32: the foot contact force where the engine reports it (MuJoCo: its constraint forces; PhysX: its
    contact sensors), in the same columns; walking feet carry the robot's weight between them, and a foot in
    geometric contact carries far more than one out of it. A replay recorded for its metrics alone reads no force
    (NaN: a PhysX read costs ~0.5 ms)."""
    import pandas as pd

    from transfer.runs.replay import replay

    physx_result, physx_path = physx_trace
    path = tmp_path / "mujoco.parquet"
    result = replay(
        DEMO, "mujoco", asset="transfer:quadruped.xml", num_envs=2, seconds=2.0, progress=False, record=path
    )
    columns = [f"contact_force.{f}" for f in result.recording.foot_names]
    weight = 14.0 * 9.81  # the demo quadruped: 14 kg (a 6 kg base, four legs of 0.6 + 1 + 0.4 kg)
    for rec, file in ((result.recording, path), (physx_result.recording, physx_path)):
        frame = pd.read_parquet(file)
        assert set(columns) <= set(frame.columns) and not frame[columns].isna().any().any()
        force = rec.arrays["contact_force"][rec.time > 1.0]  # (steps, envs, feet), walking
        assert force.min() >= 0.0
        assert 0.7 * weight < force.sum(axis=-1).mean() < 1.3 * weight  # on average the feet carry its weight
        touching = rec.arrays["contact"][rec.time > 1.0]
        assert force[touching].mean() > 5 * max(force[~touching].mean(), 1e-3)  # force where contact
    metrics_only = replay(DEMO, "physx", num_envs=1, seconds=0.5, progress=False)
    assert np.isnan(metrics_only.recording.arrays["contact_force"]).all()
    masses = [read_trace(file)[1]["robot_mass"] for file in (path, physx_path)]
    assert masses[0] == pytest.approx(14.0, rel=1e-3) and masses[1] == pytest.approx(14.0, rel=1e-3)
    assert compare_traces(physx_path, path).rows  # one robot, two files (USD, MJCF) and engines: compared


@pytest.mark.engines
def test_traces_of_two_robots_whose_joints_share_names_are_refused(physx_trace, tmp_path, capsys):
    """A trace of another robot with the same joint names (ANYmal C and D; here the quadruped's trace relabelled 20 %
    heavier): refused in one line naming both robots and their masses, not compared joint by joint."""
    from transfer.cli import main
    from transfer.traces.parquet import META_KEY

    _, path = physx_trace
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[META_KEY])
    heavier = {**meta, "robot_mass": meta["robot_mass"] * 1.2, "asset": "/robots/other_quadruped.usda"}
    other = tmp_path / "other.parquet"
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(heavier).encode()}), other)
    assert main(["traces", str(path), str(other)]) == 2
    err = capsys.readouterr().err
    assert "are of different robots (quadruped.usda: 14.00 kg; other_quadruped.usda: 16.80 kg)" in err
    assert err.count("\n") == 1


@pytest.mark.engines
def test_a_trace_of_another_schema_doubled_or_malformed_is_refused_naming_why(physx_trace, tmp_path):
    """Battery 4: ``transfer.trace/99`` was read as version 1; a trace holding every sample twice was accepted;
    strings in a ``position.*`` column gave numpy's TypeError naming no file; metadata present but not JSON was
    "without transfer's trace metadata"; a zero-row or NaN-time trace was "share no sample"."""
    _, path = physx_trace
    table, meta = read_trace(path)

    def written(name: str, t, document=None) -> Path:
        out = tmp_path / name
        raw = json.dumps(document).encode() if isinstance(document, dict) else document
        pq.write_table(t.replace_schema_metadata({b"transfer.trace": raw or json.dumps(meta).encode()}), out)
        return out

    column = next(c for c in table.column_names if c.startswith("position."))
    strings = table.set_column(table.column_names.index(column), column, pa.array(["x"] * table.num_rows))
    nan_time = table.set_column(table.column_names.index("time"), "time", pa.array([np.nan] * table.num_rows))
    cases = {
        "schema transfer.trace/99, but this transfer reads transfer.trace/1": written(
            "v99.parquet", table, {**meta, "schema": "transfer.trace/99"}
        ),
        "some (env, step) sample more than once": written("twice.parquet", pa.concat_tables([table, table])),
        f"column '{column}' holds string, not numbers": written("strings.parquet", strings),
        "is not one JSON document": written("bad.parquet", table, b"{not json"),
        "holds no sample (0 rows)": written("empty.parquet", table.slice(0, 0)),
        "'time' column holds NaN": written("nan.parquet", nan_time),
    }
    for message, file in cases.items():
        with pytest.raises(TraceError, match=re.escape(message)):
            read_trace(file)
