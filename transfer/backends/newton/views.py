"""Batched views of one asset per world in a Newton model: :class:`JointView` and :class:`BodyView`.

Like ``newton.selection.ArticulationView``, a view selects one asset in every world by a prim-path pattern
(:mod:`transfer.backends.newton._select`) and reads or writes ``(num_worlds, n)`` batches of a ``Model``,
``State`` or ``Control``. Unlike it, the views also select assets without an articulation (rootless mechanisms),
keep loop-closing joints selectable, and write with full-width inputs plus optional ``env_ids`` and element ids
(the :mod:`transfer.backends.base` contract) through the gather/scatter kernels of :mod:`transfer.kernels`.
Nothing on the read/write path copies to the host.

Conventions are Newton's: quaternions xyzw inside ``wp.transform`` (``p, q``), body twists ``(v_com, omega)`` in
the world frame (linear velocity of the centre of mass), wrenches ``(force, torque)`` at the COM, world frame.
:class:`~transfer.backends.newton.mechanism.MechanismView` composes the two with a root/base policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import newton
import numpy as np
import warp as wp

from transfer._arrays import is_torch
from transfer.backends.newton import _kernels as nk
from transfer.backends.newton._layout import (
    LaunchCache,
    Layout,
    Pattern,
    as_index_array,
    as_rows,
    compile_matcher,
    leaf,
)
from transfer.backends.newton._select import Asset, ModelInfo, check_same_names, model_info, select_asset
from transfer.ordering import dof_names

__all__ = ["JOINT_PROPERTY_ATTRIBUTES", "BodyView", "JointView"]

#: Per-DoF property names (those of :data:`transfer.backends.base.JOINT_PROPERTIES`, plus defaults) -> Newton
#: ``Model`` attribute.
JOINT_PROPERTY_ATTRIBUTES: dict[str, str] = {
    "stiffness": "joint_target_ke",
    "damping": "joint_target_kd",
    "armature": "joint_armature",
    "friction": "joint_friction",
    "position_limit_lower": "joint_limit_lower",
    "position_limit_upper": "joint_limit_upper",
    "velocity_limit": "joint_velocity_limit",
    "effort_limit": "joint_effort_limit",
    "default_position": "joint_q",
    "default_velocity": "joint_qd",
}


# ---------------------------------------------------------------------------------------------------------------
# Base class: buffers, selectors, attribute access.
# ---------------------------------------------------------------------------------------------------------------
class _PerWorld:
    """One selected asset per model world: ``worlds`` and the counts derived from it."""

    worlds: tuple[int, ...]
    """Model world of each view row (``(-1,)`` for a model without worlds)."""

    @property
    def world_count(self) -> int:
        """Number of selected assets (one per world)."""
        return len(self.worlds)


class _ViewBase(_PerWorld):
    model: newton.Model

    def _init_common(
        self,
        what: str,
        model: newton.Model,
        pattern: Pattern,
        asset: Asset | None,
        include: Pattern,
        exclude: Pattern,
    ) -> tuple[ModelInfo, Asset, Callable[[str], bool]]:
        """Set up the model, buffers and selected asset; return the model info, the asset and an element filter.

        ``what`` names the view in error messages. The filter keeps a label matched by ``include`` (``None``: all)
        and not by ``exclude``.
        """
        self.model = model
        self.device = model.device
        self._launches = LaunchCache(model.device)
        self._selectors: dict = {}
        self._buffers: dict[tuple, wp.array] = {}
        info = model_info(model)
        asset = asset or select_asset(model, pattern, what)
        self._where = f"{what}({asset.pattern})"  # names the view in layout errors
        self.worlds = asset.worlds
        inc = compile_matcher(include, f"{what}(include=...)")
        exc = compile_matcher(exclude, f"{what}(exclude=...)")

        def keep(label: str) -> bool:
            return (inc is None or inc(label)) and not (exc is not None and exc(label))

        return info, asset, keep

    def _init_layouts(self, **ids: np.ndarray) -> None:
        """``self.layouts``: a :class:`Layout` per kind, from ``(num_worlds, n)`` model ids."""
        self.layouts: dict[str, Layout] = {
            kind: Layout.from_ids(kind, kind_ids, self.device, self._where) for kind, kind_ids in ids.items()
        }

    def _buffer(self, key: tuple, shape: tuple[int, ...], dtype: Any) -> wp.array:
        buf = self._buffers.get(key)
        if buf is None or buf.dtype != dtype or tuple(buf.shape) != tuple(shape):
            buf = self._buffers[key] = wp.zeros(shape, dtype=dtype, device=self.device)
        return buf

    def env_ids(self, env_ids: Any) -> wp.array:
        """``env_ids`` as a ``wp.int32`` array (``None``: every world). Device int32 arrays pass through."""
        return as_index_array(env_ids, self.world_count, "env_ids", self.device, self._selectors)

    def _layout_for(self, name: str, source: Any) -> Layout:
        raise NotImplementedError

    def _read(self, name: str, source: Any, out: wp.array | None = None) -> wp.array:
        flat = getattr(source, name, None)
        if flat is None:
            raise AttributeError(
                f"{type(source).__name__}.{name} is not allocated; it is needed to read {name}. For a State, "
                "create it with model.state(); for a Control, with model.control()."
            )
        layout = self._layout_for(name, source)
        shape = (layout.num_worlds, layout.count)
        if out is None:
            out = self._buffer((name, type(source).__name__), shape, flat.dtype)
        elif out.dtype != flat.dtype or tuple(out.shape) != shape or out.device != flat.device:
            raise ValueError(
                f"out: expected {shape} of {getattr(flat.dtype, '__name__', flat.dtype)} on {flat.device} for "
                f"{name}, got {tuple(out.shape)} of {getattr(out.dtype, '__name__', out.dtype)} on {out.device}"
            )
        self._launches.gather(flat, layout, out)
        return out

    def _write(
        self,
        name: str,
        target: Any,
        values: Any,
        env_ids: Any,
        element_ids: wp.array,
        what: str,
    ) -> None:
        flat = getattr(target, name, None)
        if flat is None:
            raise AttributeError(f"{type(target).__name__}.{name} is not allocated; cannot write {what}.")
        layout = self._layout_for(name, target)
        src = as_rows(values, flat.dtype, (layout.num_worlds, layout.count), what, self.device)
        self._launches.scatter(flat, layout, src, self.env_ids(env_ids), element_ids)


# ---------------------------------------------------------------------------------------------------------------
# JointView
# ---------------------------------------------------------------------------------------------------------------
class JointView(_ViewBase):
    """Joints of one asset per world, with their DoFs (velocities) and coordinates (positions).

    Args:
        model: A finalized ``newton.Model``.
        pattern: The asset: a glob, list of globs or compiled regex matched against articulation labels (the
            prim with ``PhysicsArticulationRootAPI``) or, for rootless assets, against body prim paths and their
            ancestors (``"/fourbar_pole"``). A pattern matches a label or its last path element.
        include, exclude: Joint patterns (same matching rules, against the joint's prim path and name).
        joint_types: Keep only these ``newton.JointType`` values. ``exclude_joint_types``: drop these.
        include_loop_joints: Also select the asset's loop-closing joints (after the tree joints). Rootless assets
            have no tree; all of their joints are selected as they are.

    Index maps (``numpy`` int32, world rows first) are stable and deterministic: model order within a world.
    ``joint_ids`` ``(num_worlds, joint_count)``, ``joint_dof_ids`` ``(num_worlds, joint_dof_count)``,
    ``joint_coord_ids`` ``(num_worlds, joint_coord_count)``. Reads return ``(num_worlds, n)`` arrays the view owns
    and refreshes on each call. Writes take full-width ``(num_worlds, n)`` values, apply only the rows in
    ``env_ids`` and the columns of ``joint_ids`` (view joint indices; all of a joint's DoFs or coordinates), and
    leave every other entry untouched.
    """

    def __init__(
        self,
        model: newton.Model,
        pattern: Pattern,
        *,
        include: Pattern = None,
        exclude: Pattern = None,
        joint_types: Iterable[int] | None = None,
        exclude_joint_types: Iterable[int] | None = None,
        include_loop_joints: bool = False,
        order: Sequence[str] | None = None,
        _asset: Asset | None = None,
        _only_loops: bool = False,
    ) -> None:
        info, asset, keep = self._init_common("JointView", model, pattern, _asset, include, exclude)
        keep_types = None if joint_types is None else {int(t) for t in joint_types}
        drop_types = set() if exclude_joint_types is None else {int(t) for t in exclude_joint_types}

        candidates = [
            ([] if _only_loops else list(tree)) + (list(loop) if include_loop_joints or _only_loops else [])
            for tree, loop in zip(asset.tree_joints, asset.loop_joints, strict=True)
        ]
        check_same_names([[info.joint_label[j] for j in c] for c in candidates], "JointView")
        template = candidates[0]
        tree0 = set(asset.tree_joints[0])
        chosen = [
            p
            for p, j in enumerate(template)
            if keep(info.joint_label[j])
            and (keep_types is None or int(info.joint_type[j]) in keep_types)
            and int(info.joint_type[j]) not in drop_types
        ]
        chosen = _in_order(chosen, [leaf(info.joint_label[template[p]]) for p in chosen], order, "JointView", "joint")
        joint_ids = np.array([[c[p] for p in chosen] for c in candidates], dtype=np.int64).reshape(len(candidates), -1)
        self.joint_ids: np.ndarray = joint_ids.astype(np.int32)
        self.joint_labels: list[str] = [info.joint_label[j] for j in joint_ids[0]]
        self.joint_names: list[str] = [leaf(label) for label in self.joint_labels]
        self.is_loop_joint: list[bool] = [int(j) not in tree0 and asset.articulations is not None for j in joint_ids[0]]

        def spans(start: np.ndarray) -> tuple[np.ndarray, list[int]]:
            ids = [[k for j in row for k in range(int(start[j]), int(start[j + 1]))] for row in joint_ids]
            counts = [int(start[j + 1] - start[j]) for j in joint_ids[0]]
            return np.array(ids, dtype=np.int64).reshape(len(ids), -1), counts

        dof_ids, self.joint_dof_counts = spans(info.joint_qd_start)
        coord_ids, self.joint_coord_counts = spans(info.joint_q_start)
        self.joint_dof_ids: np.ndarray = dof_ids.astype(np.int32)
        self.joint_coord_ids: np.ndarray = coord_ids.astype(np.int32)
        self.joint_dof_names: list[str] = _sub_names(self.joint_names, self.joint_dof_counts)
        self.joint_coord_names: list[str] = _sub_names(self.joint_names, self.joint_coord_counts)
        self._dof_starts = np.concatenate([[0], np.cumsum(self.joint_dof_counts)]).astype(np.int64)
        self._coord_starts = np.concatenate([[0], np.cumsum(self.joint_coord_counts)]).astype(np.int64)

        self._init_layouts(joint=joint_ids, dof=dof_ids, coord=coord_ids)

    # -- counts -----------------------------------------------------------------------------------------------
    @property
    def joint_count(self) -> int:
        return len(self.joint_names)

    @property
    def joint_dof_count(self) -> int:
        return len(self.joint_dof_names)

    @property
    def joint_coord_count(self) -> int:
        return len(self.joint_coord_names)

    @property
    def coords_match_dofs(self) -> bool:
        """Whether every selected joint has as many coordinates as DoFs (no ball or free joints)."""
        return self.joint_dof_counts == self.joint_coord_counts

    # -- selectors ----------------------------------------------------------------------------------------
    def element_ids(self, joint_ids: Any, kind: str) -> wp.array:
        """View joint indices as positions along the ``kind`` axis (``"joint"``, ``"dof"`` or ``"coord"``).

        With one DoF and one coordinate per joint (revolute/prismatic/single-axis D6) a ``wp.int32`` device array
        is used as given. Joints with several DoFs expand on the host, once per distinct selection (cached).
        """
        n = {"joint": self.joint_count, "dof": self.joint_dof_count, "coord": self.joint_coord_count}[kind]
        if joint_ids is None:
            return as_index_array(None, n, "joint_ids", self.device, self._selectors)
        counts = self.joint_dof_counts if kind == "dof" else self.joint_coord_counts
        if kind == "joint" or all(c == 1 for c in counts):
            # one DoF (coordinate) per joint: joint positions are DoF positions; device arrays pass through
            return as_index_array(joint_ids, n, "joint_ids", self.device, self._selectors)
        key = ("expand", kind, _host_key(joint_ids))
        cached = self._selectors.get(key)
        if cached is not None:
            return cached
        joints = as_index_array(joint_ids, self.joint_count, "joint_ids", self.device, {}).numpy()
        starts = self._dof_starts if kind == "dof" else self._coord_starts
        cols = np.concatenate([np.arange(starts[j], starts[j + 1]) for j in joints] or [np.zeros(0)]).astype(np.int32)
        arr = wp.array(cols, dtype=wp.int32, device=self.device)
        self._selectors[key] = arr
        return arr

    def _layout_for(self, name: str, source: Any) -> Layout:
        frequency = self.model.get_attribute_frequency(name)
        F = newton.Model.AttributeFrequency
        if frequency == F.JOINT_DOF:
            return self.layouts["dof"]
        if frequency == F.JOINT_COORD:
            return self.layouts["coord"]
        if frequency == F.JOINT:
            return self.layouts["joint"]
        raise ValueError(
            f"JointView: attribute {name!r} has frequency {frequency!r}, not a joint, DoF or coordinate one"
        )

    def _kind(self, name: str) -> str:
        return self._layout_for(name, None).kind

    # -- generic access -----------------------------------------------------------------------------------
    def get_attribute(self, name: str, source: Any, out: wp.array | None = None) -> wp.array:
        """``(num_worlds, n)`` gather of a per-joint, per-DoF or per-coordinate attribute of a Model/State/Control."""
        return self._read(name, source, out)

    def set_attribute(self, name: str, target: Any, values: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        """Scatter full-width ``(num_worlds, n)`` values into ``target.<name>`` for ``env_ids`` x ``joint_ids``."""
        self._write(name, target, values, env_ids, self.element_ids(joint_ids, self._kind(name)), name)

    # -- state ------------------------------------------------------------------------------------------------
    def get_positions(self, state: newton.State) -> wp.array:
        """Joint coordinates ``(num_worlds, joint_coord_count)`` from ``state.joint_q``."""
        return self._read("joint_q", state)

    def get_velocities(self, state: newton.State) -> wp.array:
        """Joint velocities ``(num_worlds, joint_dof_count)`` from ``state.joint_qd``."""
        return self._read("joint_qd", state)

    def set_positions(self, state: newton.State, values: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        self.set_attribute("joint_q", state, values, env_ids, joint_ids)

    def set_velocities(self, state: newton.State, values: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        self.set_attribute("joint_qd", state, values, env_ids, joint_ids)

    def set_state(
        self, state: newton.State, positions: Any, velocities: Any, env_ids: Any = None, joint_ids: Any = None
    ) -> None:
        self.set_positions(state, positions, env_ids, joint_ids)
        self.set_velocities(state, velocities, env_ids, joint_ids)

    # -- control ----------------------------------------------------------------------------------------------
    def get_position_targets(self, control: newton.Control) -> wp.array:
        """``control.joint_target_q``, ``(num_worlds, joint_coord_count)``."""
        return self._read("joint_target_q", control)

    def get_velocity_targets(self, control: newton.Control) -> wp.array:
        return self._read("joint_target_qd", control)

    def get_efforts(self, control: newton.Control) -> wp.array:
        """Feed-forward efforts ``control.joint_f``, ``(num_worlds, joint_dof_count)``."""
        return self._read("joint_f", control)

    def set_position_targets(
        self, control: newton.Control, values: Any, env_ids: Any = None, joint_ids: Any = None
    ) -> None:
        self.set_attribute("joint_target_q", control, values, env_ids, joint_ids)

    def set_velocity_targets(
        self, control: newton.Control, values: Any, env_ids: Any = None, joint_ids: Any = None
    ) -> None:
        self.set_attribute("joint_target_qd", control, values, env_ids, joint_ids)

    def set_efforts(self, control: newton.Control, values: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        self.set_attribute("joint_f", control, values, env_ids, joint_ids)

    # -- properties ---------------------------------------------------------------------------------------------
    def get_property(self, name: str, model: newton.Model | None = None) -> wp.array:
        """One of :data:`JOINT_PROPERTY_ATTRIBUTES` (e.g. ``"stiffness"``) as ``(num_worlds, n)``."""
        return self._read(_property_attribute(name), model or self.model)

    def set_property(
        self, name: str, values: Any, env_ids: Any = None, joint_ids: Any = None, model: newton.Model | None = None
    ) -> None:
        """Write a property; tell the solver with ``solver.notify_model_changed(ModelFlags.JOINT_DOF_PROPERTIES)``."""
        self.set_attribute(_property_attribute(name), model or self.model, values, env_ids, joint_ids)


def _property_attribute(name: str) -> str:
    try:
        return JOINT_PROPERTY_ATTRIBUTES[name]
    except KeyError:
        raise KeyError(f"unknown joint property {name!r}; known: {sorted(JOINT_PROPERTY_ATTRIBUTES)}") from None


def _in_order(chosen: list[int], names: list[str], order: Sequence[str] | None, what: str, kind: str) -> list[int]:
    """``chosen`` rearranged so that its names follow ``order`` (``None``: as they are)."""
    if order is None:
        return chosen
    order = list(order)
    if sorted(order) != sorted(names) or len(set(names)) != len(names):
        missing = sorted(set(names) - set(order))
        extra = sorted(set(order) - set(names))
        raise ValueError(
            f"{what}(order=...): not a permutation of the selected {kind} names {names}; "
            f"missing {missing}, unknown {extra}."
        )
    at = dict(zip(names, chosen, strict=True))
    return [at[name] for name in order]


def _sub_names(names: list[str], counts: list[int]) -> list[str]:
    return [dof for name, n in zip(names, counts, strict=True) for dof in dof_names(name, n)]


def _host_key(ids: Any) -> tuple:
    if isinstance(ids, wp.array):
        ids = ids.numpy()
    elif is_torch(ids):
        ids = ids.detach().cpu().numpy()
    a = np.asarray(ids)
    return (a.dtype.str, a.shape, a.tobytes())


# ---------------------------------------------------------------------------------------------------------------
# BodyView
# ---------------------------------------------------------------------------------------------------------------
class BodyView(_ViewBase):
    """Bodies (links) of one asset per world and their shapes.

    ``body_ids`` ``(num_worlds, body_count)`` are model indices in model order; the view's shapes are those of its
    bodies, in model order, and ``body_shapes[i]`` lists the view shape indices of body ``i``. Transforms are link
    frames (the authored body prim frame), ``p`` then ``q`` (xyzw); velocities are ``(v_com, omega)`` in the world
    frame.
    """

    def __init__(
        self,
        model: newton.Model,
        pattern: Pattern,
        *,
        include: Pattern = None,
        exclude: Pattern = None,
        order: Sequence[str] | None = None,
        _asset: Asset | None = None,
    ) -> None:
        info, asset, keep = self._init_common("BodyView", model, pattern, _asset, include, exclude)
        check_same_names([[info.body_label[b] for b in row] for row in asset.bodies], "BodyView")
        chosen = [p for p, b in enumerate(asset.bodies[0]) if keep(info.body_label[b])]
        chosen = _in_order(
            chosen, [leaf(info.body_label[asset.bodies[0][p]]) for p in chosen], order, "BodyView", "body"
        )
        body_ids = np.array([[row[p] for p in chosen] for row in asset.bodies], dtype=np.int64).reshape(
            len(asset.bodies), -1
        )
        self.body_ids: np.ndarray = body_ids.astype(np.int32)
        self.body_labels: list[str] = [info.body_label[b] for b in body_ids[0]]
        self.body_names: list[str] = [leaf(label) for label in self.body_labels]
        shapes0 = sorted(s for b in body_ids[0] for s in info.body_shapes.get(int(b), []))
        shape_rows = [sorted(s for b in row for s in info.body_shapes.get(int(b), [])) for row in body_ids]
        check_same_names([[info.shape_label[s] for s in row] for row in shape_rows], "BodyView shapes")
        shape_ids = np.array(shape_rows, dtype=np.int64).reshape(len(shape_rows), -1)
        position = {s: i for i, s in enumerate(shapes0)}
        self.body_shapes: list[list[int]] = [
            [position[s] for s in info.body_shapes.get(int(b), [])] for b in body_ids[0]
        ]
        self._init_layouts(body=body_ids, shape=shape_ids)
        self._ids_wp = wp.array(self.body_ids, dtype=wp.int32, device=self.device)

    # -- counts -----------------------------------------------------------------------------------------------
    @property
    def body_count(self) -> int:
        return len(self.body_names)

    @property
    def shape_count(self) -> int:
        return self.layouts["shape"].count

    def _layout_for(self, name: str, source: Any) -> Layout:
        frequency = self.model.get_attribute_frequency(name)
        F = newton.Model.AttributeFrequency
        if frequency == F.BODY:
            return self.layouts["body"]
        if frequency == F.SHAPE:
            return self.layouts["shape"]
        raise ValueError(f"BodyView: attribute {name!r} has frequency {frequency!r}, not a body or shape one")

    def get_attribute(self, name: str, source: Any, out: wp.array | None = None) -> wp.array:
        return self._read(name, source, out)

    def set_attribute(self, name: str, target: Any, values: Any, env_ids: Any = None, body_ids: Any = None) -> None:
        n = self._layout_for(name, target).count
        ids = as_index_array(body_ids, n, "body_ids", self.device, self._selectors)
        self._write(name, target, values, env_ids, ids, name)

    # -- state -------------------------------------------------------------------------------------------------
    def get_transforms(self, state: newton.State) -> wp.array:
        """Link frames ``(num_worlds, body_count)`` of ``wp.transform`` (world frame, xyzw)."""
        return self._read("body_q", state)

    def get_velocities(self, state: newton.State) -> wp.array:
        """``(num_worlds, body_count)`` of ``wp.spatial_vector``: COM linear velocity, then angular; world frame."""
        return self._read("body_qd", state)

    def get_coms(self, state: newton.State) -> wp.array:
        """World pose of each body's centre of mass: COM position, body orientation."""
        out = self._buffer(("com_pose",), (self.world_count, self.body_count), wp.transform)
        if self.body_count:
            wp.launch(
                nk.body_com_poses,
                dim=out.shape,
                inputs=[state.body_q, self.model.body_com, self._ids_wp],
                outputs=[out],
                device=self.device,
            )
        return out

    def get_wrenches(self, state: newton.State) -> wp.array:
        return self._read("body_f", state)

    def apply_wrenches(self, state: newton.State, wrenches: Any, env_ids: Any = None, body_ids: Any = None) -> None:
        """Set external wrenches ``(force, torque)`` at the COM, world frame, into ``state.body_f``.

        Solvers read ``body_f`` of their input state; the values stay until overwritten or ``state.clear_forces()``.
        """
        self.set_attribute("body_f", state, wrenches, env_ids, body_ids)

    # -- mass properties ------------------------------------------------------------------------------------------
    def get_masses(self, model: newton.Model | None = None) -> wp.array:
        return self._read("body_mass", model or self.model)

    def get_inertias(self, model: newton.Model | None = None) -> wp.array:
        """Body inertia tensors about the COM, in the body frame, ``(num_worlds, body_count)`` of ``wp.mat33``."""
        return self._read("body_inertia", model or self.model)

    def get_local_coms(self, model: newton.Model | None = None) -> wp.array:
        """Each body's centre of mass in its own frame (``body_com``), ``(num_worlds, body_count)`` of ``wp.vec3``."""
        return self._read("body_com", model or self.model)

    def set_masses(self, values: Any, env_ids: Any = None, body_ids: Any = None) -> None:
        """Write masses and inverse masses; then ``solver.notify_model_changed(ModelFlags.BODY_INERTIAL_PROPERTIES)``."""
        outputs = [self.model.body_mass, self.model.body_inv_mass]
        self._set_with_inverse(nk.set_mass_and_inverse, outputs, values, wp.float32, "masses", env_ids, body_ids)

    def set_inertias(self, values: Any, env_ids: Any = None, body_ids: Any = None) -> None:
        """Write inertia tensors and their inverses (body frame, about the COM)."""
        outputs = [self.model.body_inertia, self.model.body_inv_inertia]
        self._set_with_inverse(nk.set_inertia_and_inverse, outputs, values, wp.mat33, "inertias", env_ids, body_ids)

    def _set_with_inverse(
        self, kernel: Any, outputs: list, values: Any, dtype: Any, what: str, env_ids: Any, body_ids: Any
    ) -> None:
        """Launch ``kernel`` to write ``values`` (full-width, ``dtype``) and their inverses into ``outputs``."""
        src = as_rows(values, dtype, (self.world_count, self.body_count), what, self.device)
        envs = self.env_ids(env_ids)
        ids = as_index_array(body_ids, self.body_count, "body_ids", self.device, self._selectors)
        if envs.shape[0] and ids.shape[0]:
            wp.launch(
                kernel,
                dim=(envs.shape[0], ids.shape[0]),
                inputs=[src, envs, ids, self._ids_wp],
                outputs=outputs,
                device=self.device,
            )
