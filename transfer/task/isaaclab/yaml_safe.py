"""Isaac Lab's ``params/*.yaml`` dumps read as plain data (:func:`load_isaaclab_yaml`).

The dump holds Python tags (``!!python/tuple``, ``!!python/object/apply:builtins.slice``, ...). They are read with
a :class:`yaml.SafeLoader` subclass that turns the known harmless ones (:data:`HARMLESS_TAGS`) into plain values
and refuses every other Python tag, naming it and its line: nothing is imported, constructed or executed, and the
``.pkl`` files Isaac Lab writes beside the YAML are never opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer.errors import read_config_text, strict_loader, yaml_problem, yaml_slice
from transfer.task._checks import TaskError

_PYTHON_TAG = "tag:yaml.org,2002:python/"

HARMLESS_TAGS: Mapping[str, str] = MappingProxyType(
    {
        "!!python/tuple": "a tuple",
        "!!python/object/apply:builtins.slice": "a slice of integers or nulls (Isaac Lab's joint_ids: slice(None))",
        "!!python/none": "null",
        "!!python/bool": "a boolean",
        "!!python/int": "an integer",
        "!!python/long": "an integer",
        "!!python/float": "a number",
        "!!python/str": "a string",
        "!!python/unicode": "a string",
        "!!python/list": "a list",
        "!!python/dict": "a mapping",
    }
)
"""The Python tags read from a run's YAML, and what each becomes. Any other ``!!python/...`` tag is refused."""


class IsaacLabError(TaskError):
    """An Isaac Lab run folder cannot be read safely, or its configuration does not map onto a task."""


def _loader() -> type:
    import yaml

    class IsaacLabLoader(strict_loader()):  # type: ignore[misc,valid-type]
        """SafeLoader plus the harmless Python tags of an Isaac Lab dump; every other Python tag is refused, and so is
        a key given twice in one mapping (a second ``dt:`` would silently replace the first)."""

    def refuse(loader: Any, suffix: str, node: Any) -> Any:
        raise _Refused(f"!!python/{suffix}", node.start_mark.line + 1)

    def tuple_(loader: Any, node: Any) -> tuple:
        if not isinstance(node, yaml.SequenceNode):
            raise _Refused("!!python/tuple (not on a sequence)", node.start_mark.line + 1)
        return tuple(loader.construct_sequence(node, deep=True))

    safe = yaml.SafeLoader
    for tag, build in {
        "tuple": tuple_,
        "object/apply:builtins.slice": yaml_slice,
        "none": safe.construct_yaml_null,
        "bool": safe.construct_yaml_bool,
        "int": safe.construct_yaml_int,
        "long": safe.construct_yaml_int,
        "float": safe.construct_yaml_float,
        "str": safe.construct_yaml_str,
        "unicode": safe.construct_yaml_str,
        "list": safe.construct_yaml_seq,
        "dict": safe.construct_yaml_map,
    }.items():
        IsaacLabLoader.add_constructor(_PYTHON_TAG + tag, build)
    IsaacLabLoader.add_multi_constructor(_PYTHON_TAG, refuse)
    return IsaacLabLoader


class _Refused(Exception):
    def __init__(self, tag: str, line: int):
        super().__init__(tag, line)
        self.tag, self.line = tag, line


def load_isaaclab_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping an Isaac Lab ``params/*.yaml`` dump holds, read without constructing any Python object.

    :data:`HARMLESS_TAGS` become plain values (tuples, slices, numbers, strings, lists, mappings); any other
    Python tag (``!!python/object:...``, ``!!python/object/apply:...``, ``!!python/name:...``, ...) or unknown tag
    raises :class:`IsaacLabError` naming the tag and its line. Raises ``FileNotFoundError`` for a missing file.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Isaac Lab config not found: {path}")
    try:
        text = read_config_text(path, IsaacLabError, "run's configuration")
        data = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except _Refused as exc:
        raise IsaacLabError(
            f"{path}, line {exc.line}: refused the YAML tag {exc.tag}. transfer reads a run's configuration as "
            f"plain data only: it accepts the harmless tags {', '.join(HARMLESS_TAGS)} and never imports, "
            "constructs or runs anything a file names (nor loads the .pkl files beside it). Remove that value "
            "from the file, or describe the task in a task file (--config)."
        ) from None
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise IsaacLabError(
            f"{path}{line}: refused: {exc.problem}. Only plain YAML and the tags {', '.join(HARMLESS_TAGS)} are read."
        ) from None
    except UnicodeDecodeError:
        raise IsaacLabError(f"{path}: not a text (UTF-8 YAML) file") from None
    except yaml.YAMLError as exc:
        raise IsaacLabError(f"{path}: not valid YAML, {yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise IsaacLabError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data
