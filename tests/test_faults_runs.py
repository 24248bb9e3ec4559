"""The reliability battery's findings on sweep, train, diagnose and traces, each as the user meets it:

- ``sweep --resume`` with another spec into an earlier sweep's folder is refused naming its spec.json (the same spec,
  or one grown from it, resumes);
- a sweep whose cells failed exits 1;
- ``train --force`` deletes only what a run writes (``model_<iter>.pt``), never a ``model_best.pt`` of the user's;
- ``diagnose`` refuses runs too short to measure before anything runs;
- ``traces`` refuses traces with no finite joint column, or of two robots, naming the files.

Short runs: the shipped quadruped on PhysX, one env, 0.2 s per cell; the traces are synthetic (no engine).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from transfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "checkpoints" / "quadruped_flat_physx" / "exported" / "policy.pt"
ANT = ROOT / "checkpoints" / "ant_flat_physx" / "exported" / "policy.pt"
TASK = ROOT / "presets" / "tasks" / "quadruped_flat_velocity.yaml"


def _spec(tmp_path: Path, name: str = "sweep.yaml", **extra) -> Path:
    spec = {"checkpoints": [{"path": str(DEMO)}], "targets": ["physx"], "num_envs": 1, "seconds": 1.2, **extra}
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return path


def _files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in ("spec.json", "summary.json", "cells.jsonl")}


# -- sweep --resume with another spec --------------------------------------------------------------------------


@pytest.mark.engines
def test_resume_with_another_spec_is_refused_and_the_earlier_sweep_stays_whole(tmp_path, capfd):
    pytest.importorskip("ovphysx")
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process"]) == 0
    before = _files(out)
    capfd.readouterr()
    other = _spec(tmp_path, "other.yaml", seconds=1.3)
    assert main(["sweep", str(other), "-o", str(out), "--in-process", "--resume"]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"error: {out / 'spec.json'}: the sweep there ran a different spec (seconds 1.2 there, 1.3 here)" in err
    assert "give a new -o" in err
    assert _files(out) == before  # nothing replaced, nothing appended
    # the same spec resumes (nothing to run), and so does one grown from it (only its new cell runs)
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process", "--resume", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["ran"] == 0
    grown = _spec(tmp_path, "grown.yaml", seeds=[0, 1], perturbations={"push": [0]})
    assert main(["sweep", str(grown), "-o", str(out), "--in-process", "--resume", "--json"]) == 0
    summary = json.loads(capfd.readouterr().out)
    assert summary["ran"] == 1 and summary["skipped"] == 1
    # the grown spec is now the folder's: the first one, which lacks seed 1, no longer resumes there
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process", "--resume"]) == 2
    assert "(seeds 1 there, missing here)" in capfd.readouterr().err


def test_a_spec_grown_from_the_recorded_one_is_told_from_another():
    from transfer.runs.sweep.spec import not_grown_from

    earlier = {
        "checkpoints": [
            {"path": "/a.pt", "source": None, "config": None, "asset": None, "settings": {}, "name": "a.pt"}
        ],
        "targets": ["physx"],
        "seeds": [0],
        "num_envs": 1,
        "seconds": 1.0,
        "commands": None,
        "perturbations": {"push": [0.0, 0.5]},
        "device": "cpu",
        "record": False,
    }
    same = json.loads(json.dumps(earlier)) | {"seconds": 1, "perturbations": {"push": [0, 0.5]}}
    assert not_grown_from(earlier, same) is None  # 1 and 1.0 are one value
    relabelled = same | {"checkpoints": [{**earlier["checkpoints"][0], "name": "a/a.pt"}]}
    assert not_grown_from(earlier, relabelled) is None  # a label is how a checkpoint is shown, not a cell
    grown = same | {
        "targets": ["newton", "physx"],
        "seeds": [0, 3],
        "perturbations": {"push": [0.0, 0.5, 1.0], "gain_scale": [1.0, 0.5]},
    }
    assert not_grown_from(earlier, grown) is None  # gain_scale 1 is what the earlier cells ran
    assert not_grown_from(earlier, same | {"num_envs": 2}) == "num_envs 1 there, 2 here"
    assert not_grown_from(earlier, same | {"targets": ["newton"]}) == 'targets "physx" there, missing here'
    assert (
        not_grown_from(earlier, same | {"perturbations": {"push": [0.5]}})
        == "perturbations.push 0.0 there, missing here"
    )
    assert (
        not_grown_from(earlier, same | {"perturbations": {"push": [0, 0.5], "gain_scale": [0.5]}})
        == "perturbations.gain_scale 1.0 there, missing here"
    )
    moved = same | {"checkpoints": [{**earlier["checkpoints"][0], "path": "/b.pt"}]}
    assert not_grown_from(earlier, moved) == 'checkpoints "/a.pt" there, missing here'
    assert not_grown_from(earlier, same | {"commands": [[1.0, 0.0, 0.0]]}).startswith("commands null there")


def test_a_spec_json_that_is_no_sweep_s_is_refused_with_resume(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".transfer-sweep").write_text("transfer-sweep/1\n")
    (out / "spec.json").write_text("{not json")
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process", "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out / 'spec.json'}: the sweep there ran a different spec" in err, err
    assert (out / "spec.json").read_text() == "{not json" and not (out / "cells.jsonl").exists()


# -- a sweep whose cells failed ---------------------------------------------------------------------------------


@pytest.mark.engines
def test_a_sweep_with_a_failed_cell_exits_1(tmp_path, capfd):
    """The Ant's torso authors no mass (the engine computes it from density): taking 5 kg off fails in the cell."""
    pytest.importorskip("ovphysx")
    spec = _spec(tmp_path, perturbations={"added_base_mass": [-5]})
    spec.write_text(spec.read_text().replace(str(DEMO), str(ANT)))
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--in-process"]) == 1
    out = capfd.readouterr().out
    assert "2 cells: 2 ran, 0 already in" in out and ", 1 failed;" in out, out
    assert "added_base_mass -5 kg: the base (torso)" in out
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--in-process", "--resume", "--json"]) == 1
    summary = json.loads(capfd.readouterr().out)
    assert summary["failed"] == 1 and summary["ran"] == 1  # the failed cell ran again, and failed again
    from transfer.cli.sweep import Sweep

    assert "1 when any cell failed" in " ".join(Sweep.__doc__.split())  # what --help says
    assert "1 when any cell failed" in (ROOT / "docs" / "sweep.md").read_text()


def test_more_mass_taken_off_than_the_base_authors_is_refused_before_any_engine_starts(tmp_path, capsys):
    """A sweep's ``added_base_mass: [-1000]`` on the quadruped (its base authors 6 kg) ran and failed in every cell
    (exit 1); replay's ``--perturb`` started the engine first. Both are bad input now: exit 2, one line."""
    spec = _spec(tmp_path, perturbations={"added_base_mass": [0, -1000]})
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--in-process"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0
        and "perturbations.added_base_mass: perturbation added_base_mass -1000 kg: the base "
        "(base) weighs 6 kg; the sum must stay above 0: give a value above -6"
        in err
    ), err
    assert not (tmp_path / "out").exists()
    assert main(["replay", str(DEMO), "--target", "newton", "--perturb", "added_base_mass=-6"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "added_base_mass -6 kg: the base (base) weighs 6 kg" in err, err


def test_a_settings_pattern_that_fits_no_joint_is_refused_with_the_spec(tmp_path, capsys):
    """Battery 6: a checkpoint's ``settings`` whose pattern fits no joint (or backtracks without end) failed in
    every cell (exit 1, every output written) where replay refuses it before any engine: the spec refuses it."""
    spec = _spec(tmp_path, checkpoints=[{"path": str(DEMO), "settings": {"stiffness": {"NOPE_.*": 10.0}}}])
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--in-process"]) == 2
    err = capsys.readouterr().err
    assert "checkpoints[0] (policy.pt)" in err and "'NOPE_.*': the pattern matches no joint" in err, err
    assert not (tmp_path / "out").exists()


# -- train --force ------------------------------------------------------------------------------------------------


def test_force_deletes_only_the_files_a_run_writes(tmp_path):
    from transfer.runs.train import previous_run_files

    run = tmp_path / "run"
    (run / "exported").mkdir(parents=True)
    ours = ["model_0.pt", "model_49.pt", "train.json", "rewards.png", "exported/policy.pt"]
    mine = [
        "model_best.pt",
        "model_final.pt",
        "model_.pt",
        "model_3.pt.bak",
        "model_1a.pt",
        "my_model_2.pt",
        "exported/policy.onnx",
        "notes.txt",
    ]
    for name in ours + mine:
        (run / name).write_text(name)
    (run / "model_7.pt").mkdir()  # a folder, whatever its name, is no file a run wrote
    assert sorted(p.relative_to(run).as_posix() for p in previous_run_files(run)) == sorted(ours)
    assert previous_run_files(tmp_path / "missing") == []


def test_force_never_deletes_an_input_nor_writes_through_a_linked_exported_folder(tmp_path, capsys):
    """``train --task tj/train.json -o tj --force`` replaced the task with the run's summary (``model_3.pt`` as a task
    name was deleted); an ``exported`` that links to another folder had its policy.pt replaced there."""
    import shutil

    task = ROOT / "presets" / "tasks" / "quadruped_flat_velocity.yaml"
    for name in ("train.json", "model_3.pt"):
        run = tmp_path / name.split(".")[0]
        run.mkdir()
        mine = shutil.copy(task, run / name)
        assert main(["train", "--task", str(mine), "-o", str(run), "--force", "--iterations", "1"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{mine}, which is the --task file" in err, err
        assert Path(mine).read_bytes() == task.read_bytes()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "policy.pt").write_bytes(b"mine")
    run = tmp_path / "linked"
    run.mkdir()
    (run / "exported").symlink_to(precious)
    assert main(["train", "--task", str(task), "-o", str(run), "--force", "--iterations", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'exported'} is a link to {precious}" in err and (precious / "policy.pt").read_bytes() == b"mine"


# -- diagnose: runs too short to measure ---------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", ["0.2", "1"])
def test_diagnose_refuses_runs_too_short_to_measure(seconds, capsys):
    code = main(["diagnose", str(DEMO), "--target", "physx", "--seconds", seconds, "--num-envs", "1"])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    assert f"error: --seconds {seconds}: a diagnosis needs runs longer than the 1 s warm-up" in captured.err
    assert "give --seconds over 1" in captured.err and captured.out == ""


def test_a_run_without_a_measured_speed_is_not_called_fallen():
    from transfer.cli.diagnose import _speed

    assert _speed({"forward_velocity": None, "fall_fraction": 0.0}) == "speed not measured"
    assert _speed({"forward_velocity": None, "fall_fraction": 0.5}) == "speed not measured, 50% fell"
    assert _speed({"forward_velocity": None, "fall_fraction": 1.0}) == "fell, every env"
    assert _speed({"forward_velocity": 0.5, "fall_fraction": 0.0}) == "0.50 m/s forward, 0.00 lateral, 0.00 rad/s yaw"


# -- traces: nothing finite to compare, two robots ----------------------------------------------------------------


def _trace(path: Path, joints=("a", "b"), steps: int = 60, **nan) -> Path:
    """A synthetic trace: every quantity zero (NaN in the kinds named), one env standing throughout."""
    pytest.importorskip("pyarrow")
    from transfer.traces import Recording, write_trace

    j = len(joints)
    shape = {
        "action": j,
        "target": j,
        "position": j,
        "velocity": j,
        "effort": j,
        "base": 13,
        "foot_height": 1,
        "foot_speed": 1,
    }
    arrays = {k: np.full((steps, 1, n), np.nan if nan.get(k) else 0.0, np.float32) for k, n in shape.items()}
    arrays |= {
        "saturated": np.zeros((steps, 1, j), bool),
        "contact": np.zeros((steps, 1, 1), bool),
        "alive": np.ones((steps, 1), bool),
    }
    rec = Recording(
        "physx",
        0.02,
        list(joints),
        list(joints),
        ["foot"],
        [],
        np.arange(1, steps + 1) * 0.02,
        arrays,
        {"label": "native"},
    )
    return write_trace(rec, path)


def test_traces_with_no_finite_joint_column_are_refused_naming_the_file(tmp_path, capsys):
    a = _trace(tmp_path / "a.parquet")
    every = {k: True for k in ("action", "target", "position", "velocity", "effort", "base")}
    nan = _trace(tmp_path / "nan.parquet", **every)
    for first, second in ((a, nan), (nan, a)):
        assert main(["traces", str(first), str(second)]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and captured.out == "", captured.err
        assert f"{nan} holds no finite value in 14 column(s) where both stand: action.a, action.b" in captured.err
        assert f"{a} holds" not in captured.err


def test_traces_say_which_columns_could_not_be_compared(tmp_path, capsys):
    a = _trace(tmp_path / "a.parquet")
    b = _trace(tmp_path / "b.parquet", effort=True)
    assert main(["traces", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "not compared, no finite value in B where both stand: effort.a, effort.b" in out and "nan" not in out
    assert main(["traces", str(a), str(b), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["not_finite"] == {"b": ["effort.a", "effort.b"]}
    assert not [d for d in found["divergences"] if d["column"].startswith("effort.")]


def test_traces_of_two_robots_are_refused_naming_both_files(tmp_path, capsys):
    a = _trace(tmp_path / "quadruped.parquet", joints=("LF_HAA", "LF_KFE"))
    b = _trace(tmp_path / "ant.parquet", joints=("front_left_leg", "front_left_foot"))
    assert main(["traces", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"traces {a} and {b} share no joint (A: LF_HAA, LF_KFE; B: front_left_foot, front_left_leg)" in err


# -- sweep specs: labels, duplicates, run length, one message per field -------------------------------------------


def test_a_sweep_spec_refuses_what_would_print_raw_count_double_or_measure_nothing(tmp_path):
    """A ``name`` with an escape sequence reached every table and progress line raw; a hard link of a listed
    checkpoint ran twice and counted double; ``seconds: 0.01`` ran every cell and measured nothing; a bad
    ``settings`` field was prefixed with the spec's file and index twice."""
    import os

    from transfer.runs.sweep.spec import SpecError, load_spec

    base = {"targets": ["physx"], "seconds": 2}
    with pytest.raises(SpecError, match=r"checkpoints\[0\].name: '\\x1b\[31mRED\\x07' holds control characters"):
        load_spec({**base, "checkpoints": [{"path": str(DEMO), "name": "\x1b[31mRED\x07"}]})
    linked = tmp_path / "same.pt"
    os.link(DEMO, linked)
    with pytest.raises(SpecError, match=r"checkpoints\[1\].path: .*same.pt is listed already"):
        load_spec({**base, "checkpoints": [str(DEMO), str(linked)]})
    for seconds in (0.01, 1):
        with pytest.raises(SpecError, match=r"seconds: expected a number > 1 .* warm-up"):
            load_spec({**base, "seconds": seconds, "checkpoints": [str(DEMO)]})
    spec = tmp_path / "s.yaml"
    spec.write_text(json.dumps({**base, "checkpoints": [{"path": str(DEMO), "settings": {"sim_dt": -1}}]}))
    with pytest.raises(SpecError) as refused:
        load_spec(spec)
    assert str(refused.value).count("s.yaml") == 1 and str(refused.value).count("checkpoints[0]") == 1, refused.value
    assert "checkpoints[0].settings" in str(refused.value) and "sim_dt" in str(refused.value)
