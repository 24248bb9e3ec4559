"""The robot's base, fixed or floating, is the same on both engines (docs/import.md "The base", docs/replay.md).

- engine-free: which engine holds the root link of a graph (:func:`transfer.orders.holds_base`), on random trees
  with and without the fixed joint to the world the MJCF/URDF converters author;
- as the engines build the converted robots of tests/robotgen.py (no base asked for): Newton fixes every robot
  without a free joint; PhysX builds a floating articulation and holds its root link with that joint as a
  constraint; both float the ``<freejoint>`` robot;
- property: any converted robot, any base asked for, any spawn height: both engines report that base, spawn the root
  link there, and keep it still under gravity when fixed, let it fall when floating;
- the environment: a task trained on either engine runs with the training engine's base on both.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.robotgen import mjcf_robot, urdf_robot
from transfer.backends.scene import SceneDescription
from transfer.orders import graph_from_edges, holds_base, mjwarp_order, physx_order

ENGINES = ("physx", "newton")
ROBOTS = {
    "mjcf_freejoint": lambda d: mjcf_robot(d, floating=True, walker=True),
    "mjcf_welded": lambda d: mjcf_robot(d, floating=False, walker=True),  # no <freejoint>
    "urdf_no_world_link": lambda d: urdf_robot(d, floating=True),
    "urdf_world_link": lambda d: urdf_robot(d, floating=False),  # a world link and a fixed joint
}
FLOATING = {"mjcf_freejoint"}
"""The one robot nothing holds to the world; the converters author a fixed joint from the world for the others."""
SECONDS = 0.5
STILL, FALLEN = 1e-4, 0.5 * 9.81 * SECONDS**2 * 0.9  # metres: a held root, and a root in free fall for SECONDS


# ------------------------------------------------------------------------------------------------ engine-free


@st.composite
def trees(draw):
    """``(graph, anchored)``: a random tree of revolute joints under a base link carrying the root API, with
    (``anchored``) or without a fixed joint from the world to the base, as the converters author it."""
    n = draw(st.integers(1, 6))
    edges = [(f"j{k}", "base" if k == 0 else f"l{draw(st.integers(0, k - 1))}", f"l{k}") for k in range(n)]
    anchored = draw(st.booleans())
    if anchored:
        edges.append(("anchor", None, "base", "fixed"))
    return graph_from_edges(edges, root="base"), anchored


@given(trees())
def test_both_engines_hold_a_base_link_anchored_to_the_world(case):
    """The root API on the base link: PhysX's articulation floats either way (the world joint becomes a
    constraint), Newton's is fixed when anchored; both hold the base exactly when the world joint is there."""
    graph, anchored = case
    assert physx_order(graph).fixed_base is False
    assert mjwarp_order(graph).fixed_base is anchored
    assert holds_base(graph, "physx") is anchored and holds_base(graph, "mjwarp") is anchored


def test_a_root_on_the_world_joint_is_fixed_and_a_hinge_to_the_world_holds_nothing():
    on_joint = graph_from_edges(
        [("anchor", None, "base", "fixed"), ("j0", "base", "l0")], root="anchor", root_kind="joint"
    )
    assert physx_order(on_joint).fixed_base and holds_base(on_joint, "physx") and holds_base(on_joint, "mjwarp")
    hinge = graph_from_edges([("pivot", None, "base", "revolute"), ("j0", "base", "l0")], root="base")
    assert not holds_base(hinge, "physx") and not holds_base(hinge, "mjwarp")
    with pytest.raises(ValueError, match="no engine's convention"):
        holds_base(hinge, "robot_schema")


def test_the_scene_takes_true_false_or_none():
    assert SceneDescription().fixed_base is None and SceneDescription(fixed_base=True).fixed_base is True
    with pytest.raises(TypeError, match="scene.fixed_base: expected true, false or None, got 1"):
        SceneDescription(fixed_base=1)


# --------------------------------------------------------------------------------------------- both engines


@pytest.fixture(scope="module")
def robots(tmp_path_factory, converters) -> dict[str, Path]:  # noqa: ARG001 (the converter environment)
    """Each robot of :data:`ROBOTS`, written and converted to USD (through the cache)."""
    from transfer.robot.assets import resolve_asset

    folder = tmp_path_factory.mktemp("base_kind")
    return {name: resolve_asset(write(folder / name)) for name, write in ROBOTS.items()}


def _run(usd: Path, engine: str, scene: SceneDescription | None = None) -> tuple[bool, np.ndarray, np.ndarray]:
    """``(fixed_base, root position at start, after SECONDS of gravity)`` of ``usd`` on ``engine``, no ground."""
    from transfer.articulation import open_articulation

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        art = open_articulation(usd, engine, scene=scene or SceneDescription())
    try:
        start = art.data.root_pos_w.numpy()[0].copy()
        for _ in range(round(SECONDS / 0.005)):
            art.step(0.005)
        return art.fixed_base, start, art.data.root_pos_w.numpy()[0].copy()
    finally:
        art.close()


@pytest.mark.engines
@pytest.mark.parametrize("name", list(ROBOTS))
def test_what_the_engines_build_from_a_converted_robot(robots, name):
    """No base asked for: Newton fixes every robot the converters anchor; PhysX floats its articulation but keeps
    the converters' joint from the world as a constraint, so its root link does not move either."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    usd, held = robots[name], name not in FLOATING
    physx_fixed, start, end = _run(usd, "physx")
    newton_fixed, n_start, n_end = _run(usd, "newton")
    assert (physx_fixed, newton_fixed) == (False, held)
    assert holds_base(usd, "physx") is held and holds_base(usd, "mjwarp") is held
    for a, b in ((start, end), (n_start, n_end)):
        assert (np.linalg.norm(b - a) < STILL) if held else (a[2] - b[2] > FALLEN), (name, a, b)


@pytest.mark.engines
@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(list(ROBOTS)),
    fixed=st.booleans(),
    spawn=st.floats(0.3, 1.0).map(lambda z: round(z, 3)),
)
def test_both_engines_build_the_base_the_scene_asks_for(robots, name, fixed, spawn):
    """Whatever the converters made of the robot, the scene's base wins on both engines: the same ``fixed_base``,
    the root link at the spawn height, still after SECONDS of gravity when fixed, falling when floating."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    from transfer.orders import resolve_ordering
    from transfer.robot.usd import spawn_geometry

    usd = robots[name]
    authored, _ = spawn_geometry(usd, resolve_ordering(usd, "physx").root_body)
    scene = SceneDescription(fixed_base=fixed, spawn_height=spawn, authored_root_height=authored)
    for engine in ENGINES:
        built, start, end = _run(usd, engine, scene)
        assert built is fixed, (engine, name)
        assert start[2] == pytest.approx(spawn, abs=1e-5), (engine, name)
        assert (np.linalg.norm(end - start) < STILL) if fixed else (start[2] - end[2] > FALLEN), (engine, start, end)


@pytest.mark.engines
@pytest.mark.parametrize("name", ["mjcf_welded", "urdf_world_link", "mjcf_freejoint"])
@pytest.mark.parametrize("trained_on", ENGINES)
def test_a_run_uses_the_training_engines_base_on_both_engines(robots, name, trained_on):
    """A task trained on either engine (its ``transfer task`` file, ``trained_on`` set): on both engines the
    environment asks for the training engine's base, the engines build it, and a policy's random actions do not
    move a fixed base."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    import dataclasses

    from transfer.env import PolicyEnv
    from transfer.env.spawn import training_base
    from transfer.runs.task_file import starting_task

    usd, held = robots[name], name not in FLOATING
    task = dataclasses.replace(starting_task(str(usd)).task, trained_on=trained_on)
    assert training_base(task, usd) is held
    rng = np.random.default_rng(0)
    for engine in ENGINES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = PolicyEnv(task, usd, engine, "physx")
        with env:
            assert env.scene.fixed_base is held and env.art.fixed_base is held, engine
            start = env.root_state()[0][0].copy()
            for _ in range(10):
                env.step(rng.uniform(-1, 1, (1, env.action_size)))
            moved = float(np.linalg.norm(env.root_state()[0][0] - start))
            assert moved < STILL if held else moved > STILL, (engine, moved)
