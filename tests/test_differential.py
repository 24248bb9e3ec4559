"""Differential tests: the USD-only emulation of each engine's order equals what the engine reports.

Real assets (../shared and the Ants shipped inside newton and ovphysx) and hypothesis-generated USD
articulations (tests/usdgen.py). CI runs DIFF_EXAMPLES (default 100) generated stages through both engines;
`pytest -m slow` runs 1,000.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings

from tests.conftest import SHARED
from tests.usdgen import stages, write_stage
from transfer.backends import engine_orders
from transfer.backends.base import EngineRefusal
from transfer.orders import MjwarpRefusal, mjwarp_order, physx_order, read_topology

pytest.importorskip("ovphysx")
pytest.importorskip("newton")

pytestmark = [
    pytest.mark.engines,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

SHARED_ASSETS = [
    "anybotics_anymal_c/usd/anymal_c.usda",
    "anybotics_anymal_d/usd/anymal_d.usda",
    "unitree_go2/usd/go2_flat.usda",
    "unitree_go2/usd/go2.usda",
    "fourbar_pole/usd/fourbar_pole.usda",
]


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    return Path(spec.submodule_search_locations[0], *parts)


PACKAGE_ASSETS = [
    ("newton", "examples/assets/ant.usda"),
    ("ovphysx", "samples/data/Ant.usda"),
    ("ovphysx", "samples/data/AntNoSelfColl.usda"),
]


def assert_emulation_matches_engines(path: Path) -> str:
    """Compare both conventions with both engines on every articulation of ``path``."""
    topo = read_topology(path)
    engine_physx = engine_orders("physx", path)
    assert sorted(o.root for o in engine_physx) == sorted(topo.roots), "PhysX found other articulations"
    by_root = {o.root: o for o in engine_physx}
    try:
        engine_newton = {o.root: o for o in engine_orders("newton", path)}
        refusal = None
    except EngineRefusal as exc:
        engine_newton, refusal = {}, exc
    for graph in topo:
        emulated, engine = physx_order(graph), by_root[graph.root]
        assert (emulated.joints, emulated.bodies) == (engine.joints, engine.bodies), f"physx order of {graph.root}"
        assert emulated.fixed_base == engine.fixed_base, f"physx fixed_base of {graph.root}"

    # Newton refuses a whole stage when any articulation in it is refused.
    emulated_newton, emulated_refusals = {}, []
    for graph in topo:
        try:
            emulated_newton[graph.root] = mjwarp_order(graph)
        except MjwarpRefusal as exc:
            emulated_refusals.append(str(exc))
    if refusal is not None:
        assert emulated_refusals, f"Newton refused ({refusal.reason}) but the emulation accepted"
        assert _reason_kind(refusal.reason) in {_reason_kind(r) for r in emulated_refusals}
        return f"Newton refused: {_reason_kind(refusal.reason)}"
    assert not emulated_refusals, f"the emulation refused ({emulated_refusals[0]}) but Newton accepted"
    for graph in topo:
        emulated, engine = emulated_newton[graph.root], engine_newton[graph.root]
        assert (emulated.joints, emulated.bodies) == (engine.joints, engine.bodies), f"mjwarp order of {graph.root}"
        assert emulated.fixed_base == engine.fixed_base, f"mjwarp fixed_base of {graph.root}"
    return "Newton accepted"


def _reason_kind(reason: str) -> str:
    """The kind of a Newton refusal: its message up to the first detail."""
    for kind in ("Reversed joints", "cycle", "Multiple roots", "composition errors", "Cannot merge"):
        if kind in reason:
            return kind
    return reason


@pytest.mark.parametrize("relative", SHARED_ASSETS)
def test_shared_assets(relative, shared):
    assert_emulation_matches_engines(shared / "assets" / relative)


@pytest.mark.parametrize(("package", "relative"), PACKAGE_ASSETS, ids=[f"{p}:{r}" for p, r in PACKAGE_ASSETS])
def test_assets_shipped_in_the_engine_packages(package, relative):
    path = _package_file(package, relative)
    assert path.is_file(), f"{package} no longer ships {relative}"
    assert_emulation_matches_engines(path)


def test_anymal_c_orders_equal_the_policy_yaml(shared):
    import yaml

    meta = yaml.safe_load((shared / "policies/anybotics_anymal_c/rl_policies/anymal.yaml").read_text())
    graph = read_topology(SHARED / "assets/anybotics_anymal_c/usd/anymal_c.usda").articulations[0]
    assert list(physx_order(graph).joints) == meta["physx_joint_names"]
    assert list(mjwarp_order(graph).joints) == meta["mjw_joint_names"]


_workdir = Path(tempfile.mkdtemp(prefix="transfer-diff-"))
_counter = itertools.count()


def _check_generated(spec) -> None:
    path = write_stage(spec, _workdir / f"stage_{next(_counter)}.usda")
    event(assert_emulation_matches_engines(path))
    path.unlink()
    for art in spec.articulations:
        event(f"root API on {art.root_on}")
        event(f"bodies {'2-9' if len(art.bodies) < 10 else '10-40'}")
        if any(j.body0 is None or j.body1 is None for j in art.joints):
            event("world-anchored")
        if any(j.excluded for j in art.joints):
            event("excluded loop joint")
        if any(b.nest_under is not None for b in art.bodies):
            event("nested bodies")
        if any(j.type == "d6" for j in art.joints):
            event("D6 joints")
    if len(spec.articulations) == 2:
        event("two articulations in one stage")


_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


@settings(max_examples=int(os.environ.get("DIFF_EXAMPLES", "100")), **_SETTINGS)
@given(stages())
def test_generated_articulations(spec):
    _check_generated(spec)


@pytest.mark.slow
@settings(max_examples=1000, **_SETTINGS)
@given(stages())
def test_generated_articulations_1000(spec):
    _check_generated(spec)
