"""The conventions as pure functions of a graph: plain names and edges, no USD, no engine."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer.orders import MjwarpRefusal, OrderingError, graph_from_edges, mjwarp_order, physx_order

LEGS = ("LF", "LH", "RF", "RH")


def quadruped(root_kind="body"):
    edges = []
    for leg in LEGS:
        edges += [
            (f"{leg}_HAA", "base", f"{leg}_HIP"),
            (f"{leg}_HFE", f"{leg}_HIP", f"{leg}_THIGH"),
            (f"{leg}_KFE", f"{leg}_THIGH", f"{leg}_SHANK"),
            (f"{leg}_foot_fixed", f"{leg}_SHANK", f"{leg}_FOOT", "fixed"),
        ]
    return graph_from_edges(edges, root="base", root_kind=root_kind)


def test_quadruped_physx_is_breadth_first():
    order = physx_order(quadruped())
    assert order.joints == tuple(f"{leg}_{j}" for j in ("HAA", "HFE", "KFE") for leg in LEGS)
    assert order.bodies[:5] == ("base", "LF_HIP", "LH_HIP", "RF_HIP", "RH_HIP")
    assert order.bodies[-4:] == tuple(f"{leg}_FOOT" for leg in LEGS)
    assert not order.fixed_base


def test_quadruped_mjwarp_is_depth_first():
    order = mjwarp_order(quadruped())
    assert order.joints == tuple(f"{leg}_{j}" for leg in LEGS for j in ("HAA", "HFE", "KFE"))
    assert order.bodies[:5] == ("base", "LF_HIP", "LF_THIGH", "LF_SHANK", "LF_FOOT")


def test_physx_takes_fixed_children_first():
    g = graph_from_edges([("a_joint", "base", "a"), ("z_head", "base", "head", "fixed")], root="base")
    assert physx_order(g).bodies == ("base", "head", "a")
    assert mjwarp_order(g).bodies == ("base", "a", "head")


def test_root_on_world_joint_is_fixed_base():
    g = graph_from_edges([("anchor", None, "base", "fixed"), ("j", "base", "link")], root="anchor", root_kind="joint")
    for fn in (physx_order, mjwarp_order):
        order = fn(g)
        assert order.fixed_base and order.joints == ("j",) and order.bodies == ("base", "link")


def test_ancestor_election_prefers_the_world_anchor():
    g = graph_from_edges(
        [("j1", "a", "b"), ("j2", "b", "c"), ("anchor", None, "c", "fixed")], root="", root_kind="ancestor"
    )
    order = physx_order(g)
    assert order.root_body == "/r/c" and order.fixed_base
    assert order.bodies == ("c", "b", "a")


def test_ancestor_without_anchor_elects_the_graph_centre():
    g = graph_from_edges(
        [("j1", "a", "b"), ("j2", "b", "c"), ("j3", "c", "d"), ("j4", "d", "e")], root="", root_kind="ancestor"
    )
    order = physx_order(g)
    assert order.root_body == "/r/c" and not order.fixed_base
    assert order.bodies == ("c", "b", "d", "a", "e")


def test_ancestor_nested_fallback_elects_the_seed():
    g = graph_from_edges([("j1", "a", "a/b"), ("j2", "a/b", "a/b/c")], root="", root_kind="ancestor")
    assert physx_order(g).root_body == "/r/a"


def test_loop_joint_is_left_out_by_physx_and_refused_by_newton():
    g = graph_from_edges([("j1", "a", "b"), ("j2", "b", "c"), ("j3", "c", "a")], root="a")
    order = physx_order(g)
    assert order.joints == ("j1", "j2") and order.loop_joints == ("/r/j3",)  # depth-first creation closes at j3
    with pytest.raises(MjwarpRefusal, match="cycle"):
        mjwarp_order(g)


def test_excluded_loop_joint_is_accepted_by_both():
    g = graph_from_edges([("j1", "a", "b"), ("j2", "b", "c"), ("j3", "c", "a")], root="a", excluded=["j3"])
    assert physx_order(g).loop_joints == mjwarp_order(g).loop_joints == ("/r/j3",)
    assert mjwarp_order(g).joints == ("j1", "j2")


def test_reversed_joint_is_fine_for_physx_and_refused_by_newton():
    g = graph_from_edges([("j1", "a", "b"), ("j2", "c", "b")], root="a")
    assert physx_order(g).bodies == ("a", "b", "c")
    with pytest.raises(MjwarpRefusal, match="Reversed joints are not supported: /r/j2"):
        mjwarp_order(g)


def test_multi_dof_names():
    g = graph_from_edges([("ball", "a", "b", "spherical"), ("hinge", "b", "c")], root="a")
    assert physx_order(g).joints == ("ball:0", "ball:1", "ball:2", "hinge")
    assert mjwarp_order(g).joints == ("ball:0", "ball:1", "ball:2", "hinge")


def test_repeated_leaf_names_are_deduplicated_by_physx_only():
    g = graph_from_edges([("j", "a", "x/leg"), ("k", "a", "y/leg")], root="a")
    assert physx_order(g).bodies == ("a", "leg", "leg_0")
    assert mjwarp_order(g).bodies == ("a", "leg", "leg")


def test_self_joint_is_refused_with_the_joint_path():
    g = graph_from_edges([("j", "a", "b"), ("bad", "b", "b")], root="a")
    with pytest.raises(OrderingError, match="/r/bad"):
        physx_order(g)


def test_root_api_on_a_joint_between_two_links_is_refused_with_the_fix():
    g = graph_from_edges([("j", "a", "b")], root="j", root_kind="joint")
    with pytest.raises(OrderingError, match="move the API"):
        physx_order(g)


@st.composite
def trees(draw):
    n = draw(st.integers(2, 40))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    names = draw(st.lists(st.from_regex(r"[a-z]{1,4}", fullmatch=True), min_size=n, max_size=n, unique=True))
    kinds = draw(st.lists(st.sampled_from(["revolute", "prismatic", "fixed"]), min_size=n, max_size=n))
    edges = [(f"j_{names[i]}", names[parents[i]], names[i], kinds[i]) for i in range(1, n)]
    return graph_from_edges(edges, root=names[0]), parents, names


@given(trees())
def test_both_orders_are_permutations_with_parents_first(tree):
    g, parents, names = tree
    px, mj = physx_order(g), mjwarp_order(g)
    assert sorted(px.joints) == sorted(mj.joints)
    assert sorted(px.bodies) == sorted(mj.bodies) == sorted(names)
    for order in (px.bodies, mj.bodies):
        pos = {b: i for i, b in enumerate(order)}
        for i in range(1, len(names)):
            assert pos[names[parents[i]]] < pos[names[i]]


@given(trees())
def test_physx_is_breadth_first_and_mjwarp_keeps_subtrees_contiguous(tree):
    g, parents, names = tree
    depth = {names[0]: 0}
    for i in range(1, len(names)):
        depth[names[i]] = depth[names[parents[i]]] + 1
    px = physx_order(g).bodies
    assert [depth[b] for b in px] == sorted(depth[b] for b in px)
    mj = mjwarp_order(g).bodies
    children = {n: [names[i] for i in range(1, len(names)) if names[parents[i]] == n] for n in names}

    def subtree(n):
        return {n}.union(*(subtree(c) for c in children[n]))

    for n in names:
        members = subtree(n)
        start = mj.index(n)
        assert set(mj[start : start + len(members)]) == members
