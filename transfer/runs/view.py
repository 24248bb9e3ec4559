"""``transfer view TRACE.parquet [...]``: a web page (viser) that plays recorded runs side by side with a time slider,
each robot drawn from its own file (the MJCF, or the MJCF exported of a USD robot: the meshes and primitives MuJoCo
sees) and posed from what its trace recorded (its first env's base pose and joint positions by name).

Traces of one robot only (:func:`transfer.traces.compare.check_same_robot`); the page is served on ``127.0.0.1``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transfer.backends import robot_poses, robot_shapes
from transfer.traces import read_trace
from transfer.traces.compare import check_same_robot
from transfer.traces.record import Recorder

__all__ = ["SPACING", "ViewError", "Viewed", "serve"]

SPACING = 1.5
"""Metres between the runs, side by side along y."""


class ViewError(ValueError):
    """Traces that cannot be shown together, or a port that cannot be served: the message names it."""


class Viewed:
    """The served page: its address, its runs' poses by time, and the slider that picks the time."""

    def __init__(self, server: Any, times: np.ndarray, frames: list[dict[str, Any]], poses: list[dict[str, Any]]):
        self.server, self.times, self._frames, self._poses = server, times, frames, poses
        self.slider = server.gui.add_slider("time (s)", 0.0, float(times[-1]), float(np.diff(times[:2])[0]), 0.0)
        self.playing = server.gui.add_checkbox("play", True)
        self.slider.on_update(lambda _: self.show(self.slider.value))
        self.show(0.0)

    @property
    def url(self) -> str:
        return f"http://{self.server.get_host()}:{self.server.get_port()}"

    def show(self, t: float) -> None:
        """Every run at time ``t`` (s): the recorded step at or after it."""
        k = min(int(np.searchsorted(self.times, t - 1e-9)), len(self.times) - 1)
        for frames, poses in zip(self._frames, self._poses, strict=True):
            for body, handle in frames.items():
                pose = poses[body][min(k, len(poses[body]) - 1)]
                handle.position, handle.wxyz = pose[:3], pose[3:]

    def play(self, seconds: float | None = None) -> None:
        """Advance the slider in real time while ``play`` is ticked, for ``seconds`` (``None``: until Ctrl-C)."""
        end = None if seconds is None else time.monotonic() + seconds
        dt = float(np.diff(self.times[:2])[0])
        while end is None or time.monotonic() < end:
            if self.playing.value:
                t = self.slider.value + dt
                self.slider.value = t if t <= self.times[-1] else 0.0
            time.sleep(dt)

    def stop(self) -> None:
        self.server.stop()


def _run(path: Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """``(metadata, times, base (T, 7), joint positions (T, J), joint names)`` of a trace's first env."""
    table, meta = read_trace(path)
    env = np.asarray(table.column("env"))
    rows = env == env.min()
    names = list(meta["joint_names"])
    column = lambda name: np.asarray(table.column(name))[rows]  # noqa: E731
    base = np.column_stack([column(f"base.{c}") for c in Recorder.BASE[:7]])
    q = np.column_stack([column(f"position.{n}") for n in names])
    return meta, column("time"), base, q, names


def serve(traces: Sequence[str | Path], port: int = 8080, host: str = "127.0.0.1") -> Viewed:
    """Serve the page of ``traces`` (module docstring) and return it (:meth:`Viewed.play` keeps it playing)."""
    runs = [_run(Path(p)) for p in traces]
    for path, run in zip(traces[1:], runs[1:], strict=True):
        check_same_robot(traces[0], path, runs[0][0], run[0])
    asset = runs[0][0].get("asset")
    if not asset or not Path(str(asset)).exists():
        raise ViewError(f"{traces[0]}: its robot file {asset!r} is not here; view it where it was recorded")
    shapes = robot_shapes(asset)
    server = _server(host, port)
    server.scene.add_grid("/ground", width=20.0, height=20.0, cell_size=0.5)
    frames, poses = [], []
    for i, (meta, _, base, q, names) in enumerate(runs):
        offset = np.array([0.0, i * SPACING, 0.0])
        found = robot_poses(asset, names, base, q)
        for body in found:
            found[body][:, :3] += offset
        poses.append(found)
        handles = {body: server.scene.add_frame(f"/run{i}/{body}", show_axes=False) for body in found}
        for j, s in enumerate(shapes):
            server.scene.add_mesh_simple(
                f"/run{i}/{s.body}/geom{j}", s.vertices, s.faces, color=s.color, position=s.position, wxyz=s.wxyz
            )
        frames.append(handles)
        root = next(iter(found))  # the robot's root body: the label rides above it
        label = str(meta.get("label") or Path(traces[i]).stem)
        server.scene.add_label(f"/run{i}/{root}/label", label, position=(0.0, 0.0, 0.5), anchor="bottom-center")
    times = runs[int(np.argmax([len(r[1]) for r in runs]))][1]
    server.initial_camera.position = (float(base[0, 0]) - 2.5, -2.0, 1.5)
    server.initial_camera.look_at = (float(base[0, 0]), (len(runs) - 1) * SPACING / 2, 0.3)
    return Viewed(server, times, frames, poses)


def _server(host: str, port: int) -> Any:
    import socket

    try:
        import viser
    except ImportError:
        raise ViewError("transfer view needs viser: pip install 'transfer[view]'") from None
    with socket.socket() as probe:  # viser would move to another port silently: a port in use is said
        try:
            probe.bind((host, port))
        except OSError:
            raise ViewError(f"--port {port}: in use on {host}; give another port (--port N)") from None
    return viser.ViserServer(host=host, port=port, verbose=False)
