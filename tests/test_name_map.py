import numpy as np
import pytest
import torch
import warp as wp
from hypothesis import assume, given
from hypothesis import strategies as st

from transfer import ArticulationNameMap, NameMapError, build_name_map

unique_names = st.lists(
    st.text(alphabet="abcdefgh_:0123", min_size=1, max_size=6), min_size=1, max_size=30, unique=True
)


@st.composite
def name_pairs(draw, min_size=1):
    backend = draw(unique_names.filter(lambda n: len(n) >= min_size))
    user = draw(st.permutations(backend))
    return backend, list(user)


@st.composite
def maps(draw):
    backend, user = draw(name_pairs(min_size=2))
    assume(user != backend)
    return build_name_map(draw(st.sampled_from(["joint", "body"])), backend, user)


@given(name_pairs())
def test_map_and_inverse_compose_to_identity(pair):
    backend, user = pair
    m = build_name_map("joint", backend, user)
    if m is None:
        assert user == backend
        return
    n = len(backend)
    assert [m.user_to_backend_indices[m.backend_to_user_indices[b]] for b in range(n)] == list(range(n))
    assert [m.backend_to_user_indices[m.user_to_backend_indices[u]] for u in range(n)] == list(range(n))
    assert [m.backend_names[i] for i in m.user_to_backend_indices] == list(m.user_names)


@given(unique_names)
def test_identity_is_none(names):
    assert build_name_map("joint", names, names) is None
    assert build_name_map("body", names, None) is None


@given(maps(), st.integers(0, 3), st.integers(1, 4))
def test_numpy_gather_then_scatter_returns_input(m, axis_pos, extra):
    shape = [extra] * 3
    shape.insert(axis_pos, len(m))
    data = np.random.default_rng(0).standard_normal(shape)
    user = m.to_user(data, axis=axis_pos)
    assert np.array_equal(m.to_backend(user, axis=axis_pos), data)
    # user order means: user element u is the backend element named user_names[u]
    for u, name in enumerate(m.user_names):
        b = m.backend_names.index(name)
        assert np.array_equal(np.take(user, u, axis=axis_pos), np.take(data, b, axis=axis_pos))


@given(maps(), st.sampled_from([0, 1, -1]))
def test_torch_gather_then_scatter_returns_input(m, axis):
    data = torch.arange(len(m) * 6, dtype=torch.float32).reshape(len(m), 2, 3).movedim(0, axis)
    out = m.permute(data, "backend_to_user", axis=axis)
    assert isinstance(out, torch.Tensor)
    assert torch.equal(m.permute(out, "user_to_backend", axis=axis), data)


@given(maps())
def test_warp_device_maps_match_host_tuples(m):
    assert m.user_to_backend.dtype == wp.int32 and m.user_to_backend.ndim == 1
    assert tuple(m.user_to_backend.numpy()) == m.user_to_backend_indices
    assert tuple(m.backend_to_user.numpy()) == m.backend_to_user_indices
    moved = m.to_device("cpu")
    assert moved == m and tuple(moved.backend_to_user.numpy()) == m.backend_to_user_indices


@given(maps(), st.data())
def test_index_mapping_round_trips(m, data):
    ids = data.draw(st.lists(st.integers(0, len(m) - 1), max_size=10))
    assert m.map_backend_ids_to_user(m.map_user_ids_to_backend(ids)) == ids
    for u, b in zip(ids, m.map_user_ids_to_backend(ids), strict=True):
        assert m.backend_names[b] == m.user_names[u]


def test_index_out_of_range():
    m = build_name_map("joint", ["a", "b"], ["b", "a"])
    with pytest.raises(IndexError, match="out of range"):
        m.map_user_ids_to_backend([2])


@given(name_pairs(min_size=2), st.data())
def test_missing_and_extra_names_are_listed(pair, data):
    backend, user = pair
    dropped = data.draw(st.sampled_from(user))
    bad = [n for n in user if n != dropped] + ["zz_not_there"]
    with pytest.raises(NameMapError) as info:
        build_name_map("joint", backend, bad)
    assert repr(dropped) in str(info.value) and "'zz_not_there'" in str(info.value)


@given(name_pairs(min_size=1), st.data())
def test_duplicates_are_listed(pair, data):
    backend, user = pair
    dup = data.draw(st.sampled_from(user))
    with pytest.raises(NameMapError, match="duplicates") as info:
        build_name_map("body", backend, [*user, dup])
    assert repr(dup) in str(info.value)


@given(name_pairs(), st.integers(0, 20))
def test_non_string_entries_raise_type_error(pair, pos):
    backend, user = pair
    user.insert(min(pos, len(user)), 7)
    with pytest.raises(TypeError, match="non-string"):
        build_name_map("joint", backend, user)


def test_multi_dof_spelling_matched_when_unique():
    m = build_name_map("joint", ["ball:0", "ball:1", "knee"], ["knee", "ball_0", "ball_1"])
    assert m.user_to_backend_indices == (2, 0, 1)
    assert m.user_names == ("knee", "ball_0", "ball_1")


def test_multi_dof_spelling_ambiguous_is_refused():
    with pytest.raises(NameMapError, match="ambiguous"):
        build_name_map("joint", ["a:b:c", "a_b:c", "x"], ["x", "a_b_c", "q"])


def test_bare_string_is_rejected():
    with pytest.raises(TypeError, match="single string"):
        build_name_map("joint", ["a"], "a")


def test_map_is_frozen_and_validated():
    m = build_name_map("joint", ["a", "b"], ["b", "a"])
    with pytest.raises(AttributeError):
        m.kind = "body"
    with pytest.raises(ValueError, match="inverse"):
        ArticulationNameMap("joint", ("a", "b"), ("b", "a"), (1, 0), (0, 1))


def test_shape_mismatch_names_the_axis():
    m = build_name_map("joint", ["a", "b", "c"], ["c", "b", "a"])
    with pytest.raises(ValueError, match="axis 0 has length 2"):
        m.to_user(np.zeros((2, 3)), axis=0)
