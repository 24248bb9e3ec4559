"""The command line's own checks, run on a parsed command before any work starts (:func:`check_command`).

A field of a command's dataclass declares what its value must be with one marker in its annotation, beside tyro's
own ``tyro.conf.arg``::

    seconds: Annotated[float, DURATION] = 10.0
    plot: Annotated[Path | None, tyro.conf.arg(metavar="FILE.png"), PLOT] = None

:func:`check_command` reads the markers and raises :class:`UsageError` naming the flag (``--seconds``, ``-o``, or
a positional's value alone), the value and what to give instead. Numbers are finite and in range; input files
exist and are files, not folders; output files and folders can be written where they are named (their folder
exists and is writable, a file is not an existing folder, nor a folder an existing file) and carry a suffix
that says their format. Only the standard library and ``tyro`` are imported here (``yaml`` inside the one
function that reads an order file, :mod:`transfer.robot.assets`, standard library alone, inside the one that locates a
``<package>:<name>`` asset).
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tyro

__all__ = [
    "ASSET",
    "CONFIG",
    "DURATION",
    "ENVS",
    "FRAME_RATE",
    "ITERATIONS",
    "ORDER",
    "PLOT",
    "PORT",
    "VIDEO",
    "Reads",
    "ROBOT",
    "SAMPLES",
    "SCALE",
    "SEED",
    "TRACE",
    "VELOCITY",
    "InputFile",
    "Number",
    "Order",
    "OutputDir",
    "OutputFile",
    "UsageError",
    "check_command",
    "check_output_dir",
    "check_output_file",
]


class UsageError(ValueError):
    """A command-line value that cannot be right, found before any work started."""

    def __init__(self, message: str) -> None:
        super().__init__(message.strip())  # a positional has no flag: its message starts with the value


@dataclass(frozen=True)
class Number:
    """A number (or each number of a tuple) that must be finite, ``>= low`` (``> low`` with ``above``) and
    ``<= high``; ``integer`` only changes the wording."""

    low: float | None = None
    above: bool = False
    high: float | None = None
    integer: bool = False

    def problem(self, value: float) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            return self.expected()
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return self.expected()
        if self.high is not None and value > self.high:
            return self.expected()
        return None

    def expected(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        fmt = (lambda v: str(int(v))) if self.integer else (lambda v: f"{v:g}")
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>' if self.above else '>='} {fmt(self.low)}")
        if self.high is not None:
            bounds.append(f"<= {fmt(self.high)}")
        return f"{kind}{' ' + ' and '.join(bounds) if bounds else ''}"


ENVS = Number(1, high=65_536, integer=True)
"""Environments simulated at once (the bound keeps a typo from exhausting memory before anything runs)."""
ITERATIONS = Number(1, high=1_000_000, integer=True)
"""PPO iterations."""
SAMPLES = Number(1, high=10_000, integer=True)
"""Random states written one by one into both engines."""
DURATION = Number(0, above=True, high=86_400)
"""Simulated seconds that must be longer than zero (at most a simulated day)."""
TRACE = Number(0, high=86_400)
"""Simulated seconds where 0 turns the thing off."""
VELOCITY = Number(-100, high=100)
"""A velocity command entry (m/s or rad/s): finite, and of a size a robot can track."""
SCALE = Number(0, high=100)
"""A scale where 0 turns the thing off and 1 is the default."""
SEED = Number(0, high=2**32 - 1, integer=True)
"""Seeds numpy and torch accept alike."""
WORKERS = Number(1, high=4096, integer=True)
"""Ray workers (CPU slots) of a sweep or a diagnosis."""
FRAME_RATE = Number(0, above=True, high=10_000)
"""A clip's frames per second (mocap retargets: 30 to 120)."""
ROWS = Number(0, high=1_000_000, integer=True)
"""Rows of a table to print."""
PORT = Number(1, high=65_535, integer=True)
"""A TCP port (transfer view's page)."""
SECONDS_OR_NONE = Number(0, above=True, high=86_400)
"""How long a page is served (s)."""


@dataclass(frozen=True)
class InputFile:
    """A file that must exist and not be a folder; ``what`` says what it is, for the message. ``hints``: a robot
    asset, where ``<package>:<name>`` (a file shipped in an installed engine package) names a file too."""

    what: str
    hints: bool = False


@dataclass(frozen=True)
class Reads:
    """A file (or run folder) the command reads that is checked elsewhere (a checkpoint: its format decides): no
    output of the same command may be written over it."""

    what: str


@dataclass(frozen=True)
class OutputFile:
    """A file the command writes: its folder exists and is writable, it is not a folder, and its suffix is one of
    ``suffixes`` (the format it will be written in)."""

    suffixes: tuple[str, ...]
    what: str = "file"


@dataclass(frozen=True)
class OutputDir:
    """A folder the command writes into (created with its parents): not an existing file, and the nearest folder
    that exists is writable."""


@dataclass(frozen=True)
class Order:
    """A joint order: a convention name, or a file listing joint names (YAML list)."""


ASSET = InputFile("the robot's USD, MJCF (.xml) or URDF (.urdf) file", hints=True)
ROBOT = ASSET
"""A positional robot file (inspect, validate, task): USD, or MJCF/URDF converted by ``transfer.robot.assets``."""
CONFIG = InputFile("a task file (presets/tasks/*.yaml) or a Newton policy YAML")
PLOT = OutputFile((".png", ".pdf", ".svg", ".jpg", ".jpeg"), "plot")
VIDEO = OutputFile((".mp4",), "video")
"""A video (``replay --video``): MP4."""
"""A plot: matplotlib writes the format its suffix names (without one it would add ``.png`` behind your back)."""
ORDER = Order()


def _label(field: dataclasses.Field, metadata: tuple[Any, ...]) -> str:
    """How the user spelt the field: ``--num-envs``, ``-o``; nothing for a positional (the value speaks)."""
    config = next((m for m in metadata if hasattr(m, "aliases") and hasattr(m, "metavar")), None)
    if any(m is tyro.conf.Positional for m in metadata):
        return ""
    if config is not None and config.aliases:
        return config.aliases[0]
    return "--" + field.name.replace("_", "-")


def _metadata(hint: Any) -> tuple[Any, ...]:
    return tuple(getattr(hint, "__metadata__", ()))


def check_command(cmd: Any, argv: list[str] | None = None) -> None:
    """Check every marked field of the parsed command ``cmd`` (a dataclass); raise :class:`UsageError` on the first
    value that cannot be right. ``argv``: the arguments as typed (a path's trailing ``/``, which parsing drops)."""
    hints = typing.get_type_hints(type(cmd), include_extras=True)
    marked: list[tuple[Any, str, Any]] = []
    for field in dataclasses.fields(cmd):
        metadata = _metadata(hints.get(field.name))
        value = getattr(cmd, field.name)
        if value is None:
            continue
        for marker in metadata:
            if isinstance(marker, OutputFile) and any(a == f"{value}/" or a.endswith(f"={value}/") for a in argv or ()):
                # "out.parquet/" wrote the file out.parquet
                raise UsageError(
                    f"{_label(field, metadata)} {value}/ names a folder (it ends in /); give the "
                    f"{marker.what}'s file path, without the trailing /"
                )
            if isinstance(marker, (Number, InputFile, OutputFile, OutputDir, Order, Reads)):
                several = isinstance(value, tuple) and not isinstance(marker, Number)  # files given one or more times
                for one in value if several else (value,):
                    _check(marker, _label(field, metadata), one)
                    marked.append((marker, _label(field, metadata), one))
    _check_not_inputs(marked)


def _check_not_inputs(marked: list[tuple[Any, str, Any]]) -> None:
    """No output file is a file the same command reads (by path, symbolic link or hard link; ``--force`` or not):
    the checkpoint, a config, a file of joint names, the robot and every file the robot is read from."""
    outputs = [(flag, Path(v)) for m, flag, v in marked if isinstance(m, OutputFile) and Path(v).exists()]
    if not outputs:  # nothing there to write over: no input can be hurt
        return
    from transfer.formats.checkpoint import OVER_AN_INPUT
    from transfer.robot.usd_files import which_read

    reads = [
        (f"{flag} {v}" if flag else f"the input {v}", Path(v))
        for m, flag, v in marked
        if isinstance(m, (InputFile, Reads)) or (isinstance(m, Order) and Path(str(v)).is_file())
    ]
    robots = [Path(v) for m, _, v in marked if isinstance(m, InputFile) and m.hints and Path(v).is_file()]
    for flag, out in outputs:
        hit = which_read(out, reads, robots)
        if hit is not None:
            raise UsageError(f"{flag} {out} is {hit}: {OVER_AN_INPUT}")


def _check(marker: Any, flag: str, value: Any) -> None:
    if isinstance(marker, Number):
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            problem = marker.problem(v)
            if problem is not None:
                shown = " ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in values)
                need = "each value must be" if len(values) > 1 else "expected"
                raise UsageError(f"{flag} {shown}: {need} {problem}")
    elif isinstance(marker, InputFile):
        if marker.hints and _located(flag, str(value)):
            return
        check_input_file(flag, Path(value), marker.what)
    elif isinstance(marker, OutputFile):
        check_output_file(flag, Path(value), marker.suffixes, marker.what)
    elif isinstance(marker, OutputDir):
        check_output_dir(flag, Path(value))
    elif isinstance(marker, Order):
        check_order(flag, str(value))


def _located(flag: str, value: str) -> bool:
    """Whether ``value`` is a ``<package>:<name>`` asset hint that names a file (``UsageError`` when it names none)."""
    from transfer.robot.assets import locate_asset, package_hint

    if package_hint(value) is None:
        return False
    try:
        locate_asset(value)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(f"{flag} {exc}") from None
    return True


def _shown(path: Path) -> str:
    from transfer._console import printable

    return "'.' (the current folder, which an empty path also names)" if str(path) == "." else printable(path, 400)


SPECIAL = "not a regular file (a FIFO, a device or a socket)"


def check_input_file(flag: str, path: Path, what: str) -> None:
    """``path`` exists and is a regular file (a FIFO would block the read, a device never end it)."""
    if path.is_dir():
        raise UsageError(f"{flag} {_shown(path)} is a folder; give {what}")
    if not path.exists():
        where = "" if path.is_absolute() else f" (relative paths start at {Path.cwd()})"
        link = " (a symbolic link that leads to no file)" if path.is_symlink() else ""
        raise UsageError(f"{flag} {_shown(path)}: file not found{link}{where}; give {what}")
    if not path.is_file():
        raise UsageError(f"{flag} {_shown(path)}: {SPECIAL}; give {what}")


def _writable(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (None when a file can be): tried, not guessed from permissions."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def check_output_file(flag: str, path: Path, suffixes: tuple[str, ...] = (), what: str = "file") -> None:
    """``path`` can be written as a file: not a folder, its folder exists and takes files, its suffix is known."""
    if path.is_dir():
        example = path / f"{what}{suffixes[0] if suffixes else ''}"
        raise UsageError(f"{flag} {_shown(path)} is a folder; give the {what}'s file path, e.g. {example}")
    if path.exists() and not path.is_file():
        raise UsageError(f"{flag} {_shown(path)}: {SPECIAL}; an output replaces only a regular file: give another path")
    if path.is_symlink() and not path.exists():
        raise UsageError(
            f"{flag} {_shown(path)} is a symbolic link that leads to no file; remove it, or give another path"
        )
    if suffixes and path.suffix.lower() not in suffixes:
        raise UsageError(
            f"{flag} {path}: the suffix says the format; give a {what} name ending in {', '.join(suffixes)}"
        )
    parent = path.parent
    if not parent.is_dir():
        state = "is a file" if parent.exists() else "does not exist"
        raise UsageError(f"{flag} {path}: the folder {parent} {state}; create the folder or give another path")
    reason = _writable(parent)
    if reason is not None:
        raise UsageError(f"{flag} {path}: cannot write in {parent} ({reason}); give a path in a writable folder")
    if what == "plot":  # before the run: a file of the user's there would be refused only once the run was done
        from transfer.traces.figures import check_destination

        try:
            check_destination(path)
        except ValueError as exc:
            raise UsageError(str(exc).replace("--plot", flag, 1)) from None


def check_output_dir(flag: str, path: Path) -> None:
    """``path`` can be used (or created) as a folder."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a folder; give a folder for the output (new or empty)")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{flag} {path}: {existing} is a file, so the folder cannot be created there")
    reason = _writable(existing)
    if reason is not None:
        raise UsageError(f"{flag} {path}: cannot write in {existing} ({reason}); give a folder you can write to")


def check_order(flag: str, value: str) -> None:
    """A convention name, or a readable YAML file listing joint names."""
    from transfer.ordering import convention_list, parse_ordering

    conventions = convention_list()
    path = Path(value)
    if path.is_dir():
        raise UsageError(
            f"{flag} {_shown(path)} is a folder; give a convention ({conventions}) or a file of joint names"
        )
    if path.exists() and not path.is_file():
        raise UsageError(
            f"{flag} {_shown(path)}: {SPECIAL}; give a convention ({conventions}) or a file of joint names"
        )
    if path.is_file():
        from transfer.ordering import read_name_file

        try:
            read_name_file(path)
        except ValueError as exc:
            raise UsageError(f"{flag} {exc}") from None
        return
    try:
        parse_ordering(value)
    except ValueError:
        raise UsageError(
            f"{flag} {value!r}: not a convention ({conventions}) and not a file listing joint names"
        ) from None


def _backend_choices() -> tuple[Any, str]:
    from transfer.backends import backend_names

    names = backend_names()
    return typing.Literal[names], "{" + ",".join(names) + "}"  # type: ignore[valid-type]


Backend, BACKEND_METAVAR = _backend_choices()
"""A backend name argument: the registry's names are the choices (a new backend is one more choice)."""
