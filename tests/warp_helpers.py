"""Helpers shared by the Warp kernel and plan tests: the devices to run on and permutation maps."""

from __future__ import annotations

import pytest
import warp as wp

from transfer.name_map import ArticulationNameMap

CUDA = wp.is_cuda_available()
DEVICES = ["cpu", pytest.param("cuda:0", marks=pytest.mark.skipif(not CUDA, reason="CUDA is not available"))]
needs_cuda = pytest.mark.skipif(not CUDA, reason="CUDA is not available")


def make_map(u2b: list[int], kind: str = "joint", device: str = "cpu") -> ArticulationNameMap:
    """A name map with the given user_to_backend permutation (identity allowed, unlike build_name_map)."""
    return ArticulationNameMap.from_user_to_backend(kind, [f"{kind}{i}" for i in range(len(u2b))], u2b, device=device)
