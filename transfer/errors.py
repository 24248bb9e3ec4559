"""Errors shared by every floor: a package the work needs is not installed; a YAML file that does not parse.

:class:`MissingPackageError` is an :class:`ImportError` whose message names the package, what needs it and the
command that installs it; the command line prints it as one line (never a traceback). :func:`yaml_problem` says
where and why a YAML file did not parse, in one line, for every reader's error.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = [
    "MAX_CONFIG_BYTES",
    "MissingPackageError",
    "SLICE_TAG",
    "read_config_text",
    "read_yaml_mapping",
    "slice_loader",
    "strict_json",
    "strict_loader",
    "yaml_problem",
    "yaml_slice",
]


class MissingPackageError(ImportError):
    """``package`` is not installed; ``needed_for`` says what needs it, ``install`` the command that installs it."""

    def __init__(self, package: str, needed_for: str, install: str, message: str | None = None) -> None:
        self.package, self.needed_for, self.install = package, needed_for, install
        message = message or (
            f"{needed_for} needs the Python package {package!r}, which is not installed. Install it with: {install}"
        )
        super().__init__(message, name=package)


def yaml_problem(exc: Exception) -> str:
    """One line for a PyYAML parse error: ``line L, column C: what was wrong (while ...)``, 1-based as editors
    count; the exception's text when it carries no position."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}"
    return f"{where}: {problem}" + (f" ({context})" if context else "")


_FLOAT_12 = r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"
"""A number with an exponent as YAML 1.2 (and every user) reads it: ``1e9``, ``1.0e9``, ``5e-3``; PyYAML's YAML 1.1
wants a dot and a signed exponent (``1.0e+9``) and reads the others as text."""


def strict_loader(base: type | None = None) -> type:
    """A :class:`yaml.SafeLoader` (or a subclass ``base``) that refuses a mapping naming one key twice (plain YAML
    keeps the last one silently: a task file's second ``decimation:`` replaced the first) and reads ``1e9`` as the
    number it means. Keys a merge (``<<: *base``) brings in may be overridden, as YAML means them to be."""
    import re

    import yaml

    class StrictLoader(base or yaml.SafeLoader):  # type: ignore[misc,valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    if not isinstance(key, (str, int, float, bool)):
                        continue  # an unhashable key is refused by the constructor itself
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"the key {key!r} is given twice in one mapping (which one is meant?)",
                            key_node.start_mark,
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(_FLOAT_12), list("-+0123456789."))
    return StrictLoader


PYTHON_TAG = "tag:yaml.org,2002:python/"
SLICE_TAG = "!!python/object/apply:builtins.slice"
"""The one Python tag a deploy config may hold: PyYAML writes ``slice(None)`` (Isaac Lab's ``SceneEntityCfg``
default ``joint_ids``, which Unitree's ``export_deploy_cfg`` dumps) as ``!!python/object/apply:builtins.slice
[null, null, null]``."""


@functools.cache
def _tag_refused() -> type:
    """The error a refused tag raises (a class made once, so that ``yaml`` is imported only when a file is read)."""
    import yaml

    class TagRefused(yaml.constructor.ConstructorError):
        """A YAML tag read and refused (a Python tag other than :data:`SLICE_TAG`, or a malformed slice)."""

    return TagRefused


def yaml_slice(loader: Any, node: Any) -> slice:
    """The slice a ``!!python/object/apply:builtins.slice [start, stop, step]`` node names: 1 to 3 integers or nulls
    (what Python's ``slice`` takes); anything else is refused as a :class:`yaml.constructor.ConstructorError`."""
    import yaml

    args = loader.construct_sequence(node, deep=True) if isinstance(node, yaml.SequenceNode) else None
    if args is None or not 1 <= len(args) <= 3 or not all(a is None or type(a) is int for a in args):
        got = "a mapping or scalar" if args is None else f"{len(args)} arguments {args!r}"[:80]
        raise _tag_refused()(
            None,
            None,
            f"{SLICE_TAG} takes a list of 1 to 3 integers or nulls (start, stop, step); got {got}",
            node.start_mark,
        )
    return slice(*args)


def slice_loader() -> type:
    """:func:`strict_loader` that also reads :data:`SLICE_TAG` as the slice it names, and refuses every other Python
    tag (``!!python/object/apply:os.system``, ``!!python/tuple``, ...) naming it: nothing is imported, constructed or
    run. For deploy configs (Unitree's ``deploy.yaml``) and task files."""

    class SliceLoader(strict_loader()):  # type: ignore[misc,valid-type]
        pass

    def refuse(loader: Any, suffix: str, node: Any) -> Any:
        raise _tag_refused()(
            None,
            None,
            f"the tag !!python/{suffix} is refused: transfer reads a configuration as plain data, and of "
            f"Python's tags only {SLICE_TAG} (a slice of integers or nulls); remove that value",
            node.start_mark,
        )

    SliceLoader.add_constructor(PYTHON_TAG + SLICE_TAG.removeprefix("!!python/"), yaml_slice)
    SliceLoader.add_multi_constructor(PYTHON_TAG, refuse)
    return SliceLoader


class _KeyTwice(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _KeyTwice(f"the key {key!r} is given twice in one object (which one is meant?)")
        out[key] = value
    return out


def strict_json(text: str | bytes) -> Any:
    """``json.loads`` that refuses an object naming one key twice (plain JSON keeps the last one silently: a second
    ``joint_names`` would replace the first). Raises ``ValueError`` (a ``json.JSONDecodeError`` for bad JSON)."""
    import json

    return json.loads(text, object_pairs_hook=_unique_pairs)


MAX_CONFIG_BYTES = 2 * 1024 * 1024
"""The largest configuration file read (a task file, a sweep spec, a run's params/*.yaml, a joint-name list: all
kilobytes; Isaac Lab's env.yaml dumps ~100 KB): a larger one is refused by its size, before it is parsed (YAML
parses about 40,000 list entries a second here: a file of this size, a few seconds)."""


def read_config_text(path: Any, error: type[Exception], what: str = "configuration file") -> str:
    """The text of the configuration file ``path``, refused by ``error`` (naming the file) when it is larger than
    :data:`MAX_CONFIG_BYTES`: a 200 MB YAML took a minute and 0.5 GB to parse before it was refused."""
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise error(
            f"{path}: {size / 2**20:.0f} MiB is more than a {what} holds ({MAX_CONFIG_BYTES // 2**20} MiB at "
            "most); give the file itself"
        )
    return path.read_text(encoding="utf-8")


def read_yaml_mapping(path: Any, error: type[Exception], expected: str, loader: type | None = None) -> dict[str, Any]:
    """The YAML mapping in the file ``path`` (read safely, by ``loader``: :func:`strict_loader` unless given); anything
    else raises ``error`` in one line naming the file: not UTF-8 text, not YAML (:func:`yaml_problem`), a tag refused,
    or not a mapping (``expected`` says what the file should hold)."""
    import yaml

    try:
        data = yaml.load(read_config_text(path, error), Loader=loader or strict_loader())  # noqa: S506 - a SafeLoader
    except UnicodeDecodeError:
        raise error(f"{path}: not a text (UTF-8 YAML) file") from None
    except _tag_refused() as exc:
        raise error(f"{path}: {yaml_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML, {yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {expected}, got {type(data).__name__}")
    return data
