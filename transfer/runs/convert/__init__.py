"""``transfer.convert(...)``: bake a joint-order permutation into a checkpoint's weights, once.

A checkpoint trained in one joint order (``source``) is rewritten to read and write another (``to``), so that it
runs on a backend in that backend's own order with no reordering per step. The permutation comes by name: both
orders are resolved from the asset (:func:`transfer.resolve_ordering`) and matched with
:func:`transfer.build_name_map`; the task's observation layout (:meth:`transfer.Task.term_slices`) says which
entries of the observation are joint- (or body-) indexed. :class:`Reorder` holds the result: two index arrays.

What is permuted, per format (:func:`reorder_checkpoint`):

- the columns of the first layer that reads the observation, inside every joint- and body-indexed term;
- the observation normalizer's statistics (mean, std, var) the same way;
- the rows (and bias) of the layer that writes the action, and the action std;
- RSL-RL training checkpoints: the actor (or distillation student), the critic (and teacher) with their
  normalizers, and the optimizer's moments, so that training resumes as before.

Formats: TorchScript (the scripted module's parameters and buffers, edited in place, saved with
``torch.jit.save``), ONNX (initializers and constants of the first MatMul/Gemm reading the graph input and the
last writing its output, through elementwise normalizer and output ops), RSL-RL dicts. Where those layers cannot
be identified the conversion is refused, naming why, and runtime reordering (``transfer replay --source``) is the
way. Every conversion is checked before anything is written: on random observations the converted network's
actions equal the original's under the runtime permutation. The output carries the metadata document
(:mod:`transfer.checkpoint`) with the new order; the input is never written.

Layout: this module is the API (:func:`convert`, :func:`reorder_checkpoint`, :class:`ConvertResult`);
:mod:`~transfer.runs.convert.order` the permutation by name (:class:`Reorder`); each format's module
(:mod:`transfer.formats.torchscript`, :mod:`transfer.formats.onnx`, :mod:`transfer.formats.rsl_rl`) the edits of its
weights (:func:`transfer.formats.permutation_class`) and the refusals (:mod:`transfer.formats.permutation`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer.backends import native_backend
from transfer.checkpoint import build_metadata, check_metadata, check_output, merge_config, metadata_to_task
from transfer.formats import checkpoint_format, detect_format, permutation_class, read_metadata
from transfer.ordering import OrderingConvention
from transfer.runs.convert.order import RUNTIME_HINT, ConvertError, Reorder, in_order
from transfer.task import Task

__all__ = ["ConvertError", "ConvertResult", "Reorder", "convert", "reorder_checkpoint"]

CHECK_SAMPLES = 256
"""Random observations each conversion is checked on before it is written."""


# ---------------------------------------------------------------------------------------------------- result


@dataclass(frozen=True)
class ConvertResult:
    """What :func:`convert` wrote: the file, its format, the orders, what was permuted and how it was checked."""

    path: Path
    format: str
    source: str
    """The input's joint order (a convention, or ``explicit list``)."""
    to: str
    """The output's joint order."""
    joint_names: tuple[str, ...]
    """The output's joint order, by name."""
    edits: tuple[str, ...]
    """What was permuted, one line per tensor (empty when only metadata was added)."""
    checked: int
    """Random observations the converted network was checked on (0 when the weights were not touched)."""
    max_error: float
    """Largest difference between the converted actions and the original's under the runtime permutation."""
    metadata: dict[str, Any] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["path"], out["joint_names"], out["edits"] = str(self.path), list(self.joint_names), list(self.edits)
        return out


# ---------------------------------------------------------------------------------------------------- the API


def convert(
    checkpoint: str | Path,
    to: str | Sequence[str],
    *,
    out: str | Path,
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    force: bool = False,
) -> ConvertResult:
    """Write a copy of ``checkpoint`` whose joint vectors follow ``to`` instead of ``source``, with metadata.

    Args:
        checkpoint: TorchScript, ONNX or RSL-RL checkpoint (never written).
        to: The new joint order: ``physx``, ``mjwarp``, ``robot_schema``, a list of joint names, or a YAML file
            listing them.
        out: The output file (refused when it is the input; an existing file only with ``force``).
        source: The checkpoint's joint order (same forms); default: what its metadata or the task says.
        config: The task (task YAML or Newton policy YAML); default: the checkpoint's metadata.
        asset: The robot's USD file; default: the task's or the metadata's asset.
        force: Replace an existing ``out``.

    ``source`` equal to ``to`` writes the metadata only; the weights are untouched.

    Raises:
        ConvertError: inputs that do not fit, or layers that cannot be identified (nothing is written).
        CheckpointError: ``out`` refused; checkpoint metadata of another format version.
        FileNotFoundError: a missing checkpoint, config or asset.
    """
    from transfer.task.isaaclab import find_run

    if find_run(checkpoint) is not None and (config is None or Path(checkpoint).is_dir()) or _positional(config):
        return _convert_run(checkpoint, to, out=out, source=source, config=config, asset=asset, force=force)
    return _convert_file(checkpoint, to, out=out, source=source, config=config, asset=asset, force=force)


def _positional(config: Any) -> bool:
    """Whether ``config`` is a deploy config (values by position: the input layer resolves it with the order)."""
    if config is None:
        return False
    from transfer.task.deploy import DeployConfig
    from transfer.task.readers import read_config

    try:
        return isinstance(read_config(config), DeployConfig)
    except (OSError, ValueError):
        return False  # the file's own reader names the problem


def _convert_file(checkpoint: Any, to: Any, *, out: Any, source: Any, config: Any, asset: Any, force: bool):
    """:func:`convert` for a checkpoint file described by its metadata and/or a task file."""
    from transfer.orders import resolve_ordering
    from transfer.task import resolve_asset

    checkpoint = Path(checkpoint)
    if checkpoint.is_dir():
        raise ConvertError(
            f"{checkpoint} is a folder without params/env.yaml, so not an Isaac Lab run folder; pass the checkpoint "
            "file (policy.pt, policy.onnx, model_<iter>.pt), or a run folder that holds params/env.yaml"
        )
    if not checkpoint.is_file():
        raise FileNotFoundError(f"Checkpoint not found: {checkpoint}")
    fmt = detect_format(checkpoint)  # once per conversion, as check_output below
    out = check_output(checkpoint, out, force=force, format=fmt)
    meta = read_metadata(checkpoint, fmt)
    task, asset_text = _task_and_asset(checkpoint, meta, config, asset)
    asset_path = resolve_asset(asset_text)
    parsed, parsed_to = _orders(checkpoint, meta, task, source, to)
    src_order, to_order = resolve_ordering(asset_path, parsed), resolve_ordering(asset_path, parsed_to)
    if meta is not None and tuple(meta["joint_names"]) != src_order.joints:
        raise ConvertError(
            f"--source {_label(parsed)} contradicts {checkpoint.name}'s metadata: the checkpoint's joint order is "
            f"{_label(_metadata_order(meta))} {list(meta['joint_names'])}, --source gives {list(src_order.joints)} on "
            f"{asset_path.name}. Drop --source (the metadata says it), or fix it."
        )
    if meta is None:
        if isinstance(parsed, OrderingConvention):
            task = task.with_convention(parsed)
        try:
            task.with_joint_names(src_order.joints)  # checks the order the config lists, and its joint names
        except ValueError as exc:
            raise ConvertError(f"--config {config} does not fit {asset_path.name}: {exc}") from None
    conventions = isinstance(parsed, OrderingConvention) and isinstance(parsed_to, OrderingConvention)
    src_bodies, to_bodies = (src_order.bodies, to_order.bodies) if conventions else (None, None)
    reorder = Reorder.from_names(task, src_order.joints, to_order.joints, src_bodies, to_bodies)
    trained_on = task.trained_on
    if trained_on is None and isinstance(parsed, OrderingConvention):
        trained_on = native_backend(parsed)
    metadata = build_metadata(
        in_order(task, src_order.joints, to_order.joints),
        to_order.joints,
        body_names=to_bodies,
        convention=parsed_to.value if isinstance(parsed_to, OrderingConvention) else None,
        trained_on=trained_on,
        asset=asset_text,
        history=[*(meta or {}).get("history", []), _history(checkpoint, parsed, parsed_to)],
    )
    return _reorder(checkpoint, out, reorder, metadata, fmt, CHECK_SAMPLES, _label(parsed))


def _convert_run(path: Any, to: Any, *, out: Any, source: Any, config: Any, asset: Any, force: bool) -> ConvertResult:
    """:func:`convert` for an Isaac Lab run folder (or a checkpoint file inside one): its checkpoint, task, order and
    asset as :func:`transfer.runs.inputs.resolve_inputs` reads them; OUT's metadata records the run."""
    from transfer.orders import resolve_ordering
    from transfer.runs.inputs import resolve_inputs
    from transfer.task.isaaclab import find_run

    inputs = resolve_inputs(path, source=source, config=config, asset=asset)
    checkpoint = inputs.policy.path
    if inputs.policy.metadata is not None:  # the checkpoint describes itself (not again through its run folder)
        return _convert_file(checkpoint, to, out=out, source=source, config=config, asset=asset, force=force)
    out = check_output(checkpoint, out, force=force, format=inputs.policy.format)
    parsed, parsed_to = inputs.source, _parse_to(to)
    if parsed_to is None:
        raise ConvertError("--to is needed: the joint order to convert to (physx, mjwarp, robot_schema, mujoco, or names)")
    src_order, to_order = resolve_ordering(inputs.asset, parsed), resolve_ordering(inputs.asset, parsed_to)
    task = inputs.task
    try:
        task.with_joint_names(src_order.joints)
    except ValueError as exc:
        raise ConvertError(f"{path} does not fit {inputs.asset_given.name}: {exc}") from None
    conventions = isinstance(parsed, OrderingConvention) and isinstance(parsed_to, OrderingConvention)
    src_bodies, to_bodies = (src_order.bodies, to_order.bodies) if conventions else (None, None)
    reorder = Reorder.from_names(task, src_order.joints, to_order.joints, src_bodies, to_bodies)
    run = find_run(path)
    metadata = build_metadata(
        in_order(task, src_order.joints, to_order.joints),
        to_order.joints,
        body_names=to_bodies,
        convention=parsed_to.value if isinstance(parsed_to, OrderingConvention) else None,
        trained_on=task.trained_on,
        asset=str(inputs.asset_given.resolve()),
        history=[{**_history(checkpoint, parsed, parsed_to), **({"run": str(run[0])} if run else {}),
                  **({"config": str(Path(config).resolve())} if run is None and config is not None else {})}],
    )
    return _reorder(checkpoint, out, reorder, metadata, inputs.policy.format, CHECK_SAMPLES, _label(parsed))


def _task_and_asset(checkpoint: Path, meta: Mapping[str, Any] | None, config: Any, asset: Any) -> tuple[Task, str]:
    """The checkpoint's task (its metadata's, completed by ``config``; or ``config``'s) and the asset to use."""
    from transfer.task import load_task

    meta_task = None if meta is None else metadata_to_task(meta, source=f"{checkpoint.name} (metadata)")
    config_task = None if config is None else load_task(config)
    if meta_task is not None:
        where = f"--config {config} contradicts {checkpoint.name}'s metadata"
        task = meta_task if config_task is None else merge_config(meta_task, config_task, where=where)
    elif config_task is not None:
        task = config_task
    else:
        raise ConvertError(
            f"{checkpoint.name} carries no metadata: pass --config with the task it was trained on (a task file, "
            "presets/tasks/*.yaml, or a Newton policy YAML): convert needs the observation layout to find the "
            "joint-indexed entries."
        )
    given = (asset and Path(asset).resolve(), config_task and config_task.asset, task.asset)
    asset_text = next((str(a) for a in given if a), None)
    if asset_text is None:
        raise ConvertError("--asset is needed: the robot's USD file, to resolve both joint orders by name")
    return task, asset_text


def _orders(checkpoint: Path, meta: Mapping[str, Any] | None, task: Task, source: Any, to: Any) -> tuple[Any, Any]:
    """The checkpoint's order (``source``, else its metadata's, else the task's convention) and the new one."""
    from transfer.runs.inputs import parse_source

    parsed_to = _parse_to(to)
    if parsed_to is None:
        raise ConvertError("--to is needed: the joint order to convert to (physx, mjwarp, robot_schema, mujoco, or names)")
    parsed = parse_source(source if source is None or isinstance(source, str) else list(source))
    if parsed is None and meta is not None:
        parsed = _metadata_order(meta)
    if parsed is None and task.convention is not None:
        parsed = OrderingConvention(task.convention)
    if parsed is None:
        raise ConvertError(
            f"--source is needed: the joint order {checkpoint.name} was trained in (physx, mjwarp, robot_schema, mujoco, or "
            "a file listing its joint names)"
        )
    return parsed, parsed_to


def _parse_to(to: Any) -> Any:
    """``to`` parsed as ``--source`` is, with its errors naming ``--to``."""
    from transfer.runs.inputs import parse_source

    try:
        return parse_source(to if isinstance(to, str) else list(to))
    except ValueError as exc:
        raise ConvertError(str(exc).replace("--source", "--to", 1)) from None


def _history(checkpoint: Path, source: Any, to: Any) -> dict[str, str]:
    from transfer import __version__

    return {"convert": f"{_label(source)} -> {_label(to)}", "input": checkpoint.name, "transfer": __version__}


def _metadata_order(meta: Mapping[str, Any]) -> Any:
    conv = meta.get("convention")
    return OrderingConvention(conv) if conv is not None else tuple(meta["joint_names"])


def _label(order: Any) -> str:
    return order.value if isinstance(order, OrderingConvention) else "explicit list"


def reorder_checkpoint(
    checkpoint: str | Path,
    out: str | Path,
    reorder: Reorder,
    metadata: Mapping[str, Any],
    *,
    force: bool = False,
    format: str | None = None,
    samples: int = CHECK_SAMPLES,
    source: str = "explicit list",
) -> ConvertResult:
    """Apply ``reorder`` to the weights of ``checkpoint`` and write the result with ``metadata`` to ``out``.

    The lower half of :func:`convert`, for callers that have the index arrays already (``source`` labels the
    input's order in the result). Checked on ``samples`` random observations before anything is written; an
    identity ``reorder`` writes the metadata only.
    """
    checkpoint = Path(checkpoint)
    fmt = format or detect_format(checkpoint)
    out = check_output(checkpoint, out, force=force, format=fmt)
    return _reorder(checkpoint, out, reorder, metadata, fmt, samples, source)


def _reorder(
    checkpoint: Path, out: Path, reorder: Reorder, metadata: Mapping[str, Any], fmt: str, samples: int, source: str
) -> ConvertResult:
    """:func:`reorder_checkpoint` on an output already checked (:func:`check_output`) for the format ``fmt``."""
    metadata = check_metadata(metadata)
    names = tuple(metadata["joint_names"])
    label = metadata.get("convention") or "explicit list"
    if reorder.identity:
        checkpoint_format(fmt).write_metadata(checkpoint, out, metadata)
        return ConvertResult(out, fmt, source, label, names, (), 0, 0.0, dict(metadata))
    handler = permutation_class(fmt)(checkpoint, reorder)
    edits = handler.edit()
    error = _check(handler, reorder, samples, checkpoint.name)
    handler.save(out, metadata)
    return ConvertResult(out, fmt, source, label, names, tuple(edits), samples, error, dict(metadata))


def _check(handler: Any, reorder: Reorder, samples: int, name: str) -> float:
    """Largest |converted(x[:, obs]) - original(x)[:, act]| on random observations; refuses above tolerance."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((samples, len(reorder.observation))) * 2.0).astype(np.float32)
    error, scale = 0.0, 1.0
    for expected, got in handler.compare(x, x[:, list(reorder.observation)]):
        for which, values in (("original", expected), ("converted", got)):
            bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
            if bad.any():  # NaN compares equal to nothing: never let it pass as "largest difference 0"
                cause = (
                    "its weights (or normalizer) hold NaN or inf: the checkpoint is broken, retrain or re-export it"
                    if which == "original"
                    else "the edit broke the network"
                )
                raise ConvertError(
                    f"{name}: the {which} network writes non-finite actions (NaN or inf) on {int(bad.sum())} of "
                    f"{samples} random observations: {cause}. Nothing written."
                )
        if expected.size:
            error = max(error, float(np.max(np.abs(got - expected))))
            scale = max(scale, 1.0 + float(np.max(np.abs(expected))))
    if not np.isfinite(error) or error > 1e-4 * scale:
        raise ConvertError(
            f"{name}: the converted network does not reproduce the original under the permutation (largest "
            f"difference {error:.3g} on {samples} random observations): the layers found ({handler.describe()}) "
            f"are not everything that reads the observation or writes the action in this graph. Nothing written. "
            + RUNTIME_HINT
        )
    return error
