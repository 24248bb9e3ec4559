"""How ``--help`` reads: one default per flag, paragraphs that flow, examples kept as written, a short command list.

- :data:`DEFAULT_IN_TEXT` marks a flag whose help says its default in words (``default: the task's``): tyro's own
  ``(default: None)`` would follow it, a second default saying less.
- :func:`readable_docstrings` joins a docstring's wrapped lines into one paragraph: tyro (1.0) keeps the line break
  before every line that starts with anything but a letter, and a field docstring's continuation lines start with
  their indentation, so each flag's help broke where the source did. A blank line still ends a paragraph; a line
  indented deeper than its paragraph (an example command in a command's docstring) and a ``- `` item keep their own
  line.
- :func:`subcommand_union` is the type tyro parses: each command by name, described in full on its own ``--help``
  (examples and the doc page to read), by its first paragraph alone in ``transfer --help``'s list.
"""

from __future__ import annotations

import inspect
import typing
from typing import Annotated, Any, Union

import tyro

__all__ = ["DEFAULT_IN_TEXT", "examples", "readable_docstrings", "subcommand_union", "summary"]

DEFAULT_IN_TEXT = tyro.conf.arg(help_behavior_hint="")
"""A flag's help says its default itself: tyro adds no ``(default: ...)`` of its own."""


def _joined(text: str) -> str:
    """``text`` with each paragraph's wrapped lines joined (:func:`readable_docstrings`)."""
    out: list[str] = []
    for line in inspect.cleandoc(text).split("\n"):
        if not line.strip():
            if out and out[-1]:
                out.append("")
        elif out and out[-1] and not out[-1].startswith(" ") and not line.startswith((" ", "- ", "* ")):
            out[-1] += " " + line.strip()
        else:
            out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def readable_docstrings() -> None:
    """Have tyro join docstring lines as :func:`_joined` does (once; a tyro without the helper is left as it is)."""
    from tyro import _strings

    if callable(getattr(_strings, "remove_single_line_breaks", None)):
        _strings.remove_single_line_breaks = _joined


def summary(command: type) -> str:
    """The first paragraph of a command's docstring, on one line (``transfer --help``'s list)."""
    return _joined(inspect.getdoc(command) or "").split("\n\n")[0]


def examples(command: type) -> list[str]:
    """The example command lines of a command's docstring (its indented lines that start with ``transfer``), as
    typed."""
    return [line.strip() for line in (inspect.getdoc(command) or "").splitlines() if line.startswith("  transfer ")]


def subcommand_union(commands: dict[str, Any], args: list[str]) -> Any:
    """The commands (name -> dataclass, or the dataclass under tyro markers) as tyro's subcommands. When ``args``
    name no command (``transfer --help``, a mistyped name), each is listed by its :func:`summary`; a command's own
    ``--help`` shows its whole docstring."""
    listing = not any(arg in commands for arg in args)
    choices = [
        Annotated[
            Any,
            tyro.conf.subcommand(
                name=name, constructor=command, description=summary(_dataclass(command)) if listing else None
            ),
        ]
        for name, command in commands.items()
    ]
    if len(choices) == 1:  # the one command the line names (the others not imported): tyro still parses a union
        choices.append(Annotated[Any, tyro.conf.subcommand(name="(none)", constructor=_NoCommand), tyro.conf.Suppress])
    return Union[tuple(choices)]  # noqa: UP007 - built at run time from a tuple


class _NoCommand:
    """The hidden second member of a one-command :func:`subcommand_union` (a union of one is that one type alone,
    and tyro would parse the command's flags with no command name before them)."""


def _dataclass(command: Any) -> type:
    """The dataclass under ``Annotated[...]`` markers (``tyro.conf.FlagCreatePairsOff[Replay]``)."""
    return typing.get_args(command)[0] if typing.get_origin(command) is Annotated else command
