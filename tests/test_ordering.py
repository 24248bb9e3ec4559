import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer import OrderingConvention, parse_ordering

names = st.text(min_size=1, max_size=12)


def test_none_and_members_pass_through():
    assert parse_ordering(None) is None
    for member in OrderingConvention:
        assert parse_ordering(member) is member


@given(st.sampled_from(list(OrderingConvention)), st.data())
def test_strings_are_case_insensitive(member, data):
    spelled = "".join(data.draw(st.sampled_from([c.lower(), c.upper()])) for c in member.value)
    assert parse_ordering(spelled) is member


@given(st.lists(names, min_size=1, max_size=20), st.booleans())
def test_explicit_lists_become_tuples(values, as_tuple):
    given_value = tuple(values) if as_tuple else list(values)
    assert parse_ordering(given_value) == tuple(values)


@given(st.text().filter(lambda s: s.strip().lower().replace("-", "_") not in {c.value for c in OrderingConvention}))
def test_unknown_strings_raise_value_error_listing_valid_values(value):
    with pytest.raises(ValueError) as info:
        parse_ordering(value)
    for member in OrderingConvention:
        assert member.value in str(info.value)


@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.dictionaries(names, names), st.sets(names)))
def test_other_types_raise_type_error(value):
    with pytest.raises(TypeError):
        parse_ordering(value)


@given(st.lists(st.one_of(names, st.integers()), min_size=1).filter(lambda v: any(isinstance(x, int) for x in v)))
def test_lists_with_non_strings_raise_type_error_naming_entries(values):
    with pytest.raises(TypeError) as info:
        parse_ordering(values)
    first_bad = next(i for i, v in enumerate(values) if not isinstance(v, str))
    assert f"[{first_bad}]" in str(info.value)


def test_empty_list_is_rejected():
    with pytest.raises(ValueError, match="at least one"):
        parse_ordering([])


def test_convention_is_a_str():
    assert OrderingConvention.MJWARP == "mjwarp"
    assert str(OrderingConvention.PHYSX) == "physx"
