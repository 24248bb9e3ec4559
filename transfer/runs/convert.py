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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer.checkpoint import (
    build_metadata,
    check_metadata,
    check_output,
    merge_config,
    metadata_to_task,
    read_metadata,
    save_onnx,
    save_rsl_rl,
    save_torchscript,
    write_metadata,
)
from transfer.name_map import build_name_map
from transfer.ordering import OrderingConvention
from transfer.task import Task

__all__ = ["ConvertError", "ConvertResult", "Reorder", "convert", "reorder_checkpoint"]

RUNTIME_HINT = (
    "Run it with runtime reordering instead: transfer replay CHECKPOINT --target BACKEND --source CONVENTION "
    "(the checkpoint is fed its own order by name, each step)."
)
CHECK_SAMPLES = 256
"""Random observations each conversion is checked on before it is written."""


class ConvertError(ValueError):
    """A checkpoint cannot be converted: inputs that do not fit, or a graph whose layers cannot be identified."""


# ---------------------------------------------------------------------------------------------------- the permutation


@dataclass(frozen=True)
class Reorder:
    """The index arrays of one conversion: ``new[..., j] = old[..., index[j]]``.

    ``observation`` has one entry per observation entry (identity outside joint- and body-indexed terms),
    ``action`` one per action entry. Build it by name with :meth:`from_names`.
    """

    observation: tuple[int, ...]
    action: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in ("observation", "action"):
            index = tuple(int(i) for i in getattr(self, name))
            if sorted(index) != list(range(len(index))):
                raise ValueError(f"Reorder.{name} is not a permutation of 0..{len(index) - 1}: {index}")
            object.__setattr__(self, name, index)

    @property
    def identity(self) -> bool:
        return self.observation == tuple(range(len(self.observation))) and self.action == tuple(range(len(self.action)))

    def inverse(self) -> Reorder:
        """The conversion back."""
        return Reorder(tuple(np.argsort(self.observation).tolist()), tuple(np.argsort(self.action).tolist()))

    @classmethod
    def from_names(
        cls,
        task: Task,
        source_joints: Sequence[str],
        target_joints: Sequence[str],
        source_bodies: Sequence[str] | None = None,
        target_bodies: Sequence[str] | None = None,
    ) -> Reorder:
        """The conversion of a checkpoint of ``task`` from ``source_joints`` order to ``target_joints`` order.

        ``source_bodies``/``target_bodies`` are needed only when an observation term indexes bodies.
        """
        plain = dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})
        expanded = plain.with_joint_names(tuple(source_joints))
        joints = _gather("joint", source_joints, target_joints)
        acting = expanded.action.joints
        if acting is None:
            action = joints
        else:
            chosen = set(acting)
            action = _gather(
                "joint", [n for n in source_joints if n in chosen], [n for n in target_joints if n in chosen]
            )
        nb = None if source_bodies is None else len(source_bodies)
        obs = list(range(expanded.observation_size(len(source_joints), nb)))
        for term in expanded.observation:
            where = expanded.term_slices(len(source_joints), nb)[term.name]
            if term.axis == "none":
                continue
            if term.axis == "body":
                if source_bodies is None or target_bodies is None:
                    raise ConvertError(
                        f"observation term {term.name!r} indexes bodies, but the body orders are unknown (an explicit "
                        "joint list gives none): convert between conventions, or use runtime reordering."
                    )
                index = _gather("body", source_bodies, target_bodies)
            else:
                index = action if term.name == "last_action" else joints
            obs[where] = [where.start + i for i in index]
        return cls(tuple(obs), tuple(action))


def _gather(kind: str, source: Sequence[str], target: Sequence[str]) -> tuple[int, ...]:
    """``new[j] = old[index[j]]``: the source index of each target name."""
    nmap = build_name_map(kind, source, target)  # type: ignore[arg-type]
    return tuple(range(len(source))) if nmap is None else nmap.user_to_backend_indices


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
    from transfer.orders import resolve_ordering
    from transfer.policy import detect_format
    from transfer.runs.replay import _NATIVE_BACKEND
    from transfer.task import resolve_asset
    from transfer.task.isaaclab import find_run

    if find_run(checkpoint) is not None and (config is None or Path(checkpoint).is_dir()):
        return _convert_run(checkpoint, to, out=out, source=source, config=config, asset=asset, force=force)
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():
        raise FileNotFoundError(f"Checkpoint not found: {checkpoint}")
    out = check_output(checkpoint, out, force=force)
    fmt = detect_format(checkpoint)
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
        trained_on = _NATIVE_BACKEND.get(parsed)
    metadata = build_metadata(
        task,
        to_order.joints,
        body_names=to_bodies,
        convention=parsed_to.value if isinstance(parsed_to, OrderingConvention) else None,
        trained_on=trained_on,
        asset=asset_text,
        history=[*(meta or {}).get("history", []), _history(checkpoint, parsed, parsed_to)],
    )
    return reorder_checkpoint(checkpoint, out, reorder, metadata, force=force, format=fmt, source=_label(parsed))


def _convert_run(path: Any, to: Any, *, out: Any, source: Any, config: Any, asset: Any, force: bool) -> ConvertResult:
    """:func:`convert` for an Isaac Lab run folder (or a checkpoint file inside one): its checkpoint, task, order and
    asset as :func:`transfer.runs.replay.resolve_inputs` reads them; OUT's metadata records the run."""
    from transfer.orders import resolve_ordering
    from transfer.runs.replay import _parse_source, resolve_inputs
    from transfer.task.isaaclab import find_run

    inputs = resolve_inputs(path, source=source, config=config, asset=asset)
    checkpoint = inputs.policy.path
    if inputs.policy.metadata is not None:  # the checkpoint describes itself
        return convert(checkpoint, to, out=out, source=source, config=config, asset=asset, force=force)
    out = check_output(checkpoint, out, force=force)
    parsed, parsed_to = inputs.source, _parse_source(to if isinstance(to, str) else list(to))
    if parsed_to is None:
        raise ConvertError("--to is needed: the joint order to convert to (physx, mjwarp, robot_schema, or names)")
    src_order, to_order = resolve_ordering(inputs.asset, parsed), resolve_ordering(inputs.asset, parsed_to)
    task = inputs.task
    try:
        task.with_joint_names(src_order.joints)
    except ValueError as exc:
        raise ConvertError(f"{path} does not fit {inputs.asset.name}: {exc}") from None
    conventions = isinstance(parsed, OrderingConvention) and isinstance(parsed_to, OrderingConvention)
    src_bodies, to_bodies = (src_order.bodies, to_order.bodies) if conventions else (None, None)
    reorder = Reorder.from_names(task, src_order.joints, to_order.joints, src_bodies, to_bodies)
    folder = find_run(path)[0]  # type: ignore[index]
    metadata = build_metadata(
        task,
        to_order.joints,
        body_names=to_bodies,
        convention=parsed_to.value if isinstance(parsed_to, OrderingConvention) else None,
        trained_on=task.trained_on,
        asset=str(inputs.asset.resolve()),
        history=[{**_history(checkpoint, parsed, parsed_to), "run": str(folder)}],
    )
    return reorder_checkpoint(
        checkpoint, out, reorder, metadata, force=force, format=inputs.policy.format, source=_label(parsed)
    )


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
    from transfer.runs.replay import _parse_source

    parsed_to = _parse_source(to if isinstance(to, str) else list(to))
    if parsed_to is None:
        raise ConvertError("--to is needed: the joint order to convert to (physx, mjwarp, robot_schema, or names)")
    parsed = _parse_source(source if source is None or isinstance(source, str) else list(source))
    if parsed is None and meta is not None:
        parsed = _metadata_order(meta)
    if parsed is None and task.convention is not None:
        parsed = OrderingConvention(task.convention)
    if parsed is None:
        raise ConvertError(
            f"--source is needed: the joint order {checkpoint.name} was trained in (physx, mjwarp, robot_schema, or "
            "a file listing its joint names)"
        )
    return parsed, parsed_to


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
    from transfer.policy import detect_format

    checkpoint = Path(checkpoint)
    out = check_output(checkpoint, out, force=force)
    metadata = check_metadata(metadata)
    fmt = format or detect_format(checkpoint)
    names = tuple(metadata["joint_names"])
    label = metadata.get("convention") or "explicit list"
    if reorder.identity:
        write_metadata(checkpoint, out, metadata, force=force)
        return ConvertResult(out, fmt, source, label, names, (), 0, 0.0, dict(metadata))
    handler = {"torchscript": _TorchScript, "onnx": _Onnx, "rsl_rl": _RslRl}[fmt](checkpoint, reorder)
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


def _output_index(action: Sequence[int], rows: int, name: str) -> list[int]:
    """The row permutation of an output of ``rows`` entries: the action's, or twice it for (mean, std)-style
    heads that write 2 x actions (rsl_rl's heteroscedastic Gaussian and Beta)."""
    n = len(action)
    if rows == n:
        return list(action)
    if rows == 2 * n:
        return [*action, *(n + a for a in action)]
    raise ConvertError(
        f"{name}: the layer that writes the action has {rows} outputs; the task's action has {n} entries (or "
        f"{2 * n} for a head writing two values per joint). " + RUNTIME_HINT
    )


def _size_mismatch(name: str, layer: str, reads: int, task: int) -> ConvertError:
    return ConvertError(
        f"{name} reads {reads} observation entries ({layer}), but the task's observation has {task}: is this the "
        "task's checkpoint and robot? Check --config and --asset."
    )


def _refuse(name: str, why: str) -> ConvertError:
    return ConvertError(f"{name}: cannot convert: {why}. " + RUNTIME_HINT)


# ---------------------------------------------------------------------------------------------------- TorchScript

_STD_NAMES = ("std", "log_std", "std_param", "log_std_param")


class _TorchScript:
    """The scripted module's parameters and buffers, permuted in place (its code untouched)."""

    def __init__(self, path: Path, reorder: Reorder):
        import torch

        from transfer.checkpoint import _torchscript_extra_files

        self.path, self.reorder = path, reorder
        self.original = torch.jit.load(str(path), map_location="cpu").eval()
        self.module = torch.jit.load(str(path), map_location="cpu").eval()
        self.extra = _torchscript_extra_files(path)
        if any(n.endswith(("hidden_state", "cell_state")) for n, _ in self.module.named_buffers()):
            raise _refuse(
                path.name, "a recurrent module (it carries a hidden state); recurrent layers are not converted"
            )
        self.first = self.last = ""

    def edit(self) -> list[str]:
        import torch

        name, obs, act = self.path.name, self.reorder.observation, self.reorder.action
        state = self.module.state_dict()
        keys = list(state)
        linear = [k for k in keys if k.endswith("weight") and state[k].dim() == 2]
        if not linear:
            raise _refuse(name, "the module has no 2-D weight, so no layer reading the observation was found")
        self.first, self.last = linear[0], linear[-1]
        if state[self.first].shape[1] != len(obs):
            raise _size_mismatch(name, f"its first layer {self.first}", state[self.first].shape[1], len(obs))
        rows = _output_index(act, state[self.last].shape[0], name)
        layers = {k.rsplit(".", 1)[0] for k in linear}
        edits: list[tuple[str, int, Sequence[int], str]] = [(self.first, 1, obs, "columns (observation)")]
        edits.append((self.last, 0, rows, "rows (action)"))
        bias = self.last.rsplit(".", 1)[0] + ".bias"
        if bias in state:
            edits.append((bias, 0, rows, "entries (action)"))
        first_pos, last_pos = keys.index(self.first), keys.index(self.last)
        for pos, key in enumerate(keys):
            t = state[key]
            if key.rsplit(".", 1)[0] in layers or t.dim() == 0:
                continue
            leaf = key.rsplit(".", 1)[-1].lower()
            if t.numel() == len(obs) and t.shape[-1] == len(obs) and (pos < first_pos or "norm" in key.lower()):
                edits.append((key, t.dim() - 1, obs, "entries (observation normalizer)"))
            elif t.numel() == len(act) and t.shape[-1] == len(act) and (pos > last_pos or leaf in _STD_NAMES):
                edits.append((key, t.dim() - 1, act, "entries (action)"))
        with torch.no_grad():
            for key, axis, index, _ in edits:
                t = state[key]
                t.copy_(t.index_select(axis, torch.as_tensor(list(index), dtype=torch.long)))
        return [f"{key} {tuple(state[key].shape)}: {what}" for key, _, _, what in edits]

    def describe(self) -> str:
        return f"first layer {self.first}, action layer {self.last}"

    def _run(self, module: Any, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return module(torch.from_numpy(x)).numpy()

    def compare(self, x: np.ndarray, x_new: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        expected = self._run(self.original, x)
        rows = _output_index(self.reorder.action, expected.shape[1], self.path.name)
        return [(expected[:, rows], self._run(self.module, x_new))]

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_torchscript(self.module, out, metadata, self.extra)


# ---------------------------------------------------------------------------------------------------- ONNX

_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div"})
_UNARY = frozenset({"Identity", "Tanh", "Sigmoid", "Relu", "Elu", "Selu", "Neg", "Abs", "Softsign", "Clip", "Cast"})


class _Onnx:
    """Initializers (and Constant nodes) of the first MatMul/Gemm reading the graph input and of the last writing
    the graph output, with the elementwise ops between them and the input (a normalizer) or the output."""

    def __init__(self, path: Path, reorder: Reorder):
        import onnx

        self.path, self.reorder = path, reorder
        self.original_bytes = path.read_bytes()
        self.model = onnx.load(str(path))
        self.first = self.last = ""

    # -- graph queries
    def _index(self) -> None:
        g = self.model.graph
        self.consts: dict[str, Any] = {i.name: i for i in g.initializer}
        self.producer: dict[str, Any] = {}
        self.consumers: dict[str, list[Any]] = {}
        for node in g.node:
            if node.op_type == "Constant":
                for attr in node.attribute:
                    if attr.name == "value":
                        self.consts[node.output[0]] = attr.t
            for out in node.output:
                self.producer[out] = node
            for inp in node.input:
                if inp:
                    self.consumers.setdefault(inp, []).append(node)

    def _const_shape(self, name: str) -> tuple[int, ...]:
        return tuple(int(d) for d in self.consts[name].dims)

    def _one_consumer(self, tensor: str, what: str) -> Any:
        users = self.consumers.get(tensor, [])
        graph_out = any(o.name == tensor for o in self.model.graph.output)
        if len(users) != 1 or graph_out:
            raise _refuse(
                self.path.name,
                f"{what} {tensor!r} feeds {len(users) + graph_out} places ("
                + ", ".join([f"{n.op_type} {n.name or n.output[0]!r}" for n in users] + ["graph output"] * graph_out)
                + "); convert follows one chain from the input to the first MatMul/Gemm",
            )
        return users[0]

    def _const_edit(self, node: Any, tensor: str, n: int, index: Sequence[int], what: str, edits: list) -> str:
        """For an elementwise node on ``tensor`` (the vector being followed), the other operand's edit; returns
        the node's other (non-constant) side or output."""
        others = [i for i in node.input if i != tensor]
        if len(node.input) != 2 or len(others) != 1 or others[0] not in self.consts:
            raise _refuse(
                self.path.name,
                f"{node.op_type} {node.name or node.output[0]!r} combines the {what} with a computed tensor, not a "
                "constant",
            )
        shape = self._const_shape(others[0])
        size = int(np.prod(shape)) if shape else 1
        if size == n and shape[-1] == n:
            edits.append((others[0], len(shape) - 1, index, f"entries ({what}, {node.op_type})"))
        elif size != 1:
            raise _refuse(
                self.path.name,
                f"{node.op_type} {node.name or node.output[0]!r} applies a constant of shape {list(shape)} to the "
                f"{what} ({n} entries)",
            )
        return others[0]

    def edit(self) -> list[str]:
        g = self.model.graph
        name, obs, act = self.path.name, self.reorder.observation, self.reorder.action
        self._index()
        inputs = [i for i in g.input if i.name not in self.consts]
        if len(inputs) != 1 or len(g.output) != 1:
            raise _refuse(
                name,
                f"the graph has {len(inputs)} inputs and {len(g.output)} outputs; convert handles one observation "
                "input and one action output",
            )
        dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
        if dims and dims[-1] is not None and dims[-1] != len(obs):
            raise _size_mismatch(name, f"its input {inputs[0].name!r}", dims[-1], len(obs))
        edits: list[tuple[str, int, Sequence[int], str]] = []
        # forward from the observation to the first MatMul/Gemm
        tensor = inputs[0].name
        while True:
            node = self._one_consumer(tensor, "the observation")
            op = node.op_type
            if op in _ELEMENTWISE:
                self._const_edit(node, tensor, len(obs), obs, "observation normalizer", edits)
            elif op in _UNARY:
                if list(node.input).index(tensor) != 0 or any(i and i not in self.consts for i in node.input[1:]):
                    raise _refuse(name, f"{op} {node.name!r} reads the observation with computed bounds")
            elif op == "Gemm" and list(node.input).index(tensor) == 0 and node.input[1] in self.consts:
                attrs = {a.name: a.i for a in node.attribute if a.name in ("transA", "transB")}
                if attrs.get("transA", 0):
                    raise _refuse(name, f"Gemm {node.name!r} transposes the observation (transA=1)")
                edits.append((node.input[1], 1 if attrs.get("transB", 0) else 0, obs, "observation columns (Gemm)"))
                self.first = node.name or node.output[0]
                break
            elif op == "MatMul" and list(node.input).index(tensor) == 0 and node.input[1] in self.consts:
                if len(self._const_shape(node.input[1])) != 2:
                    raise _refuse(
                        name, f"MatMul {node.name!r} has a weight of shape {self._const_shape(node.input[1])}"
                    )
                edits.append((node.input[1], 0, obs, "observation rows of the weight (MatMul)"))
                self.first = node.name or node.output[0]
                break
            else:
                raise _refuse(
                    name,
                    f"the observation reaches {op} {node.name or node.output[0]!r} before any MatMul/Gemm with a "
                    "constant weight: the first layer reading the observation cannot be identified",
                )
            tensor = node.output[0]
        # backward from the action to the last MatMul/Gemm
        tensor = g.output[0].name
        rows: list[int] | None = None
        while True:
            node = self.producer.get(tensor)
            if node is None:
                raise _refuse(name, f"the action {tensor!r} is not written by any node")
            if tensor != g.output[0].name:
                self._one_consumer(tensor, "the action layer's output")
            op = node.op_type
            n = rows and len(rows) or len(act)
            if op in _ELEMENTWISE:
                tensor = next((i for i in node.input if i not in self.consts), "")
                if not tensor:
                    raise _refuse(name, f"{op} {node.name!r} writing the action has only constant inputs")
                self._const_edit(node, tensor, n, rows or act, "action", edits)
                continue
            if op in _UNARY:
                tensor = node.input[0]
                continue
            if op == "Gemm" and node.input[1] in self.consts:
                attrs = {a.name: a.i for a in node.attribute if a.name in ("transA", "transB")}
                trans_b = attrs.get("transB", 0)
                out_rows = self._const_shape(node.input[1])[0 if trans_b else 1]
                rows = _output_index(act, out_rows, name)
                edits.append((node.input[1], 0 if trans_b else 1, rows, "action rows (Gemm)"))
                if len(node.input) > 2 and node.input[2]:
                    self._const_edit_bias(node.input[2], rows, edits)
                self.last = node.name or node.output[0]
                break
            if op == "MatMul" and node.input[1] in self.consts and node.input[0] not in self.consts:
                rows = _output_index(act, self._const_shape(node.input[1])[-1], name)
                edits.append((node.input[1], 1, rows, "action columns of the weight (MatMul)"))
                self.last = node.name or node.output[0]
                break
            raise _refuse(
                name,
                f"the action is written by {op} {node.name or node.output[0]!r}, not by a MatMul/Gemm with a "
                "constant weight followed by elementwise ops: the layer that writes the action cannot be identified",
            )
        self._apply(edits)
        return [f"{key} {list(self._const_shape(key))}: {what}" for key, _, _, what in edits]

    def _const_edit_bias(self, key: str, rows: list[int], edits: list) -> None:
        shape = self._const_shape(key)
        size = int(np.prod(shape)) if shape else 1
        if size == len(rows):
            edits.append((key, len(shape) - 1, rows, "action entries (Gemm bias)"))
        elif size != 1:
            raise _refuse(self.path.name, f"the action layer's bias {key!r} has shape {list(shape)}")

    def _apply(self, edits: list[tuple[str, int, Sequence[int], str]]) -> None:
        from onnx import numpy_helper

        used = [key for key, *_ in edits]
        for key in set(used):
            readers = self.consumers.get(key, [])
            if len(readers) > 1:
                raise _refuse(
                    self.path.name,
                    f"the constant {key!r} is shared by {len(readers)} nodes; permuting it would change the others",
                )
        for key, axis, index, _ in edits:
            proto = self.consts[key]
            array = numpy_helper.to_array(proto)
            proto.CopyFrom(numpy_helper.from_array(np.take(array, list(index), axis=axis), proto.name))

    def describe(self) -> str:
        return f"first layer {self.first}, action layer {self.last}"

    def _run(self, model_bytes: bytes, x: np.ndarray) -> np.ndarray:
        import onnxruntime as ort

        session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
        inp = session.get_inputs()[0]
        batch = inp.shape[0] if isinstance(inp.shape[0], int) else None
        if batch is None or batch == len(x):
            return session.run(None, {inp.name: x})[0]
        return np.concatenate([session.run(None, {inp.name: x[i : i + 1]})[0] for i in range(len(x))])

    def compare(self, x: np.ndarray, x_new: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        expected = self._run(self.original_bytes, x)
        rows = _output_index(self.reorder.action, expected.shape[1], self.path.name)
        return [(expected[:, rows], self._run(self.model.SerializeToString(), x_new))]

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_onnx(self.model, out, metadata)


# ---------------------------------------------------------------------------------------------------- RSL-RL

_NETWORKS = (  # key in the checkpoint, MLP prefix, normalizer prefix, writes the action
    ("actor_state_dict", "mlp.", "obs_normalizer.", True),
    ("student_state_dict", "mlp.", "obs_normalizer.", True),
    ("teacher_state_dict", "mlp.", "obs_normalizer.", True),
    ("critic_state_dict", "mlp.", "obs_normalizer.", False),
)
_NORMALIZER_STATS = ("_mean", "_var", "_std")


class _RslRl:
    """An RSL-RL training checkpoint: every network's first/last layers and normalizer, the action std, and the
    optimizer's moments."""

    def __init__(self, path: Path, reorder: Reorder):
        from transfer.policy import _torch_load_safe

        self.path, self.reorder = path, reorder
        self.ckpt = _torch_load_safe(path)
        if not isinstance(self.ckpt, dict):
            raise _refuse(path.name, f"a torch checkpoint holding {type(self.ckpt).__name__}, not an RSL-RL dict")
        self.originals: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, list[tuple[str, int, Sequence[int]]]] = {}
        self.notes: list[str] = []

    def _networks(self) -> list[tuple[str, str, str, bool]]:
        ckpt, name = self.ckpt, self.path.name
        if "model_state_dict" in ckpt:
            raise _refuse(
                name, "the older rsl_rl layout (model_state_dict) is not converted; re-save with rsl-rl-lib 5"
            )
        for key in ("rnd_state_dict",):
            if key in ckpt:
                raise _refuse(
                    name, f"it holds {key} (random network distillation), whose observation layout is unknown"
                )
        found = [n for n in _NETWORKS if n[0] in ckpt]
        if not any(n[3] for n in found):
            raise _refuse(name, f"no actor_state_dict or student_state_dict; found keys {sorted(map(str, ckpt))}")
        return found

    def edit(self) -> list[str]:
        import torch

        obs, act = self.reorder.observation, self.reorder.action
        edits: list[str] = []
        nets = self._networks()
        for key, mlp, norm, writes_action in nets:
            state = dict(self.ckpt[key])
            if any(k.startswith(("rnn.", "cnns.", "memory_")) for k in state):
                raise _refuse(self.path.name, f"{key} holds recurrent or CNN layers, which are not converted")
            indices = sorted(
                int(k[len(mlp) :].split(".")[0]) for k in state if k.startswith(mlp) and k.endswith(".weight")
            )
            if not indices:
                raise _refuse(self.path.name, f"{key} has no linear layers under {mlp!r}")
            first, last = f"{mlp}{indices[0]}.weight", f"{mlp}{indices[-1]}.weight"
            if state[first].shape[1] != len(obs) and key in ("actor_state_dict", "student_state_dict"):
                raise _size_mismatch(self.path.name, f"{key}'s first layer {first}", state[first].shape[1], len(obs))
            if state[first].shape[1] != len(obs):
                raise _refuse(
                    self.path.name,
                    f"{key}'s first layer {first} reads {state[first].shape[1]} entries, the task's observation has "
                    f"{len(obs)}: its observation (privileged terms?) has a layout the task does not describe",
                )
            self.originals[key] = {k: v.clone() for k, v in state.items()}
            plan: list[tuple[str, int, Sequence[int]]] = [(first, 1, obs)]
            plan += [(f"{norm}{s}", -1, obs) for s in _NORMALIZER_STATS if f"{norm}{s}" in state]
            if writes_action:
                rows = _output_index(act, state[last].shape[0], self.path.name)
                plan.append((last, 0, rows))
                if f"{mlp}{indices[-1]}.bias" in state:
                    plan.append((f"{mlp}{indices[-1]}.bias", 0, rows))
                plan += [(f"distribution.{s}", 0, act) for s in ("std_param", "log_std_param")
                         if f"distribution.{s}" in state]  # fmt: skip
            for k, axis, index in plan:
                t = state[k]
                state[k] = t.index_select(axis % t.dim(), torch.as_tensor(list(index), dtype=torch.long)).contiguous()
                edits.append(f"{key}[{k}] {tuple(t.shape)}")
            self.ckpt[key] = state
            self._plans[key] = plan
        self._edit_optimizer(nets)
        return edits + self.notes

    def _edit_optimizer(self, nets: list[tuple[str, str, str, bool]]) -> None:
        """Adam's moments follow their parameters: permute them the same way, matched by rsl_rl's parameter order
        (PPO: actor then critic; distillation: the student; each in state-dict order, normalizer buffers left out).
        If the shapes do not line up, the moments are cleared (training restarts them) and a note says so."""
        import torch

        opt = self.ckpt.get("optimizer_state_dict")
        if not isinstance(opt, dict) or "state" not in opt:
            return
        trained = (
            ("actor_state_dict", "critic_state_dict") if "actor_state_dict" in self.ckpt else ("student_state_dict",)
        )
        order = [
            (key, k) for key, _, norm, _ in nets if key in trained for k in self.ckpt[key] if not k.startswith(norm)
        ]
        params = [p for group in opt.get("param_groups", []) for p in group.get("params", [])]
        state = opt["state"]
        shapes_ok = len(params) == len(order) and all(
            all(t.shape == self.ckpt[key][k].shape for t in state.get(p, {}).values() if torch.is_tensor(t) and t.dim())
            for p, (key, k) in zip(params, order, strict=False)
        )
        if not shapes_ok:
            opt["state"] = {}
            self.notes.append("optimizer_state_dict: moments cleared (they could not be matched to the parameters)")
            return
        for p, (key, k) in zip(params, order, strict=True):
            for _, axis, index in (e for e in self._plans.get(key, []) if e[0] == k):
                idx = torch.as_tensor(list(index), dtype=torch.long)
                for name, t in list(state.get(p, {}).items()):
                    if torch.is_tensor(t) and t.dim():
                        state[p][name] = t.index_select(axis % t.dim(), idx).contiguous()
        self.notes.append("optimizer_state_dict: moments permuted with their parameters")

    def describe(self) -> str:
        return ", ".join(self.originals) or "no network"

    @staticmethod
    def _forward(state: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
        """The raw MLP output (normalizer, linear layers, ELU between them): the permutation law holds for any
        elementwise activation, so checking with ELU checks the weights."""
        import torch
        import torch.nn.functional as F

        from transfer.policy import RSL_RL_NORMALIZER_EPS

        y = torch.from_numpy(x)
        if "obs_normalizer._mean" in state:
            y = (y - state["obs_normalizer._mean"]) / (state["obs_normalizer._std"] + RSL_RL_NORMALIZER_EPS)
        indices = sorted(int(k[4:].split(".")[0]) for k in state if k.startswith("mlp.") and k.endswith(".weight"))
        for j, i in enumerate(indices):
            y = F.linear(y, state[f"mlp.{i}.weight"].float(), state.get(f"mlp.{i}.bias"))
            if j < len(indices) - 1:
                y = F.elu(y)
        return y.detach().numpy()

    def compare(self, x: np.ndarray, x_new: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        pairs = []
        act = self.reorder.action
        for key, *_, writes_action in _NETWORKS:
            if key not in self.originals:
                continue
            old, new = self.originals[key], self.ckpt[key]
            expected = self._forward(old, x)
            if writes_action:
                expected = expected[:, _output_index(act, expected.shape[1], self.path.name)]
                for s in ("distribution.std_param", "distribution.log_std_param"):
                    if s in old:
                        pairs.append((old[s].numpy()[list(act)], new[s].numpy()))
            pairs.append((expected, self._forward(new, x_new)))
        return pairs

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_rsl_rl(self.ckpt, out, metadata)
