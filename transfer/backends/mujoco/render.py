"""Pictures of recorded runs (``transfer replay --video``), whatever engine ran them: MuJoCo's renderer on the robot's
own file (its MJCF, or the MJCF the MuJoCo backend exports of a USD robot), posed frame by frame from a run's recorded
base pose and joint positions by name. A camera follows the robot's root; the ground is a checkered plane."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import mujoco
import numpy as np

from transfer.backends.mujoco.model import build_model
from transfer.backends.scene import SceneDescription

__all__ = ["RenderError", "frames"]


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


def frames(
    asset: object,
    joint_names: Sequence[str],
    base: np.ndarray,
    joint_pos: np.ndarray,
    width: int = 480,
    height: int = 360,
) -> Iterator[np.ndarray]:
    """``(height, width, 3)`` uint8 pictures of the robot ``asset`` posed at each of ``T`` recorded states: ``base``
    ``(T, 7)`` root position and quaternion xyzw (world), ``joint_pos`` ``(T, J)`` in ``joint_names``' order (names the
    robot file lacks are left at their default). Raises :class:`RenderError` when there is no OpenGL to render with."""
    built = build_model(asset, SceneDescription(), drives=False)  # the robot file, checked, its root found
    spec = mujoco.MjSpec.from_file(str(built.source))
    _dressed(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    root = model.body(built.root_body)
    free = [j for j in range(model.njnt) if model.jnt_bodyid[j] == root.id and model.jnt_type[j] == 0]
    known = {model.joint(j).name for j in range(model.njnt)}
    columns = [i for i, n in enumerate(joint_names) if n in known]
    qadr = np.array([model.joint(joint_names[i]).qposadr[0] for i in columns], np.int64)
    renderer = _renderer(model, width, height)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = root.id
    camera.distance = max(1.5, 3.0 * float(model.stat.extent))
    camera.elevation, camera.azimuth = -18.0, 135.0
    f = int(model.jnt_qposadr[free[0]]) if free else None
    software = os.environ.get("MUJOCO_GL") == "osmesa"
    try:
        for k in range(len(base)):
            if f is not None:
                data.qpos[f : f + 3] = base[k, :3]
                data.qpos[f + 3 : f + 7] = [base[k, 6], *base[k, 3:6]]
            data.qpos[qadr] = joint_pos[k, columns]
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera=camera)
            for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION):
                renderer.scene.flags[flag] = not software  # OSMesa spent three quarters of a frame on them
            yield renderer.render()
    finally:
        renderer.close()
