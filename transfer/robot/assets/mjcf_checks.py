"""What an MJCF file says that no engine should be handed, named in the file's own terms (issue 48), from the XML
alone (includes spliced in), before the converter or MuJoCo's compiler reads it:

- :func:`check_mjcf`: a number that is not finite (``pos="nan 0 0"``, ``mass="1e999"``), a range whose lower bound
  is above its upper (``range="0 -140"``, ``ctrlrange``, ``forcerange``), and for a conversion to USD a joint or
  body name the converter would rename (``LF-HAA`` becomes ``tn__LFHAA_...``, which no policy's names find);
- :func:`welded_root` / :func:`refuse_welded_walker`: a walking policy on a robot whose root body has no free joint
  (welded to the world: it would stand still and never fall);
- :func:`names_dynamics`: actuators with activation dynamics (``dyntype="filter"``, ``timeconst``), which MuJoCo steps
  as authored and PhysX and Newton (the converted USD's drives) do not.

The size of a file (bodies and geoms, ``<replicate>`` counted out) is bounded where every robot file is parsed
(:func:`transfer.robot.assets.sources._parse`).
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path

from transfer.robot.assets.mjcf import _default_types, _expand
from transfer.robot.assets.sources import AssetError, source_format

__all__ = ["WALKING_TERMS", "check_mjcf", "names_dynamics", "refuse_welded_walker", "welded_root"]

WALKING_TERMS = ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_commands")
"""Observation terms only a floating base gives meaning to: a policy reading one walks (or balances)."""
_RANGES = ("range", "ctrlrange", "forcerange", "actuatorfrcrange", "actrange")
_WORDS = frozenset(
    "name class childclass joint jointinparent body body1 body2 site site1 site2 geom geom1 geom2 mesh material "
    "texture hfield tendon tendon1 tendon2 actuator target file content_type prefix model objname objtype refname "
    "reftype cranksite slidersite type user".split()
)
"""Attributes that hold names, kinds or free-form user data: never read as numbers."""
_SKIPPED = ("custom", "keyframe")
"""Elements whose numbers no run reads (user data, keyframes)."""
_DYNAMIC = ("intvelocity", "cylinder", "muscle")
"""Actuator shortcuts with activation dynamics of their own (beside ``dyntype`` and ``timeconst``)."""
_USD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _read(path: Path) -> ET.Element:
    return _expand(path, path.parent, (path,))


def _elements(node: ET.Element) -> Iterator[tuple[ET.Element, str]]:
    """Every element below ``node`` in document order, with where it stands (``in body 'base'``, ``in <default
    class='main'>``). Not recursive: a file of a thousand nested bodies is read too."""
    stack = [(child, "") for child in reversed(node)]
    while stack:
        element, where = stack.pop()
        if element.tag in _SKIPPED or not isinstance(element.tag, str):
            continue
        yield element, where
        if element.tag == "body" and element.get("name"):
            where = f" in body {element.get('name')!r}"
        elif element.tag == "default":
            where = f" in <default class={element.get('class', 'main')!r}>"
        stack += [(child, where) for child in reversed(element)]


def _describe(element: ET.Element, where: str) -> str:
    name = element.get("name")
    return f"<{element.tag} name={name!r}>" if name else f"<{element.tag}>{where}"


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(t) for t in text.split()]
    except ValueError:
        return None


def check_mjcf(path: str | Path, *, converting: bool = False) -> None:
    """Refuse, naming the element and the attribute, a number of the MJCF at ``path`` that is not finite or a range
    whose lower bound is above its upper; with ``converting`` also a joint or body name the USD converter renames.

    Raises:
        AssetError: ``<file>: <element name='...'> attribute="value" ...; what to do``.
    """
    path = Path(path)
    root = _read(path.resolve())
    for element, where in _elements(root):
        for attr, text in element.attrib.items():
            if attr in _WORDS:
                continue
            values = _numbers(text)
            if not values:
                continue
            shown = text if len(text) <= 80 else f"{text[:77]}..."
            said = f'{path}: {_describe(element, where)} {attr}="{shown}"'
            if not all(math.isfinite(v) for v in values):
                raise AssetError(f"{said}: not a finite number (NaN or inf); write a finite value in the MJCF")
            if attr in _RANGES and len(values) == 2 and values[0] > values[1]:
                raise AssetError(f"{said} has its lower bound above its upper; write the lower bound first")
    if converting:
        _check_names(path, root)


def _check_names(path: Path, root: ET.Element) -> None:
    """A joint or body name the converter would rename (USD names are letters, digits and ``_``, not starting with a
    digit; ``usdex`` writes any other as ``tn__<encoded>``), named before it is converted."""
    for world in root.findall("worldbody"):
        for element, _ in _elements(world):
            name = element.get("name")
            if element.tag not in ("body", "joint") or not name or _USD_NAME.fullmatch(name):
                continue
            if element.tag == "joint" and element.get("type") == "free":
                continue
            raise AssetError(
                f"{path}: {element.tag} {name!r} is no USD name (letters, digits and _, not starting "
                "with a digit): the converter to USD would rename it 'tn__...', and a policy naming it "
                "would not find it on PhysX or Newton: rename it in the MJCF (and in the policy's "
                "joint list, if it names it)"
            )


def _top_bodies(node: ET.Element) -> list[ET.Element]:
    out = []
    for child in node:
        if child.tag == "body":
            out.append(child)
        elif child.tag == "frame":
            out += _top_bodies(child)
    return out


def _has_joints(body: ET.Element) -> bool:
    return any(e.tag in ("joint", "freejoint") for e in body.iter())


def welded_root(path: str | Path) -> str | None:
    """The name of the MJCF's root body when it has no free joint (the robot welded to the world), else ``None``.
    The root is the first top-level body with joints below it, as the MuJoCo backend picks it."""
    root = _read(Path(path).resolve())
    types = _default_types(root)
    bodies = [b for world in root.findall("worldbody") for b in _top_bodies(world)]
    if not bodies:
        return None
    body = next((b for b in bodies if _has_joints(b)), bodies[0])

    def free(joint: ET.Element, cls: str) -> bool:
        return joint.tag == "freejoint" or (joint.get("type") or types.get(joint.get("class", cls))) == "free"

    cls = body.get("childclass", "main")
    if any(free(j, cls) for j in body if j.tag in ("joint", "freejoint")):
        return None
    return body.get("name") or "body_1"


def refuse_welded_walker(file: str | Path | None, terms: Sequence[str]) -> None:
    """Refuse a walking policy (its observation ``terms`` read one of :data:`WALKING_TERMS`) on an MJCF robot
    ``file`` welded to the world: it would run standing still, 0 m/s and never fallen, and say nothing."""
    if file is None or source_format(file) != "mjcf":
        return
    walking = [t for t in dict.fromkeys(terms) if t in WALKING_TERMS]
    root = welded_root(file) if walking else None
    if root is not None:
        raise AssetError(
            f"{file}: its root body {root!r} has no free joint: the robot is welded to the world; a "
            f"walking policy (its observation reads {', '.join(walking)}) needs <freejoint/> in its root "
            "body"
        )


def names_dynamics(path: str | Path) -> bool:
    """Whether the MJCF's text names activation dynamics anywhere (an actuator's or a default's ``dyntype`` or
    ``timeconst``, or an actuator kind that has them): the MuJoCo backend's notes ask MuJoCo which actuators have
    them (:mod:`transfer.backends.mujoco.notes`) only then."""
    said = (e for e, _ in _elements(_read(Path(path).resolve())))
    return any(e.tag in _DYNAMIC or "dyntype" in e.attrib or "timeconst" in e.attrib for e in said)
