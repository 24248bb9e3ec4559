"""The environment floor: :class:`PolicyEnv` (``environment.py``) and what it is made of: what a run measures
(``measure.py``), where the robot spawns (``spawn.py``), perturbations (``perturbations.py``) and a reference
motion in a run (``tracking.py``).

The package itself imports nothing: ``transfer.env.perturbations`` (the command line's perturbation kinds) loads
without the environment, and ``from transfer.env import PolicyEnv`` loads it on first use.
"""

from __future__ import annotations

import importlib

__all__ = ["EXPLICIT_EFFORT_LIMIT", "FALL_CAUSES", "Measure", "PolicyEnv", "fallen", "training_base"]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module 'transfer.env' has no attribute {name!r}")
    return getattr(importlib.import_module("transfer.env.environment"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
