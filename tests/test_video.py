"""``replay --video`` (issue 44): the runs of a replay side by side in one MP4, each drawn by MuJoCo's renderer on
the robot's own file from what the run recorded, whatever engine ran it; bad destinations refused before any run,
nothing overwritten, no half file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from transfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"


def _can_render() -> str | None:
    """Why this machine cannot render headless (no OpenGL library for MuJoCo), else ``None``."""
    pytest.importorskip("mujoco")
    pytest.importorskip("av")
    from transfer.backends import render_frames
    from transfer.robot.assets import locate_asset

    try:
        next(render_frames(locate_asset("transfer:quadruped.xml"), [], np.zeros((1, 7)), np.zeros((1, 0)), 64, 48))
    except Exception as exc:  # noqa: BLE001 - the reason is the skip's
        return str(exc)
    return None


@pytest.fixture(scope="module")
def compared_video(tmp_path_factory):
    reason = _can_render()
    if reason is not None:
        pytest.skip(f"no headless OpenGL here ({reason}); CI installs libosmesa6")
    out = tmp_path_factory.mktemp("video") / "compare.mp4"
    args = ["replay", str(DEMO), "--target", "mujoco", "--asset", "transfer:quadruped.xml", "--compare"]
    assert main([*args, "--num-envs", "2", "--seconds", "3", "--video", str(out)]) == 0
    return out


def _frames(path: Path) -> tuple[list[np.ndarray], float]:
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        rate = float(stream.average_rate)
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)], rate


def test_a_compared_replay_is_three_runs_side_by_side_for_the_whole_run(compared_video):
    frames, rate = _frames(compared_video)
    assert rate >= 20 and len(frames) == 3 * 30 + 1  # 30 frames a second of simulated time, 3 s
    height, width, _ = frames[0].shape
    assert (width, height) == (3 * 480, 360)
    thirds = [frames[-1][:, i * 480 : (i + 1) * 480] for i in range(3)]
    for picture in thirds:  # each run drawn: the robot (grey) and the floor, not a blank picture
        assert picture.std() > 20
    moved = np.abs(frames[-1].astype(int) - frames[45].astype(int)).mean(axis=(0, 2))
    assert all(moved[i * 480 : (i + 1) * 480].mean() > 1.0 for i in range(3))  # every run moves
    assert oct(compared_video.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # the user's umask, not 0600


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (lambda p: p, "is a folder; give the video's file path"),
        (lambda p: (p / "old.mp4").write_bytes(b"mine") and p / "old.mp4", "exists; it is never overwritten"),
        (lambda p: p / "clip.avi", "give a video name ending in .mp4"),
        (lambda p: p / "missing" / "v.mp4", "does not exist"),
    ],
    ids=["folder", "existing", "suffix", "no-folder"],
)
def test_a_video_that_cannot_be_written_is_refused_before_any_run(where, message, tmp_path, capsys):
    pytest.importorskip("av")
    target = where(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    args = ["replay", str(DEMO), "--target", "mujoco", "--asset", "transfer:quadruped.xml", "--video", str(target)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "policy steps" not in err, err  # before any run
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    if (tmp_path / "old.mp4").exists():
        assert (tmp_path / "old.mp4").read_bytes() == b"mine"


def test_a_trackers_reference_is_drawn_beside_it_see_through(tmp_path, capsys):
    """A motion tracker's video shows its reference as a see-through blue copy of the robot (the recorded reference
    root pose and joints: ``reference_base``, ``reference``), where a velocity policy's has none."""
    reason = _can_render()
    if reason is not None:
        pytest.skip(f"no headless OpenGL here ({reason}); CI installs libosmesa6")
    from tests.test_motion import _tracker

    policy, config, clip, _ = _tracker(tmp_path)
    out = tmp_path / "track.mp4"
    args = ["replay", str(policy), "--config", str(config), "--source", "mujoco", "--target", "mujoco"]
    assert main([*args, "--motion", str(clip), "--motion-fps", "30", "--seconds", "1", "--video", str(out)]) == 0
    frames, _ = _frames(out)

    def blue(frame: np.ndarray) -> int:
        r, g, b = (frame[..., i].astype(int) for i in range(3))
        return int(((b > r + 60) & (b > g + 20)).sum())  # the ghost's colour; the sky is paler, the robot grey

    assert blue(frames[5]) > 300
    plain = tmp_path / "plain.mp4"
    demo = ["replay", str(DEMO), "--target", "mujoco", "--asset", "transfer:quadruped.xml", "--seconds", "1"]
    assert main([*demo, "--video", str(plain)]) == 0
    assert blue(_frames(plain)[0][5]) < 50


def test_a_sweep_and_a_diagnosis_write_a_video_per_cell_and_candidate(tmp_path, capsys):
    """``video: true`` in a sweep spec: every cell's video under OUT/videos, named by its key; ``diagnose
    --video-dir``: the native and target runs side by side and one video per candidate value, into a new or empty
    folder (one holding files is refused before any run)."""
    reason = _can_render()
    if reason is not None:
        pytest.skip(f"no headless OpenGL here ({reason}); CI installs libosmesa6")
    import yaml

    from transfer.runs.sweep import sweep

    spec = {
        "checkpoints": [{"path": str(DEMO), "asset": "transfer:quadruped.xml"}],  # located as --asset locates it
        "targets": ["mujoco"],
        "seconds": 1.5,
        "video": True,
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    summary = sweep(tmp_path / "spec.yaml", tmp_path / "out", in_process=True, progress=False)
    videos = sorted((tmp_path / "out" / "videos").glob("*.mp4"))
    assert summary["ran"] == len(videos) >= 1 and summary["files"]["videos"] == str(tmp_path / "out" / "videos")
    assert len(_frames(videos[0])[0]) == 46  # 1.5 s at 30 frames a second
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("mine")
    args = ["diagnose", str(DEMO), "--target", "mujoco", "--asset", "transfer:quadruped.xml", "--seconds", "1.5"]
    assert main([*args, "--factor", "actuators", "--video-dir", str(full)]) == 2
    assert "holds files already; give a new or empty folder" in capsys.readouterr().err
    assert sorted(p.name for p in full.iterdir()) == ["mine.txt"]
    wrong = ["--set", 'stiffness={".*": 5}', "--num-envs", "1", "--factor", "actuators"]
    assert main([*args, *wrong, "--video-dir", str(tmp_path / "dv")]) == 0
    made = sorted(p.name for p in (tmp_path / "dv").iterdir())
    assert "native-and-target.mp4" in made and sum(n.endswith("-actuators.mp4") for n in made) >= 2
