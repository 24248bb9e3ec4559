"""Keeping stdout clean for data (tables, JSON) and the terminal quiet while engines print to the C-level streams."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "aligned",
    "ctrl_c_survives_usd_imports",
    "engine_output",
    "is_terminal",
    "os_error_text",
    "printable",
    "progress_bar",
    "quiet_warp",
    "stdout_to_stderr",
]

_TAIL = 4000  # characters of captured engine output shown when a command fails


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send stdout to stderr for the duration: Python's ``sys.stdout`` and what native code (PhysX, Warp)
    writes to file descriptor 1."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def quiet_warp() -> Iterator[None]:
    """Raise Warp's log level to warnings for the duration (Newton's import and finalize, and ovphysx's session
    reads that build Warp arrays, log at info level). Warp is imported here, not when this module is."""
    import warp as wp

    log_level = wp.config.log_level
    wp.config.log_level = max(log_level, wp.LOG_WARNING)
    try:
        yield
    finally:
        wp.config.log_level = log_level


@contextlib.contextmanager
def engine_output(verbose: bool = False) -> Iterator[TextIO]:
    """Keep what the engines and Warp print off the user's terminal, unless ``verbose``.

    Yields the stream for the user's own messages and progress bars: the terminal's stderr. Inside the block,
    stdout never receives engine output (it goes to stderr when ``verbose``, else to a temporary log with
    stderr's engine output, Python warnings and Warp's module-load lines). When the block raises, the log's
    tail is shown on the terminal before the error propagates, so nothing needed for a diagnosis is lost (not for
    Ctrl-C: the user stopped it, nothing failed; nor for transfer's own errors, which name their cause).
    Warp's global configuration is never touched.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    user = os.fdopen(os.dup(2), "w", buffering=1)
    log = None if verbose else tempfile.TemporaryFile()
    try:
        os.dup2(2 if log is None else log.fileno(), 1)
        if log is not None:
            os.dup2(log.fileno(), 2)
        with contextlib.redirect_stdout(sys.stderr):
            yield user
    except BaseException as exc:
        if log is not None and not isinstance(exc, KeyboardInterrupt) and not _names_its_cause(exc):
            sys.stderr.flush()
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - _TAIL))
            tail = log.read().decode(errors="replace").strip()
            if tail:
                user.write(f"--- engine output (last {min(size, _TAIL)} characters; --verbose shows all) ---\n")
                user.write(tail + "\n---\n")
        raise
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)
        user.close()
        if log is not None:
            log.close()


def _names_its_cause(exc: BaseException) -> bool:
    """Whether ``exc`` is one of transfer's own errors (a full disk, a trace or checkpoint refused, ...), whose one
    line says all: the engines' log shown before it would only bury it. An engine's error, or one the backends
    raise about it, keeps the log's tail."""
    module = type(exc).__module__
    return module.startswith("transfer.") and not module.startswith("transfer.backends")


def aligned(cells: list[list[str]], left: int | None = None) -> list[str]:
    """Rows of text cells as lines of a table: each column as wide as its widest cell, two spaces between; the
    first ``left`` columns left-aligned and the others right-aligned (``None``: all left), trailing blanks cut."""
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    keep = len(widths) if left is None else left
    return [
        "  ".join(
            c.ljust(w) if i < keep else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in cells
    ]


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (a progress bar's carriage returns belong there, not in a pipe or log)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_bar(items: Iterable[Any], progress: bool | TextIO, desc: str, unit: str, **options: Any) -> Any:
    """``items`` wrapped in a tqdm bar on a terminal; unwrapped elsewhere (logs and pipes get no carriage-return
    frames: the caller prints one plain line when done). ``progress``: ``False`` for none, ``True`` for stderr, or
    a stream. The bar has ``.set_postfix`` either way (a no-op without a bar)."""
    from tqdm import tqdm

    stream = progress if hasattr(progress, "write") else sys.stderr
    shown = progress is not False and is_terminal(stream)
    return tqdm(items, desc=desc, unit=unit, file=stream, disable=not shown, **options)


class _CtrlCAfterImport:
    """A meta-path finder wrapping the loaders of ``pxr.*`` modules: see :func:`ctrl_c_survives_usd_imports`."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not name.startswith("pxr.") or path is None:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _CtrlCAfterLoad(spec.loader)
        return spec


class _CtrlCAfterLoad:
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            self._loader.exec_module(module)
            return
        pressed: list[int] = []
        previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
        try:
            self._loader.exec_module(module)
        finally:
            signal.signal(signal.SIGINT, previous)
        if pressed and callable(previous):
            previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt here


def ctrl_c_survives_usd_imports() -> None:
    """Hold a Ctrl-C that lands while a ``pxr`` (USD) module is imported until the import is done, then deliver it.

    USD finishes each of its Python modules from C++ (``Tf_PyPostProcessModule``), which catches any Python error
    raised meanwhile and prints a warning: the ``KeyboardInterrupt`` of a Ctrl-C pressed then was lost, and the
    command ran on (measured: a replay interrupted 2 s after its start, while it imported pxr, ignored the
    key). Installed once by the command line; the main thread's SIGINT handler is swapped only for the length of a
    ``pxr`` import, and a SIGINT the process was started ignoring stays ignored."""
    if not any(isinstance(f, _CtrlCAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _CtrlCAfterImport())


PRINT_LIMIT = 2000
"""Characters of one value shown on a terminal; a longer one is cut, saying how long it was."""


def printable(text: Any, limit: int = PRINT_LIMIT) -> str:
    """``text`` safe to print: control characters (escape sequences that retitle or clear a terminal, a newline that
    would forge a line) written as escapes, and a value over ``limit`` characters cut with its length."""
    text = str(text)
    cut = len(text) > limit
    shown = text[:limit] if cut else text
    safe = "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown)
    return f"{safe}... ({len(text)} characters)" if cut else safe


ERROR_LIMIT = 20_000
"""Characters of one error message shown (a message quoting a 50 MB value stops there, with its length)."""


def shown(message: Any) -> str:
    """``message`` safe for a terminal in one piece: control characters that a file's content could carry into it
    (escape sequences, a carriage return) written as escapes; its own line breaks and indentation kept; cut at
    :data:`ERROR_LIMIT` characters with its length."""
    text = str(message)
    out = "\n".join(printable(line, ERROR_LIMIT) for line in text[:ERROR_LIMIT].split("\n"))
    return out + f"... ({len(text)} characters)" if len(text) > ERROR_LIMIT else out


def os_error_text(exc: OSError) -> str:
    """An OS error as one line: ``FILE: reason`` (not ``[Errno 2] No such file or directory: 'FILE'``), with what to
    do when the file lies in the cache folder."""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{exc.strerror}{_cache_hint(exc.filename)}"


def _cache_hint(filename: Any) -> str:
    """What to do when ``filename`` lies in the cache folder (converters, exports, compiled kernels) and failed."""
    if filename is None:
        return ""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    try:
        inside = Path(os.fsdecode(filename)).expanduser().absolute().is_relative_to(base.absolute())
    except (TypeError, ValueError, OSError):
        return ""
    return (
        (f" (the cache folder {base}: point XDG_CACHE_HOME at a folder you can write, or make this one writable)")
        if inside
        else ""
    )


def print_error(message: Any) -> None:
    """``error: message`` on stderr (:func:`shown`; an OS error by :func:`os_error_text`), after whatever stdout
    holds."""
    if isinstance(message, OSError) and message.strerror and message.filename is not None:
        message = os_error_text(message)
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe, a full or closed stdout: the error still goes out
        pass
    try:
        print(f"error: {shown(message)}", file=sys.stderr)
    except (OSError, ValueError):  # stderr closed or full: the exit status says it
        pass
