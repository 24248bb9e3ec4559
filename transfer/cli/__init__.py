"""The ``transfer`` command line: thin commands over the API (each prints tables or JSON, draws plots).

- ``transfer inspect``: every convention's order of an asset (:mod:`transfer.cli.inspect`);
- ``transfer replay``: a checkpoint on a backend, reordered, naive or compared (:mod:`transfer.cli.replay`);
- ``transfer verify``: the transfer checklist on both backends, exit 0 or 1 (:mod:`transfer.cli.verify`);
- ``transfer train``: PPO on a task, on any backend, checkpoints that know their order (:mod:`transfer.cli.train`);
- ``transfer info``: a checkpoint's format, sizes and metadata (:mod:`transfer.cli.info`);
- ``transfer convert``: a checkpoint rewritten to another joint order, with metadata (:mod:`transfer.cli.convert`);
- ``transfer validate``: the joint_movement test on both engines and the robot profile (:mod:`transfer.cli.validate`);
- ``transfer task``: a starting task file for a robot asset (:mod:`transfer.cli.task`);
- ``transfer import``: an MJCF or URDF robot converted to a USD file (:mod:`transfer.cli.asset_import`).
- ``transfer sweep``: many checkpoints x engines x seeds x perturbations on Ray (:mod:`transfer.cli.sweep`).
- ``transfer diagnose``: why a checkpoint behaves differently on another engine (:mod:`transfer.cli.diagnose`).
- ``transfer traces``: two recorded traces lined up by name and time (:mod:`transfer.cli.traces`).
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any

__all__ = ["default_asset", "entry", "finish", "inspect_asset", "main"]


def __getattr__(name: str) -> Any:
    """``default_asset`` and ``inspect_asset`` load :mod:`transfer.cli.inspect` on first use: importing this package
    stays quick, so that :func:`main` has its handlers in place before tyro and the commands are imported."""
    if name in ("default_asset", "inspect_asset"):
        from transfer.cli import inspect as inspect_command

        return getattr(inspect_command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


COMMANDS = {
    "inspect": ("inspect", "Inspect"),
    "replay": ("replay", "Replay"),
    "verify": ("verify", "Verify"),
    "train": ("train", "Train"),
    "info": ("info", "Info"),
    "convert": ("convert", "Convert"),
    "export": ("export", "Export"),
    "validate": ("validate", "Validate"),
    "task": ("task", "TaskFile"),
    "import": ("asset_import", "Import"),
    "sweep": ("sweep", "Sweep"),
    "diagnose": ("diagnose", "Diagnose"),
    "traces": ("traces", "Traces"),
    "view": ("view", "View"),
}
"""Each subcommand: its module under :mod:`transfer.cli` and its dataclass (the runner: ``run_<name>`` there)."""


def _commands(args: list[str] | None = None) -> tuple[dict[str, Any], dict[type, Any]]:
    """The subcommands (name -> tyro type) and each command's runner. Where ``args`` (the command line's arguments)
    start with a command's name, that command alone is imported (the others' imports cost ~0.1 s); otherwise (no
    command, ``--help``, a mistyped name) all of them, for tyro to list."""
    from importlib import import_module

    import tyro

    names = [args[0]] if args and args[0] in COMMANDS else list(COMMANDS)
    subcommands, runners = {}, {}
    for name in names:
        module_name, class_name = COMMANDS[name]
        module = import_module(f"transfer.cli.{module_name}")
        command = getattr(module, class_name)
        subcommands[name] = tyro.conf.FlagCreatePairsOff[command]
        runners[command] = getattr(module, f"run_{name}")
    return subcommands, runners


DESCRIPTION = (
    "Run a policy trained on one physics backend on another, every vector matched by name. "
    "`transfer COMMAND --help` shows a command's flags, examples to run from the repository root and the page of "
    "docs/ to read; docs/index.md is where to start."
)
"""What ``transfer --help`` says above the list of commands."""

_CHILD = "TRANSFER_CHILD_PROCESS"
_PARENT = "TRANSFER_PARENT_PID"
_CHILD_COMMAND = [sys.executable, "-m", "transfer.cli"]
"""What :func:`entry` runs as the child (the command line's arguments appended)."""


def entry() -> int:
    """The ``transfer`` console script: :func:`main` in a child process, so that a native crash inside an engine (a
    segmentation fault, a bus error, an abort) ends in one line naming the signal, not in the shell's "core dumped",
    and the exit status says it (128 + the signal, as a shell reports it). SIGINT (Ctrl-C), SIGTERM and SIGHUP are
    passed on to the child's process group. The child and everything it starts (Ray and its workers, the engines,
    the converters) get a temporary folder of their own as ``TMPDIR``, removed once the child has ended however it
    ended (Ctrl-C included): ``$TMPDIR`` holds nothing of a run afterwards. ``TRANSFER_CHILD_PROCESS=1`` (set for the
    child) runs :func:`main` here; so does any platform without POSIX signals."""
    if os.environ.get(_CHILD) or os.name != "posix":
        _end_with_the_parent()
        return main()
    import shutil
    import tempfile

    scratch = tempfile.mkdtemp(prefix="transfer-")
    try:
        return _supervise(
            {**os.environ, _CHILD: "1", _PARENT: str(os.getpid()), "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch}
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _end_with_the_parent() -> None:
    """In the child: a SIGTERM when the console script that started it dies (``kill -9`` of it left the run going
    on, writing its outputs, with no one to report to). Linux's ``PR_SET_PDEATHSIG``; elsewhere nothing."""
    if not os.environ.get(_CHILD) or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = os.environ.pop(_PARENT, None)  # this process's alone: what it starts has another parent
    if parent and parent != str(os.getppid()):  # the parent died before the call took effect
        os.kill(os.getpid(), signal.SIGTERM)


def finish(code: int) -> None:
    """End ``python -m transfer.cli`` with ``code``. The child (:func:`entry`) skips the interpreter's teardown once
    its work is done: the exit handlers run (Ray's shutdown among them), the logs and both streams are flushed, then
    the process ends at once. Tearing down the modules an engine imported (Newton's and MuJoCo-Warp's ~2,000 Warp
    kernels, torch) took ~2.7 s of a 10 s Newton replay and wrote nothing (issue 33). Anything else exits as usual."""
    if not os.environ.get(_CHILD) or os.name != "posix":
        sys.exit(code)
    import atexit
    import logging

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; without it, the usual exit
    if run_exit_handlers is None:
        sys.exit(code)
    run_exit_handlers()
    logging.shutdown()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _closed_pipe()
    except (OSError, ValueError):
        pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def _supervise(env: dict[str, str]) -> int:
    """Run :func:`main` in a child of ``env``, pass it the signals, and say how it ended (:func:`entry`)."""
    import signal
    import subprocess

    # The child leads a process group of its own: a Ctrl-C reaches this process (the terminal's foreground group),
    # which hands it on, once, to the child and everything the child started (converters, Ray workers).
    passed = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in passed}
    started: list[Any] = []
    received: list[int] = []
    forwarded: list[int] = []

    def forward(sig: int, _frame: Any) -> None:
        received.append(sig)
        if started and started[0].poll() is None:
            forwarded.append(sig)
            try:
                os.killpg(started[0].pid, sig)
            except ProcessLookupError:
                pass

    for sig in passed:  # before the child starts: exec gives it the default handlers again (an ignored one stays)
        if previous[sig] is not signal.SIG_IGN:
            signal.signal(sig, forward)
    try:
        started.append(subprocess.Popen([*_CHILD_COMMAND, *sys.argv[1:]], env=env, process_group=0))
        if received and not forwarded:  # a signal while the child was being started: it is the child's now
            forward(received.pop(), None)
        code = started[0].wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if code >= 0 and not (received and code in (received[0], 128 + received[0])):
        return code  # a child stopped on request may exit with the signal's number (Ray's handler: sys.exit(15))
    sig = signal.Signals(-code if code < 0 else received[0])
    if received and received[0] != signal.SIGINT:  # stopped on request: however the engines took it, not a crash
        asked = signal.Signals(received[0])
        command = sys.argv[1] if len(sys.argv) > 1 else ""
        kept = (
            "the cells it had finished are kept: --resume goes on from them"
            if command == "sweep"
            else "no output was written in part (each appears whole or not at all)"
        )
        _stderr(f"error: transfer {command} stopped by {asked.name}; {kept}")
        return 128 + asked.value
    faults = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL)
    if sig in faults:
        command = sys.argv[1] if len(sys.argv) > 1 else ""
        _stderr(
            f"error: transfer {command} stopped: native code crashed ({sig.name}), most likely inside an engine; "
            "nothing more was written. Likely causes: a robot or setting the engine cannot simulate (joints "
            "outside their limits, a collider inside the ground, a gain or time step out of range); --verbose "
            "shows the engine's own output"
        )
    elif sig == signal.SIGKILL:
        _stderr("error: transfer was killed (SIGKILL: the system's out-of-memory killer, or kill -9)")
    return 128 + sig.value


def main(argv: list[str] | None = None) -> int:
    """The command line (:func:`entry` runs it in a child process for the ``transfer`` console script).

    Every failure ends in one line on stderr, never a traceback: bad values on the command line (checked before any
    work, :func:`transfer.cli._checks.check_command`) and any error a command does not report itself print
    ``error: ...`` and return 2; Ctrl-C prints one line and returns 130; a reader that goes away (``transfer ... |
    head``) ends it quietly with 141; a standard output closed before it starts (``>&-``) is refused (2).
    ``TRANSFER_DEBUG=1`` lets an unexpected error's traceback through.
    """
    closed = sys.stdout is None
    for name in ("stdout", "stderr"):  # closed by the caller (>&-): what would go there goes nowhere
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - the stream lives as long as the process
        try:  # a terminal or PYTHONIOENCODING that cannot show a name gets it escaped, not an encoding error
            getattr(sys, name).reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
    if closed:  # the result (a table, --json, --help) would be lost with exit 0: refused before any work
        return _error("standard output is closed (>&-): the result would be lost; send it to a file or to /dev/null")
    _name_stdout()
    for arg in sys.argv[1:] if argv is None else argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes the file system gave that are no UTF-8 (os.fsdecode's surrogates)
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            return _error(f"{shown}: the name is not UTF-8 text; rename the file (or folder) with a UTF-8 name")
    try:
        import tyro

        from transfer._console import ctrl_c_survives_usd_imports
        from transfer.cli._checks import UsageError, check_command
        from transfer.cli._help import readable_docstrings, subcommand_union

        ctrl_c_survives_usd_imports()

        given = sys.argv[1:] if argv is None else list(argv)
        subcommands, runners = _commands(given)
        readable_docstrings()
        cmd = tyro.cli(subcommand_union(subcommands, given), args=argv, prog="transfer", description=DESCRIPTION)
        try:
            check_command(cmd, given)
        except UsageError as exc:
            return _error(str(exc))
        code = runners[type(cmd)](cmd)
        try:
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            return _error(f"standard output: {exc.strerror or exc}")
    except SystemExit:  # --help and argument errors (tyro): what they printed must reach stdout, or say why not
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return _closed_pipe()
        except OSError as exc:
            return _error(f"standard output: {exc.strerror or exc}")
        raise
    except KeyboardInterrupt:
        _stderr("interrupted (Ctrl-C); nothing more was written")
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    except Exception as exc:  # anything a command did not report itself: one line, not a traceback
        if os.environ.get("TRANSFER_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
            raise
        return _error(_describe(exc))
    return code


ENGINE_HINTS = (
    (
        "composition errors",
        "Newton refuses a stage whose references, payloads or sublayers do not resolve: copy the referenced files "
        "(e.g. the asset's Props/ folder) along with it, keeping the layout, or use a flattened copy.",
    ),
)
"""Engine refusals that reach the command line as bare exceptions, by a phrase of their message: what to do."""

MAX_LINES = 6
"""Lines of an error message shown; the rest is counted (``TRANSFER_DEBUG=1`` shows it all)."""


def _describe(exc: BaseException) -> str:
    """One error as the user should read it: OS errors by file and reason, others by their message (at most
    :data:`MAX_LINES` lines), with the exception's type and a hint when it is not one of the expected kinds."""
    if isinstance(exc, OSError) and exc.strerror:
        from transfer._console import os_error_text

        return os_error_text(exc)
    lines = [line for line in str(exc).strip().splitlines() if line.strip()] or ["(no message)"]
    if len(lines) > MAX_LINES:
        lines = [*lines[: MAX_LINES - 1], f"(and {len(lines) - MAX_LINES + 1} more lines)"]
    text = "\n".join(lines)
    from transfer.errors import MissingPackageError

    if isinstance(exc, (ValueError, NotImplementedError, LookupError, MissingPackageError)):
        return text
    hint = next((h for phrase, h in ENGINE_HINTS if phrase in text), None)
    if hint is not None:
        return f"{text}\n{hint}"
    return f"{type(exc).__name__}: {text} (unexpected; TRANSFER_DEBUG=1 shows the traceback)"


class _Stdout(io.FileIO):
    """The standard output's file descriptor, whose write errors name it (``transfer info CK > /dev/full`` said
    "No space left on device" and no file)."""

    def write(self, data: Any) -> int | None:
        try:
            return super().write(data)
        except BrokenPipeError:  # a reader gone (``| head``): ended quietly by main
            raise
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, "standard output") from None


def _name_stdout() -> None:
    """Put the process's standard output behind :class:`_Stdout` (same descriptor, encoding and buffering); a
    stream a caller substituted (a test's capture) is left alone."""
    stream = sys.stdout
    if stream is not sys.__stdout__ or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        fd = stream.fileno()
        stream.flush()
    except (OSError, ValueError):
        return
    raw = _Stdout(fd, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=stream.encoding,
        errors="backslashreplace",
        line_buffering=stream.line_buffering,
    )


def _error(message: str) -> int:
    from transfer._console import print_error

    print_error(message)
    return 2


def _stderr(line: str) -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass
    print(line, file=sys.stderr)


def _closed_pipe() -> int:
    """stdout's reader went away (``| head``): point stdout at devnull so the interpreter's final flush does not
    fail again, and end quietly (Python's documented recipe, with the shell's code for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141
