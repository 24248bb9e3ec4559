"""Warp kernels that permute articulation data between a backend's order and the public (user) order.

- :mod:`transfer.kernels.reorder`: the generic gather kernels, whole-array reorders and partial scatters;
- :mod:`transfer.kernels.select`: the one selector normalisation (``env_ids``, ``joint_ids``, ``element_ids``);
- :mod:`transfer.kernels.checks`: host-side shape, dtype and map checks shared by the above and the plan.

Every name is re-exported here (``from transfer import kernels; kernels.reorder_backend_to_user(...)``) and loaded on
first use: the package itself imports no Warp, so :mod:`transfer.kernels.plan` (the recorded plan) stays light.
"""

__all__ = [
    "VALUE_DTYPES",
    "host_indices",
    "index_array",
    "launch_reorder",
    "reorder_2d",
    "reorder_2d_backend_to_user",
    "reorder_2d_user_to_backend",
    "reorder_3d",
    "reorder_3d_backend_to_user",
    "reorder_3d_user_to_backend",
    "reorder_backend_to_user",
    "reorder_rows_2d",
    "reorder_rows_3d",
    "reorder_user_to_backend",
    "scatter_2d_user_to_backend_compact",
    "scatter_2d_user_to_backend_full",
    "scatter_user_to_backend",
]

_HOMES = {
    name: "transfer.kernels.select" if name in ("host_indices", "index_array") else "transfer.kernels.reorder"
    for name in __all__
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'transfer.kernels' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)
