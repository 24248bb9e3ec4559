"""``MechanismView``: one asset per world as a mechanism with an explicit root/base policy and capabilities.

It composes a :class:`~transfer.backends.newton.views.JointView` of the DoF-carrying tree joints, a
:class:`~transfer.backends.newton.views.BodyView` of the links and a ``JointView`` of the loop-closing joints, and
adds root state (by policy), forward/inverse kinematics and the mass matrix where the asset supports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, Literal

import newton
import numpy as np
import warp as wp

from transfer.backends.newton import _kernels as nk
from transfer.backends.newton._layout import LaunchCache, Layout, Pattern, as_struct_array
from transfer.backends.newton._select import Asset, ModelInfo, model_info, select_asset
from transfer.backends.newton.views import BodyView, JointView, _PerWorld

__all__ = ["BASE_POLICIES", "BasePolicy", "CapabilityError", "MechanismView"]

BasePolicy = Literal["auto", "fixed", "floating", "implicit_floating", "none"]
BASE_POLICIES: tuple[str, ...] = ("auto", "fixed", "floating", "implicit_floating", "none")

_FREE_TYPES = (int(newton.JointType.FREE), int(newton.JointType.DISTANCE))


class CapabilityError(NotImplementedError):
    """The selected asset lacks a capability a call needs; the message names the capability and the fix."""

    def __init__(self, capability: str, message: str) -> None:
        self.capability = capability
        super().__init__(f"{capability} is False: {message}")


def _forward(view: str, name: str) -> property:
    """A read-only property that returns ``self.<view>.<name>`` (a count, name list or index map of a sub-view)."""
    return property(attrgetter(f"{view}.{name}"), doc=f"``{view}.{name}``.")


class MechanismView(_PerWorld):
    """One asset per world as a mechanism: links, DoF joints, loop joints and an explicit root/base policy.

    Args:
        model: A finalized ``newton.Model``.
        pattern: The asset (see :class:`JointView`): an articulation label such as ``"/anymal/base"``, or the prim
            path of a rootless mechanism such as ``"/fourbar_pole"``.
        base: The root policy:

            - ``"fixed"``: the root link is held by a joint to the world (FIXED, or a jointed anchor). The root
              pose is the anchor's; writing it moves the anchor (``model.joint_X_p``). Root velocity writes are
              ignored.
            - ``"floating"``: the articulation's root joint is FREE (authored, or the one ``add_usd`` adds for a
              floating base, labelled ``joint_1``). Root state lives in that joint's coordinates.
            - ``"implicit_floating"``: no joint holds the root (a rootless mechanism, no articulation). Root state
              is the root body's maximal state; root writes move/spin every body of the asset rigidly.
            - ``"none"``: no root state; root readers and writers raise :class:`CapabilityError`.
            - ``"auto"`` (default): the one the asset has (articulated: FREE root -> floating, other world joint
              -> fixed; rootless: a joint to the world -> fixed, else implicit_floating).

        include_joints, exclude_joints, joint_types, exclude_joint_types: Which tree joints carry the DoFs
            (default: every tree joint except FREE and FIXED, Newton's articulation DoF order).
        joint_order, link_order: The order of the DoF joints and of the links, by name (a permutation of the selected
            names; ``None``: Newton's order). Every per-joint, per-DoF and per-link read and write then follows it
            in one launch, e.g. PhysX's order for a checkpoint trained on PhysX. The mass matrix keeps the
            articulation's own DoF order.

    Root readers and writers use the root link (:attr:`root_body_id`); readers take a Newton ``State``. DoF setters
    run forward kinematics on the written worlds (``fk=None``: when :attr:`supports_fk`) so link readers agree.
    """

    supports_loop_joints: bool = True
    """Loop-closing joints stay in the model as joints (maximal-coordinate solvers enforce them, SolverMuJoCo
    turns them into equality constraints) and are listed in :attr:`loop_joints`; they carry no DoFs here."""

    def __init__(
        self,
        model: newton.Model,
        pattern: Pattern,
        *,
        base: BasePolicy = "auto",
        include_joints: Pattern = None,
        exclude_joints: Pattern = None,
        joint_types: Iterable[int] | None = None,
        exclude_joint_types: Iterable[int] | None = (newton.JointType.FREE, newton.JointType.FIXED),
        joint_order: Sequence[str] | None = None,
        link_order: Sequence[str] | None = None,
    ) -> None:
        if base not in BASE_POLICIES:
            raise ValueError(f"MechanismView(base={base!r}): expected one of {list(BASE_POLICIES)}")
        self.model = model
        self.device = model.device
        info = model_info(model)
        asset = select_asset(model, pattern, "MechanismView")
        self.pattern: str = asset.pattern
        self.worlds: tuple[int, ...] = asset.worlds
        self.articulation_ids: np.ndarray | None = (
            None if asset.articulations is None else np.asarray(asset.articulations, dtype=np.int32)
        )
        self.articulation_label: str | None = (
            None if asset.articulations is None else info.articulation_label[asset.articulations[0]]
        )
        self.joints = JointView(
            model,
            pattern,
            include=include_joints,
            exclude=exclude_joints,
            joint_types=joint_types,
            exclude_joint_types=exclude_joint_types,
            order=joint_order,
            _asset=asset,
        )
        self.links = BodyView(model, pattern, order=link_order, _asset=asset)
        self.loop_joints: JointView | None = None
        if any(asset.loop_joints):
            self.loop_joints = JointView(model, pattern, _asset=asset, _only_loops=True)

        # -- root ---------------------------------------------------------------------------------------------
        root_body, root_joint, found = self._find_root(info, asset)
        self.base: str = self._resolve_base(base, found, info, asset, root_joint)
        self.root_body_ids: np.ndarray = root_body.astype(np.int32)
        """Model body id of the root link, per world."""
        self.root_joint_ids: np.ndarray | None = None if root_joint is None else root_joint.astype(np.int32)
        """Model joint id of the joint holding the root (FREE or world anchor), per world; ``None`` if there is none."""
        self.root_body_id: int = int(root_body[0])
        self.root_joint_id: int | None = None if root_joint is None else int(root_joint[0])
        self.root_joint_authored: bool = root_joint is not None and info.joint_label[int(root_joint[0])].startswith("/")
        """Whether the root joint is a prim of the asset (``False`` for the FREE joint ``add_usd`` adds)."""
        self.root_link_index: int = self.links.body_ids[0].tolist().index(self.root_body_id)

        self.supports_articulation_tree: bool = asset.articulations is not None
        self.supports_fk: bool = self.supports_articulation_tree
        self.supports_mass_matrix: bool = self.supports_articulation_tree
        self.supports_root_state: bool = self.base != "none"

        self._device_arrays(info, root_body, root_joint)

    def _device_arrays(self, info: ModelInfo, root_body: np.ndarray, root_joint: np.ndarray | None) -> None:
        """The device arrays the root and link reads and writes launch on: root body and joint ids and the root
        joint's coordinate starts, link ids, root pose and twist buffers, the articulation masks; and the launch
        cache."""
        d = self.device
        self._root_layout = Layout.from_ids("body", root_body[:, None], d, f"MechanismView({self.pattern}) root")
        self._root_body_wp = wp.array(self.root_body_ids, dtype=wp.int32, device=d)
        self._root_joint_wp = None if root_joint is None else wp.array(self.root_joint_ids, dtype=wp.int32, device=d)
        if root_joint is not None:
            self._root_q_start = wp.array(info.joint_q_start[root_joint].astype(np.int32), dtype=wp.int32, device=d)
            self._root_qd_start = wp.array(info.joint_qd_start[root_joint].astype(np.int32), dtype=wp.int32, device=d)
        self._link_ids_wp = wp.array(self.links.body_ids, dtype=wp.int32, device=d)
        self._launches = LaunchCache(d)
        self._root_pose = wp.zeros((self.world_count, 1), dtype=wp.transform, device=d)
        self._root_twist = wp.zeros((self.world_count, 1), dtype=wp.spatial_vector, device=d)
        if self.articulation_ids is not None:
            self._art_ids_wp = wp.array(self.articulation_ids, dtype=wp.int32, device=d)
            self._art_mask = wp.zeros(self.model.articulation_count, dtype=wp.bool, device=d)
            self._all_art_mask = wp.zeros(self.model.articulation_count, dtype=wp.bool, device=d)
            wp.launch(
                nk.envs_to_articulation_mask,
                dim=self.world_count,
                inputs=[self.joints.env_ids(None), self._art_ids_wp],
                outputs=[self._all_art_mask],
                device=d,
            )

    # -- root policy ----------------------------------------------------------------------------------------
    def _find_root(self, info: ModelInfo, asset: Asset) -> tuple[np.ndarray, np.ndarray | None, str]:
        if asset.articulations is not None:
            root_joint = np.array([int(info.articulation_start[a]) for a in asset.articulations], dtype=np.int64)
            root_body = info.joint_child[root_joint]
            j0 = int(root_joint[0])
            if int(info.joint_parent[j0]) != -1:
                return root_body, root_joint, "none"
            return root_body, root_joint, ("floating" if int(info.joint_type[j0]) in _FREE_TYPES else "fixed")
        # Rootless: a joint to the world anchors the mechanism; otherwise the first body nothing points into.
        anchors = [
            [j for j in row if int(info.joint_parent[j]) == -1 or int(info.joint_child[j]) == -1]
            for row in asset.tree_joints
        ]
        if anchors[0]:
            root_joint = np.array([row[0] for row in anchors], dtype=np.int64)
            sides = np.stack([info.joint_child[root_joint], info.joint_parent[root_joint]])
            root_body = np.where(sides[0] >= 0, sides[0], sides[1])
            return root_body, root_joint, "fixed"
        roots = []
        for row_joints, row_bodies in zip(asset.tree_joints, asset.bodies, strict=True):
            children = {int(info.joint_child[j]) for j in row_joints}
            free = [b for b in row_bodies if b not in children]
            roots.append(free[0] if free else row_bodies[0])
        return np.array(roots, dtype=np.int64), None, "implicit_floating"

    def _resolve_base(self, base: str, found: str, info: ModelInfo, asset: Asset, root_joint: Any) -> str:
        if base == "auto":
            return found
        if base == "none" or base == found:
            return base
        what = self.articulation_label or self.pattern
        detail = {
            "floating": "its root joint is FREE",
            "fixed": f"its root is held by joint {info.joint_label[int(root_joint[0])]!r}"
            if root_joint is not None
            else "",
            "implicit_floating": "it has no articulation and no joint to the world",
            "none": "its root is not attached to the world",
        }[found]
        raise ValueError(
            f"MechanismView(base={base!r}): {what} has base {found!r} ({detail}). Pass base={found!r} or "
            "base='auto' (or base='none' to drop root state)."
        )

    # -- counts, names, index maps (read through to :attr:`joints` and :attr:`links`) ---------------------------
    joint_count = _forward("joints", "joint_count")
    joint_dof_count = _forward("joints", "joint_dof_count")
    joint_coord_count = _forward("joints", "joint_coord_count")
    link_count = _forward("links", "body_count")
    joint_names = _forward("joints", "joint_names")
    joint_dof_names = _forward("joints", "joint_dof_names")
    joint_coord_names = _forward("joints", "joint_coord_names")
    link_names = _forward("links", "body_names")
    joint_ids = _forward("joints", "joint_ids")
    joint_dof_ids = _forward("joints", "joint_dof_ids")
    joint_coord_ids = _forward("joints", "joint_coord_ids")
    link_ids = _forward("links", "body_ids")

    @property
    def loop_joint_names(self) -> list[str]:
        return [] if self.loop_joints is None else self.loop_joints.joint_names

    @property
    def is_fixed_base(self) -> bool:
        return self.base == "fixed"

    @property
    def capabilities(self) -> dict[str, bool]:
        return {
            "supports_fk": self.supports_fk,
            "supports_mass_matrix": self.supports_mass_matrix,
            "supports_loop_joints": self.supports_loop_joints,
            "supports_root_state": self.supports_root_state,
            "supports_articulation_tree": self.supports_articulation_tree,
        }

    def env_ids(self, env_ids: Any) -> wp.array:
        return self.joints.env_ids(env_ids)

    def _require(self, capability: str, action: str) -> None:
        if getattr(self, capability):
            return
        what = self.articulation_label or self.pattern
        if capability == "supports_root_state":
            fix = "construct the view with base='auto' (or the asset's base) to get root state"
        else:
            fix = (
                "the asset has no articulation; re-import it with "
                "transfer.backends.newton.import_usd(path, rootless_articulation_policy='infer_tree')"
            )
        raise CapabilityError(capability, f"{action} needs it, but {what} (base={self.base!r}) lacks it; {fix}.")

    # -- readers ------------------------------------------------------------------------------------------------
    def get_root_transforms(self, state: newton.State, out: wp.array | None = None) -> wp.array:
        """Root link frames, ``(num_worlds,)`` of ``wp.transform`` (world frame, xyzw).

        The returned array is owned by the view (or is ``out``) and refreshed on every call.
        """
        self._require("supports_root_state", "get_root_transforms")
        return self._gather_root(state.body_q, self._root_pose, out)

    def get_root_velocities(self, state: newton.State, out: wp.array | None = None) -> wp.array:
        """Root twists ``(num_worlds,)``: COM linear velocity, then angular velocity, world frame."""
        self._require("supports_root_state", "get_root_velocities")
        return self._gather_root(state.body_qd, self._root_twist, out)

    def _gather_root(self, flat: wp.array, own: wp.array, out: wp.array | None) -> wp.array:
        n = self.world_count
        if out is None:
            self._launches.gather(flat, self._root_layout, own)
            return own.reshape((n,))
        if out.dtype != flat.dtype or tuple(out.shape) != (n,) or not out.is_contiguous:
            raise ValueError(f"out: expected a contiguous ({n},) array of {flat.dtype.__name__}, got {out.shape}")
        self._launches.gather(flat, self._root_layout, out.reshape((n, 1)))
        return out

    def get_link_transforms(self, state: newton.State) -> wp.array:
        return self.links.get_transforms(state)

    def get_link_velocities(self, state: newton.State) -> wp.array:
        return self.links.get_velocities(state)

    def get_body_coms(self, state: newton.State) -> wp.array:
        return self.links.get_coms(state)

    def get_dof_positions(self, state: newton.State) -> wp.array:
        return self.joints.get_positions(state)

    def get_dof_velocities(self, state: newton.State) -> wp.array:
        return self.joints.get_velocities(state)

    def get_dof_position_targets(self, control: newton.Control) -> wp.array:
        return self.joints.get_position_targets(control)

    def get_dof_velocity_targets(self, control: newton.Control) -> wp.array:
        return self.joints.get_velocity_targets(control)

    def get_dof_efforts(self, control: newton.Control) -> wp.array:
        return self.joints.get_efforts(control)

    # -- writers --------------------------------------------------------------------------------------------------
    def set_root_transforms(self, state: newton.State, values: Any, env_ids: Any = None) -> None:
        """Teleport the roots of ``env_ids`` to ``values`` (``(num_worlds,)`` transforms or ``(num_worlds, 7)``).

        floating: writes the FREE joint coordinates, then FK. fixed: moves the anchor (``model.joint_X_p``; notify
        the solver with ``ModelFlags.JOINT_PROPERTIES``), then FK (or a rigid move without an articulation).
        implicit_floating: moves every body of the asset rigidly.
        """
        self._require("supports_root_state", "set_root_transforms")
        poses = self._root_values(values, wp.transform, "root transforms")
        envs = self.env_ids(env_ids)
        if envs.shape[0] == 0:
            return
        m = self.model
        if self.base == "floating":
            wp.launch(
                nk.set_free_root_coords,
                dim=envs.shape[0],
                inputs=[poses, envs, self._root_joint_wp, self._root_q_start, m.joint_X_p, m.joint_X_c],
                outputs=[state.joint_q],
                device=self.device,
            )
            self._fk(state, envs)
            return
        if self.base == "fixed":
            wp.launch(
                nk.set_fixed_root_anchor,
                dim=envs.shape[0],
                inputs=[poses, envs, self._root_joint_wp, m.joint_X_c],
                outputs=[m.joint_X_p],
                device=self.device,
            )
            if self.supports_fk:
                self._fk(state, envs)
                return
        wp.launch(
            nk.rigid_move_bodies,
            dim=envs.shape[0],
            inputs=[poses, envs, self._root_body_wp, self._link_ids_wp],
            outputs=[state.body_q],
            device=self.device,
        )

    def set_root_velocities(self, state: newton.State, values: Any, env_ids: Any = None) -> None:
        """Set root twists (COM linear, angular; world frame). Ignored for a fixed base (the root cannot move)."""
        self._require("supports_root_state", "set_root_velocities")
        twists = self._root_values(values, wp.spatial_vector, "root velocities")
        envs = self.env_ids(env_ids)
        if envs.shape[0] == 0 or self.base == "fixed":
            return
        m = self.model
        if self.base == "floating":
            wp.launch(
                nk.set_free_root_dofs,
                dim=envs.shape[0],
                inputs=[twists, envs, self._root_joint_wp, self._root_qd_start, m.joint_X_p],
                outputs=[state.joint_qd],
                device=self.device,
            )
            self._fk(state, envs)
            return
        wp.launch(
            nk.rigid_twist_bodies,
            dim=envs.shape[0],
            inputs=[twists, envs, self._root_body_wp, self._link_ids_wp, state.body_q, m.body_com],
            outputs=[state.body_qd],
            device=self.device,
        )

    def _root_values(self, values: Any, dtype: Any, what: str) -> wp.array:
        return as_struct_array(values, dtype, self.world_count, what, self.device)

    def apply_link_wrenches(
        self, state: newton.State, wrenches: Any, env_ids: Any = None, link_ids: Any = None
    ) -> None:
        self.links.apply_wrenches(state, wrenches, env_ids, link_ids)

    def set_dof_positions(
        self, state: newton.State, values: Any, env_ids: Any = None, joint_ids: Any = None, *, fk: bool | None = None
    ) -> None:
        """Write DoF joint coordinates; with ``fk`` (default: when supported) recompute the links of ``env_ids``."""
        self.joints.set_positions(state, values, env_ids, joint_ids)
        self._maybe_fk(state, env_ids, fk, "set_dof_positions(fk=True)")

    def set_dof_velocities(
        self, state: newton.State, values: Any, env_ids: Any = None, joint_ids: Any = None, *, fk: bool | None = None
    ) -> None:
        self.joints.set_velocities(state, values, env_ids, joint_ids)
        self._maybe_fk(state, env_ids, fk, "set_dof_velocities(fk=True)")

    def set_dof_state(
        self,
        state: newton.State,
        positions: Any,
        velocities: Any,
        env_ids: Any = None,
        joint_ids: Any = None,
        *,
        fk: bool | None = None,
    ) -> None:
        self.joints.set_state(state, positions, velocities, env_ids, joint_ids)
        self._maybe_fk(state, env_ids, fk, "set_dof_state(fk=True)")

    def set_dof_position_targets(
        self, control: newton.Control, values: Any, env_ids: Any = None, joint_ids: Any = None
    ) -> None:
        self.joints.set_position_targets(control, values, env_ids, joint_ids)

    def set_dof_velocity_targets(
        self, control: newton.Control, values: Any, env_ids: Any = None, joint_ids: Any = None
    ) -> None:
        self.joints.set_velocity_targets(control, values, env_ids, joint_ids)

    def set_dof_efforts(self, control: newton.Control, values: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        self.joints.set_efforts(control, values, env_ids, joint_ids)

    # -- kinematics and dynamics ----------------------------------------------------------------------------------
    def _maybe_fk(self, state: newton.State, env_ids: Any, fk: bool | None, action: str) -> None:
        if fk is None:
            fk = self.supports_fk
        if fk:
            self._require("supports_fk", action)
            self._fk(state, self.env_ids(env_ids))

    def _mask(self, envs: wp.array | None) -> wp.array:
        if envs is None:
            return self._all_art_mask
        self._art_mask.zero_()
        if envs.shape[0]:
            wp.launch(
                nk.envs_to_articulation_mask,
                dim=envs.shape[0],
                inputs=[envs, self._art_ids_wp],
                outputs=[self._art_mask],
                device=self.device,
            )
        return self._art_mask

    def _fk(self, state: newton.State, envs: wp.array | None) -> None:
        newton.eval_fk(self.model, state.joint_q, state.joint_qd, state, mask=self._mask(envs))

    def eval_fk(self, state: newton.State, env_ids: Any = None) -> None:
        """Link poses and twists of ``env_ids`` from the joint coordinates (``newton.eval_fk`` on this asset)."""
        self._require("supports_fk", "eval_fk")
        self._fk(state, None if env_ids is None else self.env_ids(env_ids))

    def eval_ik(self, state: newton.State, env_ids: Any = None) -> None:
        """Joint coordinates of ``env_ids`` from the link state (after a maximal-coordinate step)."""
        self._require("supports_fk", "eval_ik")
        mask = self._mask(None if env_ids is None else self.env_ids(env_ids))
        newton.eval_ik(self.model, state, state.joint_q, state.joint_qd, mask=mask)

    def eval_mass_matrix(self, state: newton.State) -> wp.array:
        """Generalized mass matrices ``(num_worlds, D, D)`` over all articulation DoFs (root DoFs first).

        D is the articulation's full DoF count (6 root DoFs for a floating base, then the tree joints in model
        order, FIXED joints contributing none).
        """
        self._require("supports_mass_matrix", "eval_mass_matrix")
        H = newton.eval_mass_matrix(self.model, state, mask=self._all_art_mask)
        info = model_info(self.model)
        a = int(self.articulation_ids[0])
        dofs = int(
            info.joint_qd_start[int(info.articulation_end[a])] - info.joint_qd_start[int(info.articulation_start[a])]
        )
        out = wp.zeros((self.world_count, dofs, dofs), dtype=wp.float32, device=self.device)
        if dofs:
            wp.launch(
                nk.gather_square_blocks, dim=out.shape, inputs=[H, self._art_ids_wp], outputs=[out], device=self.device
            )
        return out

    def __repr__(self) -> str:
        return (
            f"MechanismView({self.pattern}, base={self.base!r}, worlds={self.world_count}, links={self.link_count}, "
            f"dofs={self.joint_dof_count}, loop_joints={len(self.loop_joint_names)})"
        )
