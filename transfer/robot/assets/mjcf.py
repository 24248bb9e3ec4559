"""The joint order MuJoCo gives an MJCF model (and a URDF, as MuJoCo compiles it), from the file alone (no MuJoCo,
no conversion).

MuJoCo numbers bodies depth-first in document order (``<frame>`` elements are transparent; ``<include>`` files are
spliced in where they stand, relative to the main file's folder) and joints body by body (a body's own joints, in
document order, before any of its children's, wherever they stand among its elements). Free joints (``<freejoint>``, ``type="free"``) carry the floating base and are no articulation joint here;
a ball joint has three DoFs (``name:0``, ``name:1``, ``name:2``, as both engines spell them). Joint types inherited
from ``<default>`` classes are followed (``class``, ``childclass``). This is the order MuJoCo, mjlab and Isaac Gym /
legged_gym policies read their joint vectors in (legged_gym lists the URDF's, which its MJCF repeats).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from transfer.ordering import dof_names
from transfer.robot.assets.sources import AssetError, Reference, _parse, check_reference, source_format
from transfer.robot.assets.sources import _parse as parse

__all__ = ["mjcf_body_names", "mjcf_joint_names", "mujoco_joint_names", "urdf_joint_names", "without_meshes"]

_UNSUPPORTED = ("replicate", "attach")


def _expand(path: Path, base: Path, seen: tuple[Path, ...]) -> ET.Element:
    root = _parse(path)
    for parent in list(root.iter()):
        for i, child in enumerate(list(parent)):
            if child.tag != "include":
                continue
            text = child.get("file") or ""
            check_reference(path, Reference(text, base / text, "include"))  # before it is opened
            target = (base / text).resolve()
            if not target.is_file():
                raise AssetError(f"{path}: <include file={text!r}> names {target}, which does not exist")
            if target in seen:
                raise AssetError(f"{path}: <include file={text!r}> includes itself")
            parent.remove(child)
            for k, sub in enumerate(list(_expand(target, base, (*seen, target)))):
                parent.insert(i + k, sub)
    return root


def _default_types(root: ET.Element) -> dict[str, str]:
    """Joint type per default class (a class inherits its parent's)."""
    out: dict[str, str] = {}

    def walk(node: ET.Element, inherited: str) -> None:
        for d in node.findall("default"):
            joint = d.find("joint")
            kind = joint.get("type", inherited) if joint is not None else inherited
            out[d.get("class", "main")] = kind
            walk(d, kind)

    for top in root.findall("default"):
        joint = top.find("joint")
        kind = joint.get("type", "hinge") if joint is not None else "hinge"
        out[top.get("class", "main")] = kind
        walk(top, kind)
    return out


def mjcf_joint_names(path: str | Path) -> tuple[str, ...]:
    """The DoF names of the MJCF model at ``path`` in MuJoCo's order (free joints left out).

    Raises:
        AssetError: not an MJCF file, an include that is missing, a joint without a name, or ``<replicate>`` /
            ``<attach>`` (their expansion is MuJoCo's to do: compile the model and list ``mj_id2name`` instead).
    """
    path = Path(path).resolve()
    root = _expand(path, path.parent, (path,))
    if root.tag != "mujoco":
        raise AssetError(f"{path}: the root element is <{root.tag}>, not <mujoco>: not an MJCF file")
    types = _default_types(root)
    names: list[str] = []

    def visit(body: ET.Element, cls: str) -> None:
        """The body's own joints first (document order), then its child bodies' (frames are transparent)."""
        cls = body.get("childclass", cls)
        if body.tag == "body":
            for child in body:
                if child.tag != "joint":
                    continue
                kind = child.get("type") or types.get(child.get("class", cls), "hinge")
                if kind == "free":
                    continue
                name = child.get("name")
                if not name:
                    raise AssetError(f"{path}: a {kind} joint in body {body.get('name')!r} has no name; name it")
                names.extend(dof_names(name, 3 if kind == "ball" else 1))
        for child in body:
            if child.tag in _UNSUPPORTED:
                raise AssetError(
                    f"{path}: <{child.tag}> in body {body.get('name')!r}: its joint order is MuJoCo's to "
                    "compute; list the joint names in a file and pass it as --source"
                )
            if child.tag in ("body", "frame"):
                visit(child, cls)

    for world in root.findall("worldbody"):
        visit(world, "main")
    return tuple(names)


def mjcf_body_names(path: str | Path) -> tuple[str, ...]:
    """The body names of the MJCF model at ``path`` in MuJoCo's order (depth-first in document order, ``<frame>``
    transparent, includes spliced in; the world left out). An unnamed body is ``body_<id>`` (its model index), as
    the MuJoCo backend names it."""
    path = Path(path).resolve()
    root = _expand(path, path.parent, (path,))
    if root.tag != "mujoco":
        raise AssetError(f"{path}: the root element is <{root.tag}>, not <mujoco>: not an MJCF file")
    names: list[str] = []

    def visit(node: ET.Element) -> None:
        for child in node:
            if child.tag == "body":
                names.append(child.get("name") or f"body_{len(names) + 1}")
            if child.tag in ("body", "frame"):
                visit(child)

    for world in root.findall("worldbody"):
        visit(world)
    return tuple(names)


def without_meshes(path: str | Path, files: set[str], folder: Path) -> Path:
    """A copy of the MJCF at ``path`` in ``folder`` (same file name) without the mesh assets whose ``file`` is in
    ``files`` and the geoms that use them: what is converted when only visual geometry uses meshes the robot's
    repository does not ship. Includes are spliced in and the compiler's asset folders made absolute, so every
    other file still resolves where the original's did."""
    path = Path(path).resolve()
    root = _expand(path, path.parent, (path,))
    dropped: set[str] = set()
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag == "mesh" and child.get("file") in files:
                dropped.add(child.get("name") or Path(child.get("file", "")).stem)
                parent.remove(child)
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag == "geom" and child.get("mesh") in dropped:
                parent.remove(child)
    compilers = root.findall("compiler") or [ET.SubElement(root, "compiler")]
    for compiler in compilers:
        asset = compiler.get("assetdir")
        for kind in ("meshdir", "texturedir"):
            given = compiler.get(kind, asset)
            compiler.set(kind, str(path.parent / given) if given else str(path.parent))
        compiler.attrib.pop("assetdir", None)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / path.name
    ET.ElementTree(root).write(out, encoding="unicode")
    return out


_URDF_DOFS = {"revolute": 1, "continuous": 1, "prismatic": 1}


def urdf_joint_names(path: str | Path) -> tuple[str, ...]:
    """The DoF names of the URDF at ``path`` in the order MuJoCo compiles it: depth-first from the root link (the one
    no joint has as its child), each link's child joints in document order (measured against ``mujoco.MjModel`` on
    generated trees); fixed and floating joints carry no DoF.

    Raises:
        AssetError: not a URDF, no single root link, a joint type MuJoCo's URDF reader has no DoF order for
            (``planar``), a joint without a name.
    """
    path = Path(path)
    root = parse(path)
    if root.tag != "robot":
        raise AssetError(f"{path}: the root element is <{root.tag}>, not <robot>: not a URDF file")
    joints = root.findall("joint")
    children: dict[str, list[ET.Element]] = {}
    child_links = set()
    for joint in joints:
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None or not joint.get("name"):
            raise AssetError(f"{path}: a <joint> without a name, a parent or a child link")
        children.setdefault(parent.get("link", ""), []).append(joint)
        child_links.add(child.get("link", ""))
    roots = [link.get("name") for link in root.findall("link") if link.get("name") not in child_links]
    if len(roots) != 1:
        raise AssetError(f"{path}: {len(roots)} root links {roots}; a URDF robot is one tree from one root link")
    names: list[str] = []

    def visit(link: str) -> None:
        for joint in children.get(link, []):
            kind = joint.get("type", "")
            if kind == "planar":
                raise AssetError(
                    f"{path}: joint {joint.get('name')!r} is planar; list the joint names in a file (--source)"
                )
            names.extend(dof_names(joint.get("name", ""), _URDF_DOFS.get(kind, 0)) if kind in _URDF_DOFS else [])
            visit(joint.find("child").get("link", ""))  # type: ignore[union-attr]

    visit(roots[0])
    return tuple(names)


def mujoco_joint_names(path: str | Path) -> tuple[str, ...]:
    """MuJoCo's DoF order of a robot file: :func:`mjcf_joint_names` for MJCF, :func:`urdf_joint_names` for URDF."""
    return urdf_joint_names(path) if source_format(path) == "urdf" else mjcf_joint_names(path)
