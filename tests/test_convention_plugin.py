"""Conventions are plug-ins (issue 46): a convention declared in one module of another package (an entry point of
the ``transfer.conventions`` group) is known to resolution, ``parse_ordering``, ``inspect`` and ``--source``, with
no file of transfer's touched. The built-in four are declared the same way (one module each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = """
import dataclasses

from transfer.orders.conventions import Convention
from transfer.orders.physx import physx_order


def reversed_order(graph):
    order = physx_order(graph)
    return dataclasses.replace(order, convention="reversed_physx", joints=order.joints[::-1], bodies=order.bodies[::-1])


CONVENTION = Convention("reversed_physx", "PhysX's order backwards (a plug-in of the tests)", order=reversed_order)
"""

CHECK = """
import json, sys
from transfer.cli import main
from transfer.ordering import parse_ordering
from transfer.orders import conventions, resolve_ordering
from transfer.runs.inputs import resolve_inputs

usd = "transfer/data/quadruped.usda"
out = {"listed": [c.name for c in conventions()], "parsed": str(parse_ordering("Reversed_PhysX"))}
out["joints"] = list(resolve_ordering(usd, "reversed_physx").joints)
out["physx"] = list(resolve_ordering(usd, "physx").joints)
import torch
torch.jit.script(torch.nn.Linear(48, 12)).save(sys.argv[1])  # a checkpoint without metadata: --source says its order
inputs = resolve_inputs(sys.argv[1], source="reversed_physx", config="presets/tasks/quadruped_flat_velocity.yaml")
out["source"] = [inputs.source_label, list(inputs.robot.order(inputs.source).joints)]
print(json.dumps(out))
sys.stdout.flush()
sys.exit(main(["inspect", usd, "--json"]))
"""


def _with_plugin(tmp_path: Path) -> dict[str, str]:
    """A package on the path with its entry point declared, as ``pip install`` of a plug-in leaves it."""
    (tmp_path / "reversed_convention.py").write_text(PLUGIN)
    dist = tmp_path / "reversed_convention-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: reversed-convention\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[transfer.conventions]\nreversed = reversed_convention:CONVENTION\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}


def test_a_convention_plugged_in_from_one_module_is_known_everywhere(tmp_path):
    pytest.importorskip("pxr")
    pytest.importorskip("torch")
    command = [sys.executable, "-c", CHECK, str(tmp_path / "p.pt")]
    done = subprocess.run(command, cwd=ROOT, env=_with_plugin(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first, rest = done.stdout.split("\n", 1)
    found = json.loads(first)
    assert found["listed"] == ["physx", "mjwarp", "robot_schema", "mujoco", "reversed_physx"]
    assert found["parsed"] == "reversed_physx"
    assert found["joints"] == found["physx"][::-1]
    assert found["source"] == ["reversed_physx", found["physx"][::-1]]  # --source reversed_physx
    inspected = json.loads(rest)["articulations"][0]
    assert inspected["reversed_physx"]["joints"] == found["physx"][::-1]  # a column of inspect


def test_a_broken_or_clashing_plugin_is_one_line_naming_it(tmp_path):
    from transfer.orders.conventions import Convention, register
    from transfer.orders.physx import physx_order

    with pytest.raises(ValueError, match=r"convention 'physx' is registered already \(PhysX"):
        register(Convention("physx", "another", order=physx_order))
    with pytest.raises(ValueError, match=r"convention name 'Bad-Name': lower case letters"):
        register(Convention("Bad-Name", "x", order=physx_order))
    with pytest.raises(ValueError, match=r"give its order \(from a graph\) or its source_file reader"):
        register(Convention("nothing", "x"))
    env = _with_plugin(tmp_path)
    (tmp_path / "reversed_convention.py").write_text("raise ImportError('no such thing')\n")
    code = textwrap.dedent("""
        from transfer.ordering import parse_ordering
        parse_ordering("reversed_physx")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "the convention plug-in reversed (reversed_convention:CONVENTION) cannot be registered: ImportError" in (
        done.stderr
    )


def test_conventions_are_named_by_member_in_few_places_outside_their_package():
    """Issue 46: a new convention touches one module. Outside ``ordering``, ``orders`` and the backends'
    declarations, a convention is named by member only where a format names the order its files are in (at most 6
    lines); everything else reads the registry."""
    import re

    member = re.compile(r"OrderingConvention\.(PHYSX|MJWARP|ROBOT_SCHEMA|MUJOCO)\b")
    package = ROOT / "transfer"
    lines = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in package.rglob("*.py")
        if path.name != "ordering.py" and not {"orders", "backends"} & set(path.relative_to(package).parts[:1])
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if member.search(line)
    ]
    assert 0 < len(lines) <= 6, lines
