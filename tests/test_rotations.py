"""The one copy of the rotation maths (``transfer/_rotations.py``), held to itself on random quaternions: the matrix
rotates as the quaternion does, products compose as matrices do, the conjugate undoes, yaw reads back the heading."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from transfer._rotations import quat_conj, quat_from_rpy, quat_mul, rotate, rotation_matrices, yaw

ANGLE = st.floats(-3.1, 3.1, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(
    a=st.tuples(ANGLE, st.floats(-1.5, 1.5), ANGLE),
    b=st.tuples(ANGLE, st.floats(-1.5, 1.5), ANGLE),
    v=st.tuples(*[st.floats(-10, 10)] * 3),
)
def test_rotations_agree(a, b, v):
    qa, qb, v = quat_from_rpy(*map(np.float64, a)), quat_from_rpy(*map(np.float64, b)), np.array(v)
    assert abs(np.linalg.norm(qa) - 1) < 1e-12
    np.testing.assert_allclose(rotation_matrices(qa) @ v, rotate(qa, v), atol=1e-9)
    np.testing.assert_allclose(
        rotation_matrices(quat_mul(qa, qb)), rotation_matrices(qa) @ rotation_matrices(qb), atol=1e-9
    )
    np.testing.assert_allclose(rotate(quat_conj(qa), rotate(qa, v)), v, atol=1e-9)
    heading = yaw(quat_from_rpy(np.float64(0), np.float64(0), np.float64(a[2])))
    np.testing.assert_allclose(heading, a[2], atol=1e-9)
    batch = np.stack([qa, qb])
    np.testing.assert_allclose(rotation_matrices(batch)[1], rotation_matrices(qb), atol=1e-12)
