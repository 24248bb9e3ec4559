"""One articulation in public order over any backend.

- :mod:`~transfer.articulation.factory`: :func:`open_articulation` (orderings checked, then the engine built);
- :mod:`~transfer.articulation.core`: :class:`Articulation` (names, ids, writers, stepping);
- :mod:`~transfer.articulation.data`: :class:`ArticulationData` (the public-order state, refreshed per step).
"""

from transfer.articulation.core import Articulation
from transfer.articulation.data import ArticulationData
from transfer.articulation.factory import open_articulation, resolve_public_order

__all__ = ["Articulation", "ArticulationData", "open_articulation", "resolve_public_order"]
