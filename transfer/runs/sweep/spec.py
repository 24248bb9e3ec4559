"""The sweep's spec: read, checked in full before any cell runs, and expanded into cells.

A spec (a YAML file or a dict, docs/sweep.md) names checkpoints, targets, seeds, the run's size, commands and
perturbations; :func:`load_spec` checks every field (each error names the field and what to give), resolves every
checkpoint's inputs (policy, task, asset, joint order, training engine) and returns a :class:`Plan`: the grid's
cells, the product of all lists, plus one native reference cell per checkpoint, seed and command (the checkpoint on
its training engine, undisturbed) that ratios are read against. A cell is plain JSON-able data (:func:`cell_key`
names it by all its parameters); :func:`transfer.runs.sweep.cell.run_cell` runs one.
"""

from __future__ import annotations

import glob
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transfer._console import engine_output, printable
from transfer._files import same_file
from transfer.backends import backend_names, default_targets
from transfer.env.measure import Measure
from transfer.env.perturbations import PERTURBATIONS, Perturbation
from transfer.errors import read_yaml_mapping
from transfer.ordering import convention_list
from transfer.robot import Robot
from transfer.runs.inputs import Inputs, ReplayError, aliases_in, native_backend, resolve_inputs
from transfer.runs.replay import check_sizes_before_run, read_clip
from transfer.runs.sweep.grid import KEY_FIELDS, canonical_cell, cell_key, expand, not_grown_from
from transfer.task import Task

__all__ = [
    "CHECKPOINT_KEYS",
    "KEY_FIELDS",
    "SPEC_KEYS",
    "Checkpoint",
    "Plan",
    "SpecError",
    "canonical_cell",
    "cell_key",
    "expand",
    "load_spec",
    "not_grown_from",
]

SPEC_KEYS = (
    "checkpoints",
    "targets",
    "seeds",
    "num_envs",
    "seconds",
    "commands",
    "perturbations",
    "device",
    "record",
    "video",
)
CHECKPOINT_KEYS = ("path", "source", "config", "asset", "settings", "name", "motion", "motion_fps", "motion_anchor")
MAX_ENVS, MAX_SECONDS, MAX_SEED, MAX_VELOCITY, MAX_CELLS = 65_536, 86_400.0, 2**32 - 1, 100.0, 100_000


class SpecError(ValueError):
    """A spec field that cannot be right, found before any cell ran; the message names the field."""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of the spec, resolved: its label, its inputs as the cell takes them, its training engine."""

    label: str
    path: str
    source: str | list[str] | None
    config: str | None
    asset: str | None
    settings: dict[str, Any]
    native: str
    """The backend it was trained on: its native reference cells run there."""
    command: tuple[float, float, float]
    """The task's velocity command (used when the spec gives no ``commands``)."""
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)
    """The inputs as resolved here, once (:meth:`transfer.runs.inputs.Inputs.to_dict`): every cell of the
    checkpoint carries them and loads only the policy file again."""
    motion: dict[str, Any] | None = None
    """A motion-tracking policy's clip: ``motion`` (the file), ``motion_fps``, ``motion_anchor``, as the replay
    takes them; ``None`` for a policy that tracks none."""


@dataclass
class Plan:
    """A checked spec: its checkpoints and the cells to run (the grid, then the native references it lacks)."""

    spec: dict[str, Any]
    """The spec as checked, with absolute paths and every default filled in (written to ``OUT/spec.json``)."""
    checkpoints: list[Checkpoint]
    cells: list[dict[str, Any]] = field(default_factory=list)
    references: int = 0
    """How many of :attr:`cells` are native references added to the grid (the grid did not hold them)."""


def _where(source: str | None, field_name: str) -> str:
    return f"{source}: {field_name}" if source else field_name


def _number(value: Any, where: str, *, low: float, high: float, integer: bool = False, above: bool = False) -> Any:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if ok and integer:
        ok = float(value).is_integer()
    if ok:
        ok = (value > low if above else value >= low) and value <= high
    if not ok:
        kind = "an integer" if integer else "a number"
        raise SpecError(f"{where}: expected {kind} {'>' if above else '>='} {low:g} and <= {high:g}, got {value!r}")
    return int(value) if integer else float(value)


def _seconds(value: Any, where: str) -> float:
    """A run's length: over the warm-up before velocities count (``seconds: 0.01`` ran every cell and measured
    nothing), at most :data:`MAX_SECONDS`."""
    try:
        return _number(value, where, low=Measure.warmup, high=MAX_SECONDS, above=True)
    except SpecError as exc:
        raise SpecError(
            f"{exc} (velocities count after the {Measure.warmup:g} s warm-up: a shorter run measures nothing)"
        ) from None


def _list(value: Any, where: str, *, scalars: bool = True) -> list[Any]:
    """A YAML list (a lone scalar counts as a list of one when ``scalars``); never empty."""
    if scalars and not isinstance(value, (list, tuple, dict)):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise SpecError(f"{where}: expected a non-empty list, got {value!r}")
    return list(value)


def _path(value: Any, base: Path, where: str, what: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: expected a path ({what}), got {value!r}")
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.exists():
        raise SpecError(f"{where}: {value}: file not found (relative paths start at {base}); give {what}")
    return path.resolve()


def _asset(value: Any, base: Path, where: str) -> str:
    """A robot file as ``--asset`` takes it: a path (relative to the spec's folder), or ``<package>:<name>``
    (``transfer:quadruped.xml``, ``newton:ant``), left to the input layer to locate (its error names the entry)."""
    if isinstance(value, str) and ":" in value and not (base / value).exists() and not Path(value).is_absolute():
        return value
    return str(_path(value, base, where, "the robot's USD, MJCF or URDF file"))


def _expand_paths(value: Any, base: Path, where: str) -> list[Path]:
    """A checkpoint path, glob or run folder as absolute paths (a glob: its sorted matches)."""
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: expected a checkpoint file, glob or Isaac Lab run folder, got {value!r}")
    if not glob.has_magic(value):
        return [_path(value, base, where, "a checkpoint file or an Isaac Lab run folder")]
    pattern = value if Path(value).expanduser().is_absolute() else str(base / value)
    if "**" in pattern:
        walked = Path(pattern.split("**", 1)[0] or ".").expanduser().resolve()
        if walked in (Path("/"), Path.home()) or len(walked.parts) < 3:
            raise SpecError(
                f"{where}: {value}: a '**' pattern from {walked} walks the whole file system; start it in "
                "the folder that holds the checkpoints"
            )
    matches = sorted(Path(p).resolve() for p in glob.glob(str(Path(pattern).expanduser()), recursive=True))
    if not matches:
        raise SpecError(f"{where}: {value}: the pattern matches no file (relative paths start at {base})")
    return matches


def load_spec(spec: str | Path | Mapping[str, Any]) -> Plan:
    """Read and check ``spec`` (a YAML file or a mapping) in full and expand it into a :class:`Plan`.

    Relative paths in a spec file start at the file's folder; in a mapping, at the current folder. Every checkpoint
    is resolved here (policy, task, asset, joint order, training engine), so a cell fails only for what only an
    engine can tell. Raises :class:`SpecError` naming the field and what to give.
    """
    data, source, base = _read(spec)
    unknown = sorted(set(map(str, data)) - set(SPEC_KEYS))
    if unknown:
        raise SpecError(f"{_where(source, ', '.join(unknown))}: unknown key(s); a spec has {', '.join(SPEC_KEYS)}")
    if "checkpoints" not in data:
        raise SpecError(f"{_where(source, 'checkpoints')}: missing; list the checkpoints (- path: POLICY.pt ...)")
    spec_out: dict[str, Any] = {
        "targets": _targets(data.get("targets", list(default_targets())), _where(source, "targets")),
        "seeds": _seeds(data.get("seeds", [0]), _where(source, "seeds")),
        "num_envs": _number(data.get("num_envs", 1), _where(source, "num_envs"), low=1, high=MAX_ENVS, integer=True),
        "seconds": _seconds(data.get("seconds", 10.0), _where(source, "seconds")),
        "commands": _commands(data.get("commands"), _where(source, "commands")),
        "perturbations": _perturbations(data.get("perturbations") or {}, _where(source, "perturbations")),
        "device": _device(data.get("device", "cpu"), _where(source, "device")),
        "record": _record(data.get("record", False), _where(source, "record")),
        "video": _video(data.get("video", False), _where(source, "video")),
    }
    per_checkpoint = _grid_size(spec_out)
    if per_checkpoint > MAX_CELLS:  # before any checkpoint is resolved or a cell built
        raise SpecError(
            f"{_where(source, 'the grid')}: {per_checkpoint} cells per checkpoint (targets x seeds x "
            f"commands x perturbation values), more than {MAX_CELLS}; split the spec"
        )
    checkpoints = _checkpoints(data["checkpoints"], base, source)
    _check_runs(spec_out, checkpoints, source)
    if per_checkpoint * len(checkpoints) > MAX_CELLS:
        raise SpecError(
            f"{_where(source, 'the grid')}: {per_checkpoint * len(checkpoints)} cells, more than "
            f"{MAX_CELLS}; split the spec"
        )
    spec_out["checkpoints"] = [
        {k: getattr(c, k) for k in ("path", "source", "config", "asset", "settings")}
        | {"name": c.label}
        | ({} if c.motion is None else c.motion)
        for c in checkpoints
    ]
    plan = Plan(spec_out, checkpoints)
    plan.cells, plan.references = expand(spec_out, checkpoints)
    if len(plan.cells) > MAX_CELLS:
        raise SpecError(f"{_where(source, 'the grid')}: {len(plan.cells)} cells, more than {MAX_CELLS}; split the spec")
    return plan


def _read(spec: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str | None, Path]:
    if isinstance(spec, Mapping):
        return dict(spec), None, Path.cwd()
    path = Path(spec)
    if not path.is_file():
        raise SpecError(f"{path}: spec file not found; give a YAML file (docs/sweep.md)")
    data = read_yaml_mapping(path, SpecError, "a mapping (checkpoints:, targets:, ...)")
    return data, str(path), path.resolve().parent


def _targets(value: Any, where: str) -> list[str]:
    targets = _list(value, where)
    for i, t in enumerate(targets):
        if t not in backend_names():
            raise SpecError(f"{where}[{i}]: {t!r} is not a backend; give one of {', '.join(backend_names())}")
    if len(set(targets)) != len(targets):
        raise SpecError(f"{where}: {targets} names a backend twice; list each once")
    return targets


def _seeds(value: Any, where: str) -> list[int]:
    seeds = [_number(s, f"{where}[{i}]", low=0, high=MAX_SEED, integer=True) for i, s in enumerate(_list(value, where))]
    if len(set(seeds)) != len(seeds):
        raise SpecError(f"{where}: {seeds} repeats a seed; list each once")
    return seeds


def _commands(value: Any, where: str) -> list[list[float]] | None:
    if value is None:
        return None
    out = []
    for i, command in enumerate(_list(value, where, scalars=False)):
        if not isinstance(command, (list, tuple)) or len(command) != 3:
            raise SpecError(f"{where}[{i}]: expected [vx, vy, wz] (m/s, m/s, rad/s), got {command!r}")
        out.append([_number(c, f"{where}[{i}]", low=-MAX_VELOCITY, high=MAX_VELOCITY) + 0.0 for c in command])
        if out[-1] in out[:-1]:
            raise SpecError(f"{where}[{i}]: {command} is listed twice; list each command once")
    return out


def _perturbations(value: Any, where: str) -> dict[str, list[Any]]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping from a perturbation to its values, got {value!r}")
    out: dict[str, list[Any]] = {}
    for name, values in value.items():
        if name not in PERTURBATIONS:
            known = "; ".join(f"{k} ({v})" for k, v in PERTURBATIONS.items())
            raise SpecError(f"{where}: unknown perturbation {name!r}; known: {known}")
        checked = []
        for i, v in enumerate(_list(values, f"{where}.{name}")):
            try:
                checked.append(getattr(Perturbation(**{name: v}), name) + 0)  # + 0: -0.0 is 0.0
            except ValueError as exc:
                raise SpecError(f"{where}.{name}[{i}]: {str(exc).split(': ', 1)[-1]}") from None
        if len(set(checked)) != len(checked):
            raise SpecError(f"{where}.{name}: {values} repeats a value; list each once")
        out[name] = checked
    return out


def _grid_size(spec: Mapping[str, Any]) -> int:
    """Cells per checkpoint: targets x seeds x commands x every perturbation's values (computed, not built)."""
    n = len(spec["targets"]) * len(spec["seeds"]) * len(spec["commands"] or [None])
    for values in spec["perturbations"].values():
        n *= len(values)
    return n


def _every_cell_writes(value: Any, where: str, what: str, package: str, why: str) -> bool:
    """``record`` / ``video``: whether every cell writes its ``what``; the ``package`` that writes it must be there."""
    if not isinstance(value, bool):
        raise SpecError(f"{where}: expected true or false (every cell writes its {what}), got {value!r}")
    if value:
        import importlib.util

        if importlib.util.find_spec(package) is None:
            raise SpecError(f"{where}: {why} (or drop {where.rsplit(': ', 1)[-1]})")
    return value


def _record(value: Any, where: str) -> bool:
    """Whether every cell writes its trace (``OUT/traces/<key>.parquet``)."""
    why = "traces are Parquet files and pyarrow is not installed: pip install 'transfer[traces]'"
    return _every_cell_writes(value, where, "trace", "pyarrow", why)


def _video(value: Any, where: str) -> bool:
    """Whether every cell writes its video (``OUT/videos/<key>.mp4``, docs/video.md)."""
    why = "videos are encoded by PyAV, which is not installed: pip install 'transfer[video]'"
    return _every_cell_writes(value, where, "video", "av", why)


def _device(value: Any, where: str) -> str:
    """``cpu`` or a ``cuda[:N]`` device this machine has (a cell on a missing GPU would wait for it forever)."""
    if not isinstance(value, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", value):
        raise SpecError(f"{where}: expected 'cpu' or 'cuda[:N]', got {value!r}")
    if value != "cpu":
        import warp as wp

        with engine_output():  # Warp's start-up lines ("CUDA driver not available") stay off the terminal
            count = wp.get_cuda_device_count()
        index = int(value.split(":")[1]) if ":" in value else 0
        if index >= count:
            have = "no CUDA device" if not count else f"{count} CUDA device(s) (cuda:0 to cuda:{count - 1})"
            raise SpecError(f"{where}: {value!r}, but this machine has {have}; use 'cpu'")
    return value


_FLAGS = (
    ("--source", "source"),
    ("--config", "config"),
    ("--asset", "asset"),
    ("--set", "settings"),
    ("--motion-fps", "motion_fps"),
    ("--motion-anchor", "motion_anchor"),
    ("--motion", "motion"),
)


def _spec_words(message: str) -> str:
    """An input error worded for the command line (``--config``), reworded for a spec entry (``config``)."""
    for flag, key in _FLAGS:
        message = message.replace(flag, key)
    return message


def _checkpoints(value: Any, base: Path, source: str | None) -> list[Checkpoint]:
    where = _where(source, "checkpoints")
    out: list[Checkpoint] = []
    for i, entry in enumerate(_list(value, where)):
        entry = {"path": entry} if isinstance(entry, str) else entry
        at = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise SpecError(f"{at}: expected a mapping (path, source, config, asset, settings), got {entry!r}")
        unknown = sorted(set(map(str, entry)) - set(CHECKPOINT_KEYS))
        if unknown:
            raise SpecError(f"{at}: unknown key(s) {unknown}; an entry has {', '.join(CHECKPOINT_KEYS)}")
        if "path" not in entry:
            raise SpecError(f"{at}.path: missing; give the checkpoint file, a glob or an Isaac Lab run folder")
        config = (
            None if entry.get("config") is None else str(_path(entry["config"], base, f"{at}.config", "a task file"))
        )
        asset = None if entry.get("asset") is None else _asset(entry["asset"], base, f"{at}.asset")
        order = entry.get("source")
        if isinstance(order, str) and Path(order).suffix in (".yaml", ".yml", ".txt"):
            order = str(_path(order, base, f"{at}.source", "a file listing joint names"))
        elif order is not None and not (isinstance(order, str) or _names(order)):
            raise SpecError(
                f"{at}.source: expected a convention ({convention_list()}), a list of joint names "
                f"or a file listing them, got {order!r}"
            )
        settings = entry.get("settings") or {}
        if not isinstance(settings, Mapping):
            raise SpecError(f"{at}.settings: expected a mapping of task fields by dotted name, got {settings!r}")
        paths = _expand_paths(entry["path"], base, f"{at}.path")
        name = entry.get("name")
        if name is not None and (not isinstance(name, str) or not name or len(paths) > 1):
            raise SpecError(f"{at}.name: expected one label for one checkpoint (not a glob), got {name!r}")
        if name is not None and not name.isprintable():  # an escape sequence would reach every table and progress line
            raise SpecError(
                f"{at}.name: '{printable(name)}' holds control characters (escape sequences, line breaks); "
                "give a label of printable characters"
            )
        motion = _motion(entry, base, at)
        for path in paths:
            twin = next(
                (
                    c
                    for c in out
                    if same_file(c.path, path)
                    and (c.source, c.config, c.asset, c.settings, c.motion)
                    == (order, config, asset, dict(settings), motion)
                ),
                None,
            )
            if twin is not None:
                raise SpecError(
                    f"{at}.path: {path} is listed already, with the same inputs ({twin.path}): it would run "
                    "twice and count double; list each checkpoint once"
                )
            checkpoint = _resolve(str(path), order, config, asset, dict(settings), name, at)
            out.append(_with_motion(checkpoint, motion, at))
    return _unique_labels(out)


def _motion(entry: Mapping[str, Any], base: Path, at: str) -> dict[str, Any] | None:
    """An entry's clip (``motion``, ``motion_fps``, ``motion_anchor``), its path made absolute; ``None`` without."""
    if entry.get("motion") is None:
        for key in ("motion_fps", "motion_anchor"):
            if entry.get(key) is not None:
                raise SpecError(f"{at}.{key}: without motion; give the clip it belongs to (motion: CLIP)")
        return None
    fps, anchor = entry.get("motion_fps"), entry.get("motion_anchor")
    if fps is not None:
        fps = _number(fps, f"{at}.motion_fps", low=0.0, high=10_000.0, above=True)
    if anchor is not None and (not isinstance(anchor, str) or not anchor.isprintable()):
        raise SpecError(f"{at}.motion_anchor: expected a body's name, got {anchor!r}")
    clip = str(_path(entry["motion"], base, f"{at}.motion", "a motion clip (.csv or .npz)"))
    return {"motion": clip, "motion_fps": fps, "motion_anchor": anchor}


def _with_motion(checkpoint: Checkpoint, motion: dict[str, Any] | None, at: str) -> Checkpoint:
    """The checkpoint with its clip, read once now as the replay reads it (a bad clip, a tracker without one or a
    clip for a policy that tracks none is refused here, not in every cell)."""
    import dataclasses

    inputs = Inputs.from_dict(checkpoint.inputs)
    try:
        read_clip(
            None if motion is None else motion["motion"], None if motion is None else motion["motion_fps"], inputs
        )
    except ValueError as exc:
        raise SpecError(f"{at} ({Path(checkpoint.path).name}): {_spec_words(str(exc))}") from None
    return dataclasses.replace(checkpoint, motion=motion)


def _names(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(n, str) and n for n in value)


def _resolve(path: str, order: Any, config: Any, asset: Any, settings: dict, name: Any, at: str) -> Checkpoint:
    """Resolve one checkpoint's inputs now (the replay's own resolution), so that a cell fails only on the engine."""
    import dataclasses

    try:
        inputs = resolve_inputs(path, source=order, config=config, asset=asset, aliases=aliases_in(settings))
    except (ReplayError, FileNotFoundError, ValueError, NotImplementedError) as exc:
        raise SpecError(f"{at} ({Path(path).name}): {_spec_words(str(exc))}") from None
    if settings:
        try:  # the message names the field itself, under {at}.settings
            inputs = dataclasses.replace(inputs, task=inputs.task.with_settings(settings, where=f"{at}.settings"))
        except ValueError as exc:
            raise SpecError(_spec_words(str(exc))) from None

    try:  # the task on the robot, as the replay checks it: a pattern that fits no joint fails here, not in every cell
        check_sizes_before_run(inputs)
    except (ReplayError, ValueError) as exc:
        raise SpecError(f"{at} ({Path(path).name}): {_spec_words(str(exc))}") from None
    try:
        native = native_backend(inputs)
    except (ReplayError, ValueError) as exc:
        raise SpecError(f"{at} ({Path(path).name}): {_spec_words(str(exc))}") from None
    command = tuple(float(c) for c in inputs.task.command)
    return Checkpoint(
        name or "",
        path,
        order,
        config,
        asset,
        settings,
        native,
        command,  # type: ignore[arg-type]
        inputs.to_dict(),
    )


def _check_runs(spec: Mapping[str, Any], checkpoints: list[Checkpoint], source: Any) -> None:
    """Each perturbation value against each checkpoint's run (``seconds`` of its policy steps) and robot, before any
    cell runs: a delay longer than the run, or more mass taken off than the base has, is refused here, not in every
    cell."""
    for c in checkpoints:
        task = Task.from_dict(c.inputs["task"])
        robot = Robot(Path(c.inputs["asset"]))  # read already (the read cache's stage)
        steps = max(1, round(spec["seconds"] / task.policy_dt))  # as the replay counts them
        for name, values in spec["perturbations"].items():
            for value in values:
                try:
                    PERTURBATIONS[name].check_run(value, task, steps)
                    PERTURBATIONS[name].check_robot(value, robot)
                except ValueError as exc:
                    raise SpecError(
                        f"{_where(source, 'perturbations')}.{name}: {exc} ({c.label or c.path}, "
                        f"seconds {spec['seconds']:g})"
                    ) from None


def _generic(part: str) -> bool:
    """A path part that does not tell checkpoints apart (``policy.pt``, ``model_499.pt``, ``exported``)."""
    return part == "exported" or bool(re.fullmatch(r"(policy|model(_\d+)?)\.(pt|onnx|jit)", part))


def _unique_labels(checkpoints: list[Checkpoint]) -> list[Checkpoint]:
    """Label each unnamed checkpoint by its file name, led by its folders while they are generic
    (``ant_flat_physx/exported/policy.pt``) or the labels not unique."""
    import dataclasses

    def label(path: str, extra: int) -> str:
        parts = Path(path).parts
        depth = 1
        while depth < len(parts) - 1 and _generic(parts[-depth]):
            depth += 1
        return printable("/".join(parts[-min(depth + extra, len(parts) - 1) :]))  # a file name's escapes shown, not run

    for extra in range(32):
        labels = [c.label or label(c.path, extra) for c in checkpoints]
        if len(set(labels)) == len(labels):
            break
    seen: set[str] = set()
    for c, text in zip(checkpoints, labels, strict=True):
        if text in seen:
            raise SpecError(
                f"checkpoints: two entries are labelled {text!r} (one is {c.path}): list each checkpoint once, and give "
                "distinct names"
            )
        seen.add(text)
    return [dataclasses.replace(c, label=text) for c, text in zip(checkpoints, labels, strict=True)]
