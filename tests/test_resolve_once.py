"""Each input is resolved once (issue 29): one stage composition per replay outside the engines, one for all
three runs of ``--compare``, and a sweep resolves each checkpoint once, its cells carrying the resolved inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transfer.cli import main
from transfer.robot.usd import clear_cache, stage_compositions

ROOT = Path(__file__).resolve().parents[1]
QUADRUPED = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"


@pytest.mark.engines
def test_a_compare_composes_the_robot_once_outside_the_engines(capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    clear_cache()
    before = stage_compositions()
    args = ["replay", str(QUADRUPED), "--target", "newton", "--compare", "--seconds", "0.1", "--json"]
    assert main(args) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["label"] for r in runs] == ["native (physx)", "reordered (newton)", "naive (newton)"]
    assert stage_compositions() - before == 1  # orders, base, spawn, colliders and Newton's reads: one stage


def test_inputs_travel_as_data_and_come_back_equal():
    from transfer.runs.inputs import Inputs, resolve_inputs

    inputs = resolve_inputs(QUADRUPED)
    data = json.loads(json.dumps(inputs.to_dict()))  # what a sweep cell carries to a Ray worker
    back = Inputs.from_dict(data)
    assert back.task == inputs.task and back.source == inputs.source and back.asset == inputs.asset
    assert back.source_label == inputs.source_label and back.policy.path == inputs.policy.path
    assert (back.policy.input_size, back.policy.output_size) == (inputs.policy.input_size, inputs.policy.output_size)


@pytest.mark.engines
def test_a_sweep_resolves_each_checkpoint_once(tmp_path, monkeypatch):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    import transfer.runs.inputs as layer
    import transfer.runs.replay as replay_module
    import transfer.runs.sweep.spec as spec_module
    from transfer.runs.sweep import sweep

    calls: list[str] = []
    real = layer.resolve_inputs

    def counted(checkpoint, **kwargs):
        calls.append(str(checkpoint))
        return real(checkpoint, **kwargs)

    monkeypatch.setattr(layer, "resolve_inputs", counted)
    monkeypatch.setattr(replay_module, "resolve_inputs", counted)
    monkeypatch.setattr(spec_module, "resolve_inputs", counted)
    spec = {
        "checkpoints": [{"path": str(QUADRUPED), "settings": {"decimation": 4}}],
        "targets": ["physx", "newton"],
        "seeds": [0, 1],
        "seconds": 1.1,
    }
    summary = sweep(spec, tmp_path / "out", in_process=True, progress=False)
    assert summary["cells"] == 4 and summary["ran"] == 4, summary
    assert calls == [str(QUADRUPED)]  # 4 cells (2 targets x 2 seeds; the native reference is among them): 1 resolution
    records = [json.loads(line) for line in (tmp_path / "out" / "cells.jsonl").read_text().splitlines()]
    assert all(r["error"] is None for r in records) and all("inputs" not in r["cell"] for r in records)


@pytest.mark.engines
def test_a_replay_reads_each_fact_of_the_robot_once(monkeypatch):
    """The robot is one value (:class:`transfer.robot.Robot`) from the input layer down: a replay reads its
    topology, its PhysX order, its spawn geometry and its colliders from the file once each, however many floors
    (inputs, spawn rule, base, default pose, articulation factory, fall rule) ask."""
    pytest.importorskip("ovphysx")
    from pxr import Usd

    import transfer.orders as orders
    import transfer.robot as robot_module
    import transfer.robot.usd as usd
    from transfer.robot import Robot
    from transfer.runs.inputs import resolve_inputs
    from transfer.runs.replay import replay

    calls: dict[str, int] = {}

    def counted(module, name):
        real = getattr(module, name)

        def call(*args, **kwargs):
            if not isinstance(args[0], (Usd.Stage, Robot)):  # a read of the file (a Robot answers from its own;
                calls[name] = calls.get(name, 0) + 1  # an engine reading the stage it composed is its own)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, call)
        if getattr(robot_module, name, None) is real:  # the Robot value imports what it reads with
            monkeypatch.setattr(robot_module, name, call)

    for module, name in (
        (orders, "read_topology"),
        (orders, "holds_base"),
        (usd, "spawn_geometry"),
        (usd, "collider_corners"),
        (usd, "collider_points"),
    ):
        counted(module, name)
    inputs = resolve_inputs(QUADRUPED)
    assert isinstance(inputs.robot, Robot) and Path(inputs.robot) == inputs.asset
    result = replay(QUADRUPED, target="physx", seconds=0.1, inputs=inputs)
    assert result.forward_velocity is not None
    assert calls and all(n == 1 for n in calls.values()), calls
    assert {"read_topology", "spawn_geometry", "collider_corners"} <= set(calls)
