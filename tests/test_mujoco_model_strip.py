"""The MuJoCo backend compiles a robot without the mesh geoms that cannot touch the physics (issue 47: compiling
visual meshes was a fifth of H1-2's start-up): a mesh geom that collides with nothing and sets no mass goes, and so
does a mesh only it used; a collision geom, a visual geom that sets its body's mass, and one named by a contact pair
stay. The bodies weigh what the file says, and pictures still draw the visual meshes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("warp")

TETRA = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def _robot(tmp_path: Path) -> Path:
    """A free base with an explicit <inertial>, a visual-only mesh and a collision box; a leg on a motor whose mass
    comes from its geoms (its visual mesh weighs: it stays); a foot whose visual mesh is in a contact pair."""
    for name in ("shell", "thigh_shell", "foot_shell", "collider"):
        (tmp_path / f"{name}.obj").write_text(TETRA)
    xml = """<mujoco model="strip">
  <asset>
    <mesh name="shell" file="shell.obj"/>
    <mesh name="thigh_shell" file="thigh_shell.obj"/>
    <mesh name="foot_shell" file="foot_shell.obj"/>
    <mesh name="collider" file="collider.obj"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="base" pos="0 0 0.5">
      <freejoint name="root"/>
      <inertial pos="0.01 0 0" mass="4" diaginertia="0.05 0.04 0.03"/>
      <geom name="visual" type="mesh" mesh="shell" contype="0" conaffinity="0" group="1"/>
      <geom name="box" type="box" size="0.2 0.1 0.05"/>
      <geom name="hull" type="mesh" mesh="collider"/>
      <body name="thigh" pos="0 0 -0.1">
        <joint name="hip" type="hinge" axis="0 1 0"/>
        <geom name="thigh_visual" type="mesh" mesh="thigh_shell" contype="0" conaffinity="0" pos="0.05 0 0"/>
        <geom name="thigh_box" type="box" size="0.02 0.02 0.1" pos="0 0 -0.1"/>
        <body name="foot" pos="0 0 -0.2">
          <joint name="ankle" type="hinge" axis="0 1 0"/>
          <inertial pos="0 0 0" mass="0.3" diaginertia="0.001 0.001 0.001"/>
          <geom name="foot_visual" type="mesh" mesh="foot_shell" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <contact><pair geom1="foot_visual" geom2="floor"/></contact>
  <actuator>
    <motor joint="hip" gear="10" ctrlrange="-2 2"/>
    <motor joint="ankle" gear="10" ctrlrange="-2 2"/>
  </actuator>
</mujoco>"""
    path = tmp_path / "strip.xml"
    path.write_text(xml)
    return path


def _names(model, kind) -> set[str]:
    count = {mujoco.mjtObj.mjOBJ_GEOM: model.ngeom, mujoco.mjtObj.mjOBJ_MESH: model.nmesh}[kind]
    return {mujoco.mj_id2name(model, kind, i) for i in range(count)}


def test_the_backend_steps_no_visual_only_mesh_geom_and_the_bodies_weigh_the_same(tmp_path):
    from transfer.backends.mujoco.backend import MujocoBackend

    path = _robot(tmp_path)
    authored = mujoco.MjModel.from_xml_path(str(path))
    model = MujocoBackend(path).models[0]
    geoms, meshes = _names(model, mujoco.mjtObj.mjOBJ_GEOM), _names(model, mujoco.mjtObj.mjOBJ_MESH)
    assert "visual" in _names(authored, mujoco.mjtObj.mjOBJ_GEOM)
    assert "visual" not in geoms and "shell" not in meshes  # collides with nothing, its body's <inertial> weighs
    assert {"box", "hull", "floor"} <= geoms and "collider" in meshes  # the collision geoms and their mesh
    assert "thigh_visual" in geoms  # no <inertial> on its body: its density weighs, it stays
    assert "foot_visual" in geoms  # a contact pair names it: it collides
    assert model.ngeom == authored.ngeom - 1
    for field in ("body_mass", "body_inertia", "body_ipos", "body_iquat"):
        np.testing.assert_array_equal(getattr(model, field), getattr(authored, field), err_msg=field)


def test_pictures_of_the_robot_still_draw_its_visual_meshes(tmp_path):
    from transfer.backends.mujoco.render import _Posed

    posed = _Posed(_robot(tmp_path), ["hip", "ankle"])
    assert "visual" in _names(posed.model, mujoco.mjtObj.mjOBJ_GEOM)
    assert "shell" in _names(posed.model, mujoco.mjtObj.mjOBJ_MESH)
