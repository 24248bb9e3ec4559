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
(:mod:`transfer.formats.checkpoint`) with the new order; the input is never written.

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

from transfer import __version__
from transfer.formats import checkpoint_format, detect_format, permutation_class
from transfer.formats.checkpoint import OVER_AN_INPUT, build_metadata, check_metadata, check_output, new_output
from transfer.ordering import OrderingConvention, convention_list
from transfer.robot.usd_files import which_read
from transfer.runs.convert.order import RUNTIME_HINT, ConvertError, Reorder, in_order
from transfer.runs.inputs import ReplayError, checkpoint_order, native_backend, parse_source, resolve_inputs

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


def _check_not_read(out: Path, files: Mapping[str, Any], robot: Path) -> None:
    """Refuse an ``out`` that is a file this conversion reads: a config, a file of joint names, the robot or any file
    the robot is read from (by path, symbolic link or hard link; the checkpoint is :func:`check_output`'s)."""
    reads = [(f"{flag} {v}", Path(v)) for flag, v in files.items() if isinstance(v, (str, Path)) and Path(v).is_file()]
    hit = which_read(out, reads, [robot])
    if hit is not None:
        raise ConvertError(f"-o {out} is {hit}: {OVER_AN_INPUT}")


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
    parsed_to = _parse_to(to)
    if parsed_to is None:
        raise ConvertError(f"--to is needed: the joint order to convert to ({convention_list()}, or names)")
    inputs = _inputs(checkpoint, source, config, asset)
    file = inputs.policy
    out = check_output(file.path, out, force=force, format=file.format)
    _check_not_read(out, {"--source": source, "--to": to, "--config": config}, inputs.asset_file or inputs.asset)
    task, parsed = inputs.task, inputs.source
    src_order = inputs.robot.order(parsed)
    try:
        to_order = inputs.robot.order(checkpoint_order(parsed_to, inputs.asset_file, flag="--to"))
    except ReplayError as exc:
        raise ConvertError(str(exc)) from None
    try:
        task.with_joint_names(src_order.joints)  # checks the order the config lists, and its joint names
    except ValueError as exc:
        raise ConvertError(f"{config or checkpoint} does not fit {inputs.asset_given.name}: {exc}") from None
    conventions = isinstance(parsed, OrderingConvention) and isinstance(parsed_to, OrderingConvention)
    src_bodies, to_bodies = (src_order.bodies, to_order.bodies) if conventions else (None, None)
    reorder = Reorder.from_names(task, src_order.joints, to_order.joints, src_bodies, to_bodies)
    history = _history(file.path, inputs.source_label, _label(parsed_to))
    if inputs.run is not None and file.metadata is None:
        history["run"] = str(inputs.run.folder)
    elif config is not None:
        history["config"] = str(Path(config).resolve())
    metadata = build_metadata(
        in_order(task, src_order.joints, to_order.joints),
        to_order.joints,
        body_names=to_bodies,
        convention=parsed_to.value if isinstance(parsed_to, OrderingConvention) else None,
        trained_on=_trained_on(inputs),
        asset=inputs.asset_named(asset),
        history=[*(file.metadata or {}).get("history", []), history],
    )
    with new_output(out, force):  # a file that appears at -o meanwhile is kept
        return _reorder(file.path, out, reorder, metadata, file.format, CHECK_SAMPLES, inputs.source_label)


def _inputs(checkpoint: Any, source: Any, config: Any, asset: Any) -> Any:
    """The input layer's resolution of the checkpoint (not loaded: its weights are edited, never run), its
    refusals as :class:`ConvertError`."""
    try:
        return resolve_inputs(checkpoint, source=source, config=config, asset=asset, load=False)
    except ReplayError as exc:
        raise ConvertError(str(exc)) from None


def _trained_on(inputs: Any) -> str | None:
    """The engine the checkpoint was trained on, when the inputs say (the task's, else its convention's)."""
    try:
        return native_backend(inputs)
    except ReplayError:
        return None


def _history(checkpoint: Path, source: str, to: str) -> dict[str, str]:
    return {"convert": f"{source} -> {to}", "input": checkpoint.name, "transfer": __version__}


def _parse_to(to: Any) -> Any:
    """``to`` parsed as ``--source`` is, with its errors naming ``--to``."""
    try:
        return parse_source(to if isinstance(to, str) else list(to))
    except ValueError as exc:
        raise ConvertError(str(exc).replace("--source", "--to", 1)) from None


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
    with new_output(out, force):
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
