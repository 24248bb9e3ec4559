"""ONNX: the graph walk from the observation input to the first MatMul/Gemm and back from the action output to
the last, and the edits of their initializers (and Constant nodes), through elementwise normalizer and output ops."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transfer.checkpoint import save_onnx
from transfer.runs.convert.order import Reorder, _output_index, _refuse, _size_mismatch

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
            raise _refuse(
                name,
                f"the graph has {len(inputs)} inputs and {len(g.output)} outputs; convert handles one observation "
                "input and one action output",
            )
        dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
        if dims and dims[-1] is not None and dims[-1] != len(obs):
            raise _size_mismatch(name, f"its input {inputs[0].name!r}", dims[-1], len(obs))
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
