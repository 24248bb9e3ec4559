""":class:`Actuators`: the explicit actuator groups of one articulation, computed every physics step in public order.

:meth:`transfer.Articulation.set_actuators` installs one; before every physics step the articulation hands it the
public-order targets, feed-forward efforts and joint state, and applies its output as joint effort. Everything but
the actuator networks is Warp kernels (:mod:`transfer.actuators.kernels`), so on a CUDA device it is recorded in the
step's graph with the rest; the networks run in torch (loaded with ``torch.jit.load``: a TorchScript archive, no
pickled Python objects).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import warp as wp

from transfer.actuators import kernels as ak
from transfer.actuators.spec import ActuatorError, ActuatorGroup

__all__ = ["Actuators"]

_KIND = {
    "implicit": ak.PASS,
    "ideal_pd": ak.IDEAL,
    "delayed_pd": ak.IDEAL,
    "dc_motor": ak.DC,
    "mlp": ak.NET,
    "lstm": ak.NET,
}


class Actuators:
    """Explicit actuator models over an articulation's public joints.

    Args:
        groups: Actuator groups whose ``joints`` are literal names of ``joint_names`` (a task's
            :meth:`~transfer.Task.with_joint_names` expands patterns); joints in no group are implicit.
        joint_names: The public joint order.
        num_envs: Environments.
        stiffness, damping, effort_limit: Per-joint PD gains and effort limit, public order (SI: N·m/rad, N·m·s/rad,
            N·m). The effort limit is the explicit models' clip (and the DC motor's continuous torque).
        device: Warp device.
        seed: Seeds the delays drawn at every reset.
        base_dir: Folder against which relative network files are resolved.

    Raises:
        ActuatorError: a joint in two groups, an unknown joint, or a network that cannot be loaded.
    """

    def __init__(
        self,
        groups: Sequence[ActuatorGroup],
        joint_names: Sequence[str],
        *,
        num_envs: int,
        stiffness: Sequence[float],
        damping: Sequence[float],
        effort_limit: Sequence[float],
        device: str = "cpu",
        seed: int = 0,
        base_dir: str | Path | None = None,
    ) -> None:
        names = list(joint_names)
        self.num_envs, self.num_joints, self.device = int(num_envs), len(names), str(device)
        self.groups = tuple(groups)
        owner: dict[str, str] = {}
        kind = np.zeros(len(names), np.int32)
        sat = np.ones(len(names), np.float32)
        vlim = np.ones(len(names), np.float32)
        self._ids: dict[str, list[int]] = {}
        for group in self.groups:
            unknown = [j for j in group.joints if j not in names]
            if unknown:
                raise ActuatorError(
                    f"actuators.{group.name}: joints {unknown} are not joints of the articulation {names}"
                )
            for j in group.joints:
                if j in owner:
                    raise ActuatorError(f"joint {j!r} is driven by two actuator groups: {owner[j]} and {group.name}")
                owner[j] = group.name
            ids = [names.index(j) for j in group.joints]
            self._ids[group.name] = ids
            kind[ids] = _KIND[group.model]
            if group.saturation_effort is not None:
                sat[ids], vlim[ids] = group.saturation_effort, group.velocity_limit
        self.explicit_joints: tuple[str, ...] = tuple(n for n in names if owner.get(n) and kind[names.index(n)])
        """Joints whose torque is computed here: the engine's drive must be off for them (stiffness, damping 0)."""
        dev = self.device
        arr = lambda values, dtype=wp.float32: wp.array(np.asarray(values), dtype=dtype, device=dev)  # noqa: E731
        limits = np.asarray(effort_limit, np.float32)
        bad = [names[i] for i in np.flatnonzero(kind > 0) if not (np.isfinite(limits[i]) and limits[i] > 0)]
        if bad:
            raise ActuatorError(f"explicit actuators need a positive, finite effort_limit; joints {bad} have none")
        self.effort_limits = limits
        """``(num_joints,)`` the effort each joint's model clips at (N·m or N), public order."""
        self._kind, self._kp, self._kd = arr(kind, wp.int32), arr(stiffness), arr(damping)
        self._limit, self._sat, self._vlim = arr(limits), arr(sat), arr(vlim)
        shape = (self.num_envs, self.num_joints)
        self._network = wp.zeros(shape, dtype=wp.float32, device=dev)
        self._rng = np.random.default_rng(seed)
        delayed = [g for g in self.groups if g.model == "delayed_pd"]
        self._delayed = bool(delayed)
        if self._delayed:
            size = max(g.max_delay for g in delayed) + 1
            self._size = size
            self._history = [wp.zeros((size, *shape), dtype=wp.float32, device=dev) for _ in range(3)]
            self._staged = [wp.zeros(shape, dtype=wp.float32, device=dev) for _ in range(3)]
            self._head = wp.zeros(self.num_envs, dtype=wp.int32, device=dev)
            self._pushes = wp.zeros(self.num_envs, dtype=wp.int32, device=dev)
            self._lag_host = np.zeros(shape, np.int32)
            self._lag = wp.zeros(shape, dtype=wp.int32, device=dev)
        self._nets = [
            _Network(g, self._ids[g.name], self.num_envs, base_dir) for g in self.groups if g.model in ("mlp", "lstm")
        ]
        self._effort_launch: tuple[tuple[wp.array, ...], Any] | None = None  # (its arrays, the recorded launch)
        self.reset()

    @property
    def captures(self) -> bool:
        """Whether :meth:`compute` is kernels only (may be recorded in a CUDA graph): no actuator network."""
        return not self._nets

    def compute(
        self,
        position_target: wp.array,
        velocity_target: wp.array,
        feed_forward: wp.array,
        joint_pos: wp.array,
        joint_vel: wp.array,
        effort: wp.array,
    ) -> None:
        """One physics step's joint efforts into ``effort``; every array ``(num_envs, num_joints)`` public order.
        Implicit joints get the feed-forward effort; explicit ones their model's torque."""
        dim, dev = (self.num_envs, self.num_joints), self.device
        pos_t, vel_t, ff = position_target, velocity_target, feed_forward
        if self._delayed:
            for src, history, out in zip((pos_t, vel_t, ff), self._history, self._staged, strict=True):
                wp.launch(
                    ak.delay,
                    dim=dim,
                    inputs=[src, history, self._head, self._pushes, self._lag],
                    outputs=[out],
                    device=dev,
                )
            wp.launch(ak.advance, dim=self.num_envs, inputs=[self._head, self._pushes, self._size], device=dev)
            pos_t, vel_t, ff = self._staged
        for net in self._nets:
            net.step(pos_t, joint_pos, joint_vel, self._network)
        arrays = (pos_t, vel_t, ff, joint_pos, joint_vel, effort)
        held = self._effort_launch
        if held is None or any(a is not b for a, b in zip(held[0], arrays, strict=True)):
            launch = wp.launch(
                ak.explicit_effort,
                dim=dim,
                inputs=[self._kind, self._kp, self._kd, self._limit, self._sat, self._vlim, *arrays[:5], self._network],
                outputs=[effort],
                device=dev,
                record_cmd=True,
            )
            held = self._effort_launch = (arrays, launch)
        held[1].launch()  # recorded once over the same arrays: a native call per physics step, no argument packing

    def reset(self, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Forget the history of the given environments (all if ``None``) and draw their delays anew."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        if self._delayed and ids.size:
            for group in self.groups:
                if group.model == "delayed_pd":
                    lags = self._rng.integers(group.min_delay, group.max_delay + 1, size=ids.size)
                    cols = self._ids[group.name]
                    self._lag_host[np.ix_(ids, cols)] = lags[:, None]
            self._lag.assign(self._lag_host)
            for buf in (self._head, self._pushes):
                host = buf.numpy()
                host[ids] = 0
                buf.assign(host)
        for net in self._nets:
            net.reset(ids)

    def lags(self) -> np.ndarray:
        """``(num_envs, num_joints)`` delay in physics steps of each env and joint (0 where nothing is delayed)."""
        return self._lag_host.copy() if self._delayed else np.zeros((self.num_envs, self.num_joints), np.int32)


class _Network:
    """One actuator-network group (Isaac Lab's ``ActuatorNetMLP`` / ``ActuatorNetLSTM`` compute), in torch."""

    def __init__(self, group: ActuatorGroup, ids: list[int], num_envs: int, base_dir: str | Path | None) -> None:
        import torch

        path = group.network_path(base_dir)
        try:
            self.net = torch.jit.load(str(path), map_location="cpu").eval()
        except Exception as exc:  # noqa: BLE001 - any load failure is the user's file
            raise ActuatorError(
                f"actuators.{group.name}.network_file: {path} is not a TorchScript network torch can load "
                f"({type(exc).__name__}: {exc}). Isaac Lab's actuator networks are TorchScript files (torch.jit.save)."
            ) from None
        self.group, self.ids, self.num_envs = group, ids, num_envs
        self._cols = torch.as_tensor(ids)
        n = num_envs * len(ids)
        if group.model == "lstm":
            lstm = getattr(self.net, "lstm", None)
            if lstm is None:
                raise ActuatorError(
                    f"actuators.{group.name}: {path} has no `lstm` submodule (ActuatorNetLSTM's layout)"
                )
            layers, hidden = int(lstm.num_layers), int(lstm.hidden_size)
            self.hidden = torch.zeros(layers, n, hidden)
            self.cell = torch.zeros(layers, n, hidden)
            self.input = torch.zeros(n, 1, 2)
        else:
            length = max(group.input_idx) + 1
            self.pos_history = torch.zeros(num_envs, length, len(ids))
            self.vel_history = torch.zeros(num_envs, length, len(ids))
        self._probe(path)

    def _probe(self, path: Any) -> None:
        """Run the network once on inputs of the shape this group feeds it: a network of another shape is refused
        here, in one line naming the file and both shapes, not in a TorchScript traceback mid-run."""
        import torch

        g = self.group
        if g.model == "lstm":
            shape: tuple[int, ...] = (1, 1, 2)
            args: tuple[Any, ...] = (torch.zeros(shape), (self.hidden[:, :1].clone(), self.cell[:, :1].clone()))
        else:
            shape = (1, 2 * len(g.input_idx))
            args = (torch.zeros(shape),)
        try:
            with torch.inference_mode():
                out = self.net(*args)
            torques = out[0] if isinstance(out, tuple) else out
            if torques.numel() != 1:
                raise ValueError(f"it gives {tuple(torques.shape)} for one joint, not one torque")
        except Exception as exc:  # noqa: BLE001 - TorchScript raises RuntimeError with its own traceback inside
            why = str(exc).strip().splitlines()
            last = next((line.strip() for line in reversed(why) if line.strip()), type(exc).__name__)
            raise ActuatorError(
                f"actuators.{g.name}.network_file: {path} does not take this group's input: fed {shape} (one joint: "
                f"{'position error and velocity' if g.model == 'lstm' else f'{len(g.input_idx)} past position errors and velocities'}), "
                f"it says: {last[:300]}. Check input_idx / the network file against the one the policy trained with."
            ) from None

    def step(self, pos_t: wp.array, joint_pos: wp.array, joint_vel: wp.array, out: wp.array) -> None:
        import torch

        cols = self._cols
        error = (wp.to_torch(pos_t) - wp.to_torch(joint_pos))[:, cols]
        vel = wp.to_torch(joint_vel)[:, cols]
        g = self.group
        with torch.inference_mode():
            if g.model == "lstm":
                self.input[:, 0, 0] = error.reshape(-1)
                self.input[:, 0, 1] = vel.reshape(-1)
                torques, (h, c) = self.net(self.input, (self.hidden, self.cell))
                self.hidden.copy_(h)
                self.cell.copy_(c)
                torques = torques.reshape(self.num_envs, len(self.ids))
            else:
                self.pos_history = self.pos_history.roll(1, 1)
                self.pos_history[:, 0] = error
                self.vel_history = self.vel_history.roll(1, 1)
                self.vel_history[:, 0] = vel
                pos_in = torch.stack([self.pos_history[:, i] for i in g.input_idx], dim=2).reshape(-1, len(g.input_idx))
                vel_in = torch.stack([self.vel_history[:, i] for i in g.input_idx], dim=2).reshape(-1, len(g.input_idx))
                parts = [pos_in * g.pos_scale, vel_in * g.vel_scale]
                x = torch.cat(parts if g.input_order == "pos_vel" else parts[::-1], dim=1)
                torques = self.net(x).reshape(self.num_envs, len(self.ids)) * g.torque_scale
        wp.to_torch(out)[:, cols] = torques.to(torch.float32)

    def reset(self, ids: np.ndarray) -> None:
        if ids.size == 0:
            return
        import torch

        rows = torch.as_tensor(ids)
        if self.group.model == "lstm":
            k = len(self.ids)
            for state in (self.hidden, self.cell):
                state.view(state.shape[0], self.num_envs, k, -1)[:, rows] = 0.0
        else:
            self.pos_history[rows] = 0.0
            self.vel_history[rows] = 0.0
