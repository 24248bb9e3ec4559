"""A USD robot with no MJCF of its own, as MJCF: the MuJoCo model Newton builds from it (:func:`usd_as_mjcf`).

Newton reads the USD with its own importer (the one the Newton backend uses, :mod:`transfer.backends.newton.importer`)
and its ``SolverMuJoCo`` writes the MuJoCo model it builds (``save_to_mjcf``): the robot's bodies, joints, limits,
inertias, colliders and armature as Newton converts them. Two things are changed before the file is kept:

- names: Newton names a joint or body by its prim path with ``/`` turned into ``_`` (``_anymal_base_LF_HAA``); each
  becomes its prim's own name (``LF_HAA``), the name every order and checkpoint uses. Two prims of one name are
  refused, naming them;
- drives: every DoF gets a position actuator (Newton writes none for a joint whose USD drive has no stiffness), its
  gains what the task sets later;
- contacts: the colliders collide in MuJoCo (Newton turns MuJoCo's collisions off and collides them itself).

No ground is added (the backend adds its own, from the scene). The file is kept in a cache keyed by the bytes of
every layer the stage uses and the Newton and MuJoCo versions, so a second run reads it in milliseconds and an
edited asset is exported again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from transfer.orders import read_topology
from transfer.robot.assets.sources import file_sha256
from transfer.robot.usd import file_stage

__all__ = ["EXPORT_VERSION", "is_export", "usd_as_mjcf"]

EXPORT_VERSION = 3
"""Bumped when what :func:`usd_as_mjcf` writes changes (an old file in the cache is then not reused)."""


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "transfer" / "mujoco-from-usd"


def is_export(path: Path) -> bool:
    """Whether ``path`` is a file :func:`usd_as_mjcf` wrote (in its cache)."""
    return path.resolve().parent.parent == _cache_root().resolve()


def _key(usd: Path) -> str:
    """sha256 over the export's version, Newton's and MuJoCo's, and every layer file the stage uses (path, bytes)."""
    from importlib.metadata import version

    digest = hashlib.sha256(f"{EXPORT_VERSION} {version('newton')} {version('mujoco')}".encode())
    stage = file_stage(usd)  # held while its layers are read (a stage read just now may not be cached)
    layers = sorted({layer.realPath for layer in stage.GetUsedLayers() if layer.realPath})
    for path in layers:
        digest.update(f"{path}\0{file_sha256(path)}\0".encode())
    return digest.hexdigest()


def usd_as_mjcf(usd: str | os.PathLike) -> Path:
    """The MJCF file of the USD robot ``usd`` (module docstring): from the cache, else exported now."""
    usd = Path(os.fspath(usd)).resolve()
    read_topology(usd)  # no articulation, or one the readers refuse: said in the readers' words, naming the file
    out = _cache_root() / _key(usd)[:32] / f"{usd.stem}.xml"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    text = _export(usd)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".", suffix=".xml")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, out)  # a reader sees no half-written file; two runs exporting at once write the same bytes
    return out


def _export(usd: Path) -> str:
    """The MJCF text of Newton's MuJoCo model of ``usd``, renamed and driven (module docstring)."""
    import mujoco
    import newton
    import warp as wp

    from transfer.backends.newton._scene import _authored_self_collisions, _with_full_hulls
    from transfer.backends.newton.importer import import_usd

    wp.config.quiet = True
    builder = newton.ModelBuilder()
    newton.solvers.SolverMuJoCo.register_custom_attributes(builder)
    options = _with_full_hulls({"enable_self_collisions": _authored_self_collisions(usd)})  # whole mesh hulls
    import_usd(str(usd), "none", builder=builder, **options)
    for d in range(builder.joint_dof_count):  # a position actuator on every DoF: gains are the task's
        builder.joint_target_mode[d] = int(newton.JointTargetMode.POSITION)
        builder.joint_target_ke[d], builder.joint_target_kd[d] = 1.0, 0.0
    model = builder.finalize(device="cpu")
    with tempfile.TemporaryDirectory(prefix="transfer-mjcf-") as folder:
        written = Path(folder) / "robot.xml"
        newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, save_to_mjcf=str(written))
        spec = mujoco.MjSpec.from_file(str(written))
    _rename(spec, list(model.joint_label), list(model.body_label), usd)
    _contacts(spec, _authored_self_collisions(usd))
    return spec.to_xml()


def _contacts(spec: Any, self_collisions: bool) -> None:
    """MuJoCo's own collisions on the robot's colliders: Newton writes each with ``contype = conaffinity = 0`` (it
    collides them itself) and ``gap`` for its own contact margin, which MuJoCo reads as contacts that act only once
    ``gap`` deep. Here they collide with the world, and with each other only when the USD lets its links collide
    (``physxArticulation:enabledSelfCollisions``; the parent-child pairs stay excluded as Newton wrote them)."""
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = (1, 1) if self_collisions else (2, 1)
        geom.gap, geom.margin = 0.0, 0.0


def _rename(spec: Any, joint_labels: list[str], body_labels: list[str], usd: Path) -> None:
    """Joints, bodies and actuators named by their prims' own names (Newton names them by path), and every
    reference to them renamed alike (actuators, contact exclusions, equality constraints)."""
    renamed: dict[str, str] = {}
    for kind, items, labels in (("joint", spec.joints, joint_labels), ("body", spec.bodies, body_labels)):
        short = {label.replace("/", "_"): label.rsplit("/", 1)[-1] for label in labels}
        by_name: dict[str, list[str]] = {}
        for item in items:
            if item.name in short:
                by_name.setdefault(short[item.name], []).append(item.name)
        twice = {name: paths for name, paths in by_name.items() if len(paths) > 1}
        if twice:
            name, paths = next(iter(twice.items()))
            raise ValueError(
                f"{usd}: {len(paths)} {kind} prims are named {name!r} ({', '.join(paths)}); the MuJoCo "
                "backend names each by its prim's name: rename them apart in the USD"
            )
        for item in items:
            if item.name in short:
                old, item.name = item.name, short[item.name]
                renamed[old] = item.name
    new = lambda name: renamed.get(name, name)  # noqa: E731
    for act in spec.actuators:
        act.target = new(act.target)
        act.name = act.name or act.target
    for pair in spec.excludes:  # the contact exclusions Newton writes name bodies
        pair.bodyname1, pair.bodyname2 = new(pair.bodyname1), new(pair.bodyname2)
    for eq in spec.equalities:  # a closed loop's constraint names its joints or bodies
        eq.name1, eq.name2 = new(eq.name1), new(eq.name2)
