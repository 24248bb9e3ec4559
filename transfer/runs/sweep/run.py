"""``transfer.sweep(spec, out, workers=...)``: run every cell of a spec on Ray (or in this process) and summarize.

The output folder holds ``cells.jsonl`` (one record per finished cell, appended the moment it arrives),
``spec.json`` (the spec as checked), ``summary.json``, ``heatmap.png`` and ``.transfer-sweep``, the marker that
makes it a sweep's folder (``resume`` continues no other) and that a running sweep holds locked (a second sweep into
it is refused). Nothing else is written there, and an existing file is never overwritten unless it is one of these
from an earlier run of the same folder (``resume``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import transfer
from transfer.env.perturbations import PERTURBATIONS, Perturbation
from transfer.formats.checkpoint import atomic_write
from transfer.runs.sweep.cell import METRICS, record_of, run_cell
from transfer.runs.sweep.report import heatmap, summarize
from transfer.runs.sweep.spec import load_spec, not_grown_from

__all__ = [
    "FILES",
    "WORKER_CALLS",
    "RayUnavailable",
    "SweepError",
    "check_out",
    "check_resumed_spec",
    "read_records",
    "sweep",
]

FILES = {
    "cells": "cells.jsonl",
    "spec": "spec.json",
    "summary": "summary.json",
    "heatmap": "heatmap.png",
    "marker": ".transfer-sweep",
    "traces": "traces",
    "videos": "videos",
}
MARKER = "transfer-sweep/1"
"""The first line of ``.transfer-sweep``: the folder is a sweep's own (``--resume`` takes no other), and the file a
running sweep holds locked (a second sweep into the folder is refused)."""
"""What a sweep writes in its output folder."""

WORKER_CALLS = 32
"""Cells a Ray worker process runs before Ray replaces it (``max_calls``). Reusing a process saves the engines'
start-up (measured: the Ant's first cell 3.1 s on PhysX and 6.6 s on Newton, later ones 0.25 s and 2.2 s; ANYmal
C's 2.9 s and 9.5 s, later 0.4 s and 3 to 5 s) and gives identical results. A process grows with the cells it runs
(ANYmal C on Newton, 4 envs: ~15 MB per cell for ~20 cells, then flat at +320 MB; the Ant ~1.3 MB per cell) and
does not slow down (30 ANYmal cells in one process: no trend); replacing it every 32 cells bounds what an engine
might keep across cells (docs/sweep.md)."""


class SweepError(ValueError):
    """The sweep cannot start: its output folder, or its engine (Ray)."""


class RayUnavailable(SweepError):
    """Ray is not installed or could not start (or join) a cluster."""


def check_out(out: str | Path, resume: bool) -> Path:
    """Check the output folder before any work: a folder (new, empty, or an earlier sweep's with ``resume``)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SweepError(f"-o {out} is a file, not a folder; give a folder for the sweep's output (new or empty)")
    if not out.is_dir():
        return out
    if resume and ((out / FILES["cells"]).is_file() or _is_sweep_folder(out)):
        if not _is_sweep_folder(out):
            raise SweepError(
                f"-o {out} holds a {FILES['cells']} that no sweep wrote (no {FILES['marker']}, no spec.json of a "
                "sweep): --resume appends only to a sweep's own folder; give a new folder"
            )
        return out
    present = sorted(p.name for p in out.iterdir())
    if (out / FILES["cells"]).is_file():
        raise SweepError(
            f"-o {out} holds an earlier sweep ({FILES['cells']}): pass --resume to continue it (cells already "
            "recorded are skipped), or give a new folder"
        )
    if present:
        shown = ", ".join(present[:4]) + (", ..." if len(present) > 4 else "")
        raise SweepError(f"-o {out} is not empty ({shown}); give a new or empty folder (nothing in it is overwritten)")
    return out


def _is_sweep_folder(out: Path) -> bool:
    """Whether ``out`` is a sweep's: its marker, or (written before the marker) a ``spec.json`` of a sweep."""
    marker = out / FILES["marker"]
    if marker.is_file():
        return marker.read_text().splitlines()[:1] == [MARKER]
    try:
        spec = json.loads((out / FILES["spec"]).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(spec, dict) and {"checkpoints", "targets", "seeds"} <= set(spec)


def check_resumed_spec(out: Path, spec: Mapping[str, Any]) -> None:
    """Refuse to resume the sweep in ``out`` with a checked ``spec`` that is neither the one ``out/spec.json``
    records nor grown from it (:func:`~transfer.runs.sweep.spec.not_grown_from`): its spec.json and summary.json
    would be replaced and its cells.jsonl would mix two sweeps' cells. A folder without spec.json passes."""
    path = out / FILES["spec"]
    if not path.exists():
        return
    try:
        earlier = json.loads(path.read_text())
        why = not_grown_from(earlier, spec) if isinstance(earlier, dict) else "not a mapping"
    except OSError as exc:
        why = f"cannot be read: {exc.strerror or type(exc).__name__}"
    except (ValueError, TypeError, AttributeError, KeyError):
        why = "not a sweep's spec as transfer writes it"
    if why is not None:
        raise SweepError(
            f"{path}: the sweep there ran a different spec ({why}); --resume continues only the same spec or one "
            "grown from it (more checkpoints, targets, seeds, commands or perturbation values): give a new -o for "
            "this one"
        )


@contextlib.contextmanager
def _claimed(out: Path) -> Iterator[None]:
    """The folder marked as this sweep's and locked while it runs: a second sweep into it is refused at once."""
    import fcntl

    marker = out / FILES["marker"]
    with open(marker, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SweepError(
                f"-o {out}: another sweep is writing to it now; wait for it, or give another folder"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{MARKER}\npid {os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_records(path: str | Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The records of a ``cells.jsonl`` by key (a later record of a key replaces an earlier one), and what is wrong
    with each line that is not a record (``"line N: why"``: a line cut short when a sweep was killed, a field of the
    wrong type); those lines are skipped, and their cells run again."""
    records: dict[str, dict[str, Any]] = {}
    bad: list[str] = []
    path = Path(path)
    if not path.is_file():
        return records, bad
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append(f"line {number}: not JSON ({exc.msg}; a line cut short?)")
            continue
        why = _not_a_record(record)
        if why is None:
            records[record["key"]] = record
        else:
            bad.append(f"line {number}: {why}")
    return records, bad


def _not_a_record(record: Any) -> str | None:
    """Why ``record`` is not a cell's record (``None``: it is one): a mapping with a string ``key`` whose known
    fields have their types."""
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        return "not a record (a mapping with a string key)"
    for name in ("target", "checkpoint", "label"):
        if name in record and not isinstance(record[name], str):
            return f"{name} is {record[name]!r}, not a string"
    if record.get("error") is not None and not isinstance(record["error"], str):
        return f"error is {record['error']!r}, not a message or null"
    for name in (*METRICS, "wall_seconds"):
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"{name} is {value!r}, not a number or null"
    return None


def sweep(
    spec: str | Path | Mapping[str, Any],
    out: str | Path,
    *,
    workers: int = 1,
    address: str | None = None,
    resume: bool = False,
    in_process: bool = False,
    progress: bool | TextIO = True,
) -> dict[str, Any]:
    """Run every cell of ``spec`` (a YAML file or a mapping, docs/sweep.md) and return the summary (also written to
    ``out/summary.json``, with ``out/cells.jsonl``, ``out/spec.json`` and ``out/heatmap.png``).

    The spec is checked in full first (:func:`~transfer.runs.sweep.spec.load_spec`). Cells run on a local Ray
    cluster of ``workers`` CPU slots, or on the cluster at ``address`` (``"auto"``, ``"ray://HOST:10001"``); each
    cell asks for one CPU (and one GPU when the spec's device is CUDA). ``in_process``: one cell after another in
    this process, without Ray. ``resume``: continue the sweep in ``out``, skipping every cell recorded there without
    an error (failed cells run again); ``spec`` must be the one ``out/spec.json`` records or grown from it
    (:func:`check_resumed_spec`). A failing cell is recorded with its error and the sweep goes on.
    ``progress``: a bar over cells on a terminal (on stderr, or the stream given), one line per cell elsewhere.
    Called in a process already connected to Ray (``ray.init`` done), the cells run on that session, which is left
    connected; ``workers`` and ``address`` are then not used.
    """
    out = check_out(out, resume)
    plan = load_spec(spec)
    if resume:
        check_resumed_spec(out, plan.spec)
    done, bad = read_records(out / FILES["cells"])
    stream = progress if hasattr(progress, "write") else sys.stderr
    for line in bad if progress is not False else ():
        print(f"warning: {out / FILES['cells']} {line}; skipped (its cell runs again)", file=stream)
    todo = [c for c in plan.cells if c["key"] not in done or done[c["key"]].get("error")]
    if plan.spec.get("record"):  # each cell's trace under OUT/traces, named by its key
        todo = [{**c, "trace": str(out / FILES["traces"] / f"{c['key']}.parquet")} for c in todo]
    if plan.spec.get("video"):  # and its video under OUT/videos
        todo = [{**c, "video": str(out / FILES["videos"] / f"{c['key']}.mp4")} for c in todo]
    start = time.perf_counter()
    on_ray = not in_process and bool(todo)
    started = False
    if on_ray:  # before anything is written: a cluster that cannot start (or be joined) leaves OUT as it was
        started = _start_ray(workers, address)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with _claimed(out):
            for key in ("record", "video"):
                if plan.spec.get(key):
                    (out / FILES["traces" if key == "record" else "videos"]).mkdir(exist_ok=True)
            _write_json(out / FILES["spec"], plan.spec)
            _run_cells(
                todo, out / FILES["cells"], done, plan.spec["device"] if on_ray else None, progress, len(plan.cells)
            )
    finally:
        if started:
            import ray

            ray.shutdown()
    facts = {
        "out": str(out),
        "workers": "in-process" if in_process else (address or workers),
        "ran": len(todo),
        "skipped": len(plan.cells) - len(todo),
        "failed": sum(1 for c in plan.cells if (done.get(c["key"]) or {}).get("error")),
        "wall_seconds": time.perf_counter() - start,
        "unreadable_lines": len(bad),
        "files": {
            name: str(out / file)
            for name, file in FILES.items()
            if (name != "traces" or plan.spec["record"]) and (name != "videos" or plan.spec.get("video"))
        },
    }
    summary = summarize(plan, done, **facts)
    heatmap(summary, out / FILES["heatmap"])
    _write_json(out / FILES["summary"], summary)
    return summary


def _run_cells(
    todo: list[dict[str, Any]], path: Path, done: dict, device: str | None, progress: bool | TextIO, total: int
) -> None:
    """Run ``todo`` (on the Ray cluster already joined when ``device`` is given, else here), appending each record
    to ``path`` and to ``done`` the moment it arrives."""
    report = _Progress(total, total - len(todo), progress)
    with _Appender(path) as append:

        def finished(record: dict[str, Any]) -> None:
            append(record)
            done[record["key"]] = record
            report(record)

        try:
            _execute(todo, device, finished)
        finally:
            report.close()


def _execute(cells: list[dict[str, Any]], device: str | None, finished: Callable[[dict[str, Any]], None]) -> None:
    """Each cell's record to ``finished`` as it arrives: run here one after another (``device`` ``None``), or on the
    Ray cluster already joined."""
    if device is None:
        for cell in cells:
            finished(run_cell(cell))
    else:
        _run_on_ray(cells, device, finished)


def run_cells(
    cells: list[dict[str, Any]],
    *,
    workers: int = 1,
    address: str | None = None,
    in_process: bool = False,
    progress: bool | TextIO = True,
) -> list[dict[str, Any]]:
    """Run ``cells`` (sweep cells: :func:`~transfer.runs.sweep.cell.run_cell`'s input) here, one after another, or
    on a local Ray cluster of ``workers`` CPU slots (or the one at ``address``), and return their records in the
    cells' order; nothing is written. What ``transfer diagnose`` runs its candidates on."""
    records: dict[str, dict[str, Any]] = {}
    report = _Progress(len(cells), 0, progress)

    def finished(record: dict[str, Any]) -> None:
        records[record["key"]] = record
        report(record)

    on_ray = not in_process and bool(cells)
    started = _start_ray(workers, address) if on_ray else False
    try:
        _execute(cells, cells[0].get("device", "cpu") if on_ray else None, finished)
    finally:
        report.close()
        if started:
            import ray

            ray.shutdown()
    return [records[c["key"]] for c in cells]


def _write_json(path: Path, value: Any) -> None:
    """``value`` as JSON at ``path``, atomically (a full disk names ``path`` and leaves the old file whole)."""
    text = json.dumps(value, indent=2) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text))


class _Appender:
    """Appends records to ``cells.jsonl``, one line each, flushed at once (a killed sweep keeps every finished cell)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> Callable[[dict[str, Any]], None]:
        ends_cleanly = not self.path.is_file() or self.path.stat().st_size == 0
        if not ends_cleanly:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                ends_cleanly = f.read(1) == b"\n"
        self.file = self.path.open("a")
        if not ends_cleanly:  # a line cut short by a kill: start on a fresh line
            self.file.write("\n")
        return self.append

    def append(self, record: dict[str, Any]) -> None:
        try:
            self.file.write(json.dumps(record, allow_nan=False) + "\n")
            self.file.flush()
        except OSError as exc:  # a full disk: the records already written stay, this one is named as lost
            from transfer.formats.checkpoint import DiskFullError

            raise DiskFullError(
                exc.errno,
                f"{self.path}: cannot append cell {record.get('key')}'s record "
                f"({exc.strerror}); the records before it are kept: free space there and --resume",
            ) from None

    def __exit__(self, kind: object, *exc: object) -> None:
        try:
            self.file.close()  # flushes what a failed write left buffered: on a full disk that fails again
        except OSError as error:
            if kind is None:  # nothing reported yet: this is the failure to report
                from transfer.formats.checkpoint import DiskFullError

                raise DiskFullError(
                    error.errno,
                    f"{self.path}: cannot write its last records ({error.strerror}); free space there and --resume",
                ) from None


class _Progress:
    """A bar over cells on a terminal; one plain line per finished cell elsewhere."""

    def __init__(self, total: int, skipped: int, progress: bool | TextIO) -> None:
        from tqdm import tqdm

        self.stream = progress if hasattr(progress, "write") else sys.stderr
        self.quiet = progress is False
        self.total, self.count = total, skipped
        try:
            self.terminal = not self.quiet and self.stream.isatty()
        except (AttributeError, ValueError):
            self.terminal = False
        self.bar = tqdm(total=total, initial=skipped, unit="cell", file=self.stream, disable=not self.terminal)

    def __call__(self, record: Mapping[str, Any]) -> None:
        self.count += 1
        if self.terminal:
            self.bar.update(1)
            self.bar.set_postfix_str(_describe(record), refresh=False)
        elif not self.quiet:
            print(f"[{self.count}/{self.total}] {_describe(record)}", file=self.stream, flush=True)

    def close(self) -> None:
        self.bar.close()


def _describe(record: Mapping[str, Any]) -> str:
    neutral = Perturbation().to_dict()
    changed = [f"{k} {record[k]:g}" for k in PERTURBATIONS if record.get(k) != neutral[k]]
    what = f"{record['label']} on {record['target']}, seed {record['seed']}" + (
        f", {', '.join(changed)}" if changed else ""
    )
    if record.get("error"):
        return f"{what}: error: {record['error'][:200]}"
    fwd, fell = record.get("forward_velocity"), record.get("fall_fraction")
    speed = "n/a" if fwd is None else f"{fwd:.2f} m/s"
    return f"{what}: {speed}, {fell:.0%} fell ({record['wall_seconds']:.1f} s)"


# -- Ray -------------------------------------------------------------------------------------------------------
def _run_on_ray(todo: list[dict[str, Any]], device: str, finished: Callable) -> None:
    """Submit every cell at once to the joined cluster (one CPU each, one GPU on CUDA) and record each as it
    finishes; a cell whose worker died is recorded with Ray's error."""
    import ray

    remote = ray.remote(
        num_cpus=1, num_gpus=1 if device.startswith("cuda") else 0, max_calls=WORKER_CALLS, max_retries=0
    )(run_cell)
    pending = {remote.remote(cell): cell for cell in todo}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            cell = pending.pop(ref)
            try:
                record = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - the worker died or Ray failed: the cell failed
                text = " ".join(str(exc).split())[:2000]
                record = record_of(cell, f"{type(exc).__name__}: {text}")
            finished(record)


ANSWER_SECONDS = 5.0
"""How long an ``--address`` has to answer before the sweep says nothing answers there."""
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _reachable(address: str) -> str | None:
    """Why no Ray cluster answers at a ``HOST:PORT`` or ``ray://HOST:PORT`` address (``None``: one answers, or the
    address is ``auto``/``local``, which Ray resolves itself). Ray itself waits minutes on a dead address, and for
    ever on a port that is not Ray's: a Ray cluster's GCS and its client server speak gRPC, whose server answers
    HTTP/2's connection preface with a SETTINGS frame; anything else (a web server, a silent port) does not."""
    import socket

    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if address in ("auto", "local") or not sep or not port.isdigit():
        return None
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=ANSWER_SECONDS) as conn:
            conn.settimeout(ANSWER_SECONDS)
            conn.sendall(_HTTP2_PREFACE)
            frame = conn.recv(9)
    except TimeoutError:
        return f"something listens there but said nothing within {ANSWER_SECONDS:g} s: not a Ray cluster"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if len(frame) < 9 or frame[3] != 0x4:  # byte 3 of an HTTP/2 frame header: its type; 0x4 is SETTINGS
        return "something listens there, but it does not speak gRPC as a Ray cluster does"
    return None


def _quiet_stop() -> None:
    """On SIGTERM or SIGHUP (a stop asked of the sweep), silence this process's stderr before Ray's own handler
    shuts it down: Ray's core printed a raw dump of the signal there ("*** SIGTERM received ...", 1 stop in 4),
    under the one line the command says (:func:`transfer.cli._supervise`). Only in the main thread."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(sig)
        if previous is signal.SIG_IGN:  # ignored by whoever started the sweep: it stays so
            continue

        def stop(number: int, frame: Any, previous: Any = previous) -> None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            if callable(previous):
                previous(number, frame)  # Ray's: exits, its shutdown runs
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)

        signal.signal(sig, stop)


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """This process's environment as a local cluster's workers need it, while ``ray.init`` starts the cluster:
    this ``transfer`` on ``PYTHONPATH``, one OpenMP thread. Ray's node processes copy it when they start, and every
    worker they start gets it; the caller's own environment is put back afterwards. (A ``runtime_env`` saying the
    same made Ray start no worker until the first cell came, ~0.6 s later, for each worker.)"""
    home = str(Path(transfer.__file__).resolve().parents[1])
    wanted = {
        "PYTHONPATH": os.pathsep.join([home, *filter(None, [os.environ.get("PYTHONPATH")])]),
        "OMP_NUM_THREADS": "1",
    }
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _start_ray(workers: int, address: str | None) -> bool:
    """A local cluster of ``workers`` CPU slots (quiet: no dashboard, worker output kept in Ray's logs), or the
    cluster at ``address``. Workers import this very ``transfer`` (its folder is put on their PYTHONPATH). Returns
    whether this call connected (``False``: the process was connected already, and stays so after the sweep)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "Ray is not installed: pip install 'transfer[sweep]' (or pass --in-process to run the cells here, one "
            "after another)"
        ) from None

    if ray.is_initialized():  # the caller's own session (transfer.sweep inside a Ray program): use it as it is
        return False
    if address and (reason := _reachable(address)) is not None:
        raise RayUnavailable(
            f"no Ray cluster answers at {address} ({reason}): start one there (ray start --head), or leave out "
            "--address for a local one"
        )
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": True}
    # Ray 2.52 announces that it will stop hiding GPUs from num_gpus=0 tasks; it hides them now, as CPU cells want.
    warnings.filterwarnings("ignore", message="Tip: In future versions of Ray", category=FutureWarning)
    try:
        if address:
            ray.init(address=address, **quiet)
            return True
        with _worker_environment():
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                object_store_memory=128 * 1024**2,
                _system_config={"enable_metrics_collection": False},  # nothing to export them to without the dashboard
                **quiet,
            )
        _quiet_stop()
        return True
    except Exception as exc:  # noqa: BLE001 - any reason Ray cannot start is one message
        where = f"join the Ray cluster at {address}" if address else f"start a local Ray cluster of {workers} CPU(s)"
        text = " ".join(str(exc).split())[:500]
        raise RayUnavailable(
            f"could not {where}: {type(exc).__name__}: {text} (--in-process runs the cells here without Ray)"
        ) from None
