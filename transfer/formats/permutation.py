"""What the per-format weight permutations of ``transfer convert`` share: the permutation they apply
(:class:`Permutation`, built by name as :class:`transfer.runs.convert.Reorder`), :class:`ConvertError`, and how a
conversion is refused.

Each format module (:mod:`~transfer.formats.torchscript`, :mod:`~transfer.formats.onnx`,
:mod:`~transfer.formats.rsl_rl`) has a permutation class: ``Cls(path, permutation)``, ``edit()`` (the lines of
what it permuted), ``compare(x, x_new)`` (original and converted outputs), ``describe()`` and ``save(out, metadata)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["RUNTIME_HINT", "ConvertError", "Permutation", "output_index", "refuse", "size_mismatch"]

RUNTIME_HINT = (
    "Run it with runtime reordering instead: transfer replay CHECKPOINT --target BACKEND --source CONVENTION "
    "(the checkpoint is fed its own order by name, each step)."
)


class ConvertError(ValueError):
    """A checkpoint cannot be converted: inputs that do not fit, or a graph whose layers cannot be identified."""


class Permutation(Protocol):
    """The index arrays of one conversion: ``new[..., j] = old[..., index[j]]`` (one entry per observation entry,
    one per action entry)."""

    observation: tuple[int, ...]
    action: tuple[int, ...]


# ---------------------------------------------------------------------------------------------------- refusals


def output_index(action: Sequence[int], rows: int, name: str) -> list[int]:
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


def size_mismatch(name: str, layer: str, reads: int, task: int) -> ConvertError:
    return ConvertError(
        f"{name} reads {reads} observation entries ({layer}), but the task's observation has {task}: is this the "
        "task's checkpoint and robot? Check --config and --asset."
    )


def refuse(name: str, why: str) -> ConvertError:
    return ConvertError(f"{name}: cannot convert: {why}. " + RUNTIME_HINT)
