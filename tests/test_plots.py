"""The figures a user reads (issue 48), drawn from made-up results in a second, no engine run: the replay plot's title
names the robot and its engines and its warm-up label stands where no line crosses it; the diagnose plot's x axis
covers only what is drawn and every dot is labelled with the value tried; and the measurements behind the replay plot
average nothing without numpy's "Mean of empty slice" warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from transfer.env import Measure
from transfer.runs.diagnose import Diagnosis, Tried, _rank
from transfer.runs.diagnose import _plot_figure as diagnose_figure
from transfer.runs.diagnose import plot as diagnose_plot
from transfer.runs.replay import ReplayResult
from transfer.runs.replay import plot as replay_plot
from transfer.runs.replay_plot import _plot_figure as replay_figure

pytest.importorskip("matplotlib")


def _run(label: str, target: str, forward: list[float], asset: str = "/x/transfer/data/quadruped.xml") -> ReplayResult:
    time = [0.02 * (i + 1) for i in range(len(forward))]
    return ReplayResult(
        label=label,
        target=target,
        source="physx",
        reordered=not label.startswith("naive"),
        order="physx",
        num_envs=2,
        seconds=time[-1],
        command=(0.5, 0.0, 0.0),
        forward_velocity=0.49,
        lateral_velocity=0.0,
        yaw_rate=0.0,
        fall_fraction=0.0,
        survival_seconds=time[-1],
        fall_causes={},
        env_steps_per_second=1.0,
        nonfinite_envs=0,
        checkpoint="checkpoints/quadruped_flat_physx/exported/policy.pt",
        asset=asset,
        trace={"time": time, "forward": forward, "height": [0.5] * len(forward)},
    )


def _compare() -> list[ReplayResult]:
    walk = [0.5 + 0.05 * np.sin(i) for i in range(200)]
    fall = [0.3 - 0.04 * i for i in range(28)] + [float("nan")] * 172  # down through the warm-up, then gone
    return [
        _run("native (physx)", "physx", walk),
        _run("reordered (newton)", "newton", walk),
        _run("naive (newton)", "newton", fall),
    ]


def _warm_up_label(fig):
    found = [t for ax in fig.axes for t in ax.texts if t.get_gid() == "warm-up"]
    assert len(found) == 1, [t.get_text() for ax in fig.axes for t in ax.texts]
    return found[0]


def test_the_replay_title_names_the_robot_and_its_engines():
    from transfer.traces.figures import pyplot

    fig = replay_figure(_compare())
    title = fig._suptitle.get_text()
    pyplot().close(fig)
    assert title.splitlines()[0] == "quadruped: trained on physx, replayed on newton", title
    assert "policy.pt" in title
    single = replay_figure([_run("reordered on mujoco", "mujoco", [0.5] * 60, asset="robot.usda")])
    title = single._suptitle.get_text()
    pyplot().close(single)
    assert title.startswith("robot: trained in the physx order, replayed on mujoco"), title  # no native run: its order


def test_no_line_crosses_the_replay_warm_up_label():
    """The naive run fell through the label at the bottom of the warm-up span; it now stands above the data area,
    over the span it names."""
    from transfer.traces.figures import pyplot

    fig = replay_figure(_compare())
    fig.canvas.draw()
    label = _warm_up_label(fig)
    box = label.get_window_extent()
    ax = label.axes
    assert not box.overlaps(ax.get_window_extent()) and box.y0 >= ax.get_window_extent().y1 - 1  # above the data
    for line in ax.lines:
        points = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
        points = points[np.isfinite(points).all(axis=1)]
        inside = (
            (points[:, 0] >= box.x0) & (points[:, 0] <= box.x1) & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1)
        )
        assert not inside.any(), line.get_label()
    start = ax.transData.transform([(0.0, 0.0)])[0, 0]
    assert abs(box.x0 - start) <= 2 and box.x1 <= ax.get_window_extent().x1  # from the warm-up span's start on
    pyplot().close(fig)


def test_the_replay_plot_writes_a_png(tmp_path):
    out = replay_plot(_compare(), tmp_path / "replay.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _tried(closes: dict[str, list[tuple[str, float]]]) -> list[Tried]:
    return [Tried(f, label, [], 0.3, 0.0, 0.5, c) for f, values in closes.items() for label, c in values]


def _diagnosis(tried: list[Tried]) -> Diagnosis:
    return Diagnosis(
        "policy.pt", {"label": "native (physx)"}, {"label": "target (physx)"}, 0.6, None, None, tried, _rank(tried)
    )


def _dots(ax) -> list[float]:
    return [float(x) for c in ax.collections for x in c.get_offsets()[:, 0]]


@pytest.mark.parametrize("widest", [0.0, -0.4, -3.0])
def test_the_diagnose_axis_covers_only_what_is_drawn(widest):
    """An empty negative half when every value closed some of the gap; down to the lowest value where one widened
    it (values below -1 drawn at -1)."""
    from transfer.traces.figures import pyplot

    tried = _tried(
        {
            "actuators": [("as the native run", 0.9), ("gains x2", 0.1)],
            "ground": [("friction 0.5", widest), ("friction 1.5", 0.05)],
        }
    )
    fig = diagnose_figure(_diagnosis(tried))
    ax = fig.axes[0]
    left, right = ax.get_xlim()
    drawn = _dots(ax)
    assert min(drawn) == max(widest, -1.0)
    assert min(drawn) - 0.1 * (1 - min(drawn)) <= left <= min(drawn)
    assert 1.0 <= right <= 1.1
    pyplot().close(fig)


def test_every_diagnose_dot_is_labelled_with_its_value_and_no_labels_overlap():
    from transfer.traces.figures import pyplot

    tried = _tried(
        {
            "actuators": [
                ("as the native run", 0.02),
                ("gains x0.5", 0.0),
                ("gains x2", 0.01),
                ("ideal PD every physics step", 0.03),
            ],
            "armature": [("0 on every joint", 0.4), ("0.01 on every joint", 0.41)],
        }
    )
    tried += [Tried(f, "failed", [], None, None, 0.0, 0.0, error="it broke") for f in ("armature", "solver")]  # no dot
    fig = diagnose_figure(_diagnosis(tried))
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_gid() == "value-label"]
    assert sorted(t.get_text() for t in labels) == sorted(f"{t.label} ({t.closes:+.0%})" for t in tried if not t.error)
    assert len(_dots(ax)) == len(labels)
    boxes = [t.get_window_extent() for t in labels]
    for i, a in enumerate(boxes):
        assert all(not a.overlaps(b) for b in boxes[i + 1 :]), labels[i].get_text()
        assert ax.get_window_extent().contains(a.x0, a.y0) and ax.get_window_extent().contains(a.x1, a.y1)
    assert "grey dot: one value tried" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["armature", "actuators", "solver"]  # best first
    pyplot().close(fig)


def test_the_diagnose_plot_writes_a_png(tmp_path):
    out = diagnose_plot(_diagnosis(_tried({"timing": [("2.5 ms x 8", 0.2)]})), tmp_path / "d.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_measuring_nothing_raises_no_warning():
    """Every env fallen (or every height not finite): the step's means are nan, without numpy's "Mean of empty slice"
    warning; the run's means are nan too."""
    measure = Measure(2, np.array([1.0, 0.0]))
    nan = np.full((2, 3), np.nan)
    upright = np.tile([0.0, 0.0, 0.0, 1.0], (2, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        measure.record(0.5, (nan, upright, nan, nan, None), {"nonfinite": np.array([True, True])})
        measure.record(1.5, (nan, upright, nan, nan, None), {"nonfinite": np.array([False, False])})
        means = [measure.mean(k) for k in ("forward", "lateral", "yaw_rate")]
    assert np.isnan(measure.trace["forward"]).all() and np.isnan(measure.trace["height"]).all()
    assert np.isnan(means).all() and measure.causes() == {"nonfinite": 2}
    standing = Measure(2, np.array([1.0, 0.0]))
    position = np.array([[0.0, 0.0, 0.5], [0.0, 0.0, np.nan]])  # one height to average: the mean is that one
    velocity = np.array([[0.4, 0.0, 0.0], [0.2, 0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        standing.record(1.5, (position, upright, velocity, np.zeros((2, 3)), None), {})
    assert standing.trace["height"] == [0.5] and standing.trace["forward"] == [pytest.approx(0.3)]
    assert standing.mean("forward") == pytest.approx(0.3)
