"""Small MJCF and URDF robots written as text, with the mesh files they reference (tests/usdgen.py's sibling).

Each writer puts the robot file and its meshes into a folder and returns the robot file's path. The robots cover
what the official converters have to get right for the joint orders: a floating and a fixed base, a ball joint
(MJCF), a body with two joints (MJCF), links fixed to their parent, mesh colliders (OBJ for MJCF, STL for URDF,
one of them through ``package://``), and two branches that PhysX (breadth-first) and MuJoCo (depth-first) order
apart.
"""

from __future__ import annotations

from pathlib import Path

BOX = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
BOX_FACES = [
    (0, 1, 3),
    (0, 3, 2),
    (4, 6, 7),
    (4, 7, 5),
    (0, 4, 5),
    (0, 5, 1),
    (2, 3, 7),
    (2, 7, 6),
    (0, 2, 6),
    (0, 6, 4),
    (1, 5, 7),
    (1, 7, 3),
]
"""A unit box (corners at +-1) as 12 outward triangles."""


def _box(half: tuple[float, float, float]) -> list[tuple[float, float, float]]:
    return [(x * half[0], y * half[1], z * half[2]) for x, y, z in BOX]


def write_obj(path: Path, half: tuple[float, float, float] = (0.04, 0.03, 0.02)) -> Path:
    """A box mesh (Wavefront OBJ)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"v {x:g} {y:g} {z:g}" for x, y, z in _box(half)]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in BOX_FACES]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_stl(path: Path, half: tuple[float, float, float] = (0.03, 0.03, 0.03)) -> Path:
    """A box mesh (ASCII STL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    v = _box(half)
    out = ["solid box"]
    for a, b, c in BOX_FACES:
        out += ["  facet normal 0 0 0", "    outer loop"]
        out += [f"      vertex {v[i][0]:g} {v[i][1]:g} {v[i][2]:g}" for i in (a, b, c)]
        out += ["    endloop", "  endfacet"]
    path.write_text("\n".join([*out, "endsolid box"]) + "\n")
    return path


def _leg(side: str, y: float, *, two_joints: bool) -> str:
    """A thigh (one or two hinges), a shin (knee hinge) and a foot welded to the shin (a mesh collider)."""
    hip = f'<joint name="{side}_hip_y" type="hinge" axis="0 1 0" range="-1 1"/>'
    if two_joints:
        hip = f'<joint name="{side}_hip_x" type="hinge" axis="1 0 0" range="-0.5 0.5"/>\n        ' + hip
    return f"""
      <body name="{side}_thigh" pos="0.15 {y:g} 0">
        {hip}
        <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.03" mass="0.5"/>
        <body name="{side}_shin" pos="0 0 -0.2">
          <joint name="{side}_knee" type="hinge" axis="0 1 0" range="-2 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.025" mass="0.3"/>
          <body name="{side}_foot" pos="0 0 -0.22">
            <geom type="mesh" mesh="foot" mass="0.1"/>
          </body>
        </body>
      </body>"""


def mjcf_robot(
    folder: Path, *, floating: bool = True, name: str = "mjbot", walker: bool = False, motors: bool = False
) -> Path:
    """An MJCF robot: a base with two legs (:func:`_leg`; the left hip has two joints unless ``walker``), a head
    on a ball joint and a tail on a slide joint (both left out when ``walker``: only hinges, the same joint names on
    both engines). ``floating``: a free joint on the base; else the base is welded to the world. Meshes go to
    ``folder/meshes`` (``<compiler meshdir>``). ``motors``: a motor on every hinge and slide joint (gear 1, +-30),
    as vendors' MJCFs have (what the MuJoCo backend drives)."""
    write_obj(folder / "meshes" / "foot.obj")
    free = '<freejoint name="root"/>' if floating else ""
    extras = (
        ""
        if walker
        else """
      <body name="head" pos="0.25 0 0.05">
        <joint name="neck" type="ball"/>
        <geom type="sphere" size="0.05" mass="0.3"/>
      </body>
      <body name="tail" pos="-0.25 0 0">
        <joint name="tail_slide" type="slide" axis="1 0 0" range="-0.05 0.05"/>
        <geom type="box" size="0.05 0.02 0.02" mass="0.2"/>
      </body>"""
    )
    back = "" if not walker else _leg("back_left", 0.1, two_joints=False).replace('pos="0.15', 'pos="-0.15')
    back += "" if not walker else _leg("back_right", -0.1, two_joints=False).replace('pos="0.15', 'pos="-0.15')
    text = f"""<mujoco model="{name}">
  <compiler angle="radian" meshdir="meshes"/>
  <option timestep="0.005"/>
  <asset>
    <mesh name="foot" file="foot.obj"/>
  </asset>
  <worldbody>
    <body name="base" pos="0 0 0.5">
      {free}
      <geom type="box" size="0.2 0.1 0.05" mass="4"/>{_leg("left", 0.1, two_joints=not walker)}{_leg("right", -0.1, two_joints=False)}{back}{extras}
    </body>
  </worldbody>
</mujoco>
"""
    if motors:
        text = text.replace("</worldbody>\n", f"</worldbody>{_motors(text)}\n")
    path = folder / f"{name}.xml"
    path.write_text(text)
    return path


def _motors(body: str) -> str:
    import re

    joints = [m.group(1) for m in re.finditer(r'<joint name="([^"]+)"(?![^>]*type="ball")', body)]
    motors = "".join(f'\n    <motor joint="{j}" gear="1" ctrlrange="-30 30"/>' for j in joints)
    return f"\n  <actuator>{motors}\n  </actuator>"


def _inertial(mass: float) -> str:
    i = f"{0.01 * mass:g}"
    return (
        f'<inertial><mass value="{mass:g}"/><inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>'
    )


def urdf_robot(folder: Path, *, floating: bool = True, name: str = "urbot") -> Path:
    """A URDF robot: a base with an arm (continuous yaw, revolute pitch, a tool welded on by a fixed joint) and a
    prismatic slider, mesh colliders as STL (one named through ``package://``, found by walking up from the
    URDF's folder as urdf-usd-converter does). ``floating``: no world link; else a ``world`` link and a fixed
    joint hold the base."""
    write_stl(folder / "meshes" / "link.stl")
    write_stl(folder / "meshes" / "tool.stl", (0.02, 0.02, 0.05))
    world = (
        ""
        if floating
        else """
  <link name="world"/>
  <joint name="anchor" type="fixed"><parent link="world"/><child link="base"/><origin xyz="0 0 0.3"/></joint>"""
    )
    text = f"""<?xml version="1.0"?>
<robot name="{name}">{world}
  <link name="base">
    {_inertial(3)}
    <collision><geometry><box size="0.3 0.2 0.1"/></geometry></collision>
  </link>
  <joint name="yaw" type="continuous">
    <parent link="base"/><child link="upper"/><origin xyz="0.1 0 0.05"/><axis xyz="0 0 1"/>
  </joint>
  <link name="upper">
    {_inertial(1)}
    <collision><geometry><mesh filename="meshes/link.stl"/></geometry></collision>
  </link>
  <joint name="pitch" type="revolute">
    <parent link="upper"/><child link="fore"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="20" velocity="5"/>
  </joint>
  <link name="fore">
    {_inertial(0.5)}
    <collision><geometry><cylinder radius="0.02" length="0.2"/></geometry></collision>
  </link>
  <joint name="tool_mount" type="fixed">
    <parent link="fore"/><child link="tool"/><origin xyz="0 0 0.2"/>
  </joint>
  <link name="tool">
    {_inertial(0.1)}
    <collision><geometry><mesh filename="package://{name}_description/meshes/tool.stl"/></geometry></collision>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="base"/><child link="carriage"/><origin xyz="-0.1 0 0.05"/><axis xyz="1 0 0"/>
    <limit lower="-0.05" upper="0.05" effort="20" velocity="1"/>
  </joint>
  <link name="carriage">
    {_inertial(0.2)}
    <collision><geometry><sphere radius="0.03"/></geometry></collision>
  </link>
</robot>
"""
    path = folder / f"{name}.urdf"
    path.write_text(text)
    return path
