"""``transfer replay --video FILE.mp4``: the runs of a replay side by side in one video (with ``--compare``: native,
reordered and naive), each labelled with its engine, its order and its speed and time as it goes.

Every run is drawn by one renderer (:func:`transfer.backends.render_frames`: MuJoCo's, on the robot's own file) from
what the run recorded (its first env's base pose and joint positions by name), whatever engine ran it: PhysX, Newton
and MuJoCo runs look alike but for how they moved. A motion tracker's reference is drawn beside it, see-through. Frames are taken at ``fps`` of simulated time (the recorded
policy step at or after each frame's time); PyAV encodes them (H.264 where the encoder has it, else MPEG-4). The
file appears whole or not at all, and an existing file is never replaced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from transfer.backends import render_frames
from transfer.formats.checkpoint import atomic_write

if TYPE_CHECKING:
    from transfer.runs.replay import ReplayResult

__all__ = ["FPS", "HEIGHT", "WIDTH", "VideoError", "check_video_destination", "write_video"]

FPS = 30
"""Frames a second of simulated time."""
WIDTH, HEIGHT = 480, 360
"""Each run's picture (pixels); runs stand side by side."""


class VideoError(ValueError):
    """A video that cannot be written: the message names the file or the package to install."""


def check_video_destination(path: str | Path) -> Path:
    """Refuse, before any run, a destination the video cannot go to or must not replace: a folder, an existing file
    (never overwritten), a name not ending in ``.mp4``, a folder that does not exist or cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise VideoError(f"--video {path}: is a folder; give a file name such as {path / 'replay.mp4'}")
    if path.exists() or path.is_symlink():
        raise VideoError(f"--video {path}: exists; it is never overwritten: remove it or give another file name")
    if path.suffix.lower() != ".mp4":
        raise VideoError(f"--video {path}: a video is an MP4 file; give a name ending in .mp4")
    folder = path.parent
    if not folder.is_dir():
        raise VideoError(f"--video {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise VideoError(f"--video {path}: the folder {folder} cannot be written")
    _av()
    return path


def _av() -> Any:
    try:
        import av
    except ImportError:
        raise VideoError("--video needs PyAV to encode: pip install 'transfer[video]'") from None
    return av


def write_video(
    results: Sequence[ReplayResult], path: str | Path, fps: int = FPS, width: int = WIDTH, height: int = HEIGHT
) -> Path:
    """The runs ``results`` side by side at ``path`` (module docstring); each needs its recording."""
    path = check_video_destination(path)
    runs = [r for r in results if r.recording is not None and len(r.recording.time)]
    if not runs:
        raise VideoError(f"--video {path}: no run recorded a step to draw")
    seconds = max(float(r.recording.time[-1]) for r in runs)
    times = np.arange(int(seconds * fps) + 1) / fps
    pictures, labels = [], []
    for r in runs:
        rec = r.recording
        step = np.minimum(np.searchsorted(rec.time, times - 1e-9), len(rec.time) - 1)
        base = rec.arrays["base"][:, 0]
        pictures.append(
            render_frames(
                r.asset,
                rec.joint_names,
                base[step, :7],
                rec.arrays["position"][step, 0],
                width,
                height,
                ghost=_ghost(rec.arrays, step),
            )
        )
        speed = np.linalg.norm(base[step, 7:9], axis=1)
        alive = rec.arrays["alive"][step, 0]
        labels.append((f"{r.label}: {r.order} order", speed, alive))
    return _encode(path, pictures, labels, times, fps)


def _ghost(arrays: dict[str, np.ndarray], step: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A tracker's reference at the frames' steps (its root pose, its joints), drawn see-through; else ``None``."""
    if "reference_base" not in arrays:
        return None
    return arrays["reference_base"][step, 0], arrays["reference"][step, 0]


def _encode(path: Path, pictures: list[Any], labels: list[Any], times: np.ndarray, fps: int) -> Path:
    """Encode the frames of every run side by side into ``path``, written whole or not at all (with the permissions
    the user's umask gives a new file)."""
    av = _av()

    def write(scratch: Path) -> None:
        with av.open(str(scratch), "w", format="mp4") as container:
            stream = None
            for k, t in enumerate(times):
                tiles = [
                    _labelled(next(frames), title, speed[k], alive[k], t)
                    for frames, (title, speed, alive) in zip(pictures, labels, strict=True)
                ]
                image = np.ascontiguousarray(np.concatenate(tiles, axis=1))
                if stream is None:
                    stream = _stream(av, container, fps, image.shape[1], image.shape[0])
                for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)

    return atomic_write(path, write, replace=False)


def _stream(av: Any, container: Any, fps: int, width: int, height: int) -> Any:
    for codec in ("libx264", "h264", "mpeg4"):  # the first this build of FFmpeg encodes
        try:
            stream = container.add_stream(codec, rate=fps)
        except (ValueError, av.error.FFmpegError):
            continue
        stream.width, stream.height, stream.pix_fmt = width - width % 2, height - height % 2, "yuv420p"
        return stream
    raise VideoError("PyAV's FFmpeg has no H.264 or MPEG-4 encoder; reinstall it: pip install --force-reinstall av")


def _labelled(image: np.ndarray, title: str, speed: float, alive: bool, t: float) -> np.ndarray:
    """``image`` with the run's name and order, its speed and the time written over its top left corner."""
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture, "RGBA")
    font = ImageFont.load_default(size=15)
    state = f"{speed:.2f} m/s   t {t:4.1f} s" if alive else f"fell   t {t:4.1f} s"
    draw.rectangle((0, 0, picture.width, 46), fill=(0, 0, 0, 150))
    draw.text((8, 5), title, fill=(255, 255, 255), font=font)
    draw.text((8, 25), state, fill=(255, 220, 120) if alive else (255, 120, 120), font=font)
    return np.asarray(picture)
