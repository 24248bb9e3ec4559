"""Pictures of recorded runs (``transfer replay --video``), whatever engine ran them: MuJoCo's renderer on the robot's
own file (its MJCF, or the MJCF the MuJoCo backend exports of a USD robot), posed frame by frame from a run's recorded
base pose and joint positions by name. A camera follows the robot's root; the ground is a checkered plane."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from transfer.backends.mujoco.model import build_model
from transfer.backends.scene import SceneDescription

__all__ = ["RenderError", "Shape", "frames", "poses", "shapes"]


GHOST = "ghost_"
"""The prefix of the reference's see-through copy of the robot (its bodies and joints)."""


class RenderError(RuntimeError):
    """No OpenGL to render with: the message names what to install."""


def _renderer(model: object, width: int, height: int) -> mujoco.Renderer:
    try:
        return mujoco.Renderer(model, height, width)
    except Exception as exc:  # noqa: BLE001 - any missing GL library is one line naming the package
        gl = os.environ.get("MUJOCO_GL", "")
        fix = {
            "osmesa": "install OSMesa (Debian: apt install libosmesa6)",
            "egl": "install an EGL driver (Debian: apt install libegl1 libegl-mesa0), or set MUJOCO_GL=osmesa with "
            "libosmesa6",
        }.get(gl, "set MUJOCO_GL=osmesa (Debian: apt install libosmesa6)")
        raise RenderError(f"MuJoCo cannot render headless with MUJOCO_GL={gl or '(unset)'}: {fix} ({exc})") from None


def _dressed(spec: mujoco.MjSpec) -> None:
    """A checkered floor texture, a sky and a head light, for a picture (the physics is not stepped)."""
    grid = spec.add_texture(name="transfer_grid", type=mujoco.mjtTexture.mjTEXTURE_2D)
    grid.builtin, grid.width, grid.height = mujoco.mjtBuiltin.mjBUILTIN_CHECKER, 300, 300
    grid.rgb1, grid.rgb2 = [0.32, 0.36, 0.40], [0.24, 0.27, 0.30]
    material = spec.add_material(name="transfer_floor")
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "transfer_grid"
    material.texrepeat, material.reflectance = [1.0, 1.0], 0.1
    material.texuniform = True
    sky = spec.add_texture(name="transfer_sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX)
    sky.builtin, sky.width, sky.height = mujoco.mjtBuiltin.mjBUILTIN_GRADIENT, 64, 64
    sky.rgb1, sky.rgb2 = [0.62, 0.72, 0.82], [0.95, 0.96, 0.98]
    spec.worldbody.add_geom(
        name="transfer_floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[0, 0, 0.05],
        material="transfer_floor",
        contype=0,
        conaffinity=0,
    )
    light = spec.worldbody.add_light(name="transfer_light", pos=[0, 0, 4], dir=[0, 0, -1])
    light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]


class _Posed:
    """The robot file's model dressed for pictures, and how a recorded state poses it (``joint_names``: the recorded
    columns; names the file lacks are left at their default)."""

    def __init__(self, asset: object, joint_names: Sequence[str], ghost: bool = False) -> None:
        built = build_model(asset, SceneDescription(), drives=False)  # the robot file, checked, its root found
        spec = mujoco.MjSpec.from_file(str(built.source))
        _dressed(spec)
        if ghost:  # a see-through copy of the robot, posed by a reference motion
            copy = mujoco.MjSpec.from_file(str(built.source))
            for geom in copy.geoms:
                geom.rgba, geom.contype, geom.conaffinity = [0.35, 0.65, 1.0, 0.35], 0, 0
            spec.worldbody.add_frame().attach_body(copy.body(built.root_body), GHOST, "")
        self.model = model = spec.compile()
        self.data = mujoco.MjData(model)
        self.root = model.body(built.root_body).id
        self.robot = _where(model, built.root_body, joint_names)
        """Where a recorded state goes in ``qpos``: ``(free joint's address, recorded columns, their addresses)``."""
        self.bodies = [b for b in range(1, model.nbody) if model.body_rootid[b] == model.body_rootid[self.root]]
        """The robot's bodies (its root's tree), by id."""
        self.ghost = _where(model, GHOST + built.root_body, [GHOST + n for n in joint_names]) if ghost else None

    def pose(self, base: np.ndarray, joint_pos: np.ndarray, ghost: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Put the robot at one recorded state (``base`` root pose xyzw, ``joint_pos`` the recorded columns), and its
        ghost at ``ghost`` (the same two, of the reference) where it has one."""
        _place(self.data, self.robot, base, joint_pos)
        if ghost is not None and self.ghost is not None:
            _place(self.data, self.ghost, *ghost)
        mujoco.mj_kinematics(self.model, self.data)


def _where(model: Any, root_body: str, joint_names: Sequence[str]) -> tuple[int | None, list[int], Any]:
    """``(free joint's qpos address, the recorded columns the model knows, their qpos addresses)`` of one robot copy
    (the robot, or its ghost) rooted at ``root_body``."""
    root = model.body(root_body).id
    free = [j for j in range(model.njnt) if model.jnt_bodyid[j] == root and model.jnt_type[j] == 0]
    known = {model.joint(j).name for j in range(model.njnt)}
    columns = [i for i, n in enumerate(joint_names) if n in known]
    qadr = np.array([model.joint(joint_names[i]).qposadr[0] for i in columns], np.int64)
    return (int(model.jnt_qposadr[free[0]]) if free else None), columns, qadr


def _place(data: Any, where: tuple[int | None, list[int], Any], base: np.ndarray, joint_pos: np.ndarray) -> None:
    f, columns, qadr = where
    if f is not None:
        data.qpos[f : f + 3] = base[:3]
        data.qpos[f + 3 : f + 7] = [base[6], *base[3:6]]
    data.qpos[qadr] = joint_pos[columns]


def frames(
    asset: object,
    joint_names: Sequence[str],
    base: np.ndarray,
    joint_pos: np.ndarray,
    width: int = 480,
    height: int = 360,
    ghost: tuple[np.ndarray, np.ndarray] | None = None,
) -> Iterator[np.ndarray]:
    """``(height, width, 3)`` uint8 pictures of the robot ``asset`` posed at each of ``T`` recorded states: ``base``
    ``(T, 7)`` root position and quaternion xyzw (world), ``joint_pos`` ``(T, J)`` in ``joint_names``' order (names the
    robot file lacks are left at their default); ``ghost``: a reference motion's ``(base, joint_pos)`` at the same
    states, drawn as a see-through copy of the robot. Raises :class:`RenderError` when there is no OpenGL."""
    posed = _Posed(asset, joint_names, ghost=ghost is not None)
    model, data = posed.model, posed.data
    renderer = _renderer(model, width, height)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = posed.root
    camera.distance = max(1.5, 3.0 * float(model.stat.extent))
    camera.elevation, camera.azimuth = -18.0, 135.0
    software = os.environ.get("MUJOCO_GL") == "osmesa"
    try:
        for k in range(len(base)):
            posed.pose(base[k], joint_pos[k], None if ghost is None else (ghost[0][k], ghost[1][k]))
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera=camera)
            for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION):
                renderer.scene.flags[flag] = not software  # OSMesa spent three quarters of a frame on them
            yield renderer.render()
    finally:
        renderer.close()


@dataclass(frozen=True)
class Shape:
    """One visible geom of a body: a triangle mesh in the body's frame."""

    body: str
    vertices: np.ndarray
    """``(N, 3)`` float32, in the geom's frame."""
    faces: np.ndarray
    """``(M, 3)`` int32."""
    color: tuple[int, int, int]
    position: np.ndarray
    """The geom's position in its body's frame."""
    wxyz: np.ndarray
    """The geom's orientation in its body's frame (w, x, y, z)."""


def shapes(asset: object) -> list[Shape]:
    """The robot's visible geoms as triangle meshes, each on its body (what a web viewer draws)."""
    import trimesh

    posed = _Posed(asset, ())
    m = posed.model
    out = []
    for g in range(m.ngeom):
        body = int(m.geom_bodyid[g])
        if body not in posed.bodies or m.geom_rgba[g, 3] == 0 or m.geom_group[g] > 2:
            continue
        mesh = _mesh(trimesh, m, g)
        if mesh is None:
            continue
        color = tuple(int(255 * c) for c in m.geom_rgba[g, :3])
        out.append(
            Shape(
                m.body(body).name,
                np.asarray(mesh[0], np.float32),
                np.asarray(mesh[1], np.int32),
                color,
                m.geom_pos[g].copy(),
                m.geom_quat[g].copy(),
            )
        )
    return out


def _mesh(trimesh: object, m: object, g: int) -> tuple[np.ndarray, np.ndarray] | None:
    kind, size = int(m.geom_type[g]), m.geom_size[g]
    t = mujoco.mjtGeom
    if kind == t.mjGEOM_MESH:
        i = int(m.geom_dataid[g])
        first, count = int(m.mesh_vertadr[i]), int(m.mesh_vertnum[i])
        faces = m.mesh_face[int(m.mesh_faceadr[i]) : int(m.mesh_faceadr[i]) + int(m.mesh_facenum[i])]
        return m.mesh_vert[first : first + count], faces
    made = {
        t.mjGEOM_BOX: lambda: trimesh.creation.box(extents=2 * size),
        t.mjGEOM_SPHERE: lambda: trimesh.creation.icosphere(subdivisions=2, radius=size[0]),
        t.mjGEOM_CAPSULE: lambda: trimesh.creation.capsule(height=2 * size[1], radius=size[0], count=[12, 12]),
        t.mjGEOM_CYLINDER: lambda: trimesh.creation.cylinder(radius=size[0], height=2 * size[1], sections=16),
        t.mjGEOM_ELLIPSOID: lambda: trimesh.creation.icosphere(subdivisions=2, radius=1.0).apply_scale(size),
    }.get(kind)
    if made is None:  # planes, height fields: not the robot's
        return None
    mesh = made()
    return mesh.vertices, mesh.faces


def poses(asset: object, joint_names: Sequence[str], base: np.ndarray, joint_pos: np.ndarray) -> dict[str, np.ndarray]:
    """Each robot body's world pose at each of ``T`` recorded states: ``{body: (T, 7)}`` position then w, x, y, z."""
    posed = _Posed(asset, joint_names)
    out = {posed.model.body(b).name: np.zeros((len(base), 7)) for b in posed.bodies}
    for k in range(len(base)):
        posed.pose(base[k], joint_pos[k])
        for b in posed.bodies:
            out[posed.model.body(b).name][k] = np.concatenate([posed.data.xpos[b], posed.data.xquat[b]])
    return out
