"""``transfer sweep`` (issue 23): the grid and its keys (properties), the spec's checks (every bad field refused
naming it, before anything runs), the output folder (never overwritten), and small real sweeps of the project's Ant
checkpoint: on a local Ray (skipped, with Ray's reason, where Ray cannot start), in this process (the same records:
a cell is a plain function), resumed (nothing rerun), with a failing cell (recorded, the sweep goes on).

The heavier acceptance sweep (the shared ANYmal C checkpoints on both engines, 1 and 2 workers) is marked slow."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from transfer.cli import main
from transfer.env.perturbations import PERTURBATIONS, Perturbation
from transfer.runs.sweep import RayUnavailable, cell_key, expand, read_records, sweep
from transfer.runs.sweep.run import check_out
from transfer.runs.sweep.spec import KEY_FIELDS, Checkpoint, SpecError, canonical_cell, load_spec

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.load's, on every checkpoint read

ROOT = Path(__file__).resolve().parents[1]
ANT = ROOT / "checkpoints/ant_flat_physx/exported/policy.pt"
ACCEPTANCE = ROOT / "presets/sweeps/anymal_c_acceptance.yaml"

# ---------------------------------------------------------------------------------------------- the grid, the keys

VALUES = {
    "ground_friction": st.floats(0.0, 3.0, allow_nan=False),
    "added_base_mass": st.floats(-1.0, 30.0, allow_nan=False),
    "gain_scale": st.floats(0.0, 3.0, allow_nan=False),
    "action_delay": st.integers(0, 12),
    "push": st.floats(-3.0, 3.0, allow_nan=False),
    "obs_noise": st.floats(0.0, 3.0, allow_nan=False),
}


COMMAND = st.tuples(*[st.floats(-2, 2)] * 3).map(list)


@st.composite
def grids(draw):
    """A checked spec's grid part and its checkpoints (plain values: no engine, no file)."""
    names = draw(st.lists(st.sampled_from(list(PERTURBATIONS)), unique=True, max_size=3))
    perturbations = {n: draw(st.lists(VALUES[n], min_size=1, max_size=3, unique=True)) for n in names}
    natives = draw(st.lists(st.sampled_from(["physx", "newton"]), min_size=1, max_size=3))
    checkpoints = [
        Checkpoint(f"c{i}.pt", f"/ckpt/c{i}.pt", None, None, None, {}, native, (0.5, 0.0, 0.0))
        for i, native in enumerate(natives)
    ]
    spec = {
        "targets": draw(st.lists(st.sampled_from(["physx", "newton"]), min_size=1, max_size=2, unique=True)),
        "seeds": draw(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=2, unique=True)),
        "num_envs": draw(st.integers(1, 64)),
        "seconds": draw(st.floats(1.0, 20.0, exclude_min=True)),
        "commands": draw(
            st.none() | st.lists(COMMAND, min_size=1, max_size=2, unique_by=lambda c: tuple(x + 0.0 for x in c))
        ),
        "perturbations": perturbations,
        "device": "cpu",
    }
    return spec, checkpoints


def _neutral(cell) -> bool:
    return cell["perturbation"] == Perturbation().to_dict()


@given(grids())
def test_the_grid_is_the_product_of_every_list_plus_the_references_it_lacks(grid):
    spec, checkpoints = grid
    cells, added = expand(spec, checkpoints)
    sizes = [len(checkpoints), len(spec["targets"]), len(spec["seeds"]), len(spec["commands"] or [None])]
    sizes += [len(v) for v in spec["perturbations"].values()]
    product = math.prod(sizes)
    assert len(cells) == product + added
    assert len({c["key"] for c in cells}) == len(cells)  # every cell has its own key
    combos = {tuple(c["perturbation"][n] for n in spec["perturbations"]) for c in cells[:product] if c["checkpoint"]}
    assert combos == set(itertools.product(*spec["perturbations"].values()))
    # every (checkpoint, seed, command) has its native reference, undisturbed, exactly once
    for c in checkpoints:
        commands = spec["commands"] or [list(c.command)]
        for seed, command in itertools.product(spec["seeds"], commands):
            refs = [
                x
                for x in cells
                if x["checkpoint"] == c.path
                and x["seed"] == seed
                and x["command"] == [float(v) for v in command]
                and x["target"] == c.native
                and _neutral(x)
            ]
            assert len(refs) == 1
    in_grid = all(
        any(_neutral(x) for x in cells[:product] if x["checkpoint"] == c.path and x["target"] == c.native)
        for c in checkpoints
    )
    assert (added == 0) == in_grid


@given(grids(), st.randoms())
def test_a_cell_s_key_is_its_parameters_however_spelt(grid, rnd):
    spec, checkpoints = grid
    cells, _ = expand(spec, checkpoints)
    cell = rnd.choice(cells)
    params = {k: cell[k] for k in KEY_FIELDS}
    shuffled = dict(rnd.sample(list(params.items()), len(params)))
    shuffled["perturbation"] = dict(rnd.sample(list(cell["perturbation"].items()), len(cell["perturbation"])))
    assert cell_key(shuffled) == cell["key"]
    assert cell_key(json.loads(json.dumps(cell))) == cell["key"]  # read back from cells.jsonl
    respelt = {**params, "seed": float(cell["seed"]), "num_envs": float(cell["num_envs"])}
    respelt["perturbation"] = {
        k: (int(v) if float(v).is_integer() and k != "action_delay" else v) for k, v in cell["perturbation"].items()
    }
    assert cell_key(respelt) == cell["key"]  # 1 and 1.0 are one cell
    changed = {**params, "seed": cell["seed"] + 1}
    assert cell_key(changed) != cell["key"]
    assert cell_key({**params, "perturbation": {}}) == cell_key(
        {**params, "perturbation": Perturbation().to_dict()}
    )  # missing perturbations are neutral
    assert set(canonical_cell(cell)) == set(KEY_FIELDS)


# ---------------------------------------------------------------------------------------------- the spec's checks


def _spec(tmp_path: Path, **fields) -> Path:
    data = {"checkpoints": [str(ANT)], "targets": ["physx"], "num_envs": 1, "seconds": 1.2, **fields}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


BAD = [
    ({"seconds": 0}, "seconds: expected a number > 1"),
    ({"seconds": float("nan")}, "seconds: expected a number > 1"),
    ({"num_envs": 0}, "num_envs: expected an integer >= 1"),
    ({"num_envs": 2.5}, "num_envs: expected an integer >= 1"),
    ({"seeds": [-1]}, "seeds[0]: expected an integer >= 0"),
    ({"seeds": []}, "seeds: expected a non-empty list"),
    ({"targets": ["bullet"]}, "targets[0]: 'bullet' is not a backend; give one of physx, newton"),
    ({"targets": ["physx", "physx"]}, "names a backend twice"),
    ({"commands": [[1, 0]]}, "commands[0]: expected [vx, vy, wz]"),
    ({"commands": [[1, 0, 1e9]]}, "commands[0]: expected a number >= -100"),
    ({"commands": [[1, 0, 0], [1.0, 0, -0.0]]}, "commands[1]: [1.0, 0, -0.0] is listed twice"),
    ({"seeds": [3, 3.0]}, "seeds: [3, 3] repeats a seed"),
    ({"perturbations": {"wind": [1]}}, "perturbations: unknown perturbation 'wind'; known: ground_friction"),
    ({"perturbations": {"gain_scale": [1, -0.5]}}, "perturbations.gain_scale[1]: expected a scale >= 0"),
    ({"perturbations": {"action_delay": [1.5]}}, "perturbations.action_delay[0]: expected a whole number"),
    ({"perturbations": {"push": ["hard"]}}, "perturbations.push[0]: expected a finite number"),
    ({"perturbations": {"push": [0, 0.0]}}, "perturbations.push: [0, 0.0] repeats a value"),
    ({"perturbations": [1, 2]}, "perturbations: expected a mapping"),
    ({"device": "tpu"}, "device: expected 'cpu' or 'cuda[:N]'"),
    ({"workers": 2}, "workers: unknown key(s); a spec has checkpoints"),
    ({"checkpoints": []}, "checkpoints: expected a non-empty list"),
    ({"checkpoints": [{"source": "physx"}]}, "checkpoints[0].path: missing"),
    ({"checkpoints": [{"path": str(ANT), "conf": "x"}]}, "checkpoints[0]: unknown key(s) ['conf']"),
    ({"checkpoints": ["missing.pt"]}, "checkpoints[0].path: missing.pt: file not found"),
    ({"checkpoints": ["nothing*/*.pt"]}, "checkpoints[0].path: nothing*/*.pt: the pattern matches no file"),
    ({"checkpoints": [{"path": str(ANT), "config": "none.yaml"}]}, "checkpoints[0].config: none.yaml: file not found"),
    ({"checkpoints": [str(ANT), str(ANT)]}, "checkpoints[1].path: " + str(ANT) + " is listed already"),
    ({"device": "cuda:7"}, "device: 'cuda:7', but this machine has"),
    ({"checkpoints": ["/**/*.onnx"]}, "walks the whole file system"),
    ({"seeds": list(range(1000)), "perturbations": {"push": list(range(1000))}}, "1000000 cells per checkpoint"),
    (
        {"checkpoints": [{"path": str(ANT), "source": "mjwarp"}]},
        "checkpoints[0] (policy.pt): source mjwarp contradicts",
    ),
    ({"checkpoints": [{"path": str(ANT), "settings": {"sim_hz": 1}}]}, "checkpoints[0].settings: 'sim_hz' names no"),
    (
        {"seconds": 2, "perturbations": {"action_delay": [0, 1000]}},
        "perturbations.action_delay: perturbation action_delay: 1000 physics steps, but the run has 400",
    ),
]


@pytest.mark.parametrize(("fields", "message"), BAD, ids=[m.split(":")[0][:40] for _, m in BAD])
def test_a_bad_spec_field_is_refused_naming_it_before_anything_runs(fields, message, tmp_path, capsys):
    spec = _spec(tmp_path, **fields)
    code = main(["sweep", str(spec), "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err, err
    assert f"error: {spec}: " in err or "error: checkpoints" in err, err
    assert message in err, err
    assert not (tmp_path / "out").exists()  # nothing written, nothing started


def test_a_spec_that_is_not_a_mapping_says_so(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(SpecError, match="expected a mapping"):
        load_spec(path)
    broken = tmp_path / "broken.yaml"
    broken.write_text("checkpoints:\n  - path: a.pt\n targets: [physx]\n")
    with pytest.raises(SpecError, match=r"broken.yaml: not valid YAML, line 3, column 2: "):
        load_spec(broken)


def test_paths_in_a_spec_file_start_at_its_folder(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    spec = folder / "s.yaml"
    spec.write_text(yaml.safe_dump({"checkpoints": [str(Path("..") / ANT.relative_to(ROOT.parent))]}))
    (tmp_path / ANT.relative_to(ROOT.parent)).parent.mkdir(parents=True)
    (tmp_path / ANT.relative_to(ROOT.parent)).write_bytes(ANT.read_bytes())
    plan = load_spec(spec)
    assert plan.checkpoints[0].path == str((tmp_path / ANT.relative_to(ROOT.parent)).resolve())
    assert plan.checkpoints[0].label == "ant_flat_physx/exported/policy.pt"  # led by its folders: policy.pt says little
    assert plan.checkpoints[0].native == "physx" and len(plan.cells) == 2  # physx and newton (the default targets:
    # mujoco steps a robot's own MJCF, listed where the robots have one); the reference in the grid


# ---------------------------------------------------------------------------------------------- the output folder


def test_the_output_folder_is_never_overwritten(tmp_path, capsys):
    spec = _spec(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "heatmap.png").write_bytes(b"my own picture")
    assert main(["sweep", str(spec), "-o", str(mine)]) == 2
    assert "is not empty (heatmap.png)" in capsys.readouterr().err
    assert main(["sweep", str(spec), "-o", str(mine), "--resume"]) == 2  # not an earlier sweep: still refused
    assert (mine / "heatmap.png").read_bytes() == b"my own picture"
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "cells.jsonl").write_text("")
    with pytest.raises(ValueError, match="holds an earlier sweep .* pass --resume"):
        check_out(tmp_path / "earlier", resume=False)
    (tmp_path / "earlier" / ".transfer-sweep").write_text("transfer-sweep/1\n")  # a sweep's own folder
    assert check_out(tmp_path / "earlier", resume=True) == tmp_path / "earlier"
    (tmp_path / "file").write_text("x")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_a_cluster_that_does_not_answer_is_one_line_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("ray")
    spec = _spec(tmp_path)
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--address", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "error: no Ray cluster answers at 127.0.0.1:1" in err and "ray start --head" in err, err
    assert not (tmp_path / "out").exists()


def test_records_survive_a_line_cut_short(tmp_path):
    path = tmp_path / "cells.jsonl"
    path.write_text(
        '{"key": "a", "error": null}\n{"key": "b", "error": "x"}\n{"key": "a", "error": "later"}\n{"key": "c", "er'
    )
    records, bad = read_records(path)
    assert set(records) == {"a", "b"} and records["a"]["error"] == "later"
    assert bad == ["line 4: not JSON (Unterminated string starting at; a line cut short?)"]


def test_a_local_clusters_workers_start_with_ray_and_get_the_environment(monkeypatch):
    """Issue 47: a local cluster's worker is started while Ray starts (not when the first cell comes, ~0.6 s later,
    as a ``runtime_env`` made it), with this ``transfer`` on its PYTHONPATH and one OpenMP thread, every worker Ray
    starts later too; the caller's own environment is left as it was."""
    ray = pytest.importorskip("ray")
    import os
    import time

    from transfer.runs.sweep.run import _start_ray

    if ray.is_initialized() or not Path("/proc/self/stat").exists():
        pytest.skip("needs its own Ray session and Linux's /proc")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("PYTHONPATH", raising=False)

    @ray.remote(num_cpus=1, max_calls=1)  # a new worker for each call
    def worker():
        since_boot = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        started = time.time() - (float(Path("/proc/uptime").read_text().split()[0]) - since_boot)
        return started, os.environ.get("PYTHONPATH", ""), os.environ.get("OMP_NUM_THREADS")

    try:
        if not _start_ray(1, None):
            pytest.skip("Ray was running already")
    except RayUnavailable as exc:
        pytest.skip(f"Ray cannot start here: {exc}")
    try:
        assert os.environ["OMP_NUM_THREADS"] == "7" and "PYTHONPATH" not in os.environ  # the caller's, as it was
        time.sleep(0.5)
        submitted = time.time()
        first, second = ray.get(worker.remote()), ray.get(worker.remote())
    finally:
        ray.shutdown()
    assert first[0] < submitted - 0.1, "the first cell's worker was started when the cell came, not with Ray"
    for _, path, threads in (first, second):
        assert str(ROOT) in path.split(os.pathsep) and threads == "1"


# ---------------------------------------------------------------------------------------------- real sweeps


def _small(tmp_path: Path, targets=("physx",), **perturbations) -> Path:
    return _spec(tmp_path, targets=list(targets), num_envs=2, seconds=1.5, perturbations=perturbations)


FIELDS = {
    "key",
    "checkpoint",
    "label",
    "target",
    "seed",
    "command",
    *PERTURBATIONS,
    "forward_velocity",
    "fall_fraction",
    "survival_seconds",
    "wall_seconds",
    "error",
    "cell",
}


@pytest.fixture(scope="module")
def ray_sweep(tmp_path_factory):
    """The Ant on PhysX, 2 envs, 1 s, pushed or not, with a base mass that cannot be: 4 cells on 2 Ray workers."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("ray")
    tmp = tmp_path_factory.mktemp("ray")
    spec = _small(tmp, push=[0.0, 0.5], added_base_mass=[0.0, -5.0])
    try:
        summary = sweep(spec, tmp / "out", workers=2, progress=False)
    except RayUnavailable as exc:
        pytest.skip(f"Ray cannot start here: {exc}")
    return spec, tmp / "out", summary


@pytest.mark.engines
def test_a_sweep_on_ray_records_every_cell_and_summarizes(ray_sweep):
    _, out, summary = ray_sweep
    records, bad = read_records(out / "cells.jsonl")
    assert len(records) == 4 and bad == []
    for record in records.values():
        assert FIELDS <= set(record), FIELDS - set(record)
    failed = [r for r in records.values() if r["error"]]
    assert len(failed) == 2 and all("added_base_mass -5 kg" in r["error"] for r in failed)
    walked = [r for r in records.values() if not r["error"]]
    assert all(r["forward_velocity"] > 0.3 and r["fall_fraction"] == 0.0 for r in walked)
    assert len({r["pid"] for r in records.values()}) == 2  # two workers shared the cells
    (row,) = summary["rows"]
    assert (
        row["cells"] == 4
        and row["failed"] == 2
        and row["worst_ratio"]
        == pytest.approx(min(r["forward_velocity"] / records[_reference(records)]["forward_velocity"] for r in walked))
    )
    assert summary["ran"] == 4 and summary["failed"] == 2 and summary["workers"] == 2
    assert json.loads((out / "summary.json").read_text())["rows"] == summary["rows"]
    assert (out / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["heatmap"]["columns"] == ["push 0", "push 0.5", "added_base_mass 0", "added_base_mass -5"]
    assert summary["heatmap"]["failed"][0] == [1, 1, 0, 2]


def _reference(records) -> str:
    return next(k for k, r in records.items() if r["push"] == 0 and r["added_base_mass"] == 0)


@pytest.mark.engines
def test_resume_reruns_nothing_and_a_cell_runs_the_same_in_this_process(ray_sweep, tmp_path):
    spec, out, _ = ray_sweep
    before = (out / "cells.jsonl").read_text()
    summary = sweep(spec, out, resume=True, in_process=True, progress=False)
    assert summary["ran"] == 2 and summary["skipped"] == 2  # only the failed cells run again
    after, _ = read_records(out / "cells.jsonl")
    assert (out / "cells.jsonl").read_text().startswith(before)
    here = sweep(spec, tmp_path / "here", in_process=True, progress=False)
    records, _ = read_records(tmp_path / "here" / "cells.jsonl")
    ray_records, _ = read_records(out / "cells.jsonl")
    for key, record in records.items():  # the same cell gives the same numbers, in a Ray worker or here
        assert record["forward_velocity"] == ray_records[key]["forward_velocity"]
    assert here["rows"][0]["mean_ratio"] == pytest.approx(summary["rows"][0]["mean_ratio"])


@pytest.mark.engines
def test_resume_after_a_grown_spec_runs_only_the_new_cells(tmp_path, capfd):
    pytest.importorskip("ovphysx")
    spec = _small(tmp_path, push=[0.0])
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--in-process"]) == 0
    first = read_records(tmp_path / "out" / "cells.jsonl")[0]
    assert "1 cells: 1 ran, 0 already in" in capfd.readouterr().out
    grown = _small(tmp_path, push=[0.0, 1.0])
    assert main(["sweep", str(grown), "-o", str(tmp_path / "out"), "--in-process", "--resume", "--json"]) == 0
    out, err = capfd.readouterr()
    summary = json.loads(out)
    assert summary["ran"] == 1 and summary["skipped"] == 1 and summary["cells"] == 2
    records = read_records(tmp_path / "out" / "cells.jsonl")[0]
    assert set(first) < set(records) and all(records[k] == first[k] for k in first)
    assert "[1/2]" not in err and "[2/2] ant_flat_physx/exported/policy.pt on physx, seed 0, push 1" in err


@pytest.mark.slow
@pytest.mark.engines
def test_the_acceptance_sweep_walks_resumes_and_halves_with_two_workers(shared, tmp_path):
    """12 cells (ANYmal C from PhysX and from MuJoCo-Warp, and the Ant, on both engines, pushed or not, 4 envs x 8 s):
    every cell recorded, the transferred ones walk, --resume runs none, and 2 workers take <= 0.65x the time of 1
    (the best of up to two interleaved attempts each: the machine is shared, and a neighbour's job slows one run)."""
    pytest.importorskip("ray")
    walls: dict[int, list[float]] = {1: [], 2: []}
    for attempt in range(2):
        for workers in (1, 2):
            out = tmp_path / f"w{workers}-{attempt}"
            try:
                summary = sweep(ACCEPTANCE, out, workers=workers, progress=False)
            except RayUnavailable as exc:
                pytest.skip(f"Ray cannot start here: {exc}")
            walls[workers].append(summary["wall_seconds"])
            assert summary["cells"] == 12 and summary["ran"] == 12 and summary["failed"] == 0
            assert len(read_records(out / "cells.jsonl")[0]) == 12
            for row in summary["rows"]:
                assert row["fall_rate"] == 0.0 and row["worst_ratio"] >= 0.8, row
        if min(walls[2]) <= 0.65 * min(walls[1]):
            break
    again = sweep(ACCEPTANCE, tmp_path / "w2-0", workers=2, resume=True, progress=False)
    assert again["ran"] == 0 and again["skipped"] == 12
    assert min(walls[2]) <= 0.65 * min(walls[1]), walls


def test_the_seeds_preset_is_the_grid_its_figures_were_timed_on(shared):
    """presets/sweeps/anymal_c_seeds.yaml (docs/sweep.md's 1-vs-2-worker figures): 3 checkpoints x 2 engines x 2
    seeds, undisturbed, 4 envs x 8 s; its checkpoints read as the training engines they name."""
    plan = load_spec(ROOT / "presets/sweeps/anymal_c_seeds.yaml")
    cells = plan.cells
    assert (
        len(cells) == 12
        and {c["seed"] for c in cells} == {0, 1}
        and {c["target"] for c in cells}
        == {
            "physx",
            "newton",
        }
    )
    assert plan.spec["num_envs"] == 4 and plan.spec["seconds"] == 8 and not plan.spec.get("perturbations")
    assert sorted(c.native for c in plan.checkpoints) == ["newton", "physx", "physx"]


def test_resume_appends_only_to_a_sweeps_own_folder_and_one_sweep_at_a_time(tmp_path):
    """Issue 31: ``--resume`` into a folder holding the user's own cells.jsonl and summary.json appended to one and
    overwrote the other; two sweeps into one folder both ran every cell."""
    import fcntl

    from transfer.runs.sweep.run import FILES, SweepError, _claimed, check_out

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "cells.jsonl").write_text('{"my": "data"}\n')
    (mine / "summary.json").write_text("{}")
    with pytest.raises(SweepError, match="no sweep wrote"):
        check_out(mine, resume=True)
    assert (mine / "cells.jsonl").read_text() == '{"my": "data"}\n'
    ours = tmp_path / "ours"
    ours.mkdir()
    with _claimed(ours):
        assert (ours / FILES["marker"]).read_text().startswith("transfer-sweep/1")
        with pytest.raises(SweepError, match="another sweep is writing to it now"):
            with _claimed(ours):
                pass
        with open(ours / FILES["marker"]) as fh:  # the lock is the kernel's: another process meets it too
            with pytest.raises(OSError):
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert check_out(ours, resume=True) == ours  # a marked folder resumes, even before its first record


def test_a_spec_that_asks_records_every_cells_trace_under_its_key(tmp_path):
    """Issue 32: ``record: true`` writes each cell's trace to ``OUT/traces/<key>.parquet`` (the same schema as
    ``replay --record``), and each record names its file; a non-boolean ``record`` is refused naming the field."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("ovphysx")
    from transfer.runs.sweep import sweep
    from transfer.traces.parquet import read_trace

    spec = {
        "checkpoints": [str(ANT)],
        "targets": ["physx"],
        "seeds": [0, 1],
        "num_envs": 1,
        "seconds": 1.2,
        "record": True,
    }
    summary = sweep(spec, tmp_path / "out", in_process=True, progress=False)
    assert summary["ran"] == 2 and summary["files"]["traces"] == str(tmp_path / "out" / "traces")
    records = [json.loads(line) for line in (tmp_path / "out" / "cells.jsonl").read_text().splitlines()]
    for record in records:
        assert record["error"] is None and record["trace"] == str(
            tmp_path / "out" / "traces" / f"{record['key']}.parquet"
        )
        table, meta = read_trace(record["trace"])
        assert meta["engine"] == "physx" and table.num_rows == 60  # 1.2 s at the Ant's 50 Hz, one env
    with pytest.raises(SpecError, match="record: expected true or false"):
        load_spec({**spec, "record": "yes"})
