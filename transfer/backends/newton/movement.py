"""Newton's joint movement probe for ``transfer validate``: velocity drives on the tree's joints, balanced force pairs
elsewhere.

:func:`probe` runs one attempt of the joint_movement test (:mod:`transfer.runs.validate`) on Newton (MuJoCo C):

1. An anonymous USD layer over the asset (the user's file is never written) switches off static colliders and pins
   the plan's base bodies (loose assemblies only) with a fixed joint to the world where they stand: the builder's
   form of a kinematic base (Newton allows kinematic bodies only as articulation roots, and ``infer_tree`` then
   roots each loose component at the world). It is imported with :func:`~transfer.backends.newton.import_usd`
   (``rootless_articulation_policy="infer_tree"``) and the model's gravity is set to zero. MuJoCo refuses a joint
   whose lower limit equals its upper limit; such a range is widened by 1e-6 (the joint stays locked).
2. A commanded revolute or prismatic joint of the articulation tree gets a velocity drive on its own DoF, as on
   PhysX: a MuJoCo velocity actuator (``JointTargetMode.VELOCITY``, integrated implicitly) tracking the command's
   speed, its gain the DoF's own inertia (``dof_M0``: the moving subtree about the axis, armature included) over a
   time constant ramped geometrically from :data:`SERVO_TIME` ``[0]`` to ``[1]``. A light link with a heavy armature
   or joint damping follows the speed as a heavy one does, and the push against a limit stays modest (MuJoCo's limits
   are soft). Its authored drive is replaced (zero position gain), as PhysX's velocity drive replaces it there.
3. Any other commanded joint (spherical swings, loop joints, which have no DoF in the tree) is loaded by a balanced
   force pair: a force at the centre of the moving link's bounding-box face farthest from the joint (from its axis,
   for a revolute joint), perpendicular to axis and lever arm (revolute), along the axis (prismatic, at the centre of
   mass) or along one of the two directions perpendicular to the lever arm (spherical ``"swing"`` 1 or 2), and the
   equal and opposite force on the parent at the same world point: no net external force or torque. The magnitude is
   the moving mass (the lighter side of the joint in the articulation tree) times an acceleration ramped linearly
   from ``plan.acceleration[0]`` to ``plan.acceleration[1]``.
4. D6 and other joints have no supported actuation path, and Newton does not apply USD rigid-body velocity writes
   (``"nudge"``): those commands are skipped with the engine-capability message.
5. Every step reports each joint's child pose in its parent's frame and the engine's joint coordinate (revolute in
   degrees, prismatic in stage units) of tree joints.

Each call builds a fresh model: nothing the attempt changed outlives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import newton
import numpy as np

from transfer.backends._pose import cross, relative_pose, rotate
from transfer.backends._usd import overlay_stage
from transfer.backends.base import asset_file
from transfer.backends.newton.importer import import_usd
from transfer.backends.probes import MovementJoint, MovementPlan, MovementTrace

__all__ = ["CAPABILITY", "probe"]

CAPABILITY = (
    "Newton exposes no verified articulation actuation path for the asset's D6 or other non-scalar joint types "
    "(spherical joints use the force-at-lever-arm probe)"
)
NUDGE = "Newton does not apply USD rigid-body velocity writes (the linear-velocity nudge is PhysX only)"
_SWINGS = {"X": ("Y", "Z"), "Y": ("Z", "X"), "Z": ("X", "Y")}
SERVO_TIME = (0.1, 0.02)  # s: the velocity drives' time constant, ramped over the attempt (kd = inertia / time)
_AXES = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}


def _stage(asset: str, plan: MovementPlan) -> Any:
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics

    stage = overlay_stage(asset, "transfer_validate_newton.usda")
    bodies = {str(p.GetPath()) for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)}
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.CollisionAPI) and not prim.IsInstanceProxy():
            if not any(str(p) in bodies for p in prim.GetPath().GetAncestorsRange()):
                UsdPhysics.CollisionAPI(prim).CreateCollisionEnabledAttr(False)
    for k, path in enumerate(plan.pinned):  # a world anchor: infer_tree makes the component a fixed articulation
        world = Gf.Transform(UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(0.0))
        pin = UsdPhysics.FixedJoint.Define(stage, f"/TransferValidatePins/pin_{k}")
        pin.CreateBody1Rel().SetTargets([Sdf.Path(path)])
        pin.CreateLocalPos0Attr(Gf.Vec3f(world.GetTranslation()))
        pin.CreateLocalRot0Attr(Gf.Quatf(world.GetRotation().GetQuat()))
    return stage


class _Tree:
    """Masses on either side of each joint in the model's articulation tree."""

    def __init__(self, model: Any) -> None:
        self.parent = model.joint_parent.numpy()
        self.child = model.joint_child.numpy()
        self.mass = model.body_mass.numpy()
        tree = model.joint_articulation.numpy() >= 0
        self.children: dict[int, list[int]] = {}
        for j in np.flatnonzero(tree):
            self.children.setdefault(int(self.parent[j]), []).append(int(self.child[j]))

    def below(self, body: int) -> float:
        total, stack = 0.0, [body]
        while stack:
            b = stack.pop()
            total += float(self.mass[b])
            stack += self.children.get(b, [])
        return total

    def moving_mass(self, parent: int, child: int) -> float:
        sides = [self.below(b) for b in (parent, child) if b >= 0 and self.mass[b] > 0]
        return min(sides) if sides else 1.0


def _lever_point(joint: MovementJoint, axis: np.ndarray | None) -> np.ndarray | None:
    """The centre of the child's bounding-box face farthest from the pivot (or the axis), in the child's frame."""
    if joint.extent is None:
        return None
    lo, hi = np.array(joint.extent[:3]), np.array(joint.extent[3:])
    centre = (lo + hi) / 2
    faces = [np.where(np.arange(3) == k, side[k], centre) for k in range(3) for side in (lo, hi)]
    pivot = np.array(joint.frame1[:3])

    def distance(p: np.ndarray) -> float:
        r = p - pivot
        return float(np.linalg.norm(r - axis * (r @ axis) if axis is not None else r))

    best = max(faces, key=distance)
    return best if distance(best) > 1e-6 else None


def _force(joint: MovementJoint, command: Any, body_q: np.ndarray, com_w: np.ndarray, child: int) -> tuple:
    """``(world point, unit direction)`` of the force on the child, or ``(None, unit torque axis)``."""
    x, q = body_q[child, :3], body_q[child, 3:]
    frame_q = np.array(joint.frame1[3:])
    axis = rotate(q, rotate(frame_q, _AXES.get(joint.axis, _AXES["X"])))
    pivot = x + rotate(q, np.array(joint.frame1[:3]))
    if joint.type == "prismatic":
        return com_w[child], command.sign * axis
    local_axis = rotate(frame_q, _AXES.get(joint.axis, _AXES["X"]))
    point = _lever_point(joint, local_axis if joint.type == "revolute" else None)
    if point is None:  # no geometry or no lever arm: a torque about the axis (revolute) or a swing axis
        if joint.type == "revolute":
            return None, command.sign * axis
        swing = _AXES[_SWINGS.get(joint.axis, ("Y", "Z"))[command.axis - 1]]
        return None, command.sign * rotate(q, rotate(frame_q, swing))
    p = x + rotate(q, point)
    r = p - pivot
    if joint.type == "revolute":
        d = cross(axis, r)
    else:  # spherical: the two cardinal directions perpendicular to the lever arm
        e1 = cross(r, axis)
        if np.linalg.norm(e1) < 1e-9 * max(np.linalg.norm(r), 1.0):
            e1 = cross(r, np.eye(3)[int(np.argmin(np.abs(r)))])
        d = e1 if command.axis == 1 else cross(r, e1)
    return p, command.sign * d / np.linalg.norm(d)


def probe(asset: str, joints: Sequence[MovementJoint], plan: MovementPlan) -> MovementTrace:
    """Run one attempt of ``plan`` on Newton and sample every joint of ``joints`` (see the module docstring)."""
    import warp as wp

    path = asset_file(asset)
    by_path = {j.path: j for j in joints}
    trace = MovementTrace("newton", poses={})
    commands = _runnable_commands(joints, plan, trace)
    if not commands:
        return trace

    model, drives = _model(path, plan, commands, by_path, trace)
    solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True)
    state_0, state_1, control = model.state(), model.state(), model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state_0)
    body = {label: i for i, label in enumerate(model.body_label)}
    for joint in joints:
        missing = [b for b in (joint.parent, joint.child) if b is not None and b not in body]
        if missing:
            trace.notes.append(f"{joint.path}: Newton simulates no body at {', '.join(missing)}")
    tracked = [j for j in joints if j.child in body and (j.parent is None or j.parent in body)]
    sample = _Sampler(model, body, tracked, trace)
    pairs = [(c, by_path[c.joint]) for c in commands if by_path[c.joint] in tracked and c.joint not in drives.paths]
    loads = _ForcePairs(model, body, pairs)
    drives.start(solver, control)

    steps = max(1, round(plan.duration / plan.dt))
    lo, hi = plan.acceleration
    sample(state_0)
    for step in range(steps):
        accel = lo + (hi - lo) * step / max(steps - 1, 1)
        drives.ramp(solver, step / max(steps - 1, 1))
        wrench = loads.wrench(state_0.body_q.numpy(), accel)
        state_0.body_f.assign(wp.array(wrench, dtype=wp.spatial_vector, device="cpu"))
        solver.step(state_0, state_1, control, None, plan.dt)
        state_0, state_1 = state_1, state_0
        sample(state_0)
    trace.poses = {k: np.asarray(v) for k, v in trace.poses.items()}
    trace.coordinates = {k: np.asarray(v) for k, v in trace.coordinates.items()}
    return trace


class _Drives:
    """Velocity drives on the commanded revolute and prismatic joints of the articulation tree (step 2 of the module
    docstring): MuJoCo velocity actuators, ``kd * (target - qd)`` with ``kd`` the DoF's inertia over the ramped time
    constant. Newton's former force pair alone, scaled to the link's mass and blind to armature and joint damping,
    moved nv_ant.xml's hips 1 deg in 2 s (PhysX and MuJoCo itself: 40 deg, to the limit)."""

    def __init__(self, builder: Any, commands: Sequence[Any], by_path: dict[str, MovementJoint], plan: MovementPlan):
        labels = {label: j for j, label in enumerate(builder.joint_label)}
        starts = [*builder.joint_qd_start, builder.joint_dof_count]
        self.dofs: list[int] = []
        self.targets: list[float] = []
        self.paths: set[str] = set()
        self.inertia = np.zeros(0)
        for command in commands:
            joint, j = by_path[command.joint], labels.get(command.joint)
            if command.kind != "drive" or j is None or builder.joint_articulation[j] < 0:
                continue  # loop joints (no DoF in the tree) keep the force pair
            if joint.type not in ("revolute", "prismatic") or starts[j + 1] - starts[j] != 1:
                continue
            dof = starts[j]
            builder.joint_target_mode[dof] = int(newton.JointTargetMode.VELOCITY)
            builder.joint_target_ke[dof] = 0.0
            builder.joint_effort_limit[dof] = float(plan.max_force)
            self.dofs.append(dof)
            self.targets.append(command.sign * command.speed * (np.pi / 180.0 if joint.type == "revolute" else 1.0))
            self.paths.add(command.joint)

    def start(self, solver: Any, control: Any) -> None:
        """Read each driven DoF's inertia from MuJoCo's model and set the target velocities."""
        if not self.dofs:
            return
        to_newton = solver.mjc_dof_to_newton_dof.numpy().reshape(-1)[: solver.mj_model.nv]
        inertia = {int(n): float(solver.mj_model.dof_M0[k]) for k, n in enumerate(to_newton) if n >= 0}
        self.inertia = np.array([inertia.get(d, 0.0) for d in self.dofs])
        target = control.joint_target_qd.numpy()
        target[self.dofs] = self.targets
        control.joint_target_qd.assign(target)

    def ramp(self, solver: Any, fraction: float) -> None:
        """The gains at ``fraction`` of the attempt."""
        if not self.dofs:
            return
        slow, fast = SERVO_TIME
        kd = solver.model.joint_target_kd.numpy()
        kd[self.dofs] = self.inertia / (slow * (fast / slow) ** fraction)
        solver.model.joint_target_kd.assign(kd)
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_FORCE_PROPERTIES)


def _runnable_commands(joints: Sequence[MovementJoint], plan: MovementPlan, trace: MovementTrace) -> list[Any]:
    """The plan's commands Newton can run; the joints and commands it cannot are skipped in ``trace`` with the
    engine-capability message (step 4 of the module docstring)."""
    for joint in joints:
        if joint.type not in ("revolute", "prismatic", "spherical"):
            trace.skipped[joint.path] = CAPABILITY
    commands = []
    for command in plan.commands:
        if command.kind == "nudge":
            trace.skipped.setdefault(command.joint, NUDGE)
        elif command.joint not in trace.skipped:
            commands.append(command)
    return commands


def _model(
    path: str, plan: MovementPlan, commands: Sequence[Any], by_path: dict[str, MovementJoint], trace: MovementTrace
) -> tuple[Any, _Drives]:
    """The attempt's model, gravity off (step 1 of the module docstring): the commanded joints' authored drives at
    zero gains, the tree's revolute and prismatic ones given the probe's velocity drive (:class:`_Drives`), locked
    ranges widened for MuJoCo (noted in ``trace``)."""
    builder = newton.ModelBuilder()
    newton.solvers.SolverMuJoCo.register_custom_attributes(builder)
    builder, _ = import_usd(_stage(path, plan), "infer_tree", builder=builder)
    # A commanded joint moves by the probe's drive or force pair alone: its authored drive (a PD controller holding
    # target 0 in Newton, e.g. the four-bar crank's damping) gets zero gains, as PhysX's velocity drive replaces it.
    labels = {label: j for j, label in enumerate(builder.joint_label)}
    starts = [*builder.joint_qd_start, builder.joint_dof_count]
    for command in commands:
        j = labels.get(command.joint)
        for dof in range(starts[j], starts[j + 1]) if j is not None else ():
            builder.joint_target_ke[dof] = 0.0
            builder.joint_target_kd[dof] = 0.0
    for j, label in enumerate(builder.joint_label):  # MuJoCo refuses lower == upper: keep the joint locked
        for dof in range(starts[j], starts[j + 1]):
            if builder.joint_limit_lower[dof] >= builder.joint_limit_upper[dof]:
                builder.joint_limit_upper[dof] = builder.joint_limit_lower[dof] + 1e-6
                trace.notes.append(f"{label}: lower limit = upper limit, widened by 1e-6 for MuJoCo (still locked)")
    drives = _Drives(builder, commands, by_path, plan)
    model = builder.finalize(device="cpu")
    model.set_gravity((0.0, 0.0, 0.0))
    return model, drives


class _Sampler:
    """Appends to a trace, per call, each tracked joint's child pose in its parent's frame and the engine's joint
    coordinate of tree joints (revolute in degrees, prismatic in stage units)."""

    def __init__(self, model: Any, body: dict[str, int], tracked: Sequence[MovementJoint], trace: MovementTrace):
        self.body, self.tracked, self.trace = body, tracked, trace
        self.joint_index = {label: i for i, label in enumerate(model.joint_label)}
        self.in_tree = model.joint_articulation.numpy() >= 0
        self.q_start, self.types = model.joint_q_start.numpy(), model.joint_type.numpy()
        self.scalar = {int(newton.JointType.REVOLUTE): 180.0 / np.pi, int(newton.JointType.PRISMATIC): 1.0}

    def __call__(self, state: Any) -> None:
        body, trace = self.body, self.trace
        body_q = state.body_q.numpy()
        joint_q = state.joint_q.numpy()
        for joint in self.tracked:
            parent = body_q[body[joint.parent]] if joint.parent else None
            trace.poses.setdefault(joint.path, []).append(relative_pose(parent, body_q[body[joint.child]]))
            j = self.joint_index.get(joint.path)
            if j is not None and self.in_tree[j] and int(self.types[j]) in self.scalar:
                value = joint_q[self.q_start[j]] * self.scalar[int(self.types[j])]
                trace.coordinates.setdefault(joint.path, []).append([value])


class _ForcePairs:
    """The balanced force pairs that load the commanded joints without a velocity drive (step 3 of the module
    docstring): ``loads`` are
    ``(command, joint)`` pairs, each scaled by the mass the joint moves."""

    def __init__(self, model: Any, body: dict[str, int], loads: Sequence[tuple[Any, MovementJoint]]) -> None:
        self.body, self.loads, self.body_count = body, loads, model.body_count
        self.com = model.body_com.numpy()
        tree = _Tree(model)
        self.masses = {c.joint: tree.moving_mass(body.get(j.parent, -1), body[j.child]) for c, j in loads}

    def wrench(self, body_q: np.ndarray, accel: float) -> np.ndarray:
        """The ``(body_count, 6)`` external wrenches (force, torque about the centre of mass) at acceleration
        ``accel``, for bodies at ``body_q``."""
        body, com = self.body, self.com
        u, w = body_q[:, 3:6], body_q[:, 6:7]
        com_w = body_q[:, :3] + com + 2.0 * np.cross(u, np.cross(u, com) + w * com)
        wrench = np.zeros((self.body_count, 6), dtype=np.float32)
        for command, joint in self.loads:
            c, p = body[joint.child], body.get(joint.parent, -1) if joint.parent else -1
            point, direction = _force(joint, command, body_q, com_w, c)
            magnitude = self.masses[command.joint] * accel
            for index, sign in ((c, 1.0), (p, -1.0)):
                if index < 0:
                    continue
                if point is None:  # no lever arm: a balanced torque pair about the axis
                    wrench[index, 3:] += sign * magnitude * 0.1 * direction
                else:
                    force = sign * magnitude * direction
                    wrench[index, :3] += force
                    wrench[index, 3:] += cross(point - com_w[index], force)
        return wrench
