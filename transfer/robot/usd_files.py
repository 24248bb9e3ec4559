"""The files a robot is read from, and whether an output would land on one of them (or on another input).

- :func:`asset_files`: an MJCF/URDF file and what it names, or a USD file and every layer its stage composes;
- :func:`which_read`: which of a command's inputs (or of the files its robot is read from) an output would replace;
- :func:`url_references`: what a USD robot names by a URL (layers, value clips, asset values), never fetched.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from transfer._files import which_input
from transfer.robot.assets import SOURCE_SUFFIXES
from transfer.robot.assets.sources import references
from transfer.robot.usd import file_stage

__all__ = ["asset_files", "url_references", "which_read"]


def asset_files(asset: str | os.PathLike) -> tuple[Path, ...]:
    """The files a robot is read from: an MJCF or URDF file and the files it names (includes, meshes, textures); a
    USD file and every layer its stage composes (sublayers, references, payloads: ``GetUsedLayers``). What a
    command writes must be none of them (an output written over ``Props/instanceable_meshes.usd`` broke the robot
    that references it). A file that cannot be read gives itself alone."""
    path = Path(asset)
    if path.suffix.lower() in SOURCE_SUFFIXES:
        try:
            return (path, *(r.path for r in references(path) if r.exists))
        except (ValueError, OSError):
            return (path,)

    try:
        stage = file_stage(path)  # the read cache's: the command's own reading of the robot composes it no more
    except Exception:  # pxr's Tf.ErrorException: the command's own reading says what is wrong with the file
        return (path,)
    layers = (Path(layer.realPath) for layer in stage.GetUsedLayers() if layer.realPath)
    return (path, *(p for p in layers if p.is_file()))


def which_read(out: Path, reads: list[tuple[str, Path]], robots: list[Path]) -> str | None:
    """What ``out`` would write over, said as ``--config task.yaml`` or ``a file the robot R is read from``: one of
    ``reads`` (``(what, path)``), or a file one of ``robots`` is read from (:func:`asset_files`, opened only when
    ``out`` exists); ``None`` when nothing."""
    if not out.exists():
        return None
    hit = which_input(out, reads) or which_input(
        out, ((f"a file the robot {robot} is read from", f) for robot in robots for f in asset_files(robot))
    )
    return None if hit is None else hit[0]


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def url_references(asset: str | os.PathLike) -> list[tuple[str, str]]:
    """``(layer, asset path)`` for every sublayer, reference, payload, value clip or asset-valued attribute of the
    USD ``asset``'s layers that is a URL (``http://``, ``omniverse://``, ...). transfer fetches nothing, but an engine's own USD resolver may: PhysX's
    looked ``example.com`` up for a sublayer ``@http://example.com/x.usd@``. Read from the read cache's stage."""
    from pxr import Sdf

    try:
        stage = file_stage(asset)
    except Exception:  # pxr's Tf.ErrorException: the command's own reading says what is wrong with the file
        return []
    layers = [stage.GetRootLayer(), *stage.GetUsedLayers()]
    found: list[tuple[str, str]] = []
    for layer in dict.fromkeys(layers):
        if isinstance(layer, Sdf.Layer):
            paths = [*layer.GetCompositionAssetDependencies(), *_asset_values(layer)]
            found += [(layer.identifier, p) for p in paths if _URL.match(p.strip())]
    return found


def _asset_values(layer: Any) -> list[str]:
    """The asset paths a layer's specs hold beside its composition arcs: value clips (``clips`` metadata's
    ``assetPaths`` and ``manifestAssetPath``, which a stage opens) and asset-valued attributes (a texture, a file
    input), which an engine's renderer or importer may open."""
    from pxr import Sdf

    out: list[str] = []
    kinds = (Sdf.ValueTypeNames.Asset, Sdf.ValueTypeNames.AssetArray)

    def assets(value: Any) -> None:
        if isinstance(value, Sdf.AssetPath):
            out.append(value.path)
        elif isinstance(value, dict):
            for item in value.values():
                assets(item)
        elif isinstance(value, (list, tuple)) or type(value).__name__ == "AssetPathArray":
            for item in value:
                assets(item)

    def visit(path: Any) -> None:
        spec = layer.GetObjectAtPath(path)
        if isinstance(spec, Sdf.PrimSpec) and spec.HasInfo("clips"):
            assets(dict(spec.GetInfo("clips")))
        elif isinstance(spec, Sdf.AttributeSpec) and spec.typeName in kinds and spec.HasDefaultValue():
            assets(spec.default)  # only asset-typed values are read (a mesh's points are not converted)

    layer.Traverse(Sdf.Path.absoluteRootPath, visit)
    return out
