"""The anonymous USD layer every backend composes over the user's asset, so that the asset is never written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transfer.robot.usd import compose

__all__ = ["OVERLAY_METADATA", "overlay_stage"]

OVERLAY_METADATA = ("upAxis", "metersPerUnit", "defaultPrim")
"""Layer metadata the overlay copies from the asset: a sublayer's own metadata does not reach the stage."""


def overlay_stage(asset: str, name: str, metadata: Sequence[str] = OVERLAY_METADATA) -> Any:
    """A ``Usd.Stage`` on a new anonymous layer ``name`` that sublayers the USD file ``asset`` and copies its
    ``metadata`` (where authored), with that layer as edit target: every edit lands in it, never in the asset.

    The layer is the stage's root layer (``stage.GetRootLayer()``). pxr is imported here, not with this module.

    Raises:
        ValueError: ``asset`` cannot be opened as a USD layer.
    """
    from pxr import Sdf, Usd

    source = Sdf.Layer.FindOrOpen(asset)
    if source is None:
        raise ValueError(f"Could not open {asset} as a USD layer (is it a .usd/.usda/.usdc file?).")
    layer = Sdf.Layer.CreateAnonymous(name)
    layer.subLayerPaths.append(asset)
    for key in metadata:
        if source.pseudoRoot.HasInfo(key):
            layer.pseudoRoot.SetInfo(key, source.pseudoRoot.GetInfo(key))

    stage = compose(layer)
    stage.SetEditTarget(Usd.EditTarget(layer))
    return stage
