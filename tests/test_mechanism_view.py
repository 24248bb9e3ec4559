"""MechanismView, JointView, BodyView and import_usd(infer_tree) on the real Newton engine (CPU).

Assets: the four-bar pole from shared/ with its articulation root removed (fixed: keeps ``root_joint`` to the
world; floating: without it), Newton's own ``boxes_fourbar.usda`` (rootless, one closed loop), an open rootless
chain built in memory with pxr, and the original (rooted) four-bar pole.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_asset

newton = pytest.importorskip("newton")
wp = pytest.importorskip("warp")
pxr = pytest.importorskip("pxr")

from newton.selection import ArticulationView  # noqa: E402
from pxr import Gf, Usd, UsdGeom, UsdPhysics  # noqa: E402

import transfer  # noqa: E402
from transfer.backends.newton import (  # noqa: E402
    BodyView,
    CapabilityError,
    JointView,
    MechanismView,
    import_usd,
)

WORLDS = 3
FREE_FIXED = [newton.JointType.FREE, newton.JointType.FIXED]


# ---------------------------------------------------------------------------------------------------------------
# Assets
# ---------------------------------------------------------------------------------------------------------------
def fourbar_path() -> Path:
    return shared_asset("fourbar_pole/usd/fourbar_pole.usda")


def write_rootless_fourbar(dst: Path, *, floating: bool) -> Path:
    """The shared four-bar pole without its articulation root (and without ``root_joint`` when floating)."""
    stage = Usd.Stage.Open(str(fourbar_path()))
    stage.SetEditTarget(stage.GetSessionLayer())  # never the shared file's own layer, which other stages hold open
    stage.GetPrimAtPath("/fourbar_pole").RemoveAPI(UsdPhysics.ArticulationRootAPI)
    if floating:
        stage.GetPrimAtPath("/fourbar_pole/root_joint").SetActive(False)  # inactive: left out of the flattened copy
    stage.Flatten().Export(str(dst))  # flattened: the relative Props/ references need no copy
    return dst


def boxes_fourbar_path() -> Path:
    return Path(os.path.dirname(newton.__file__)) / "examples" / "assets" / "boxes_fourbar.usda"


def open_chain_stage(links: int = 4) -> Usd.Stage:
    """An open chain of ``links`` bodies joined by revolute joints, no articulation root, in memory."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, "/chain")
    stage.SetDefaultPrim(root.GetPrim())
    for i in range(links):
        xf = UsdGeom.Xform.Define(stage, f"/chain/link{i}")
        xf.AddTranslateOp().Set(Gf.Vec3d(0.3 * i, 0.0, 1.0))
        prim = xf.GetPrim()
        UsdPhysics.RigidBodyAPI.Apply(prim)
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(1.0)
        mass.CreateCenterOfMassAttr(Gf.Vec3f(0.15, 0.0, 0.0))
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.001, 0.01, 0.01))
    for i in range(1, links):
        joint = UsdPhysics.RevoluteJoint.Define(stage, f"/chain/joint{i}")
        joint.CreateAxisAttr("Y")
        joint.CreateBody0Rel().SetTargets([f"/chain/link{i - 1}"])
        joint.CreateBody1Rel().SetTargets([f"/chain/link{i}"])
        joint.CreateLocalPos0Attr(Gf.Vec3f(0.3, 0.0, 0.0))
        joint.CreateLocalPos1Attr(Gf.Vec3f(0.0, 0.0, 0.0))
    return stage


# Expected layouts (Newton's depth-first order; mjwarp convention).
FOURBAR_LINKS = ["ground_link", "crank", "coupler", "pole", "rocker"]
FOURBAR_DOFS = ["ground_to_crank", "crank_to_coupler", "coupler_to_pole", "coupler_to_rocker"]
CASES = {
    # name: (pattern, policy, expected base, dofs, links, loop joints, root body leaf)
    "fourbar_fixed": (
        "/fourbar_pole",
        "infer_tree",
        "fixed",
        FOURBAR_DOFS,
        FOURBAR_LINKS,
        ["rocker_to_ground"],
        "ground_link",
    ),
    "fourbar_floating": (
        "/fourbar_pole",
        "infer_tree",
        "floating",
        FOURBAR_DOFS,
        FOURBAR_LINKS,
        ["rocker_to_ground"],
        "ground_link",
    ),
    "boxes_fourbar": (
        "/boxes_fourbar",
        "infer_tree",
        "floating",
        ["joint_1", "joint_2", "joint_3"],
        ["body_1", "body_2", "body_3", "body_4"],
        ["joint_4"],
        "body_1",
    ),
    "open_chain": (
        "/chain",
        "infer_tree",
        "floating",
        ["joint1", "joint2", "joint3"],
        ["link0", "link1", "link2", "link3"],
        [],
        "link0",
    ),
    "fourbar_rooted": (
        "/fourbar_pole",
        "none",
        "fixed",
        FOURBAR_DOFS,
        FOURBAR_LINKS,
        ["rocker_to_ground"],
        "ground_link",
    ),
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("mechanisms")
    return {
        "fourbar_fixed": write_rootless_fourbar(tmp / "fourbar_fixed.usda", floating=False),
        "fourbar_floating": write_rootless_fourbar(tmp / "fourbar_floating.usda", floating=True),
        "boxes_fourbar": boxes_fourbar_path(),
        "open_chain": open_chain_stage(),
        "fourbar_rooted": fourbar_path(),
    }


def replicated(source, policy: str, worlds: int = WORLDS):
    sub, summary = import_usd(source, policy)
    scene = newton.ModelBuilder()
    scene.replicate(sub, worlds)
    rootless = policy == "none" and not sub.articulation_count
    return scene.finalize(device="cpu", skip_validation_joints=rootless), summary


@pytest.fixture(scope="module")
def models(sources) -> dict:
    return {name: replicated(sources[name], CASES[name][1]) for name in CASES}


@pytest.fixture(scope="module")
def rootless_models(sources) -> dict:
    """The rootless assets imported with policy 'none' (no articulation at all)."""
    return {name: replicated(sources[name], "none") for name in ("fourbar_fixed", "boxes_fourbar", "open_chain")}


# ---------------------------------------------------------------------------------------------------------------
# Counts, names, index maps
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_counts_names_and_index_maps(models, name):
    pattern, _, base, dofs, links, loops, root = CASES[name]
    model, _ = models[name]
    view = MechanismView(model, pattern)
    assert view.base == base
    assert view.world_count == WORLDS
    assert view.joint_dof_names == dofs and view.joint_names == dofs
    assert view.joint_dof_count == view.joint_coord_count == view.joint_count == len(dofs)
    assert view.link_names == links and view.link_count == len(links)
    assert view.loop_joint_names == loops
    assert view.link_names[view.root_link_index] == root
    assert model.body_label[view.root_body_id].endswith("/" + root)
    # one stride between worlds, the same layout in every world
    for ids, count in ((view.joint_dof_ids, model.joint_dof_count), (view.link_ids, model.body_count)):
        stride = count // WORLDS
        np.testing.assert_array_equal(ids, ids[0][None, :] + stride * np.arange(WORLDS)[:, None])
    np.testing.assert_array_equal(view.root_body_ids, view.link_ids[:, view.root_link_index])
    labels = [model.joint_label[j].rsplit("/", 1)[-1] for j in view.joint_ids[1]]
    assert labels == dofs
    assert check_capabilities(model, view) == dict.fromkeys(view.capabilities, True)
    root_type = newton.JointType(int(model.joint_type.numpy()[view.root_joint_id]))
    assert int(model.joint_child.numpy()[view.root_joint_id]) == view.root_body_id
    if base == "floating":
        assert root_type == newton.JointType.FREE and not view.root_joint_authored  # add_usd's FREE joint_1
    else:
        assert root_type == newton.JointType.FIXED and int(model.joint_parent.numpy()[view.root_joint_id]) == -1
        assert view.root_joint_authored and model.joint_label[view.root_joint_id].endswith("root_joint")


def check_capabilities(model, view: MechanismView) -> dict[str, bool]:
    """Exercise what each declared capability gates; return what worked (a False one must raise instead)."""
    pattern = view.articulation_label or view.pattern

    def fk() -> None:  # joint coordinates written without FK leave the links; eval_fk moves them
        state = model.state()
        links = view.get_link_transforms(state).numpy().copy()
        q = view.get_dof_positions(state).numpy() + np.float32(0.2)
        view.set_dof_positions(state, wp.array(q), fk=False)
        np.testing.assert_array_equal(view.get_link_transforms(state).numpy(), links)
        view.eval_fk(state)
        assert not np.allclose(view.get_link_transforms(state).numpy(), links, atol=1e-4)

    def mass_matrix() -> None:  # (W, D, D) over the articulation's DoFs (6 for a FREE root), symmetric, SPD
        H = view.eval_mass_matrix(model.state()).numpy().astype(np.float64)
        d = view.joint_dof_count + (6 if view.base == "floating" else 0)
        assert H.shape == (view.world_count, d, d)
        np.testing.assert_allclose(H, np.swapaxes(H, 1, 2), atol=1e-5)
        assert (np.linalg.eigvalsh(H) > 0).all()

    def root_state() -> None:  # the root pose is the root link's; writing it back round-trips
        state = model.state()
        pose = view.get_root_transforms(state).numpy().copy()
        np.testing.assert_array_equal(pose, view.get_link_transforms(state).numpy()[:, view.root_link_index])
        view.set_root_transforms(state, wp.array(pose))
        np.testing.assert_allclose(view.get_root_transforms(state).numpy(), pose, atol=2e-6)
        assert view.get_root_velocities(state).shape == (view.world_count,)

    def loop_joints() -> None:  # loop joints stay joints of the model: listed, and read through their view
        if view.loop_joints is None:
            assert view.loop_joint_names == []
            return
        q = view.loop_joints.get_attribute("joint_q", model.state()).numpy()
        assert q.shape == (view.world_count, view.loop_joints.joint_coord_count)
        assert [model.joint_label[j].rsplit("/", 1)[-1] for j in view.loop_joints.joint_ids[1]] == view.loop_joint_names

    def articulation_tree() -> None:  # Newton's own ArticulationView accepts the asset, in the same DoF order
        assert ArticulationView(model, pattern, exclude_joint_types=FREE_FIXED).joint_dof_names == view.joint_dof_names

    probes = {
        "supports_fk": (fk, CapabilityError),
        "supports_mass_matrix": (mass_matrix, CapabilityError),
        "supports_root_state": (root_state, CapabilityError),
        "supports_loop_joints": (loop_joints, CapabilityError),
        "supports_articulation_tree": (articulation_tree, KeyError),
    }
    assert set(probes) == set(view.capabilities)
    for capability, declared in view.capabilities.items():
        probe, refusal = probes[capability]
        if declared:
            probe()
        else:
            with pytest.raises(refusal):
                probe()
    return view.capabilities


def test_mjwarp_order_of_the_rooted_fourbar_matches_resolve_ordering(models):
    model, _ = models["fourbar_rooted"]
    view = MechanismView(model, "/fourbar_pole")
    order = transfer.resolve_ordering(fourbar_path(), "mjwarp")
    assert tuple(view.joint_dof_names) == order.joints
    assert tuple(view.link_names) == order.bodies
    assert view.is_fixed_base == order.fixed_base


@pytest.mark.parametrize("name", ["fourbar_fixed", "boxes_fourbar", "open_chain"])
def test_rootless_none_policy_has_no_tree(rootless_models, name):
    pattern = CASES[name][0]
    model, summary = rootless_models[name]
    assert summary.policy == "none" and summary.articulations == () and summary.rootless_components == 1
    assert "infer_tree" in summary.notes[0]
    view = MechanismView(model, pattern)
    assert view.base == ("fixed" if name == "fourbar_fixed" else "implicit_floating")
    assert not view.supports_fk and not view.supports_articulation_tree and not view.supports_mass_matrix
    assert view.supports_root_state
    assert view.loop_joint_names == []  # without a tree every joint is just a joint
    assert check_capabilities(model, view) == {
        "supports_fk": False,
        "supports_mass_matrix": False,
        "supports_loop_joints": True,
        "supports_root_state": True,
        "supports_articulation_tree": False,
    }
    state = model.state()
    with pytest.raises(CapabilityError, match="supports_fk is False.*infer_tree"):
        view.eval_fk(state)
    with pytest.raises(CapabilityError, match="supports_mass_matrix"):
        view.eval_mass_matrix(state)
    none = MechanismView(model, pattern, base="none")
    assert not check_capabilities(model, none)["supports_root_state"]
    with pytest.raises(CapabilityError, match="supports_root_state"):
        none.get_root_transforms(state)
    with pytest.raises(KeyError):
        ArticulationView(model, pattern)  # what Newton's own view says about rootless assets


def test_base_policy_mismatch_names_the_fix(models):
    model, _ = models["fourbar_fixed"]
    with pytest.raises(ValueError, match=r"base='floating'.*has base 'fixed'.*root_joint.*base='auto'"):
        MechanismView(model, "/fourbar_pole", base="floating")
    with pytest.raises(ValueError, match="expected one of"):
        MechanismView(model, "/fourbar_pole", base="wobbly")
    with pytest.raises(KeyError, match="matches no articulation label"):
        MechanismView(model, "/nothing_here")


def test_joint_view_filters(models):
    model, _ = models["fourbar_rooted"]
    everything = JointView(model, "/fourbar_pole", include_loop_joints=True)
    assert everything.joint_names == ["root_joint", *FOURBAR_DOFS, "rocker_to_ground"]
    assert everything.is_loop_joint == [False] * 5 + [True]
    assert everything.joint_dof_counts == [0, 1, 1, 1, 1, 1]
    coupler = JointView(model, "/fourbar_pole", include="coupler_*")
    assert coupler.joint_names == ["coupler_to_pole", "coupler_to_rocker"]
    regex = JointView(model, "/fourbar_pole", include=__import__("re").compile(r".*crank.*"), exclude="ground_*")
    assert regex.joint_names == ["crank_to_coupler"]
    revolute = JointView(model, "/fourbar_pole", joint_types=[newton.JointType.REVOLUTE])
    assert revolute.joint_names == FOURBAR_DOFS
    # every world reads its own joints' DoFs: each entry of a per-DoF state array is found at the DoF of the
    # joint of that name in that world
    state = model.state()
    state.joint_qd.assign(np.arange(model.joint_dof_count, dtype=np.float32))
    qd_start = model.joint_qd_start.numpy()
    at = {
        (int(w), label.rsplit("/", 1)[-1]): j
        for j, (w, label) in enumerate(zip(model.joint_world.numpy(), model.joint_label, strict=True))
    }
    expected = [[qd_start[at[w, name]] for name in FOURBAR_DOFS] for w in range(WORLDS)]
    np.testing.assert_array_equal(revolute.get_velocities(state).numpy(), expected)
    assert expected[1][0] == expected[0][0] + model.joint_dof_count // WORLDS
    bodies = BodyView(model, "/fourbar_pole", exclude="pole")
    assert bodies.body_names == ["ground_link", "crank", "coupler", "rocker"]
    assert bodies.shape_count == 8 and all(len(s) == 2 for s in bodies.body_shapes)


# ---------------------------------------------------------------------------------------------------------------
# infer_tree
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fourbar_fixed", "fourbar_floating", "boxes_fourbar", "open_chain"])
def test_infer_tree_layout_and_articulation_view(models, name):
    pattern, _, base, dofs, links, loops, root = CASES[name]
    model, summary = models[name]
    (tree,) = summary.trees
    assert summary.policy == "infer_tree" and summary.rootless_components == 1
    assert tree.root_body.endswith("/" + root) and tree.fixed == (base == "fixed")
    assert [p.rsplit("/", 1)[-1] for p in tree.loop_joints] == loops
    assert summary.loop_joints == tree.loop_joints and summary.inferred_roots == (tree.root_body,)
    # contiguous tree block, loop joints right after it, articulation metadata over the tree block only
    start = model.articulation_start.numpy()
    end = model.articulation_end.numpy()
    per_world = model.joint_count // WORLDS
    for w in range(WORLDS):
        labels = model.joint_label[start[w] : start[w + 1]]
        n_tree = end[w] - start[w]
        assert [lb.rsplit("/", 1)[-1] for lb in labels[n_tree:]] == loops
        assert set(labels[:n_tree]) - {"joint_1"} == set(tree.tree_joints)
        assert start[w + 1] - start[w] == per_world
    assert (model.joint_articulation.numpy()[end[0] : start[1]] == -1).all()
    # Newton's own ArticulationView accepts the result and agrees on the order
    view = ArticulationView(model, "*", exclude_joint_types=FREE_FIXED)
    assert view.joint_dof_names == dofs and view.link_names == links
    assert view.is_fixed_base == (base == "fixed")
    loops_view = ArticulationView(model, "*", include_loop_closing_joints=True)
    assert loops_view.joint_names[len(loops_view.joint_names) - len(loops) :] == loops


def test_infer_tree_reports_moved_coordinates(sources):
    """Coordinates move by the 7 of the added FREE joint, and by the tree reordering (pole before rocker)."""
    builder, summary = import_usd(sources["fourbar_floating"], "infer_tree")
    assert summary.added_joints == ("joint_1",)
    moved = {m.joint.rsplit("/", 1)[-1]: m for m in summary.reordered_coordinates}
    # policy 'none' keeps prim order: ground_to_crank, crank_to_coupler, coupler_to_rocker, rocker_to_ground,
    # coupler_to_pole
    assert moved["ground_to_crank"].coords_before == (0, 1) and moved["ground_to_crank"].coords_after == (7, 8)
    assert moved["coupler_to_pole"].coords_before == (4, 5) and moved["coupler_to_pole"].coords_after == (9, 10)
    assert moved["coupler_to_rocker"].dofs_before == (2, 3) and moved["coupler_to_rocker"].dofs_after == (9, 10)
    # the reference is a real policy-'none' import
    none, _ = import_usd(sources["fourbar_floating"], "none")
    assert [lb.rsplit("/", 1)[-1] for lb in none.joint_label] == [
        "ground_to_crank",
        "crank_to_coupler",
        "coupler_to_rocker",
        "rocker_to_ground",
        "coupler_to_pole",
    ]


def test_infer_tree_never_touches_the_users_file(sources):
    path = sources["fourbar_fixed"]
    before = Path(path).read_bytes()
    import_usd(path, "infer_tree")
    assert Path(path).read_bytes() == before
    stage = sources["open_chain"]
    import_usd(stage, "infer_tree")
    assert not stage.GetPrimAtPath("/chain/link0").HasAPI(UsdPhysics.ArticulationRootAPI)


def _retarget(stage, joint: str, body0: str, body1: str) -> None:
    j = UsdPhysics.Joint(stage.GetPrimAtPath(joint)) or UsdPhysics.RevoluteJoint.Define(stage, joint)
    j.CreateBody0Rel().SetTargets([body0])
    j.CreateBody1Rel().SetTargets([body1])


def test_infer_tree_orients_by_authored_direction_or_refuses():
    stage = open_chain_stage(3)  # link0 -joint1-> link1 -joint2-> link2
    _retarget(stage, "/chain/joint1", "/chain/link1", "/chain/link0")  # link1 -> link0 and link1 -> link2
    _, summary = import_usd(stage, "infer_tree")
    assert summary.inferred_roots == ("/chain/link1",) and summary.loop_joints == ()
    UsdPhysics.RevoluteJoint.Define(stage, "/chain/joint3")
    _retarget(stage, "/chain/joint3", "/chain/link0", "/chain/link2")  # a second way into link2: a loop
    _, summary = import_usd(stage, "infer_tree")
    assert summary.inferred_roots == ("/chain/link1",) and summary.loop_joints == ("/chain/joint3",)
    stage.RemovePrim("/chain/joint3")
    _retarget(stage, "/chain/joint1", "/chain/link0", "/chain/link1")
    _retarget(stage, "/chain/joint2", "/chain/link2", "/chain/link1")  # link0 -> link1 <- link2: no root
    with pytest.raises(transfer.OrderingError, match=r"Reversed|reversed joints.*joint"):
        import_usd(stage, "infer_tree")


# ---------------------------------------------------------------------------------------------------------------
# Writes and reads
# ---------------------------------------------------------------------------------------------------------------
ALL_MODELS = [*CASES, "fourbar_fixed_none", "boxes_fourbar_none", "open_chain_none"]


def _model_and_pattern(models, rootless_models, name):
    if name.endswith("_none"):
        base = name[: -len("_none")]
        return rootless_models[base][0], CASES[base][0]
    return models[name][0], CASES[name][0]


@pytest.mark.parametrize("name", ALL_MODELS)
def test_write_then_read_round_trips(sources, name):
    base = name.removesuffix("_none")
    model, _ = replicated(sources[base], "none" if name.endswith("_none") else CASES[base][1])  # mutated below
    pattern = CASES[base][0]
    view = MechanismView(model, pattern)
    state, control = model.state(), model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state)
    rng = np.random.default_rng(0)
    W, D = view.world_count, view.joint_dof_count
    q = rng.uniform(-0.3, 0.3, (W, D)).astype(np.float32)
    qd = rng.uniform(-1, 1, (W, D)).astype(np.float32)
    view.set_dof_state(state, wp.array(q), wp.array(qd))
    np.testing.assert_array_equal(view.get_dof_positions(state).numpy(), q)
    np.testing.assert_array_equal(view.get_dof_velocities(state).numpy(), qd)
    for setter, getter in (
        (view.set_dof_position_targets, view.get_dof_position_targets),
        (view.set_dof_velocity_targets, view.get_dof_velocity_targets),
        (view.set_dof_efforts, view.get_dof_efforts),
    ):
        setter(control, wp.array(q))
        np.testing.assert_array_equal(getter(control).numpy(), q)
    for prop in ("stiffness", "damping", "armature", "friction", "position_limit_lower", "velocity_limit"):
        values = rng.uniform(0.1, 2.0, (W, D)).astype(np.float32)
        view.joints.set_property(prop, wp.array(values))
        np.testing.assert_array_equal(view.joints.get_property(prop).numpy(), values)
    # root pose: a rotation and a translation per world, as (W, 7) float32 xyzw
    pose = np.zeros((W, 7), np.float32)
    for w in range(W):
        half = 0.2 * (w + 1)
        pose[w] = [0.1 * w, -0.2, 0.5 + w, 0.0, 0.0, np.sin(half), np.cos(half)]
    view.set_root_transforms(state, wp.array(pose))
    np.testing.assert_allclose(view.get_root_transforms(state).numpy(), pose, atol=2e-6)
    if view.base != "fixed":
        twist = rng.uniform(-1, 1, (W, 6)).astype(np.float32)
        view.set_root_velocities(state, wp.array(twist))
        np.testing.assert_allclose(view.get_root_velocities(state).numpy(), twist, atol=2e-6)
    masses = rng.uniform(0.5, 2.0, (W, view.link_count)).astype(np.float32)
    view.links.set_masses(wp.array(masses))
    np.testing.assert_array_equal(view.links.get_masses().numpy(), masses)
    np.testing.assert_allclose(model.body_inv_mass.numpy()[view.link_ids], 1.0 / masses, rtol=1e-6)
    inertia = np.zeros((W, view.link_count, 3, 3), np.float32)
    inertia[..., [0, 1, 2], [0, 1, 2]] = rng.uniform(0.01, 0.1, (W, view.link_count, 3))
    view.links.set_inertias(wp.array(inertia))  # float32 (W, B, 3, 3) is accepted for mat33
    np.testing.assert_array_equal(view.links.get_inertias().numpy(), inertia)
    np.testing.assert_allclose(model.body_inv_inertia.numpy()[view.link_ids], np.linalg.inv(inertia), rtol=1e-5)
    wrenches = rng.normal(size=(W, view.link_count, 6)).astype(np.float32)
    view.apply_link_wrenches(state, wp.array(wrenches), env_ids=[0])
    expected = np.zeros_like(wrenches)
    expected[0] = wrenches[0]
    np.testing.assert_array_equal(view.links.get_wrenches(state).numpy(), expected)


@pytest.fixture(scope="module")
def partial_setup(models):
    model, _ = models["fourbar_floating"]
    view = MechanismView(model, "/fourbar_pole")
    return model, view, model.state(), model.control()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_partial_dof_writes_touch_only_the_selection(partial_setup, data):
    model, view, state, control = partial_setup
    W, J = view.world_count, view.joint_count
    envs = data.draw(st.lists(st.integers(0, W - 1), unique=True, max_size=W), label="env_ids")
    joints = data.draw(st.lists(st.integers(0, J - 1), unique=True, max_size=J), label="joint_ids")
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    as_warp = data.draw(st.booleans(), label="env_ids as wp.array")
    rng = np.random.default_rng(seed)
    before_q = rng.normal(size=(W, J)).astype(np.float32)
    view.set_dof_positions(state, wp.array(before_q), fk=False)
    view.set_dof_position_targets(control, wp.array(before_q))
    values = rng.normal(size=(W, J)).astype(np.float32)
    env_ids = wp.array(np.asarray(envs, np.int32), dtype=wp.int32) if as_warp else envs
    flat_before = state.joint_q.numpy().copy()
    view.set_dof_positions(state, wp.array(values), env_ids=env_ids, joint_ids=joints, fk=False)
    view.set_dof_position_targets(control, wp.array(values), env_ids=env_ids, joint_ids=joints)
    expected = before_q.copy()
    expected[np.ix_(envs, joints)] = values[np.ix_(envs, joints)]
    np.testing.assert_array_equal(view.get_dof_positions(state).numpy(), expected)
    np.testing.assert_array_equal(view.get_dof_position_targets(control).numpy(), expected)
    # every model coordinate outside the selected (world, joint) pairs is untouched, in every world
    expected_flat = flat_before.copy()
    for e in envs:
        for j in joints:
            expected_flat[view.joint_coord_ids[e, j]] = values[e, j]
    np.testing.assert_array_equal(state.joint_q.numpy(), expected_flat)


@settings(max_examples=30, deadline=None)
@given(envs=st.lists(st.integers(0, WORLDS - 1), unique=True), seed=st.integers(0, 1000))
def test_partial_root_and_link_writes(partial_setup, envs, seed):
    model, view, state, _ = partial_setup
    zeros = wp.zeros((WORLDS, view.joint_dof_count), dtype=wp.float32)
    view.set_dof_state(state, view.joints.get_property("default_position"), zeros)
    initial = model.state()  # the asset as authored
    view.set_root_transforms(state, wp.clone(view.get_root_transforms(initial)))
    links_before = view.get_link_transforms(state).numpy().copy()
    rng = np.random.default_rng(seed)
    pose = np.zeros((WORLDS, 7), np.float32)
    pose[:, :3] = rng.uniform(-1, 1, (WORLDS, 3))
    pose[:, 6] = 1.0
    view.set_root_transforms(state, wp.array(pose), env_ids=envs)
    links = view.get_link_transforms(state).numpy()
    untouched = [w for w in range(WORLDS) if w not in envs]
    np.testing.assert_array_equal(links[untouched], links_before[untouched])
    for w in envs:  # identity rotation: every link shifts by the root's displacement
        shift = pose[w, :3] - links_before[w, view.root_link_index, :3]
        np.testing.assert_allclose(links[w, :, :3], links_before[w, :, :3] + shift, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# Conventions and stepping
# ---------------------------------------------------------------------------------------------------------------
def test_body_velocity_is_com_linear_then_angular_world(models):
    """Newton 1.8 ``body_qd`` = (v_com, omega), world frame: spin the crank about its pivot and look."""
    model, _ = models["fourbar_rooted"]
    view = MechanismView(model, "/fourbar_pole")
    state = model.state()
    qd = np.zeros((WORLDS, view.joint_dof_count), np.float32)
    qd[:, view.joint_dof_names.index("ground_to_crank")] = 2.0
    view.set_dof_state(state, view.joints.get_property("default_position"), wp.array(qd))
    crank = view.link_names.index("crank")
    twist = view.get_link_velocities(state).numpy()[:, crank]
    com = view.get_body_coms(state).numpy()[:, crank]
    link = view.get_link_transforms(state).numpy()[:, crank]
    # ground_to_crank turns about the crank's X axis through the crank's origin (earlier tests may have moved the
    # anchors, so express it in the world with the link's xyzw quaternion)
    omega = quat_rotate(link[:, 3:], np.array([2.0, 0.0, 0.0]))
    np.testing.assert_allclose(twist[:, 3:], omega, atol=1e-5)
    np.testing.assert_allclose(twist[:, :3], np.cross(omega, com[:, :3] - link[:, :3]), atol=1e-5)
    assert np.abs(twist[:, :3]).max() > 0.4  # the COM moves, the link origin (on the axis) does not
    np.testing.assert_allclose(com[:, :3] - link[:, :3], quat_rotate(link[:, 3:], np.array([0, 0, 0.25])), atol=1e-5)
    np.testing.assert_allclose(com[:, 3:], link[:, 3:], atol=1e-7)


def quat_rotate(q_xyzw: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by unit quaternions given as ``x, y, z, w`` (rows)."""
    xyz, w = q_xyzw[..., :3], q_xyzw[..., 3:4]
    t = 2.0 * np.cross(xyz, v)
    return v + w * t + np.cross(xyz, t)


# SemiImplicit integrates contacts explicitly: the boxes of boxes_fourbar (1 kg, 1.7e-5 kg m^2 about their long
# axis) resting on the ground diverge within 20 steps of 1e-4 s; 1e-5 s is stable.
DT = {"xpbd": 1.0e-3, "semi_implicit": 1.0e-5}


@pytest.mark.parametrize("solver", ["xpbd", "semi_implicit"])
@pytest.mark.parametrize(
    "name", ["fourbar_fixed", "fourbar_floating", "boxes_fourbar", "open_chain", "boxes_fourbar_none"]
)
def test_maximal_coordinate_solvers_step(models, rootless_models, name, solver):
    model, pattern = _model_and_pattern(models, rootless_models, name)
    view = MechanismView(model, pattern)
    make = {"xpbd": newton.solvers.SolverXPBD, "semi_implicit": newton.solvers.SolverSemiImplicit}[solver]
    sim = make(model)
    s0, s1, control = model.state(), model.state(), model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    pipeline = newton.CollisionPipeline(model) if model.shape_count else None
    contacts = pipeline.contacts() if pipeline else None
    start = view.get_link_transforms(s0).numpy().copy()
    for _ in range(20):
        if pipeline:
            pipeline.collide(s0, contacts)
        sim.step(s0, s1, control, contacts, DT[solver])
        s0, s1 = s1, s0
    links = view.get_link_transforms(s0).numpy()
    assert np.isfinite(links).all() and np.isfinite(view.get_link_velocities(s0).numpy()).all()
    assert not np.array_equal(links, start) or view.base == "fixed"
    if view.supports_fk:
        view.eval_ik(s0)
        assert np.isfinite(view.get_dof_positions(s0).numpy()).all()


# ---------------------------------------------------------------------------------------------------------------
# infer_trees on random graphs (engine-free laws)
# ---------------------------------------------------------------------------------------------------------------
@st.composite
def rootless_graphs(draw):
    from transfer.orders.graph import Body, Joint, JointType

    n = draw(st.integers(1, 6))
    bodies = {f"/m/b{i}": Body(f"/m/b{i}") for i in range(n)}
    sides = st.one_of(st.none(), st.integers(0, n - 1).map(lambda i: f"/m/b{i}"))
    joints = {}
    for k in range(draw(st.integers(0, 9))):
        b0, b1 = draw(sides), draw(sides)
        if b0 == b1:
            continue
        path = f"/m/j{k}"
        joints[path] = Joint(path, JointType.REVOLUTE, b0, b1, excluded=draw(st.integers(0, 4)) == 0)
    return bodies, joints


@settings(max_examples=300, deadline=None)
@given(graph=rootless_graphs(), seed=st.integers(0, 10**6))
def test_infer_trees_laws(graph, seed):
    """Each plan is a spanning tree along authored directions, the rest are loops; refusals are real; order-free."""
    from transfer.backends.newton import infer_trees

    bodies, joints = graph
    try:
        plans = infer_trees(bodies, joints)
    except transfer.OrderingError:
        assert _some_component_has_no_root(bodies, joints)
        return
    shuffled = dict(sorted(joints.items(), key=lambda kv: hash((kv[0], seed))))
    assert infer_trees(bodies, shuffled) == plans  # deterministic, independent of input order
    for plan in plans:
        members = set(plan.bodies)
        comp = {
            p
            for p, j in joints.items()
            if {j.body0, j.body1} - {None} <= members and j.enabled and ({j.body0, j.body1} & members)
        }
        assert set(plan.tree) | set(plan.loops) == comp and not set(plan.tree) & set(plan.loops)
        tree = [joints[p] for p in plan.tree]
        if plan.fixed:
            anchor = tree.pop(0)
            assert None in (anchor.body0, anchor.body1) and not anchor.excluded
            assert plan.root_prim == anchor.path
        else:
            assert plan.root_prim == plan.root_body
            assert not any(None in (joints[p].body0, joints[p].body1) and not joints[p].excluded for p in comp)
        incoming = {}
        for j in tree:
            assert not j.excluded and j.body0 in members and j.body1 in members
            assert j.body1 not in incoming and j.body1 != plan.root_body  # one parent each, none for the root
            incoming[j.body1] = j.body0
        assert set(incoming) == members - {plan.root_body}  # spanning
        for b in incoming:  # every body reaches the root through its parents (no cycle)
            seen = set()
            while b != plan.root_body:
                assert b not in seen
                seen.add(b)
                b = incoming[b]


def _some_component_has_no_root(bodies, joints) -> bool:
    """Brute force: a connected component that no body (or world anchor) reaches along authored directions."""
    edges = [j for j in joints.values() if not j.excluded and j.body0 and j.body1]
    comp = {b: {b} for b in bodies}
    for j in edges:
        merged = comp[j.body0] | comp[j.body1]
        for b in merged:
            comp[b] = merged

    def reach(root):
        seen, todo = {root}, [root]
        while todo:
            b = todo.pop()
            for j in edges:
                if j.body0 == b and j.body1 not in seen:
                    seen.add(j.body1)
                    todo.append(j.body1)
        return seen

    for members in {frozenset(c) for c in comp.values()}:
        anchors = [
            j
            for j in joints.values()
            if not j.excluded and None in (j.body0, j.body1) and ({j.body0, j.body1} & members)
        ]
        if not anchors and not any(j.body0 in members for j in edges):
            continue  # a lone body
        starts = [j.body0 or j.body1 for j in anchors] if anchors else list(members)
        if not any(reach(b) == members for b in starts):
            return True
    return False


def test_multi_dof_joints_expand_joint_ids_and_mass_matrix():
    """A ball joint has 4 coordinates and 3 DoFs: joint ids select all of them; the mass matrix is (W, D, D)."""
    stage = open_chain_stage(3)
    stage.RemovePrim("/chain/joint2")
    ball = UsdPhysics.SphericalJoint.Define(stage, "/chain/joint2")
    ball.CreateBody0Rel().SetTargets(["/chain/link1"])
    ball.CreateBody1Rel().SetTargets(["/chain/link2"])
    ball.CreateLocalPos0Attr(Gf.Vec3f(0.3, 0.0, 0.0))
    model, _ = replicated(stage, "infer_tree", worlds=2)
    view = MechanismView(model, "/chain")
    assert view.joint_names == ["joint1", "joint2"]
    assert view.joint_dof_names == ["joint1", "joint2:0", "joint2:1", "joint2:2"]
    assert view.joint_coord_names == ["joint1", "joint2:0", "joint2:1", "joint2:2", "joint2:3"]
    state = model.state()
    qd = np.arange(8, dtype=np.float32).reshape(2, 4) + 1
    view.set_dof_velocities(state, wp.array(qd), env_ids=[1], joint_ids=[1], fk=False)
    np.testing.assert_array_equal(view.get_dof_velocities(state).numpy(), [[0, 0, 0, 0], [0, 6, 7, 8]])
    q = view.get_dof_positions(state).numpy().copy()
    q[:, 1:] = [0.0, 0.0, np.sin(0.2), np.cos(0.2)]  # a unit quaternion, xyzw
    view.set_dof_positions(state, wp.array(q), joint_ids=wp.array([1], dtype=wp.int32))
    np.testing.assert_allclose(view.get_dof_positions(state).numpy(), q, atol=1e-7)
    H = view.eval_mass_matrix(state).numpy()
    assert H.shape == (2, 6 + 4, 6 + 4)  # the FREE root's 6 DoFs, then joint1 and the ball
    np.testing.assert_allclose(H, np.swapaxes(H, 1, 2), atol=1e-5)
    assert (np.linalg.eigvalsh(H.astype(np.float64)) > 0).all()
