"""Ordering conventions: which articulation order a vector follows.

A *convention* names the order a backend lists joints (DoFs) and bodies in:

- ``physx``: PhysX (ovphysx) order, breadth-first from the root PhysX elects;
- ``mjwarp``: Newton / MuJoCo-Warp order, depth-first (``ModelBuilder.add_usd`` + ``ArticulationView``);
- ``robot_schema``: the order authored on the asset by ``isaac:physics:robotJoints`` / ``robotLinks``;
- ``mujoco``: MuJoCo's order of the robot's MJCF (depth-first in document order), the order of MuJoCo, mjlab and
  Isaac Gym / legged_gym policies; read from the MJCF file (:func:`transfer.assets.mjcf.mjcf_joint_names`), which
  a converted USD does not keep, so the input layer turns it into the explicit list of names.

An ordering is either a convention, an explicit sequence of names, or ``None`` (the backend's own order).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_NAMES",
    "OrderingConvention",
    "Ordering",
    "convention_list",
    "dof_joint_name",
    "dof_names",
    "parse_ordering",
    "read_name_file",
]


MAX_NAMES = 10_000
"""The most joint (or body) names an order may list: robots have tens to hundreds (a file of joint names, a task's
``joint_names``)."""


_REGISTRY_READY = False
REGISTRY_MODULE = "transfer.orders.conventions"
"""Where the conventions are registered (a floor up: their orders read the robot's graph). Named here as data, as
the backends registry names its engines' modules: a plug-in's name is known only once the registry has loaded."""


def _ensure_registry() -> None:
    """Load the conventions registry once (:data:`REGISTRY_MODULE`: the built-ins and the plug-ins installed under
    the ``transfer.conventions`` entry points), so that every name is known."""
    global _REGISTRY_READY
    if not _REGISTRY_READY:
        _REGISTRY_READY = True
        importlib.import_module(REGISTRY_MODULE).load()


class _Registered(type):
    """Iterating the class gives every registered convention, in registration order (as an Enum's members)."""

    def __iter__(cls) -> Iterator[OrderingConvention]:
        _ensure_registry()
        return iter(list(cls._names.values()))

    def __len__(cls) -> int:
        _ensure_registry()
        return len(cls._names)

    def __contains__(cls, value: object) -> bool:
        _ensure_registry()
        return isinstance(value, str) and value in cls._names


class OrderingConvention(str, metaclass=_Registered):
    """A named articulation ordering convention: one per name (``OrderingConvention("physx") is
    OrderingConvention.PHYSX``), compared by identity or as its name. The built-in four are members; a convention
    plugged in (:func:`transfer.orders.conventions.register`) is one too, by the name it registers."""

    _names: dict[str, OrderingConvention] = {}
    PHYSX: OrderingConvention
    MJWARP: OrderingConvention
    ROBOT_SCHEMA: OrderingConvention
    MUJOCO: OrderingConvention

    def __new__(cls, name: object) -> OrderingConvention:
        if isinstance(name, OrderingConvention):
            return name
        if isinstance(name, str) and name not in cls._names:
            _ensure_registry()  # a plug-in's name
        found = cls._names.get(name) if isinstance(name, str) else None
        if found is None:
            raise ValueError(f"{name!r} is not an ordering convention ({convention_list()})")
        return found

    @classmethod
    def _add(cls, name: str) -> OrderingConvention:
        """The convention named ``name``, made once (:func:`transfer.orders.conventions.register` calls it)."""
        if name not in cls._names:
            made = str.__new__(cls, name)
            cls._names[name] = made
        return cls._names[name]

    @property
    def value(self) -> str:
        """Its name (``"physx"``), as an Enum's value."""
        return str.__str__(self)

    @property
    def name(self) -> str:
        """Its name in capitals (``"PHYSX"``), as an Enum member's."""
        return self.value.upper()

    def __str__(self) -> str:  # "physx", not "OrderingConvention('physx')"
        return self.value

    def __repr__(self) -> str:
        return f"<OrderingConvention.{self.name}>"

    def __reduce__(self) -> tuple[Any, tuple[str]]:  # unpickled as the one convention of its name
        return OrderingConvention, (self.value,)

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


for _builtin in ("physx", "mjwarp", "robot_schema", "mujoco"):
    setattr(OrderingConvention, _builtin.upper(), OrderingConvention._add(_builtin))


Ordering = OrderingConvention | tuple[str, ...] | None
"""What :func:`parse_ordering` returns: a convention, an explicit name tuple, or ``None``."""


def convention_list() -> str:
    """Every registered convention's name, comma-separated, for a message: ``physx, mjwarp, robot_schema, mujoco``."""
    return ", ".join(c.value for c in OrderingConvention)


def parse_ordering(value: object) -> Ordering:
    """Normalise an ordering given by a user or a config.

    Accepts ``None`` (backend order), an :class:`OrderingConvention`, a case-insensitive convention
    string (``"PhysX"``, ``"mjwarp"``), or an explicit list/tuple of names (returned as a tuple of str).

    Raises:
        ValueError: an unknown convention string, or an empty name list.
        TypeError: any other type, or a name list with non-string entries.
    """
    if value is None or isinstance(value, OrderingConvention):
        return value
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_")
        _ensure_registry()  # a plug-in that cannot be registered says so, not "unknown convention"
        try:
            return OrderingConvention(key)
        except ValueError:
            raise ValueError(
                f"Unknown ordering convention {value!r}. Valid values: {convention_list()}, "
                "None (the backend's own order), or an explicit list of names."
            ) from None
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        names = tuple(value)
        bad = [(i, n) for i, n in enumerate(names) if not isinstance(n, str)]
        if bad:
            listed = ", ".join(f"[{i}]={n!r} ({type(n).__name__})" for i, n in bad)
            raise TypeError(f"An explicit ordering must contain only names (str); non-string entries: {listed}.")
        if not names:
            raise ValueError("An explicit ordering must name at least one element; got an empty list.")
        return names
    raise TypeError(
        f"Cannot use {type(value).__name__} {value!r} as an ordering. Expected None, one of "
        f"{convention_list()}, an OrderingConvention, or a list/tuple of names."
    )


def dof_names(joint_name: str, count: int) -> list[str]:
    """The DoF names of a joint with ``count`` DoFs, as both engines spell them: the joint's name for one DoF,
    ``name:0``, ``name:1``, ... for several."""
    return [joint_name] if count == 1 else [f"{joint_name}:{k}" for k in range(count)]


def dof_joint_name(dof_name: str) -> str:
    """The joint a DoF name belongs to (``"hip:1"`` -> ``"hip"``; a single-DoF joint's name is its own)."""
    joint, sep, k = dof_name.rpartition(":")
    return joint if sep and k.isdigit() else dof_name


def read_name_file(path: str | Path) -> list[str]:
    """The joint names a file lists: a YAML list (``- LF_HAA``) or one name per line. ``ValueError`` naming the file
    otherwise (what it holds is not echoed: it may be any file)."""
    import yaml

    from transfer.errors import read_config_text

    path = Path(path)
    try:
        text = read_config_text(path, ValueError, "list of joint names")
        names = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file; expected a YAML list of joint names or one name per line") from None
    except yaml.YAMLError as exc:
        names = exc
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if isinstance(names, (str, yaml.YAMLError)) and lines and all(len(line.split()) == 1 for line in lines):
        names = lines  # one name per line: YAML reads it as one folded string
    if isinstance(names, yaml.YAMLError):
        from transfer.errors import yaml_problem

        raise ValueError(f"{path}: not a readable YAML list of joint names ({yaml_problem(names)})")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
        what = f"a {type(names).__name__}" if names is not None else "no list"
        raise ValueError(
            f"{path}: expected a YAML list of joint names (- LF_HAA ...) or one name per line, found {what}"
        )
    if len(names) > MAX_NAMES:
        raise ValueError(f"{path}: lists {len(names)} names, more than any robot has joints (at most {MAX_NAMES})")
    names = [n.strip() for n in names]
    twice = sorted(n for n, k in Counter(names).items() if k > 1)
    if twice:
        from transfer._console import printable

        raise ValueError(
            f"{path}: lists {', '.join(printable(n, 80) for n in twice[:5])} more than once; an order "
            "names each joint once"
        )
    return names
