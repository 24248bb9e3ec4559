"""A reorder plan: the preallocated gathers and scatters one simulation step needs, launched with one call.

Typical use in a backend::

    plan = ReorderPlan(device="cuda:0")
    joint_pos = plan.add_gather("joint_pos", sim_joint_pos, joint_map)        # public order, preallocated
    joint_target = plan.add_scatter("joint_target", None, sim_joint_target, joint_map)

    def step():                                  # the backend's own kernels
        ...

    run_step = plan.capture_step(step)            # CUDA: one graph (scatters, step, gathers); CPU: direct launches
    for _ in range(num_steps):
        joint_target[:] = policy(joint_pos)       # the caller writes public order ...
        run_step()                                # ... and reads public order after the step

Identity maps (``None``) cost nothing: :meth:`ReorderPlan.add_gather` returns the backend array itself and
:meth:`ReorderPlan.add_scatter` returns the backend array for the caller to write into directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import warp as wp

    from transfer.name_map import ArticulationNameMap

__all__ = ["ReorderPlan", "capture"]

Kind = Literal["gather", "scatter"]


@dataclass
class _Entry:
    name: str
    kind: Kind
    public: Any  # what the caller reads (gather) or writes (scatter): the user-order array or tensor
    run: Callable[[], None] | None  # None: identity aliasing, nothing to launch
    keep: tuple[Any, ...] = field(default=(), repr=False)  # arrays the recorded launch points into


class ReorderPlan:
    """Preallocated gathers (backend -> user) and scatters (user -> backend) for one simulation step.

    Every array is ``(num_envs, N)`` (any Warp dtype) or ``(num_envs, N, C)``, as ``wp.array`` or ``torch.Tensor``
    (wrapped without copying; the plan returns tensors for tensors). Launches are recorded once with
    ``wp.launch(..., record_cmd=True)`` so that :meth:`launch` costs one native call per entry. The recorded
    launches point into the arrays given at ``add_*`` time: keep using those arrays (update them in place).

    Args:
        device: The Warp device. ``None``: taken from the first array added.
    """

    def __init__(self, device: Any = None) -> None:
        self._device: wp.Device | None = None
        if device is not None:
            import warp as wp

            self._device = wp.get_device(device)
        self._entries: dict[str, _Entry] = {}
        self._order: list[Callable[[], None]] = []
        self._gathers: list[Callable[[], None]] = []
        self._scatters: list[Callable[[], None]] = []

    # -- building ---------------------------------------------------------------------------------------------
    @property
    def device(self) -> wp.Device | None:
        """The plan's Warp device (``None`` until the first array is added, if not given)."""
        return self._device

    def add_gather(self, name: str, src_backend: Any, nmap: ArticulationNameMap | None, *, out: Any = None) -> Any:
        """Add ``out = src_backend`` permuted from backend to user order; return ``out`` (the public array).

        Shape: src_backend and out (num_envs, N) or (num_envs, N, C). ``out`` is preallocated zero-filled (same kind,
        shape and dtype as ``src_backend``) unless given. With ``nmap=None`` and no ``out`` the source itself is returned
        and nothing is launched; with ``nmap=None`` and an ``out`` the entry is a plain copy.
        """
        from transfer.kernels import checks as k

        self._check_name(name)
        src = self._warp(src_backend, "src_backend")
        k.check_ndim(src, "src_backend", (2, 3), "(num_envs, N) or (num_envs, N, C)")
        k.check_map(nmap, "nmap", src.shape[1], "axis 1 of src_backend")
        if nmap is None and out is None:
            self._add(_Entry(name, "gather", src_backend, None))
            return src_backend
        dst, out = k.prepare_out(
            src, k.empty_like(src_backend, zero=True) if out is None else out, src_backend, "src_backend"
        )
        run = self._record(src, nmap, "user_to_backend", dst)
        self._add(_Entry(name, "gather", out, run, keep=(src, dst, src_backend, out)))
        return out

    def add_scatter(self, name: str, src_user: Any | None, dst_backend: Any, nmap: ArticulationNameMap | None) -> Any:
        """Add ``dst_backend = src_user`` permuted from user to backend order; return the public (user) array.

        Shape: src_user and dst_backend (num_envs, N) or (num_envs, N, C). ``src_user=None`` preallocates the
        user-order staging buffer, zero-filled (same kind, shape and dtype as ``dst_backend``). With ``nmap=None`` and
        ``src_user=None`` the backend array itself is returned for the caller to write into and nothing is
        launched; with ``nmap=None`` and a separate ``src_user`` the entry is a plain copy.
        """
        from transfer.kernels import checks as k

        self._check_name(name)
        dst = self._warp(dst_backend, "dst_backend")
        k.check_ndim(dst, "dst_backend", (2, 3), "(num_envs, N) or (num_envs, N, C)")
        k.check_map(nmap, "nmap", dst.shape[1], "axis 1 of dst_backend")
        if src_user is None:
            if nmap is None:
                self._add(_Entry(name, "scatter", dst_backend, None))
                return dst_backend
            src_user = k.empty_like(dst_backend, zero=True)
        src = self._warp(src_user, "src_user")
        k.check_shape(src, "src_user", tuple(dst.shape), "(same as dst_backend)")
        k.check_same(dst, "dst_backend", src, "src_user")
        if nmap is None and src.ptr == dst.ptr and src.strides == dst.strides:
            self._add(_Entry(name, "scatter", src_user, None))
            return src_user
        k.check_no_alias(src, dst, "dst_backend")
        run = self._record(src, nmap, "backend_to_user", dst)
        self._add(_Entry(name, "scatter", src_user, run, keep=(src, dst, src_user, dst_backend)))
        return src_user

    # -- running ----------------------------------------------------------------------------------------------
    def launch(self, *names: str) -> None:
        """Launch every entry in the order it was added; with ``names``, only those entries, in the order given.

        Identity entries launch nothing. Raises ``KeyError`` naming an unknown entry.
        """
        if not names:
            for run in self._order:
                run()
            return
        for name in names:
            entry = self._entries.get(name)
            if entry is None:
                raise KeyError(f"ReorderPlan has no entry {name!r}; entries: {list(self._entries)}")
            if entry.run is not None:
                entry.run()

    def launch_gathers(self) -> None:
        """Launch the gathers (backend -> user), in the order they were added."""
        for run in self._gathers:
            run()

    def launch_scatters(self) -> None:
        """Launch the scatters (user -> backend), in the order they were added."""
        for run in self._scatters:
            run()

    def capture_step(self, step: Callable[[], None] | None = None) -> Callable[[], None]:
        """Return a callable that runs scatters, ``step()``, then gathers, captured as one graph by :func:`capture`.

        On CUDA ``step`` must be capturable (no host synchronization). The graph is the callable's ``graph``
        attribute (``None`` on CPU, where the callable launches directly).
        """

        def direct() -> None:
            self.launch_scatters()
            if step is not None:
                step()
            self.launch_gathers()

        return capture(direct, self._device)

    # -- introspection ----------------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        """The public (user-order) array of entry ``name``."""
        return self._entries[name].public

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def names(self) -> tuple[str, ...]:
        """Entry names, in the order they were added."""
        return tuple(self._entries)

    @property
    def num_launches(self) -> int:
        """How many launches :meth:`launch` issues (identity entries issue none)."""
        return len(self._order)

    def __repr__(self) -> str:
        parts = [f"{e.name}:{e.kind}{'' if e.run else '(identity)'}" for e in self._entries.values()]
        return f"ReorderPlan(device={self._device}, entries=[{', '.join(parts)}])"

    # -- internals --------------------------------------------------------------------------------------------
    def _check_name(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        if name in self._entries:
            raise ValueError(f"the plan already has an entry named {name!r}")

    def _warp(self, x: Any, arg: str) -> wp.array:
        from transfer.kernels import checks as k

        a = k.as_warp(x, arg)
        if self._device is None:
            self._device = a.device
        elif a.device != self._device:
            raise ValueError(f"{arg}: on device {a.device}, but the plan is on {self._device}")
        return a

    def _record(self, src: wp.array, nmap: ArticulationNameMap | None, attr: str, dst: wp.array) -> Callable[[], None]:
        import warp as wp

        from transfer.kernels import checks as k
        from transfer.kernels.reorder import launch_reorder

        if nmap is None:

            def copy() -> None:
                wp.copy(dst, src)

            return copy
        index_map = k.device_map(nmap, attr, src.device)  # type: ignore[arg-type]
        return launch_reorder(src, index_map, dst, record_cmd=True).launch

    def _add(self, entry: _Entry) -> None:
        self._entries[entry.name] = entry
        if entry.run is None:
            return
        self._order.append(entry.run)
        (self._gathers if entry.kind == "gather" else self._scatters).append(entry.run)


def capture(fn: Callable[[], None], device: Any = None, *, enabled: bool = True) -> Callable[[], None]:
    """Return a callable that runs ``fn``: on a CUDA device (and ``enabled``), a CUDA graph recorded once from ``fn``.

    The graph is recorded with ``wp.ScopedCapture`` (``fn`` runs once while recording; its launches do not execute
    then) and replayed with ``wp.capture_launch``; ``fn`` must be capturable: no host synchronization
    (``.numpy()``, ``wp.synchronize``), fixed array pointers. On the CPU, or with ``enabled=False``, the callable
    is ``fn`` itself. Either way it carries the graph (or ``None``) as its ``graph`` attribute.
    """
    import warp as wp

    dev = wp.get_device(device)
    if not (enabled and dev.is_cuda):

        def direct() -> None:
            fn()

        direct.graph = None  # type: ignore[attr-defined]
        return direct
    with wp.ScopedCapture(device=dev) as recorded:
        fn()
    graph = recorded.graph

    def replay() -> None:
        wp.capture_launch(graph)

    replay.graph = graph  # type: ignore[attr-defined]
    return replay
