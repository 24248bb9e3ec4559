"""``transfer task``: a starting task file from an asset (:mod:`transfer.runs.task_file`).

On ANYmal C from ``../shared``: both engines' orders, the flat-velocity skeleton sized for 12 joints and checked
against the PhysX-trained checkpoint, the asset's settings (effort limits, 32/16 iterations), '# DECIDE:' comments,
the file reads back to the same task, an existing file is kept unless --force; after setting what the comments
point to (the pose, the gains, the iterations) the file replays on both engines and the robot walks. On random
articulations (hypothesis, :mod:`tests.usdgen`): the listed orders are each convention's, permutations of one
another, and the task expands on either.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests import usdgen
from tests.conftest import shared_asset

pytest.importorskip("pxr")
pytestmark = pytest.mark.filterwarnings("ignore")

ANYMAL = "anybotics_anymal_c/usd/anymal_c.usda"


def _physx_checkpoint(shared: Path) -> Path:
    path = shared / "policies" / "anybotics_anymal_c" / "rl_policies" / "physx_anymal.pt"
    if not path.is_file():
        pytest.skip(f"checkpoint not found: {path}")
    return path


def test_anymal_c_starting_task(tmp_path, shared, capsys):
    from transfer.cli import main
    from transfer.orders import resolve_ordering
    from transfer.task import load_task

    asset, out = shared_asset(ANYMAL), tmp_path / "task.yaml"
    ckpt = _physx_checkpoint(shared)
    assert main(["task", str(asset), "-o", str(out), "--checkpoint", str(ckpt), "--source", "physx", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["joints"], summary["observation_size"], summary["action_size"]) == (12, 48, 12)
    assert summary["checkpoint"]["input_size"] == 48 and "default_joint_pos" in summary["decide"]
    task = load_task(out)
    text = out.read_text()
    for convention in ("physx", "mjwarp"):
        assert task.joint_names_by_convention[convention] == resolve_ordering(asset, convention).joints
    assert task.convention == "physx" and task.trained_on == "physx"
    assert task.effort_limit == {".*": 80.0} and task.engines["physx"] == {
        "solver_position_iterations": 32,
        "solver_velocity_iterations": 16,
    }
    assert task.observation_size(12) == 48 and task.action_size(12) == 12
    assert (out.parent / task.asset).resolve() == asset.resolve()
    for field in ("default_joint_pos", "stiffness", "physx", "sim_dt", "observation", "action"):
        block = text.split(f"\n{field}:", 1)[0].rsplit("\n\n", 1)[-1]
        assert "# DECIDE:" in block, (field, block)
    expanded = task.with_joint_names(task.joint_names_by_convention["physx"])
    assert expanded.joint_names == task.joint_names_by_convention["physx"]


def test_an_existing_file_is_kept_unless_force(tmp_path, capsys):
    from transfer.cli import main

    asset, out = shared_asset(ANYMAL), tmp_path / "task.yaml"
    out.write_text("my edits\n")
    assert main(["task", str(asset), "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_text() == "my edits\n"
    assert main(["task", str(asset), "-o", str(out), "--force"]) == 0
    assert out.read_text().startswith("format: transfer-task/1")
    assert main(["task", str(asset) + ".missing", "-o", str(tmp_path / "other.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err and not (tmp_path / "other.yaml").exists()


def test_a_checkpoint_that_does_not_fit_is_refused_naming_both_sizes(tmp_path, capsys):
    from transfer.cli import main

    ant_policy = Path(__file__).resolve().parents[1] / "checkpoints" / "ant_flat_physx" / "exported" / "policy.pt"
    if not ant_policy.is_file():
        pytest.skip("the project's Ant policy is not in the checkout")
    out = tmp_path / "task.yaml"
    assert main(["task", str(shared_asset(ANYMAL)), "-o", str(out), "--checkpoint", str(ant_policy)]) == 2
    err = capsys.readouterr().err
    assert "observations" in err and "48" in err and "12 joints" in err and not out.exists()


def _set_decisions(text: str) -> str:
    """What a human writes where the comments point, from Isaac Lab's ANYmal C flat-velocity task (the preset)."""
    text = text.replace(
        'default_joint_pos:\n  ".*": 0.0',
        'default_joint_pos:\n  ".*_HAA": 0.0\n  "(LF|RF)_HFE": 0.4\n'
        '  "(LH|RH)_HFE": -0.4\n  "(LF|RF)_KFE": -0.8\n  "(LH|RH)_KFE": 0.8',
    )
    text = text.replace('stiffness:\n  ".*": 0.0', 'stiffness:\n  ".*": 300.0')
    text = text.replace('damping:\n  ".*": 0.0', 'damping:\n  ".*": 10.0')
    text = text.replace("solver_position_iterations: 32", "solver_position_iterations: 4")
    return text.replace("solver_velocity_iterations: 16", "solver_velocity_iterations: 0")


@pytest.mark.engines
@pytest.mark.parametrize("target", ["physx", "newton"])
def test_generated_task_replays_on_both_engines(target, tmp_path, shared, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    from transfer.cli import main

    asset, out, ckpt = shared_asset(ANYMAL), tmp_path / "task.yaml", _physx_checkpoint(shared)
    assert main(["task", str(asset), "-o", str(out), "--checkpoint", str(ckpt), "--source", "physx"]) == 0
    generated = out.read_text()
    out.write_text(_set_decisions(generated))
    assert out.read_text() != generated
    capsys.readouterr()
    code = main(
        [
            "replay",
            str(ckpt),
            "--target",
            target,
            "--config",
            str(out),
            "--asset",
            str(asset),
            "--seconds",
            "4",
            "--json",
        ]
    )
    assert code == 0
    run = json.loads(capsys.readouterr().out)
    assert run["target"] == target and run["order"] == "physx"
    assert run["forward_velocity"] > 0.6 and run["fall_fraction"] == 0.0, run  # it walks, on its own task file


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=usdgen.articulations(max_bodies=8))
def test_listed_orders_are_each_conventions_and_permutations_of_one_another(spec, tmp_path):
    from transfer.orders import OrderingError, resolve_ordering
    from transfer.runs.task_file import TaskFileError, starting_task

    path = usdgen.write_stage(usdgen.StageSpec([spec]), tmp_path / "robot.usda")
    try:
        orders = {c: resolve_ordering(path, c).joints for c in ("physx", "mjwarp")}
    except OrderingError:
        with pytest.raises(OrderingError):
            starting_task(path)
        return
    if not orders["physx"]:
        return
    if any(len(set(names)) < len(names) for names in orders.values()):  # one name under two parents: refused
        with pytest.raises(TaskFileError, match="more than once"):
            starting_task(path)
        return
    result = starting_task(path)
    listed = result.task.joint_names_by_convention
    assert {c: listed[c] for c in orders} == orders
    if set(orders["physx"]) == set(orders["mjwarp"]):  # the same joints: one order is a permutation of the other
        assert sorted(listed["physx"]) == sorted(listed["mjwarp"])
    else:  # the engines list different joints: the file says so
        assert any("lists other joints than physx's" in n for n in result.notes), result.notes
    for convention in (c for c in orders if orders[c]):  # an engine that lists no joint (a free D6) has no task
        task = result.task.with_convention(convention).with_joint_names(orders[convention])
        assert task.joint_names == orders[convention] and set(task.default_joint_pos) == set(orders[convention])
        assert task.observation_size(len(orders[convention])) == 12 + 3 * len(orders[convention])


def test_the_output_is_never_an_input_and_follows_the_umask(tmp_path, capsys):
    """``transfer task robot.usda -o robot.usda --force`` used to replace the robot with YAML (issue 31)."""
    import os
    import shutil

    from transfer.cli import main
    from transfer.task import load_task, resolve_asset

    robot = tmp_path / "robot.usda"
    shutil.copyfile(resolve_asset(load_task("presets/tasks/quadruped_flat_velocity.yaml").asset), robot)
    before = robot.read_bytes()
    assert main(["task", str(robot), "-o", str(robot), "--force"]) == 2  # refused by its suffix on the command line
    assert "give a task file name ending in .yaml" in capsys.readouterr().err and robot.read_bytes() == before
    linked = tmp_path / "robot.yaml"
    os.link(robot, linked)  # the robot under a task file's name
    assert main(["task", str(robot), "-o", str(linked), "--force"]) == 2
    assert "is the input" in capsys.readouterr().err and robot.read_bytes() == before
    from transfer.runs.task_file import TaskFileError, write_task_file

    with pytest.raises(TaskFileError, match="is the robot this command reads"):  # the Python API checks it too
        write_task_file(robot, robot, force=True)
    assert robot.read_bytes() == before
    out = tmp_path / "task.yaml"
    old = os.umask(0o022)
    try:
        assert main(["task", str(robot), "-o", str(out)]) == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644 and not list(tmp_path.glob(".task.yaml.*"))
