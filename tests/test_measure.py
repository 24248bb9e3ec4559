"""The replay's measurements (:class:`transfer.env.measure.Measure`): the per-step mean behind the speed and height
traces is ``np.nanmean`` to the bit, written out for speed (issue 47), and a step with no fall leaves every env's
cause as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from transfer.env.measure import Measure, _nanmean


@settings(max_examples=300, deadline=None)
@given(
    values=st.one_of(
        hnp.arrays(
            np.float32, st.integers(1, 300), elements=st.one_of(st.floats(-1e4, 1e4, width=32), st.just(np.nan))
        ),
        hnp.arrays(np.float64, st.integers(1, 300), elements=st.one_of(st.floats(-1e6, 1e6), st.just(np.nan))),
    )
)
def test_the_mean_of_the_standing_envs_is_numpys_nanmean_to_the_bit(values):
    ours = _nanmean(values)
    if np.isnan(values).all():
        assert np.isnan(ours)
        return
    assert ours == float(np.nanmean(values))


def test_falls_are_named_by_their_first_cause_and_kept():
    m = Measure(num_envs=3, direction=np.array([1.0, 0.0]), warmup=0.0)
    state = (np.zeros((3, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (3, 1)), np.zeros((3, 3)), np.zeros((3, 3)), None)
    none = {"base_contact": np.zeros(3, bool), "bad_orientation": np.zeros(3, bool)}
    m.record(0.1, state, none)
    assert list(m.cause) == ["", "", ""] and np.isinf(m.fallen_at).all()
    m.record(0.2, state, {"base_contact": np.array([False, True, True]), "bad_orientation": np.array([0, 0, 1], bool)})
    m.record(0.3, state, {"base_contact": np.zeros(3, bool), "bad_orientation": np.array([1, 0, 0], bool)})
    assert list(m.cause) == ["bad_orientation", "base_contact", "base_contact"]
    assert list(m.fallen_at) == [0.3, 0.2, 0.2]
    assert m.causes() == {"base_contact": 2, "bad_orientation": 1}
