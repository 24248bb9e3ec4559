"""Robot files as users bring them: USD as it is; MJCF (``.xml``) and URDF (``.urdf``) through the official converters.

:func:`resolve_asset` is the one door every command takes from an ``--asset`` (or a task's or checkpoint's
``asset``) to the USD file the engines open:

- a USD file (any suffix other than ``.xml``/``.urdf``) is returned as it is;
- ``<package>:<name>`` names a file shipped in an installed engine package (``newton:nv_ant.xml``,
  ``ovphysx:Ant``; :data:`PACKAGE_ASSETS`);
- an MJCF or URDF file is converted by ``mujoco-usd-converter`` or ``urdf-usd-converter`` (:mod:`.converters`,
  in an environment of their own) into a cache keyed by the content of the file and of every file it references
  (:func:`~transfer.robot.assets.sources.content_key`): the same robot is converted once, wherever it lies; a changed
  byte in the file or a mesh converts again.

:func:`import_asset` keeps a converted USD (``transfer import``); :func:`asset_source` is what checkpoint
metadata records of an MJCF/URDF asset (the file, its sha256, its references' sha256, the converter and its
version). docs/import.md describes the cache, the environment and the errors.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer._files import disk_full, put_in_place, umask_mode
from transfer.robot.assets.chains import split_joint_groups
from transfer.robot.assets.converters import (
    CONVERTERS,
    ensure_environment,
    environment_dir,
    export_layer,
    run_converter,
)
from transfer.robot.assets.mjcf import without_meshes
from transfer.robot.assets.mjcf_checks import check_mjcf
from transfer.robot.assets.sources import (
    SOURCE_SUFFIXES,
    AssetError,
    check_reference,
    content_key,
    file_sha256,
    references,
    references_sha256,
    source_format,
)

__all__ = [
    "PACKAGE_ASSETS",
    "SOURCE_SUFFIXES",
    "USD_SUFFIXES",
    "AssetError",
    "Conversion",
    "asset_source",
    "conversion_warnings",
    "convert_source",
    "import_asset",
    "locate_asset",
    "package_hint",
    "resolve_asset",
    "source_of",
]

USD_SUFFIXES = (".usd", ".usda", ".usdc")
"""What ``transfer import -o`` writes (``.usda``: text; ``.usd``/``.usdc``: USD's binary crate)."""

PACKAGE_ASSETS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "newton": ("examples/assets", "transfer[newton]"),
        "ovphysx": ("samples/data", "transfer[physx]"),
        "transfer": ("data", "transfer"),
    }
)
"""Asset hints ``<package>:<name>``: the folder inside the installed package, and the extra that installs it
(``transfer:quadruped`` is the project's own demo robot, ``transfer/data/quadruped.usda``)."""
_TRIED = (".usda", ".usd", ".usdc", ".xml", ".urdf")
"""Suffixes tried, in turn, for a ``<package>:<name>`` given without one."""
_RECORD = "record.json"


def package_hint(asset: str) -> str | None:
    """The package of a ``<package>:<name>`` hint (one of :data:`PACKAGE_ASSETS`), else ``None``."""
    package = asset.split(":", 1)[0] if ":" in asset else None
    return package if package in PACKAGE_ASSETS else None


def locate_asset(asset: str | os.PathLike) -> Path:
    """The file an asset names, as given (a path, or ``<package>:<name>`` for an asset shipped inside an installed
    engine package: Newton's ``examples/assets``, ovphysx's ``samples/data``), without converting it.

    The package is located with ``importlib.util.find_spec`` (it is not imported). ``<name>`` may omit the suffix
    (``.usda``, ``.usd``, ``.usdc``, ``.xml``, ``.urdf`` are tried in turn).
    """
    text = os.fspath(asset)
    package = package_hint(text)
    if package is None:
        path = Path(text)
        if path.exists() and not path.is_file() and not path.is_dir():
            raise AssetError(f"{path}: not a regular file (a FIFO or a device); give the robot file itself")
        if not path.is_file():
            raise FileNotFoundError(f"Asset file not found: {path}")
        _refuse_unreadable(path)
        return path
    subdir, extra = PACKAGE_ASSETS[package]
    name = text[len(package) + 1 :]
    if not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"Asset {text!r}: expected {package}:<name> with a file name from {package}'s {subdir}")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"Asset {text!r} is bundled with {package}, which is not installed: pip install '{extra}', "
            "or give the asset's path."
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / subdir
    for candidate in [folder / name] + [folder / f"{name}{ext}" for ext in _TRIED]:
        if candidate.is_file():
            return candidate
    kinds = ("*.usd*", "*.xml", "*.urdf")
    available = sorted(p.name for kind in kinds for p in folder.glob(kind)) if folder.is_dir() else []
    raise FileNotFoundError(
        f"Asset {text!r}: no {name}(.usda|.usd|.usdc|.xml|.urdf) in {folder}; available: {available}"
    )


def _refuse_unreadable(path: Path) -> None:
    """Refuse a file that is neither an MJCF/URDF nor of a format USD reads (a config, a checkpoint, no suffix) as
    what it is, before USD says it "cannot determine file format" of a robot it could not open. An MJCF or URDF is
    told by its suffix alone: USD (pxr) is imported only to ask about any other."""
    suffix = path.suffix
    if suffix.lower() in SOURCE_SUFFIXES:
        return
    from pxr import Sdf

    if suffix and Sdf.FileFormat.FindByExtension(suffix[1:]) is not None:
        return
    raise AssetError(
        f"{path}: not a robot file ({suffix or 'no suffix'}: no USD file format reads it). Give a USD file (.usd, "
        ".usda, .usdc), or a robot's MJCF (.xml) or URDF (.urdf) file."
    )


@dataclass(frozen=True)
class Conversion:
    """An MJCF/URDF file and the USD the converter made of it (in the cache)."""

    source: Path
    format: str
    usd: Path
    key: str
    record: Mapping[str, Any]
    cached: bool
    """``True`` when the cache already held it (nothing ran)."""


def _cache_dir() -> Path:
    return environment_dir() / "cache"


def _read_record(entry: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((entry / _RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if (entry / str(record.get("usd", ""))).is_file() else None


def convert_source(source: str | os.PathLike, stream: Any = None) -> Conversion:
    """The USD of an MJCF/URDF ``source``, from the cache or converted into it (one line on ``stream``, default
    stderr, says so). The cache entry is written into a temporary folder and renamed into place, so concurrent
    conversions of one robot leave one complete entry.

    Raises:
        FileNotFoundError: no such file.
        AssetError: not MJCF/URDF, malformed, or the converter refused it (its reason, and any referenced file that
            does not exist, are named).
        ConverterSetupError: the converter environment could not be created.
    """
    source = locate_asset(source)
    fmt = source_format(source)
    if fmt is None:
        raise AssetError(f"{source}: not an MJCF (.xml) or URDF (.urdf) file; a USD file needs no import")
    converter = CONVERTERS[fmt]
    for ref in references(source, fmt):  # before anything is hashed, created or run
        check_reference(source, ref)
    if fmt == "mjcf":  # NaN, ranges upside down, names USD would rename: in the MJCF's terms, before any cache
        check_mjcf(source, converting=True)
    key = content_key(source, converter.label, fmt)
    entry = _cache_dir() / key
    record = _read_record(entry)
    if record is not None:
        return Conversion(source, fmt, entry / record["usd"], key, record, cached=True)
    ensure_environment(stream)
    print(f"transfer: converting {source} with {converter.label} (cached in {entry})", file=stream or sys.stderr)
    entry.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(entry.parent)
    scratch = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-{os.getpid()}-", dir=entry.parent))
    try:
        record = _convert_into(scratch, source, fmt, key)
        try:
            os.rename(scratch, entry)
        except OSError:  # another process put the entry there first: keep it
            if _read_record(entry) is None:
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Conversion(source, fmt, entry / record["usd"], key, record, cached=False)


def _remove_abandoned(cache: Path) -> None:
    """Remove the scratch folders (``.<key>-<pid>-XXXX``) of conversions whose process is gone: a SIGTERM or
    ``kill -9`` ends a conversion before it can remove its own."""
    for folder in cache.glob(".*-*-*"):
        pid = folder.name.split("-")[1]
        if not pid.isdigit() or not folder.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # someone else's live process
            pass


def _convert_into(folder: Path, source: Path, fmt: str, key: str) -> dict[str, Any]:
    refs = references(source, fmt)
    missing = [r for r in refs if not r.exists]
    left_out = [r for r in missing if r.element == "mesh" and r.visual_only]
    if left_out:  # only visuals use them: the robot's physics is whole without them
        missing = [r for r in missing if r not in left_out]
        print(f"transfer: warning: {source}: {_left_out(left_out)}", file=sys.stderr)
    given = source
    if left_out and fmt == "mjcf":  # MuJoCo refuses a missing mesh: convert a copy without those visuals
        given = without_meshes(source, {r.text for r in left_out}, folder / ".source")
    try:
        usd, warnings, seconds = run_converter(fmt, given, folder)
    except AssetError as exc:
        if missing:
            named = ", ".join(f"{r.text} (<{r.element}>, looked for {r.path})" for r in missing[:5])
            raise AssetError(
                f"{exc}. It references files that do not exist: {named}; copy them along with the robot file, "
                "keeping the layout"
            ) from None
        raise
    _check_meshes_converted(source, fmt, refs, warnings)
    meshes = [r for r in missing if r.element == "mesh"]
    if meshes:  # urdf-usd-converter leaves such a mesh out and succeeds: a link without its shape
        named = ", ".join(f"{r.text} (looked for {r.path})" for r in meshes[:5])
        where = (
            " A package:// path is looked for walking up from the URDF's folder, then in the package folders on "
            "$ROS_PACKAGE_PATH (export ROS_PACKAGE_PATH=<workspace>/src)."
            if any(r.text.startswith("package://") for r in meshes)
            else ""
        )
        raise AssetError(
            f"{source}: the meshes {named} do not exist, and {CONVERTERS[fmt].label} would leave them out of the "
            f"robot.{where} Copy the files along with the robot file, keeping the layout."
        )
    converter = CONVERTERS[fmt]
    converted, chains = usd, []
    if fmt == "mjcf":  # several joints in one body: a chain of single joints, as MuJoCo moves them (.chains)
        chains = split_joint_groups(converted, folder / f"{converted.stem}_chains{converted.suffix}")
        usd = folder / f"{converted.stem}_chains{converted.suffix}" if chains else converted
    record = {
        **asset_source(source),
        "usd": usd.name,
        "converted_usd": converted.name,
        "joint_chains": chains,
        "key": key,
        "references": [r.text for r in refs],
        "missing_references": [r.text for r in missing],
        "left_out_visuals": [r.text for r in left_out],
        "warnings": warnings,
        "seconds": round(seconds, 3),
    }
    record["converter"], record["converter_version"] = converter.package, converter.version
    (folder / _RECORD).write_text(json.dumps(record, indent=2))
    return record


_MESH_FAILED = "Failed to convert mesh: "


def _check_meshes_converted(source: Path, fmt: str, refs: list[Any], warnings: list[str]) -> None:
    """Refuse a conversion that left out a collision mesh it could not read (urdf-usd-converter says "Failed to
    convert mesh: PATH: why" and succeeds: the link has no shape, the robot falls through the ground). A mesh only
    visuals use stays a warning."""
    for line in warnings:
        if not line.startswith(_MESH_FAILED):
            continue
        path, _, why = line[len(_MESH_FAILED) :].partition(": ")
        ref = next((r for r in refs if r.element == "mesh" and r.path.resolve() == Path(path).resolve()), None)
        if ref is not None and ref.exists and not ref.visual_only:  # a missing one: named below, with where looked
            raise AssetError(
                f"{source}: {CONVERTERS[fmt].label} could not read the mesh {ref.text} ({why.strip()}) "
                "and would leave that link without its collision shape; repair or replace the file"
            )


def _left_out(refs: list[Any]) -> str:
    named = ", ".join(f"{r.text} (looked for {r.path})" for r in refs[:5]) + (", ..." if len(refs) > 5 else "")
    return f"the meshes {named} do not exist and only visual geometry uses them: left out (the physics is unchanged)"


def conversion_warnings(source: str | os.PathLike | None) -> tuple[str, ...]:
    """What the conversion of the MJCF/URDF ``source`` left out that a run should say (visual meshes its repository
    does not ship, from the cache's record); ``()`` for a USD asset. What the engines that read the file itself find
    there is :func:`transfer.backends.source_notes`'s."""
    if source is None or source_format(source) is None:
        return ()
    conversion = convert_source(source)
    left = conversion.record.get("left_out_visuals") or []
    out: tuple[str, ...] = ()
    if left:
        out = (
            f"{Path(source).name}: the meshes {', '.join(left[:5])}{', ...' if len(left) > 5 else ''} do not exist "
            "and only visual geometry uses them: the robot was converted without them (the physics is unchanged)",
        )
    return out


def resolve_asset(asset: str | os.PathLike) -> Path:
    """The USD file the engines open for ``asset`` (module docstring): a USD path as it is, a ``<package>:<name>``
    hint located, an MJCF/URDF file converted (through the cache)."""
    path = locate_asset(asset)
    if source_format(path) is None:
        return path
    return convert_source(path).usd


def source_of(usd: str | os.PathLike) -> Path | None:
    """The MJCF/URDF file a converted USD in the cache was made from, while that file still has the content it was
    converted from (its sha256); ``None`` for any other USD (an engine that steps the robot's own file asks)."""
    path = Path(os.fspath(usd)).resolve()
    cache = _cache_dir().resolve()
    entry = next((p for p in path.parents if p.is_relative_to(cache) and p != cache and (p / _RECORD).is_file()), None)
    if entry is None:
        return None
    record = _read_record(entry)
    if record is None or not record.get("file") or (entry / str(record.get("usd", ""))).resolve() != path:
        return None
    source = Path(record["file"])
    if not source.is_file() or file_sha256(source) != record.get("sha256"):
        return None
    return source


def asset_source(asset: str | os.PathLike | None) -> dict[str, Any] | None:
    """What checkpoint metadata records of an MJCF/URDF asset: ``file`` (absolute), ``format``, ``sha256`` of the
    file, ``references_sha256`` (one sha256 over the files it references, or null), the ``converter`` and its
    ``converter_version``. ``None`` for a USD asset, a missing file, or no asset."""
    if asset is None:
        return None
    try:
        path = locate_asset(asset)
        fmt = source_format(path)
    except (FileNotFoundError, ValueError):
        return None
    if fmt is None:
        return None
    converter = CONVERTERS[fmt]
    return {
        "file": str(path.resolve()),
        "format": fmt,
        "sha256": file_sha256(path),
        "references_sha256": references_sha256(references(path, fmt)),
        "converter": converter.package,
        "converter_version": converter.version,
    }


def import_asset(source: str | os.PathLike, out: str | os.PathLike, *, force: bool = False) -> Conversion:
    """Convert the MJCF/URDF ``source`` (through the cache) and keep the USD as ``out`` (``.usd``/``.usdc``: the
    converter's binary layer as it is; ``.usda``: as text). An existing ``out`` is replaced only with ``force``;
    the file appears whole or not at all (written beside it, then renamed).

    Raises:
        AssetError: ``out`` has another suffix, exists without ``force``, or is a folder; ``source`` is USD already
            or cannot be converted.
    """
    out = Path(out)
    if out.suffix.lower() not in USD_SUFFIXES:
        raise AssetError(
            f"-o {out}: the suffix says the format; give a USD file name ending in {', '.join(USD_SUFFIXES)}"
        )
    if out.is_dir():
        raise AssetError(f"-o {out} is a folder; give the USD file's path, e.g. {out / 'robot.usd'}")
    if out.exists() and not force:
        raise AssetError(f"-o {out} exists; pass --force to replace it, or give another path")
    conversion = convert_source(source)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=out.suffix, dir=out.parent)
    except OSError as exc:
        raise disk_full(out, exc) or exc from None
    os.close(fd)
    scratch = Path(name)
    try:
        if out.suffix.lower() == ".usda":
            export_layer(conversion.usd, scratch, shown=out)
        else:
            shutil.copyfile(conversion.usd, scratch)
        umask_mode(scratch)
        try:  # without --force, only where nothing is by then: a file that appeared at -o meanwhile is kept
            put_in_place(scratch, out, replace=force)
        except FileExistsError:
            raise AssetError(
                f"-o {out}: a file appeared there while the robot was converted (another import, or "
                "yours); it is kept: give another path, or --force to replace it"
            ) from None
    except (OSError, AssetError) as exc:  # USD says "Could not close" of a full disk, naming the scratch file
        full = disk_full(out, exc, scratch.stat().st_size if scratch.exists() else 0)
        if full is not None:
            raise full from None
        raise
    finally:
        scratch.unlink(missing_ok=True)
    return conversion
