"""ONNX policies (``.onnx``), run by onnxruntime on the CPU.

Detect (:func:`detect`: the ``.onnx`` suffix or a model's first bytes), load (:class:`OnnxPolicy`), the metadata document in the model's
``metadata_props`` entry ``transfer`` (:func:`read_metadata`, :func:`props_metadata`, :func:`save_onnx`,
:func:`write_metadata`; an mjlab export's own keys are read by :mod:`transfer.formats.mjlab`), and the weight
permutation ``transfer convert`` applies (:class:`OnnxPermutation`: the graph walk from the observation input to the
first MatMul/Gemm and back from the action output to the last, and the edits of their initializers and Constant
nodes, through elementwise normalizer and output ops). onnx and onnxruntime are imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from transfer.formats.base import CheckpointFormat, Probe
from transfer.formats.checkpoint import METADATA_KEY, atomic_write, decode_metadata, encode_metadata
from transfer.formats.mjlab import is_mjlab, mjlab_metadata
from transfer.formats.permutation import Permutation, output_index, refuse, size_mismatch
from transfer.formats.policy import Policy, PolicyError
from transfer.task.motion import Motion, MotionError

if TYPE_CHECKING:
    import onnx

__all__ = [
    "OnnxFormat",
    "OnnxPermutation",
    "OnnxPolicy",
    "detect",
    "props_metadata",
    "read_metadata",
    "save_onnx",
    "write_metadata",
]

FORMAT = "onnx"

_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div"})
_UNARY = frozenset({"Identity", "Tanh", "Sigmoid", "Relu", "Elu", "Selu", "Neg", "Abs", "Softsign", "Clip", "Cast"})


def detect(path: Path, head: bytes = b"") -> bool:
    """Whether ``path`` holds an ONNX model: its ``.onnx`` suffix, or (protobuf bytes carry no magic number) a
    ``ModelProto``'s first bytes, as every exporter writes them: field 1 ``ir_version`` (tag 0x08, a version of
    3-15), then the tag of another of its fields (``producer_name``, ``graph``, ``opset_import``, ...)."""
    if path.suffix.lower() == ".onnx":
        return True
    return len(head) >= 3 and head[0] == 0x08 and 3 <= head[1] <= 15 and head[2] in _MODEL_TAGS


_MODEL_TAGS = frozenset({0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72})
"""Tags a ``ModelProto`` field after ``ir_version`` starts with: fields 2-8 (``producer_name`` .. ``opset_import``)
and 14 (``metadata_props``)."""


# ---------------------------------------------------------------------------------------------------- loading


class OnnxPolicy(Policy):
    """An ONNX model run by onnxruntime on the CPU (whatever ``device`` says; torch outputs go back to the
    input's device). Sizes come from the graph's first input and first output. A graph with a fixed batch of
    1 (rsl_rl's exports) is run one environment at a time.

    Recurrent exports (rsl_rl's and Isaac Lab's ``_OnnxPolicyExporter``: inputs ``obs, h_in[, c_in]``, outputs
    ``actions, h_out[, c_out]``, each state ``(num_layers, 1, hidden_size)``) keep one state per env, fed back every
    call; :meth:`reset` zeroes all of it or the envs named."""

    format = "onnx"
    native = "numpy"

    def __init__(self, path: Path, device: str = "cpu"):
        ort = onnxruntime()

        check_external_data(path)
        try:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise PolicyError(f"{path}: not a valid ONNX model ({type(exc).__name__}: {exc})") from None
        inputs, outputs = session.get_inputs(), session.get_outputs()
        shape = list(inputs[0].shape)
        if len(shape) != 2 or not isinstance(shape[1], int):
            raise PolicyError(f"{path}: input {inputs[0].name!r} has shape {shape}; expected (batch, obs_dim)")
        if inputs[0].type != "tensor(float)":
            raise PolicyError(f"{path}: input {inputs[0].name!r} is {inputs[0].type}; expected tensor(float)")
        self.session = session
        self._input_name = inputs[0].name
        self._output_name = outputs[0].name
        motion = is_motion_export(inputs, outputs)
        self._time_step = motion  # before the base class sets motion_export: _run reads it below
        self._state_shapes = [] if motion else _recurrent_state(path, inputs, outputs)
        self._state_in = [] if motion else [i.name for i in inputs[1:]]
        self._outputs = [o.name for o in outputs[: 1 + len(self._state_in)]]
        self._states: np.ndarray | None = None
        batch = shape[0] if isinstance(shape[0], int) else None
        self._batch = 1 if self._state_shapes and any(s[1] == 1 for s in self._state_shapes) else batch
        out_dim = outputs[0].shape[-1] if outputs[0].shape else None
        if not isinstance(out_dim, int):
            out_dim = self._run(np.zeros((1, shape[1]), np.float32), self._zero_state(1))[0].shape[-1]
        super().__init__(path, shape[1], int(out_dim), "cpu", recurrent=bool(self._state_shapes))
        self.motion_export = motion

    def read_metadata(self) -> dict[str, Any] | None:
        return read_metadata(self.path)  # the file's own entries: onnxruntime's map would hide a duplicated key

    def _zero_state(self, n: int) -> list[np.ndarray]:
        return [np.zeros((s[0], n, s[2]), np.float32) for s in self._state_shapes]

    def reset(self, env_ids: Any = None) -> None:
        if self._states is None:
            return
        if env_ids is None:
            self._states = None
            return
        for state in self._states:
            state[:, list(env_ids)] = 0.0

    def _run(self, x: np.ndarray, state: Sequence[np.ndarray]) -> list[np.ndarray]:
        feeds = {self._input_name: x, **dict(zip(self._state_in, state, strict=True))}
        if self._time_step:  # the actions do not read the time step: it picks the motion outputs, not run here
            feeds[TIME_STEP] = np.zeros((x.shape[0], 1), np.float32)
        return self.session.run(self._outputs, feeds)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        if self._state_shapes and (self._states is None or self._states[0].shape[1] != n):
            self._states = self._zero_state(n)
        state = self._states or []
        if self._batch is None or self._batch == n:
            out = self._run(x, state)
            self._states = out[1:] if self._state_shapes else None
            return out[0]
        if self._batch != 1:
            raise ValueError(f"{self.path.name}: the graph takes exactly {self._batch} environments; got {x.shape[0]}")
        actions = []
        for i in range(n):  # one env at a time: its own column of the state
            out = self._run(x[i : i + 1], [s[:, i : i + 1] for s in state])
            actions.append(out[0])
            for s, new in zip(state, out[1:], strict=True):
                s[:, i : i + 1] = new
        return np.concatenate(actions, axis=0)


TIME_STEP = "time_step"
MOTION_OUTPUTS = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")
"""What mjlab's tracking export (``mjlab/tasks/tracking/rl/exporter.py``) returns after the actions: the motion it was
trained on at the ``time_step`` given (clamped to its last frame), one frame per policy step."""


def is_motion_export(inputs: Sequence[Any], outputs: Sequence[Any]) -> bool:
    """Whether a graph is a tracking export: inputs ``obs, time_step``, outputs ``actions`` then
    :data:`MOTION_OUTPUTS`."""
    names = [o.name for o in outputs[1:]]
    return len(inputs) == 2 and inputs[1].name == TIME_STEP and names == list(MOTION_OUTPUTS)


def motion_from_onnx(path: str | Path, joint_names: Sequence[str], fps: float) -> Any:
    """The motion a tracking export carries (:func:`is_motion_export`), as a :class:`~transfer.task.motion.Motion`
    of ``fps`` frames a second (its frames are the policy steps it was trained at): every frame's joint positions
    (in the export's joint order, ``joint_names``) and its first body's pose (``body_names[0]``, the root); the
    anchor body its metadata names (``anchor_body_name``). The frame count is where the clamped time step stops
    changing the outputs."""
    ort = onnxruntime()
    path = Path(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if not is_motion_export(inputs, outputs):
        raise MotionError(
            f"{path}: not a tracking export (inputs obs, time_step; outputs actions, "
            f"{', '.join(MOTION_OUTPUTS)}); give the clip with --motion"
        )
    obs = np.zeros((1, int(inputs[0].shape[1])), np.float32)
    names = ["joint_pos", "body_pos_w", "body_quat_w"]

    def frame(t: float) -> list[np.ndarray]:
        return session.run(names, {inputs[0].name: obs, TIME_STEP: np.array([[t]], np.float32)})

    last = frame(1e9)
    low, high = 0, 1 << 24  # the first step whose outputs are the last frame's: the frame count is one more
    while low < high:
        mid = (low + high) // 2
        same = all(np.array_equal(a, b) for a, b in zip(frame(mid), last, strict=True))
        low, high = (low, mid) if same else (mid + 1, high)
    frames = [frame(t) for t in range(low + 1)]
    joints = np.concatenate([f[0] for f in frames]).astype(np.float64)
    if joints.shape[1] != len(joint_names):
        raise MotionError(f"{path}: its motion has {joints.shape[1]} joints, the policy {len(joint_names)}")
    root_pos = np.stack([f[1][0, 0] for f in frames]).astype(np.float64)
    wxyz = np.stack([f[2][0, 0] for f in frames]).astype(np.float64)
    import onnx

    props = {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}
    return Motion(
        float(fps),
        tuple(joint_names),
        root_pos,
        np.concatenate([wxyz[:, 1:], wxyz[:, :1]], axis=1),
        joints,
        str(path),
        anchor=props.get("anchor_body_name") or None,
        bodies=tuple(n.strip() for n in props.get("body_names", "").split(",") if n.strip()),
    )


def _recurrent_state(path: Path, inputs: Sequence[Any], outputs: Sequence[Any]) -> list[tuple[int, int, int]]:
    """The state shapes ``(num_layers, batch, hidden)`` of a recurrent export (each input after the observation fed
    by the output at the same place), or ``[]`` for a single-input graph; anything else is refused."""
    extra = inputs[1:]
    if not extra:
        return []
    shapes = []
    for k, inp in enumerate(extra, start=1):
        shape = list(inp.shape)
        out = outputs[k] if k < len(outputs) else None
        if len(shape) != 3 or not all(isinstance(d, int) for d in (shape[0], shape[2])) or out is None:
            raise NotImplementedError(
                f"{path}: the graph has {len(inputs)} inputs ({[i.name for i in inputs]}); transfer runs a single "
                "observation input, or a recurrent export whose state inputs (h_in, c_in: num_layers x batch x "
                "hidden) come back as outputs (h_out, c_out) after the actions"
            )
        fed = list(out.shape)
        differs = len(fed) != 3 or any(
            isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(shape, fed, strict=True)
        )
        if differs:
            raise PolicyError(
                f"{path}: the recurrent state {inp.name} is {shape} in but {out.name} comes back as "
                f"{fed}; the state fed back must keep its shape: export the model again"
            )
        batch = shape[1] if isinstance(shape[1], int) else 0
        shapes.append((shape[0], batch, shape[2]))
    return shapes


def onnxruntime() -> Any:
    """``onnxruntime``, with its telemetry off unless the user turned it on: since 1.29 it sends usage events to
    Microsoft from Linux too (DNS queries for mobile.events.data.microsoft.com ~10 s after import, whatever
    ``disable_telemetry_events()`` says); ``ORT_DISABLE_TELEMETRY=1`` before the import is its full opt-out."""
    import os

    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    return ort


def check_external_data(path: Path) -> None:
    """Refuse an ONNX model whose external data (``policy.onnx.data``) is missing or lies outside its folder; found
    beside the model whatever the current folder is (onnxruntime resolves it against the model's folder)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise PolicyError(f"{path}: not a valid ONNX model ({type(exc).__name__}: {exc})") from None
    folder = path.resolve().parent
    for tensor in _external_tensors(model):
        location = next((e.value for e in tensor.external_data if e.key == "location"), None)
        if location is None:
            continue
        target = (folder / location).resolve()
        if not target.is_relative_to(folder):
            raise PolicyError(
                f"{path}: tensor {tensor.name!r} keeps its data in {location!r}, outside the model's "
                f"folder {folder}; refused (copy the data file beside the model)"
            )
        if not target.is_file():
            raise PolicyError(
                f"{path}: tensor {tensor.name!r} keeps its data in {location!r}, which is not beside the "
                f"model ({target} is missing); copy it next to {path.name}"
            )


def _external_tensors(model: Any) -> list[Any]:
    """Every tensor of the model that keeps its data in another file: initializers (sparse ones too) and node
    attributes, of the main graph and of every subgraph (``If``/``Loop``/``Scan`` bodies) at any depth."""
    from onnx import TensorProto

    tensors, graphs = [], [model.graph]
    while graphs:
        graph = graphs.pop()
        tensors += list(graph.initializer)
        tensors += [t for s in graph.sparse_initializer for t in (s.values, s.indices)]
        for attribute in (a for node in graph.node for a in node.attribute):
            tensors += ([attribute.t] if attribute.HasField("t") else []) + list(attribute.tensors)
            tensors += [
                t
                for s in [
                    *attribute.sparse_tensors,
                    *([attribute.sparse_tensor] if attribute.HasField("sparse_tensor") else []),
                ]
                for t in (s.values, s.indices)
            ]
            graphs += ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
    return [t for t in tensors if t.data_location == TensorProto.EXTERNAL]


# ---------------------------------------------------------------------------------------------------- metadata


def read_metadata(path: str | Path) -> dict[str, Any] | None:
    """The document the model's ``metadata_props`` hold (:func:`props_metadata`), or ``None``."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    keys = [p.key for p in model.metadata_props]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise PolicyError(
            f"{path}: metadata_props lists {twice} more than once (onnx.checker refuses such a model); "
            "which one holds is not defined: export the model again"
        )
    return props_metadata({p.key: p.value for p in model.metadata_props}, path)


def props_metadata(props: Mapping[str, str], path: str | Path) -> dict[str, Any] | None:
    """The document an ONNX model's ``metadata_props`` hold: transfer's own (key ``transfer``), else the one an
    mjlab export's keys describe (:mod:`transfer.formats.mjlab`), else ``None``."""
    path = Path(path)
    raw = props.get(METADATA_KEY)
    if raw is not None:
        return decode_metadata(raw, f"{path.name} (metadata)")
    if is_mjlab(props):
        return mjlab_metadata(props, path)
    return None


def save_onnx(model: onnx.ModelProto, out: str | Path, metadata: Mapping[str, Any]) -> Path:
    """Save ``model`` to ``out`` atomically with the document in ``metadata_props`` (the model is updated)."""
    import onnx

    kept = [(p.key, p.value) for p in model.metadata_props if p.key != METADATA_KEY]
    del model.metadata_props[:]
    for key, value in [*kept, (METADATA_KEY, encode_metadata(metadata))]:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    return atomic_write(out, lambda tmp: onnx.save(model, str(tmp)))


def write_metadata(checkpoint: Path, out: Path, metadata: Mapping[str, Any]) -> Path:
    """A copy of ``checkpoint`` with ``metadata`` at ``out`` (checked by the caller), its other props kept."""
    import onnx

    return save_onnx(onnx.load(str(Path(checkpoint).resolve())), out, metadata)


# ---------------------------------------------------------------------------------------------------- convert


class OnnxPermutation:
    """Initializers (and Constant nodes) of the first MatMul/Gemm reading the graph input and of the last writing
    the graph output, with the elementwise ops between them and the input (a normalizer) or the output."""

    def __init__(self, path: Path, reorder: Permutation):
        import onnx

        self.path, self.reorder = path, reorder
        check_external_data(path)
        self.model = onnx.load(str(Path(path).resolve()))  # external data read from the model's folder
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
            raise refuse(
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
            raise refuse(
                self.path.name,
                f"{node.op_type} {node.name or node.output[0]!r} combines the {what} with a computed tensor, not a "
                "constant",
            )
        shape = self._const_shape(others[0])
        size = int(np.prod(shape)) if shape else 1
        if size == n and shape[-1] == n:
            edits.append((others[0], len(shape) - 1, index, f"entries ({what}, {node.op_type})"))
        elif size != 1:
            raise refuse(
                self.path.name,
                f"{node.op_type} {node.name or node.output[0]!r} applies a constant of shape {list(shape)} to the "
                f"{what} ({n} entries)",
            )
        return others[0]

    def edit(self) -> list[str]:
        """Permute the constants that read the observation (the first MatMul/Gemm, and the normalizer before it) and
        those that write the action (the last MatMul/Gemm, and the elementwise ops after it); returns one line per
        edited constant."""
        self._index()
        edits: list[tuple[str, int, Sequence[int], str]] = []
        self._forward_from_observation(self._observation_input(), edits)
        self._backward_from_action(edits)
        self._apply(edits)
        return [f"{key} {list(self._const_shape(key))}: {what}" for key, _, _, what in edits]

    def _observation_input(self) -> str:
        """The graph's one observation input (refused unless there is one input and one output, of the
        observation's size)."""
        g = self.model.graph
        name, obs = self.path.name, self.reorder.observation
        inputs = [i for i in g.input if i.name not in self.consts]
        if len(inputs) != 1 or len(g.output) != 1:
            raise refuse(
                name,
                f"the graph has {len(inputs)} inputs and {len(g.output)} outputs; convert handles one observation "
                "input and one action output",
            )
        dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
        if dims and dims[-1] is not None and dims[-1] != len(obs):
            raise size_mismatch(name, f"its input {inputs[0].name!r}", dims[-1], len(obs))
        return inputs[0].name

    def _forward_from_observation(self, tensor: str, edits: list) -> None:
        """Follow the observation ``tensor`` to the first MatMul/Gemm, adding the edits of the normalizer constants
        on the way and of the layer's weight to ``edits``."""
        name, obs = self.path.name, self.reorder.observation
        while True:
            node = self._one_consumer(tensor, "the observation")
            op = node.op_type
            if op in _ELEMENTWISE:
                self._const_edit(node, tensor, len(obs), obs, "observation normalizer", edits)
            elif op in _UNARY:
                if list(node.input).index(tensor) != 0 or any(i and i not in self.consts for i in node.input[1:]):
                    raise refuse(name, f"{op} {node.name!r} reads the observation with computed bounds")
            elif op == "Gemm" and list(node.input).index(tensor) == 0 and node.input[1] in self.consts:
                attrs = {a.name: a.i for a in node.attribute if a.name in ("transA", "transB")}
                if attrs.get("transA", 0):
                    raise refuse(name, f"Gemm {node.name!r} transposes the observation (transA=1)")
                edits.append((node.input[1], 1 if attrs.get("transB", 0) else 0, obs, "observation columns (Gemm)"))
                self.first = node.name or node.output[0]
                break
            elif op == "MatMul" and list(node.input).index(tensor) == 0 and node.input[1] in self.consts:
                if len(self._const_shape(node.input[1])) != 2:
                    raise refuse(name, f"MatMul {node.name!r} has a weight of shape {self._const_shape(node.input[1])}")
                edits.append((node.input[1], 0, obs, "observation rows of the weight (MatMul)"))
                self.first = node.name or node.output[0]
                break
            else:
                raise refuse(
                    name,
                    f"the observation reaches {op} {node.name or node.output[0]!r} before any MatMul/Gemm with a "
                    "constant weight: the first layer reading the observation cannot be identified",
                )
            tensor = node.output[0]

    def _backward_from_action(self, edits: list) -> None:
        """Follow the action output back to the last MatMul/Gemm, adding the edits of the elementwise constants on
        the way and of the layer's weight and bias to ``edits``."""
        g = self.model.graph
        name, act = self.path.name, self.reorder.action
        tensor = g.output[0].name
        rows: list[int] | None = None
        while True:
            node = self.producer.get(tensor)
            if node is None:
                raise refuse(name, f"the action {tensor!r} is not written by any node")
            if tensor != g.output[0].name:
                self._one_consumer(tensor, "the action layer's output")
            op = node.op_type
            n = rows and len(rows) or len(act)
            if op in _ELEMENTWISE:
                tensor = next((i for i in node.input if i not in self.consts), "")
                if not tensor:
                    raise refuse(name, f"{op} {node.name!r} writing the action has only constant inputs")
                self._const_edit(node, tensor, n, rows or act, "action", edits)
                continue
            if op in _UNARY:
                tensor = node.input[0]
                continue
            if op == "Gemm" and node.input[1] in self.consts:
                attrs = {a.name: a.i for a in node.attribute if a.name in ("transA", "transB")}
                trans_b = attrs.get("transB", 0)
                out_rows = self._const_shape(node.input[1])[0 if trans_b else 1]
                rows = output_index(act, out_rows, name)
                edits.append((node.input[1], 0 if trans_b else 1, rows, "action rows (Gemm)"))
                if len(node.input) > 2 and node.input[2]:
                    self._const_edit_bias(node.input[2], rows, edits)
                self.last = node.name or node.output[0]
                break
            if op == "MatMul" and node.input[1] in self.consts and node.input[0] not in self.consts:
                rows = output_index(act, self._const_shape(node.input[1])[-1], name)
                edits.append((node.input[1], 1, rows, "action columns of the weight (MatMul)"))
                self.last = node.name or node.output[0]
                break
            raise refuse(
                name,
                f"the action is written by {op} {node.name or node.output[0]!r}, not by a MatMul/Gemm with a "
                "constant weight followed by elementwise ops: the layer that writes the action cannot be identified",
            )

    def _const_edit_bias(self, key: str, rows: list[int], edits: list) -> None:
        shape = self._const_shape(key)
        size = int(np.prod(shape)) if shape else 1
        if size == len(rows):
            edits.append((key, len(shape) - 1, rows, "action entries (Gemm bias)"))
        elif size != 1:
            raise refuse(self.path.name, f"the action layer's bias {key!r} has shape {list(shape)}")

    def _apply(self, edits: list[tuple[str, int, Sequence[int], str]]) -> None:
        from onnx import numpy_helper

        used = [key for key, *_ in edits]
        for key in set(used):
            readers = self.consumers.get(key, [])
            if len(readers) > 1:
                raise refuse(
                    self.path.name,
                    f"the constant {key!r} is shared by {len(readers)} nodes; permuting it would change the others",
                )
        for key, axis, index, _ in edits:
            proto = self.consts[key]
            array = numpy_helper.to_array(proto)
            proto.CopyFrom(numpy_helper.from_array(np.take(array, list(index), axis=axis), proto.name))

    def describe(self) -> str:
        return f"first layer {self.first}, action layer {self.last}"

    def _run(self, model: bytes | Path, x: np.ndarray) -> np.ndarray:
        ort = onnxruntime()

        source = str(model.resolve()) if isinstance(model, Path) else model  # a path finds its external data
        session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
        inp = session.get_inputs()[0]
        batch = inp.shape[0] if isinstance(inp.shape[0], int) else None
        if batch is None or batch == len(x):
            return session.run(None, {inp.name: x})[0]
        return np.concatenate([session.run(None, {inp.name: x[i : i + 1]})[0] for i in range(len(x))])

    def compare(self, x: np.ndarray, x_new: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        expected = self._run(self.path, x)
        rows = output_index(self.reorder.action, expected.shape[1], self.path.name)
        return [(expected[:, rows], self._run(self.model.SerializeToString(), x_new))]

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_onnx(self.model, out, metadata)


class OnnxFormat(CheckpointFormat):
    """ONNX models run by onnxruntime (Isaac Lab's and rsl_rl's ``policy.onnx``, mjlab's exports)."""

    name = "onnx"
    policy = OnnxPolicy
    permutation = OnnxPermutation
    read_metadata = staticmethod(read_metadata)
    write_metadata = staticmethod(write_metadata)

    @classmethod
    def detect(cls, probe: Probe) -> bool:
        return probe.names is None and detect(probe.path, probe.head)
