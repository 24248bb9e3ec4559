"""MJCF and URDF files as values: which format a file is, the files it references, and a key for its content.

Nothing here converts or imports anything heavy: the file is read with the standard library's XML parser.

- :func:`source_format`: ``"mjcf"`` (root element ``<mujoco>``), ``"urdf"`` (``<robot>``), or ``None`` for a file
  that is not ``.xml``/``.urdf`` (USD and everything else go on as USD). The root element decides, not the suffix:
  a URDF saved as ``.xml`` is read as URDF.
- :func:`references`: the files the robot file names and the converter reads: MJCF ``<include>``, ``<mesh>``,
  ``<hfield>``, ``<skin>``, ``<texture>`` and ``<model>`` files (under ``<compiler meshdir/texturedir/assetdir>``,
  includes followed); URDF ``<mesh filename>`` and ``<texture filename>`` (``package://`` found by walking up from
  the URDF's folder, as urdf-usd-converter does; ``file://``; relative to the URDF's folder).
- :func:`content_key`: sha256 over the file's sha256 and each reference (as written, with its sha256), plus the
  converter and its version: equal content gives the equal key wherever the files lie; any changed byte, a mesh
  swapped, or another converter version gives another.
"""

from __future__ import annotations

import hashlib
import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from transfer.robot.assets.chains import CHAIN_VERSION

__all__ = [
    "ROS_PACKAGE_PATH",
    "SOURCE_SUFFIXES",
    "AssetError",
    "Reference",
    "content_key",
    "file_sha256",
    "references",
    "references_sha256",
    "ros_packages",
    "source_format",
]

SOURCE_SUFFIXES = (".xml", ".urdf")
"""Suffixes read as robot description files (MJCF or URDF, told apart by the root element)."""
_ROOTS = {"mujoco": "mjcf", "robot": "urdf"}
_KEY_VERSION = f"transfer-asset-key/2 {CHAIN_VERSION}".encode()
"""2: MJCF bodies with several joints are split into chains (:mod:`transfer.robot.assets.chains`) after conversion."""
_CHUNK = 1 << 20


class AssetError(ValueError):
    """A robot file that cannot be converted as given: not MJCF or URDF, malformed, or the converter refused it."""


@dataclass(frozen=True)
class Reference:
    """A file a robot file names: ``text`` as written there, ``path`` where it resolves, and the element naming it."""

    text: str
    path: Path
    element: str
    visual_only: bool = False
    """A mesh only visual geometry uses (URDF ``<visual>``; MJCF geoms with ``contype`` and ``conaffinity`` 0):
    missing, it can be left out without changing the physics."""

    @property
    def exists(self) -> bool:
        return self.path.is_file()


MAX_ROBOT_FILE = 64 << 20
"""The largest MJCF/URDF file read (bytes): robot descriptions are kilobytes to a few megabytes; meshes live in files
of their own."""


MAX_LINKS = 2000
"""The most links (URDF) or bodies (MJCF) a robot file may hold: a humanoid has ~40, a hand ~30."""
MAX_GEOMS = 10000
"""The most geoms an MJCF file may hold (``<replicate>`` counted out): a robot has tens to hundreds; the converter
takes ~1.6 ms a geom."""


def _parse(path: Path) -> ET.Element:
    if not path.is_file():
        raise AssetError(f"{path}: not a regular file (a folder, a FIFO or a device); give the robot file itself")
    size = path.stat().st_size
    if size > MAX_ROBOT_FILE:
        raise AssetError(
            f"{path}: {size / 2**20:.0f} MB, more than the {MAX_ROBOT_FILE >> 20} MB a robot file is read "
            "up to (meshes belong in files of their own)"
        )
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise AssetError(f"{path}: not well-formed XML ({exc}); fix the file or give a USD file") from None
    except UnicodeDecodeError:
        raise AssetError(f"{path}: not a text (XML) file") from None
    links, geoms, repeated = _count(root)
    why = f" ({repeated} repeats what it holds)" if repeated else ""
    if links > MAX_LINKS:
        raise AssetError(
            f"{path}: {links} links or bodies{why}, more than the {MAX_LINKS} a robot is read with (the "
            "converter and the engines would take hours); is it a scene rather than a robot?"
        )
    if geoms > MAX_GEOMS:
        raise AssetError(
            f"{path}: {geoms} geoms{why}, more than the {MAX_GEOMS} a robot is read with (the converter "
            "takes ~1.6 ms a geom); is it a scene rather than a robot?"
        )
    return root


def _count(root: ET.Element) -> tuple[int, int, str]:
    """``(links or bodies, geoms, the <replicate> repeating most)`` in ``root``, each ``<replicate count>`` (MJCF)
    counted out as MuJoCo expands it (``<replicate count="100000">`` is 100,000 copies of what it holds)."""
    links = geoms = largest = 0
    replicate = ""
    stack = [(root, 1)]
    while stack:  # not recursive: a file of thousands of nested bodies is counted, then refused
        node, times = stack.pop()
        for child in node:
            each = times
            if child.tag == "replicate":
                count = child.get("count", "1").strip()
                each = times * (int(count) if count.isdigit() else 1)
                if each > largest:
                    replicate, largest = f'<replicate count="{count}">', each
            links += each if child.tag in ("link", "body") else 0
            geoms += each if child.tag == "geom" else 0
            stack.append((child, each))
    return links, geoms, replicate


def source_format(path: str | Path) -> str | None:
    """``"mjcf"`` or ``"urdf"`` for a ``.xml``/``.urdf`` file (by its root element), ``None`` for any other suffix.

    Raises:
        FileNotFoundError: a ``.xml``/``.urdf`` path that is not a file.
        AssetError: not well-formed XML, or a root element that is neither ``<mujoco>`` nor ``<robot>``.
    """
    path = Path(path)
    if path.suffix.lower() not in SOURCE_SUFFIXES:
        return None
    if not path.is_file():
        raise FileNotFoundError(f"Asset file not found: {path}")
    return _remembered("format", path, lambda: (_format_of(path), (path,)))


def _format_of(path: Path) -> str:
    tag = _parse(path).tag
    if tag not in _ROOTS:
        raise AssetError(
            f"{path}: the root element is <{tag}>; an MJCF file starts with <mujoco>, a URDF file with <robot>. "
            "Give an MJCF (.xml), URDF (.urdf) or USD file."
        )
    return _ROOTS[tag]


def references(path: str | Path, fmt: str | None = None) -> tuple[Reference, ...]:
    """The files ``path`` (MJCF or URDF) references, in document order, each once. Missing files are listed too
    (:attr:`Reference.exists` tells); the converter decides whether it needs them."""
    path = Path(path).absolute()
    fmt = fmt or source_format(path)
    if fmt != "mjcf":  # a URDF's package:// lookups depend on folders and the environment, not on the file alone
        return _references(path, fmt)
    return _remembered("mjcf references", path, lambda: _with_includes(_references(path, fmt), path))


def _with_includes(refs: tuple[Reference, ...], path: Path) -> tuple[tuple[Reference, ...], tuple[Path, ...]]:
    return refs, (path, *(ref.path for ref in refs if ref.element == "include"))


def _references(path: Path, fmt: str) -> tuple[Reference, ...]:
    found = _mjcf_references(path) if fmt == "mjcf" else _urdf_references(path)
    unique: dict[tuple[str, Path], Reference] = {}
    for ref in found:  # a file visual-only where every mention of it is
        seen = unique.get((ref.text, ref.path))
        unique[(ref.text, ref.path)] = (
            ref if seen is None else replace(seen, visual_only=seen.visual_only and ref.visual_only)
        )
    return tuple(unique.values())


_MJCF_FILES = {
    "mesh": ("mesh", ("file",)),
    "hfield": ("mesh", ("file",)),
    "skin": ("mesh", ("file",)),
    "texture": ("texture", ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")),
    "model": (None, ("file",)),
}
"""MJCF element -> (the compiler folder its files are under, the attributes naming files)."""


def _mjcf_trees(path: Path) -> tuple[list[ET.Element], list[Reference]]:
    """The main file's tree and every included one (includes are relative to the main file's folder)."""
    base = path.parent
    trees, includes, todo, seen = [], [], [path], {path.resolve()}
    while todo:
        root = _parse(todo.pop(0))
        trees.append(root)
        for element in root.iter("include"):
            text = element.get("file")
            if not text:
                continue
            ref = Reference(text, _under(base, None, text), "include")
            check_reference(path, ref)  # before the file is opened: nothing outside the robot's folder is read
            includes.append(ref)
            if ref.exists and ref.path.resolve() not in seen:
                seen.add(ref.path.resolve())
                todo.append(ref.path)
    return trees, includes


def _under(base: Path, folder: str | None, text: str) -> Path:
    name = Path(text)
    if name.is_absolute():
        return name
    if folder:
        return base / folder / name
    return base / name


def _mjcf_references(path: Path) -> list[Reference]:
    trees, found = _mjcf_trees(path)
    folders: dict[str, str | None] = {"mesh": None, "texture": None}
    for root in trees:
        for compiler in root.iter("compiler"):
            asset_dir = compiler.get("assetdir")
            for kind in folders:
                folders[kind] = compiler.get(f"{kind}dir", asset_dir if asset_dir is not None else folders[kind])
    visual = _visual_meshes(trees)
    for root in trees:
        for element in root.iter():
            kind = _MJCF_FILES.get(element.tag)
            if kind is None:
                continue
            folder, attributes = kind
            for attribute in attributes:
                text = element.get(attribute)
                if text:
                    only = element.tag == "mesh" and (element.get("name") or Path(text).stem) in visual
                    found.append(
                        Reference(text, _under(path.parent, folders.get(folder or ""), text), element.tag, only)
                    )
    return found


def _geom_defaults(trees: list[ET.Element]) -> dict[str, tuple[str, str]]:
    """``(contype, conaffinity)`` of each default class's geoms, inherited down the classes (MuJoCo's: 1, 1)."""
    out: dict[str, tuple[str, str]] = {}

    def walk(node: ET.Element, inherited: tuple[str, str]) -> None:
        for d in node.findall("default"):
            geom = d.find("geom")
            mine = (
                inherited
                if geom is None
                else (geom.get("contype", inherited[0]), geom.get("conaffinity", inherited[1]))
            )
            out[d.get("class", "main")] = mine
            walk(d, mine)

    for root in trees:
        for top in root.findall("default"):
            geom = top.find("geom")
            mine = ("1", "1") if geom is None else (geom.get("contype", "1"), geom.get("conaffinity", "1"))
            out[top.get("class", "main")] = mine
            walk(top, mine)
    return out


def _visual_meshes(trees: list[ET.Element]) -> set[str]:
    """Mesh asset names every geom using them is visual only: ``contype`` and ``conaffinity`` 0 (its own, or its
    class's: the geom's ``class``, else the nearest ``childclass`` above it), or that no geom uses."""
    defaults = _geom_defaults(trees)
    names = {m.get("name") or Path(m.get("file", "")).stem for r in trees for m in r.iter("mesh") if m.get("file")}
    colliding: set[str] = set()

    def walk(node: ET.Element, cls: str) -> None:
        cls = node.get("childclass", cls)
        for child in node:
            if child.tag == "geom" and child.get("mesh"):
                own = defaults.get(child.get("class", cls), ("1", "1"))
                contype, conaffinity = child.get("contype", own[0]), child.get("conaffinity", own[1])
                if contype.strip() != "0" or conaffinity.strip() != "0":
                    colliding.add(child.get("mesh"))
            elif child.tag not in ("default", "asset"):
                walk(child, cls)

    for root in trees:
        walk(root, "main")
    return names - colliding


ROS_PACKAGE_PATH = "ROS_PACKAGE_PATH"
"""The environment variable ROS reads its packages from: folders, ``:``-separated, each holding package folders
(a folder with a ``package.xml``, named as the package, up to :data:`_PACKAGE_DEPTH` levels down)."""
_PACKAGE_DEPTH = 3


def _package_split(text: str) -> tuple[str, Path]:
    parts = Path(text.removeprefix("package://")).parts
    return (parts[0], Path(*parts[1:])) if len(parts) > 1 else ("", Path(text))


def _ros_package(name: str) -> Path | None:
    """The folder of ROS package ``name`` on ``$ROS_PACKAGE_PATH``: ``<entry>/<name>``, else a folder ``<name>``
    holding a ``package.xml`` under an entry (breadth first, :data:`_PACKAGE_DEPTH` levels)."""
    for entry in filter(None, os.environ.get(ROS_PACKAGE_PATH, "").split(os.pathsep)):
        level = [Path(entry).expanduser()]
        for _ in range(_PACKAGE_DEPTH):
            for folder in level:
                if (folder / name).is_dir() and (
                    folder == Path(entry).expanduser() or (folder / name / "package.xml").is_file()
                ):
                    return (folder / name).resolve()
            level = [c for folder in level if folder.is_dir() for c in sorted(folder.iterdir()) if c.is_dir()]
    return None


def ros_packages(path: str | Path) -> dict[str, Path]:
    """The packages a URDF names in ``package://`` references that urdf-usd-converter's own search (walking up from
    the URDF's folder) does not find, found on ``$ROS_PACKAGE_PATH``: ``{name: folder}``, what the converter is
    given (its ``--package name=folder``)."""
    path = Path(path)
    out: dict[str, Path] = {}
    for element in _parse(path).iter():
        text = element.get("filename") if element.tag in ("mesh", "texture") else None
        if not text or not text.startswith("package://"):
            continue
        name, relative = _package_split(text)
        if name and name not in out and _walk_up(path, relative) is None:
            found = _ros_package(name)
            if found is not None:
                out[name] = found
    return out


def _walk_up(urdf: Path, relative: Path) -> Path | None:
    folder = urdf.parent.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / relative).exists():
            return candidate / relative
    return None


def _urdf_path(urdf: Path, text: str) -> Path:
    """Where urdf-usd-converter looks for a URDF file reference (``package://``: walking up from the URDF's folder,
    else the package's folder on ``$ROS_PACKAGE_PATH``: :func:`ros_packages`)."""
    if text.startswith("file://"):
        rest = text.removeprefix("file://")
        return Path("/" + rest.lstrip("/")) if text.startswith("file:///") else urdf.parent / rest
    if text.startswith("package://"):
        name, relative = _package_split(text)
        found = _walk_up(urdf, relative)
        if found is None and name:
            package = _ros_package(name)
            found = None if package is None else package / relative
        return found if found is not None else urdf.parent / relative
    return _under(urdf.parent, None, text)


def check_reference(source: Path, ref: Reference) -> None:
    """Refuse a reference no converter should follow: a URL (``http://``, nothing is fetched), a ``package://`` path
    that climbs out of its package with ``..``, and a special file (a FIFO or a device would block the converter)."""
    scheme = ref.text.split("://", 1)[0] if "://" in ref.text else None
    if scheme is not None and scheme not in ("package", "file"):
        raise AssetError(
            f"{source}: <{ref.element}> {ref.text!r} is a URL; transfer fetches nothing: download the file "
            "next to the robot and name it by a relative path"
        )
    if scheme == "package" and ".." in _package_split(ref.text)[1].parts:
        raise AssetError(
            f"{source}: <{ref.element}> {ref.text!r} climbs out of its package with '..'; name a file "
            "inside the package"
        )
    text = ref.text.removeprefix("file://")
    folder = source.resolve().parent
    if (scheme == "file" or Path(text).is_absolute()) and Path(text).is_absolute():
        if not ref.path.resolve().is_relative_to(folder):
            raise AssetError(
                f"{source}: <{ref.element}> {ref.text!r} names a file outside the robot's folder {folder}; "
                "copy it next to the robot and name it by a relative path"
            )
    elif scheme is None and not ref.path.resolve().is_relative_to(folder.parent):
        raise AssetError(
            f"{source}: <{ref.element}> {ref.text!r} is {ref.path.resolve()}, outside the robot's folder "
            f"{folder} and the one above it (where a urdf/ folder's meshes/ lie); a relative path or a "
            "link may not lead further: copy the file next to the robot"
        )
    if ref.path.exists() and not ref.path.is_file():
        kind = "included" if ref.element == "include" else "mesh"
        raise AssetError(
            f"{source}: <{ref.element}> {ref.text!r} is {ref.path}, not a regular file (a folder, a "
            f"FIFO or a device); name the {kind} file itself"
        )


def _urdf_references(path: Path) -> list[Reference]:
    found = []

    def walk(node: ET.Element, visual: bool) -> None:
        for element in node:
            if element.tag in ("mesh", "texture"):
                text = element.get("filename")
                if text:
                    target = (
                        _urdf_path(path, text)
                        if "://" not in text or text.startswith(("package://", "file://"))
                        else Path(text)
                    )  # a URL: named so it is refused, never resolved
                    found.append(Reference(text, target, element.tag, visual and element.tag == "mesh"))
            walk(element, visual or element.tag == "visual")

    walk(_parse(path), False)
    return found


def _feed(digest: Any, data: bytes) -> None:
    digest.update(len(data).to_bytes(8, "little"))
    digest.update(data)


def _feed_file(digest: Any, path: Path) -> None:
    """The file's sha256 (``M`` alone for a missing file), so that no two inputs run together."""
    if not path.is_file():
        digest.update(b"M")
        return
    digest.update(b"F" + file_sha256(path).encode())


_RACY_NS = 2_000_000_000
"""A file changed this recently is read every time: file times are too coarse to tell two quick writes apart."""


_READ: dict[tuple[str, str], tuple[tuple[Any, ...], tuple[Path, ...], Any]] = {}
"""What was read of a robot file (its format, an MJCF's references, a file's sha256), by kind and real path, with the files it came
from and their ``(mtime_ns, size, ctime_ns, inode)``: a file is parsed once per process while none of them changes,
however many callers ask (the asset door, the cache key, the conversion record)."""


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def _remembered(kind: str, path: Path, read: Callable[[], tuple[Any, tuple[Path, ...]]]) -> Any:
    """``read()``'s value (with the files it read) for ``path``, read again only when one of those files changed;
    a file changed within :data:`_RACY_NS` is read every time."""
    key = (kind, os.path.realpath(path))
    known = _READ.get(key)
    if known is not None and known[0] == tuple(_stamp(f) for f in known[1]):
        return known[2]
    value, files = read()
    stamps = tuple(_stamp(f) for f in files)
    now = time.time_ns()
    if all(s is not None and now - max(s[0], s[2]) > _RACY_NS for s in stamps):
        if len(_READ) > 4096:
            _READ.clear()
        _READ[key] = (stamps, files, value)
    return value


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes (what ``sha256sum`` prints); hashed once per process while the file stays
    unchanged (a robot's meshes: every command resolves its asset more than once)."""
    return _remembered("sha256", Path(path), lambda: (_sha256(Path(path)), (Path(path),)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def references_sha256(refs: tuple[Reference, ...]) -> str | None:
    """One sha256 over every reference (as written, and its bytes), in a fixed order; ``None`` without any."""
    if not refs:
        return None
    digest = hashlib.sha256()
    for ref in sorted(refs, key=lambda r: (r.element, r.text)):
        _feed(digest, ref.element.encode())
        _feed(digest, ref.text.encode())
        _feed_file(digest, ref.path)
    return digest.hexdigest()


def content_key(path: str | Path, converter: str, fmt: str | None = None) -> str:
    """The cache key of converting ``path`` with ``converter`` (``"name version"``): a sha256 (hex) over the key
    format, the converter, the file's bytes and :func:`references_sha256` of what it references."""
    path = Path(path)
    fmt = fmt or source_format(path)
    digest = hashlib.sha256()
    _feed(digest, _KEY_VERSION)
    _feed(digest, converter.encode())
    _feed(digest, str(fmt).encode())
    _feed_file(digest, path)
    _feed(digest, (references_sha256(references(path, fmt)) or "").encode())
    return digest.hexdigest()
