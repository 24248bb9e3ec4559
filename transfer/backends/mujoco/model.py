"""The robot file read with ``mujoco.MjSpec``, changed only where the scene description asks, and compiled.

:func:`build_model` is the one place the MuJoCo backend reads a robot: the MJCF (or URDF) itself, or the file a
converted USD was made from (:func:`transfer.robot.assets.source_of`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco

from transfer.backends._mujoco_log import install as _install_mujoco_log
from transfer.backends.mujoco.from_usd import is_export, usd_as_mjcf
from transfer.backends.scene import SceneDescription
from transfer.robot.assets import SOURCE_SUFFIXES, source_format, source_of
from transfer.robot.assets.mjcf_checks import check_mjcf

_install_mujoco_log()  # MuJoCo's warnings to logging, never a MUJOCO_LOG.TXT in the user's folder

__all__ = ["MujocoModel", "build_model", "dof_names", "robot_file", "warm"]

_EVERY = 0x7FFFFFFF
"""Collision bits of a ground the backend adds: it touches every geom that collides with anything."""


@dataclass
class MujocoModel:
    """A compiled robot and what the backend needs to know of it."""

    model: Any
    source: Path
    joint_names: tuple[str, ...]
    """The robot's hinge and slide joints, in model order (MuJoCo's own: the ``mujoco`` convention)."""
    body_names: tuple[str, ...]
    """The robot's bodies (its root first), in model order."""
    root_body: str
    root_id: int
    fixed_base: bool
    free_qpos: int | None
    """``qpos`` address of the root's free joint (``None``: the root is fixed to the world)."""
    actuator_of: dict[str, int]
    """The actuator driving each joint (a position actuator, the motors replaced)."""
    notes: list[str] = field(default_factory=list)
    changes: tuple[str, ...] = ()
    """What the user should hear of the model built (:attr:`~transfer.backends.base.Backend.changes`)."""


def robot_file(asset: str | os.PathLike) -> Path:
    """The MJCF or URDF file the backend steps for ``asset``: the file itself, the one a converted USD was made
    from, or for a USD robot with no such source the MJCF of the MuJoCo model Newton builds from it
    (:func:`~transfer.backends.mujoco.from_usd.usd_as_mjcf`, cached)."""
    path = Path(os.fspath(asset)).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"MuJoCo backend: robot file not found: {path}")
    if path.suffix.lower() in SOURCE_SUFFIXES:
        return path
    source = source_of(path)
    if source is not None:
        return source
    from importlib.util import find_spec

    if find_spec("newton") is None:  # not imported here: a cached export needs no Newton (its import takes ~3 s)
        raise ValueError(
            f"{path}: a USD file with no MJCF of its own; the MuJoCo backend reads such a robot through the MuJoCo "
            "model Newton builds from it, and Newton is not installed (pip install 'transfer[newton]'). Or give "
            "--asset ROBOT.xml (or .urdf)."
        )

    return usd_as_mjcf(path)


def _settings(spec: Any, settings: dict[str, Any]) -> None:
    option = spec.option
    for key, value in settings.items():
        if key == "integrator":
            option.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{str(value).upper()}")
        elif key == "cone":
            option.cone = getattr(mujoco.mjtCone, f"mjCONE_{str(value).upper()}")
        elif key == "solver":
            option.solver = getattr(mujoco.mjtSolver, f"mjSOL_{str(value).upper()}")
        else:
            setattr(option, key, value)


def _root(spec: Any, source: Path) -> Any:
    bodies = list(spec.worldbody.bodies)
    if not bodies:
        raise ValueError(f"{source}: the worldbody holds no body: no robot to step")
    with_joints = [b for b in bodies if b.joints or _has_joints(b)]
    return (with_joints or bodies)[0]


def _has_joints(body: Any) -> bool:
    return any(child.joints or _has_joints(child) for child in body.bodies)


def _subtree(body: Any) -> list[Any]:
    out = [body]
    for child in body.bodies:
        out += _subtree(child)
    return out


def _base(spec: Any, root: Any, fixed: bool | None, notes: list[str]) -> None:
    free = [j for j in root.joints if j.type == mujoco.mjtJoint.mjJNT_FREE]
    if fixed is True and free:
        spec.delete(free[0])
        notes.append(f"the root body {root.name!r} is fixed to the world, as the training engine built it")
    elif fixed is False and not root.joints:
        root.add_freejoint()
        notes.append(f"the root body {root.name!r} is free, as the training engine built it")


def _ground(spec: Any, scene: SceneDescription, notes: list[str]) -> Any | None:
    planes = [g for g in spec.worldbody.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE]
    if scene.ground is None or planes:
        return planes[0] if planes else None
    plane = spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0], name="transfer_ground")
    plane.pos = [0.0, 0.0, scene.ground_height]
    plane.friction = [scene.ground.static_friction, 0.005, 0.0001]
    plane.contype = plane.conaffinity = _EVERY  # whatever classes the file's defaults give its own geoms
    notes.append("a ground plane added (the file has none)")
    return plane


def _contacts(spec: Any, robot: list[Any], ground: Any, scene: SceneDescription) -> None:
    if scene.friction_scale != 1.0:
        for geom in spec.geoms:
            geom.friction = [geom.friction[0] * scene.friction_scale, geom.friction[1], geom.friction[2]]
    if scene.self_collisions is False:  # the robot's geoms collide with the world, never with each other
        for body in robot:
            for geom in body.geoms:
                if geom.contype or geom.conaffinity:
                    geom.contype, geom.conaffinity = 2, 1
        if ground is not None:
            ground.contype = ground.conaffinity = _EVERY


def _drives(spec: Any, joints: list[str], source: Path, notes: list[str]) -> str | None:
    """Keep position actuators; replace motors by position actuators of the motor's force range. A file with no
    actuator at all (mjlab's robots: mjlab adds them from its Python config) gets one position actuator per joint,
    its gains and effort limit left to the task (as mjlab builds them): what is said of that is returned."""
    by_joint: dict[str, list[Any]] = {}
    for act in spec.actuators:
        if act.trntype == mujoco.mjtTrn.mjTRN_JOINT:
            by_joint.setdefault(act.target, []).append(act)
    if not len(spec.actuators):
        for name in joints:
            act = spec.add_actuator(name=f"transfer_{name}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=0.0, kv=0.0)  # the task's stiffness and damping are written once built
        return (
            f"{source.name} has no <actuator>: one position actuator per joint added ({len(joints)}), with the "
            "task's stiffness and damping (and effort limit, where it gives one), as mjlab builds them from its robot "
            "config"
        )
    missing = [j for j in joints if j not in by_joint]
    if missing:
        raise ValueError(
            f"{source}: joints {missing} have no actuator; the MuJoCo backend drives each joint through "
            "the file's own actuators (a position actuator or a motor): add one per joint"
        )
    twice = sorted(j for j in joints if len(by_joint[j]) > 1)
    if twice:
        raise ValueError(f"{source}: joints {twice} have more than one actuator; keep one per joint")
    motors = []
    for name in joints:
        act = by_joint[name][0]
        position = act.biastype == mujoco.mjtBias.mjBIAS_AFFINE and act.gaintype == mujoco.mjtGain.mjGAIN_FIXED
        _refuse_kind(act, position, source)
        if position:
            continue
        if act.biastype != mujoco.mjtBias.mjBIAS_NONE or act.gaintype != mujoco.mjtGain.mjGAIN_FIXED:
            raise ValueError(
                f"{source}: joint {name!r} is driven by an actuator that is neither a position actuator "
                "nor a motor; the MuJoCo backend drives joints by position targets"
            )
        gear = float(act.gear[0])
        limit = abs(gear) * max(abs(float(act.ctrlrange[0])), abs(float(act.ctrlrange[1])))
        limited = act.ctrllimited == mujoco.mjtLimited.mjLIMITED_TRUE or (
            act.ctrllimited == mujoco.mjtLimited.mjLIMITED_AUTO and act.ctrlrange[0] < act.ctrlrange[1]
        )
        act.set_to_position(kp=0.0, kv=0.0)
        act.gear = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE if limited else mujoco.mjtLimited.mjLIMITED_FALSE
        act.forcerange = [-limit, limit] if limited else [0.0, 0.0]
        motors.append(name)
    if motors:
        notes.append(f"{len(motors)} motor(s) driven as ideal PD (a position actuator of the motor's force range)")
    return None


def _refuse_kind(act: Any, position: bool, source: Path) -> None:
    """Refuse, naming it, an actuator whose control is no position target: a velocity actuator (a gain on the control
    with no position feedback: ``<velocity>``), an integrator (``<intvelocity>``), a motor with activation dynamics
    (the position actuator replacing it would filter the target, not the torque). A position actuator's filter
    (``timeconst``, ``dyntype="filter"``) is stepped as authored."""
    label = f"{source}: actuator {act.name!r} (joint {act.target!r})"
    dyn = act.dyntype.name.removeprefix("mjDYN_").lower()
    if position and act.gainprm[0] != 0 and act.biasprm[1] == 0:
        raise ValueError(
            f"{label} is a velocity actuator (<velocity>: its control is a joint velocity); the MuJoCo "
            "backend drives joints by position targets: make it a <position> actuator or a <motor>"
        )
    if position and act.dyntype == mujoco.mjtDyn.mjDYN_INTEGRATOR:
        raise ValueError(
            f'{label} has activation dynamics (dyntype="{dyn}": its control is integrated, a joint '
            "velocity, as <intvelocity>'s); the MuJoCo backend drives joints by position targets: make "
            "it a <position> actuator"
        )
    if not position and act.dyntype != mujoco.mjtDyn.mjDYN_NONE:
        raise ValueError(
            f'{label} has activation dynamics (dyntype="{dyn}") on a motor; the MuJoCo backend drives a '
            "motor's joint by a position actuator of its force range, which would filter the target, "
            'not the torque: remove dyntype, or make it a <position> actuator (timeconst="..." keeps a '
            "filter)"
        )


_SEES_GEOMS = tuple(
    getattr(mujoco.mjtSensor, f"mjSENS_{kind}")
    for kind in ("RANGEFINDER", "GEOMDIST", "GEOMNORMAL", "GEOMFROMTO", "TACTILE", "PLUGIN", "USER")
    if hasattr(mujoco.mjtSensor, f"mjSENS_{kind}")
)
"""Sensors that may read any geom of a body, visual ones included (a ray hits every geom): a file with one keeps
all its geoms."""


def _strip_visuals(spec: Any) -> int:
    """Delete the mesh geoms that cannot touch the physics, then the meshes no geom uses; return how many geoms went.
    Compiling a mesh (its convex hull, its inertia) is most of a robot's compile time, and robots drawn with visual
    meshes (H1-2: 55 of its 108 geoms) pay it twice. A geom goes when it collides with nothing (``contype`` and
    ``conaffinity`` 0, in no contact pair), no sensor or plugin names it, no fluid force acts on it, and it sets no
    mass: its body has an explicit ``<inertial>`` the compiler keeps, or the geom weighs nothing, or its group is
    outside ``inertiagrouprange``. Nothing goes where a sensor may see any geom (:data:`_SEES_GEOMS`). The stepped
    model is the same to the bit; pictures read the file again (:mod:`~transfer.backends.mujoco.render`)."""
    if any(sensor.type in _SEES_GEOMS for sensor in spec.sensors):
        return 0
    named = {p.geomname1 for p in spec.pairs} | {p.geomname2 for p in spec.pairs}
    geom_obj = mujoco.mjtObj.mjOBJ_GEOM
    for sensor in spec.sensors:
        named |= {sensor.objname} if sensor.objtype == geom_obj else set()
        named |= {sensor.refname} if sensor.reftype == geom_obj else set()
    compiler = spec.compiler
    low, high = compiler.inertiagrouprange
    gone = 0
    for geom in list(spec.geoms):
        if geom.type != mujoco.mjtGeom.mjGEOM_MESH or geom.contype or geom.conaffinity:
            continue
        if (geom.name and geom.name in named) or geom.fluid_ellipsoid or geom.plugin.active:
            continue
        weightless = geom.mass == 0 or (geom.mass != geom.mass and geom.density == 0)  # mass NaN: unset
        kept = compiler.inertiafromgeom == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE or (
            compiler.inertiafromgeom == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO
            and geom.parent.explicitinertial
        )
        if kept or weightless or not low <= geom.group <= high:
            spec.delete(geom)
            gone += 1
    if gone:
        used = {g.meshname for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH}
        for mesh in list(spec.meshes):
            if mesh.name and mesh.name not in used:
                spec.delete(mesh)
    return gone


_WARMING: dict[Path, threading.Thread] = {}
"""The robot files compiled on a thread by :func:`warm`, by path."""


def warm(asset: str | os.PathLike) -> None:
    """Start compiling the MJCF or URDF ``asset`` on a thread of its own, so that the run's own compile of it later
    finds its meshes in MuJoCo's asset cache (H1-2: 1.0 s -> 0.3 s): what a command calls as soon as it knows the
    robot, while it loads the policy. The file is read here; the thread runs ``MjSpec.compile`` alone (native code
    without the GIL, loading no library: a thread that imports an extension module while the main thread imports
    another can deadlock in the dynamic loader). Once per file; a file that cannot be read is left alone here (the
    run's own build says why)."""
    path = Path(os.fspath(asset)).expanduser().resolve()
    if path in _WARMING or path.suffix.lower() not in SOURCE_SUFFIXES or not path.is_file():
        return
    try:
        spec = _spec(path, SceneDescription(), drives=False)[0]
    except Exception:  # noqa: BLE001 - the run's own build reads the file again and refuses it in one line
        return
    _WARMING[path] = thread = threading.Thread(target=_compile_quietly, args=(spec,), name="transfer-warm", daemon=True)
    thread.start()


def _compile_quietly(spec: Any) -> None:
    try:
        spec.compile()
    except Exception:  # noqa: BLE001 - as above
        return


def build_model(asset: str | os.PathLike, scene: SceneDescription, *, drives: bool = True) -> MujocoModel:
    """Read ``asset``'s robot file with ``MjSpec``, apply ``scene`` and compile it. ``drives=False``: as authored
    (no actuator checked or replaced, ball joints allowed): what the engine's own order is read from. A compile of
    the same file that :func:`warm` started is waited for first (its meshes are then in MuJoCo's cache)."""
    source = robot_file(asset)
    warming = _WARMING.get(source)
    if warming is not None:
        warming.join()
    return _build(source, scene, drives=drives)


def _build(source: Path, scene: SceneDescription, *, drives: bool) -> MujocoModel:
    spec, root, notes, added = _spec(source, scene, drives=drives)
    try:
        model = spec.compile()
    except Exception as exc:
        raise ValueError(f"{source}: MuJoCo cannot compile it: {exc}") from None
    built = _described(model, source, root.name, notes)
    built.changes = () if added is None else (added,)
    return built


def _spec(source: Path, scene: SceneDescription, *, drives: bool) -> tuple[Any, Any, list[str], Any]:
    """``(spec, root body, notes, the drives added)``: the robot file read and changed as ``scene`` asks, to compile."""
    if source_format(source) == "mjcf" and not is_export(source):  # its size, NaN, ranges: before MuJoCo reads it
        check_mjcf(source)
    try:
        spec = mujoco.MjSpec.from_file(str(source))
    except Exception as exc:  # MuJoCo's parser: ValueError with its own message
        raise ValueError(f"{source}: MuJoCo cannot read it: {exc}") from None
    notes: list[str] = []
    if is_export(source):
        notes.append(f"the robot read from its USD as the MuJoCo model Newton builds of it ({source})")
    _settings(spec, dict(scene.settings_for("mujoco")))
    if scene.gravity is not None:
        spec.option.gravity = list(scene.gravity)
    root = _root(spec, source)
    _base(spec, root, scene.fixed_base, notes)
    free = any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints)
    robot = _subtree(root) if free else [b for top in spec.worldbody.bodies for b in _subtree(top)]
    ground = _ground(spec, scene, notes)
    _contacts(spec, robot, ground, scene)
    kinds = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    odd = [j.name for b in robot for j in b.joints if j.type not in (*kinds, mujoco.mjtJoint.mjJNT_FREE)]
    if odd and drives:
        raise ValueError(f"{source}: ball joints {odd}: the MuJoCo backend drives hinge and slide joints only")
    names = [j.name for b in robot for j in b.joints if j.type in kinds]
    added = _drives(spec, names, source, notes) if drives else None
    _strip_visuals(spec)
    return spec, root, notes, added


def robot_bodies(model: Any, root_id: int) -> list[int]:
    """The robot's bodies: the subtree of a free root; every body of a fixed-base file (MuJoCo fuses a URDF's
    fixed root link into the world, leaving its children at the top)."""
    free = any(
        model.jnt_bodyid[j] == root_id and model.jnt_type[j] == int(mujoco.mjtJoint.mjJNT_FREE)
        for j in range(model.njnt)
    )
    return [b for b in range(1, model.nbody) if not free or model.body_rootid[b] == root_id]


def dof_names(model: Any, root_id: int) -> tuple[str, ...]:
    """The DoF names of the robot rooted at body ``root_id`` (:func:`robot_bodies`), in model order: a hinge or
    slide joint's name, a ball joint's ``name:0..2`` (the free joint left out)."""
    out: list[str] = []
    bodies = set(robot_bodies(model, root_id))
    for j in range(model.njnt):
        if model.jnt_bodyid[j] not in bodies or model.jnt_type[j] == int(mujoco.mjtJoint.mjJNT_FREE):
            continue
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        out += [f"{name}:{i}" for i in range(3)] if model.jnt_type[j] == int(mujoco.mjtJoint.mjJNT_BALL) else [name]
    return tuple(out)


def _described(model: Any, source: Path, root_name: str, notes: list[str]) -> MujocoModel:
    obj = mujoco.mjtObj
    root_id = mujoco.mj_name2id(model, obj.mjOBJ_BODY, root_name)
    bodies = robot_bodies(model, root_id)
    kinds = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] in bodies and model.jnt_type[j] in kinds]
    joint_names = tuple(mujoco.mj_id2name(model, obj.mjOBJ_JOINT, j) for j in joints)
    actuator_of = {}
    for a in range(model.nu):
        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT:
            actuator_of[mujoco.mj_id2name(model, obj.mjOBJ_JOINT, model.actuator_trnid[a, 0])] = a
    free = [
        j
        for j in range(model.njnt)
        if model.jnt_bodyid[j] == root_id and model.jnt_type[j] == int(mujoco.mjtJoint.mjJNT_FREE)
    ]
    return MujocoModel(
        model=model,
        source=source,
        joint_names=joint_names,
        body_names=tuple(mujoco.mj_id2name(model, obj.mjOBJ_BODY, b) or f"body_{b}" for b in bodies),
        root_body=root_name,
        root_id=root_id,
        fixed_base=not free,
        free_qpos=int(model.jnt_qposadr[free[0]]) if free else None,
        actuator_of=actuator_of,
        notes=notes,
    )
