"""The reliability battery's kinds (issue 31), each as the user meets it: nothing a user owns lost, a corrupt record
named with its line and skipped, an address that is not a Ray cluster answered within seconds, no traceback.

Runs on a 2-core machine in well under three minutes: one engine sweep cell, the rest with no engine at all.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from transfer.cli import main
from transfer.runs.sweep.run import read_records

ROOT = Path(__file__).resolve().parents[1]
ANT = ROOT / "checkpoints/ant_flat_physx/exported/policy.pt"


@pytest.fixture
def sigint_handled():
    """Ctrl-C handled as Python handles it by default, for the test: an earlier test (Ray's start-up) can leave
    SIGINT ignored in this process, and entry() keeps an ignored signal ignored, as nohup means it."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _entry_signalled(sig: int, after: float = 2.0) -> int:
    """``transfer.cli.entry()`` with ``sig`` sent to this process ``after`` seconds in (a user's Ctrl-C, a kill)."""
    import os

    import transfer.cli as cli

    timer = threading.Timer(after, lambda: os.kill(os.getpid(), sig))
    timer.start()
    try:
        return cli.entry()
    finally:
        timer.cancel()


def _spec(tmp_path: Path, **extra) -> Path:
    spec = {"checkpoints": [{"path": str(ANT)}], "targets": ["physx"], "seconds": 1.2, **extra}
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.engines
def test_a_corrupt_record_is_named_with_its_line_skipped_and_its_cell_runs_again(tmp_path, capfd):
    pytest.importorskip("ovphysx")
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process"]) == 0
    capfd.readouterr()
    cells = out / "cells.jsonl"
    (record,) = [json.loads(line) for line in cells.read_text().splitlines()]
    cells.write_text(json.dumps({**record, "forward_velocity": "fast"}) + "\n")  # one field of the wrong type
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process", "--resume", "--json"]) == 0
    captured = capfd.readouterr()
    summary = json.loads(captured.out)
    assert "cells.jsonl line 1: forward_velocity is 'fast', not a number or null; skipped" in captured.err
    assert summary["ran"] == 1 and summary["unreadable_lines"] == 1 and "Traceback" not in captured.err
    records, bad = read_records(cells)
    assert len(records) == 1 and bad == ["line 1: forward_velocity is 'fast', not a number or null"]


@pytest.fixture
def silent_port():
    """A TCP port that accepts connections and never says anything (a process that is not Ray)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_an_address_that_is_not_a_ray_cluster_is_answered_in_seconds(tmp_path, capsys, silent_port, monkeypatch):
    pytest.importorskip("ray")
    import transfer.runs.sweep.run as run

    monkeypatch.setattr(run, "ANSWER_SECONDS", 1.0)
    start = time.perf_counter()
    code = main(["sweep", str(_spec(tmp_path)), "-o", str(tmp_path / "out"), "--address", f"127.0.0.1:{silent_port}"])
    err = capsys.readouterr().err
    assert code == 2 and time.perf_counter() - start < 30, err
    assert f"no Ray cluster answers at 127.0.0.1:{silent_port}" in err and "said nothing within 1 s" in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_web_server_is_not_a_ray_cluster(tmp_path, capsys):
    pytest.importorskip("ray")
    from http.server import BaseHTTPRequestHandler, HTTPServer

    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        code = main(["sweep", str(_spec(tmp_path)), "-o", str(tmp_path / "out"), "--address", f"127.0.0.1:{port}"])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert code == 2 and "does not speak gRPC as a Ray cluster does" in err and "Traceback" not in err


def test_a_real_ray_cluster_answers_the_probe():
    """The probe that refuses a silent port and a web server passes a real Ray cluster's GCS address."""
    ray = pytest.importorskip("ray")
    from transfer.runs.sweep.run import _reachable

    context = ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        assert _reachable(context.address_info["gcs_address"]) is None
    finally:
        ray.shutdown()


def test_tmpdir_holds_nothing_of_a_run_afterwards_also_after_ctrl_c(tmp_path, monkeypatch, capfd, sigint_handled):
    """The console script gives the run a temporary folder of its own and removes it however the run ends: what the
    child wrote there (here: a file and a folder, as Ray's sessions and ovphysx's schema probes were) is gone; a
    Ctrl-C that stops the child leaves nothing either."""
    import signal
    import sys

    import transfer.cli as cli

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("TRANSFER_CHILD_PROCESS", raising=False)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    write = (
        "import os, pathlib; t = pathlib.Path(os.environ['TMPDIR']); (t / 'ray' / 'session_x').mkdir(parents=True);"
        " (t / 'probe.lock').write_text('x'); print(t)"
    )
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", write])
    monkeypatch.setattr(sys, "argv", ["transfer", "sweep"])
    assert cli.entry() == 0
    used = Path(capfd.readouterr().out.strip())
    assert used.parent == tmp and not used.exists() and list(tmp.iterdir()) == []
    hang = (
        "import os, pathlib, time; t = pathlib.Path(os.environ['TMPDIR']); (t / 'partial').write_text('x');"
        " print(t, flush=True); time.sleep(60)"
    )
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", hang])
    code = _entry_signalled(signal.SIGINT)
    assert code == 128 + signal.SIGINT and list(tmp.iterdir()) == []


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB file system of its own (tmpfs), mounted for the test: where a disk fills up for real."""
    import shutil
    import subprocess

    folder = tmp_path / "small"
    folder.mkdir()
    mount = shutil.which("mount")
    done = (
        subprocess.run(
            [mount or "mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True, text=True
        )
        if mount
        else None
    )
    if done is None or done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here ({done.stderr.strip() if done else 'no mount'})")
    yield folder
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(folder)], check=False)  # still busy (a child winding down): detach it


def _fill(folder: Path) -> Path:
    """Fill ``folder``'s file system to its last byte with one file; return it."""
    filler = folder / "filler"
    try:
        with open(filler, "ab") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    except OSError:
        pass
    return filler


def test_a_full_disk_names_the_file_and_leaves_nothing(small_disk, capsys):
    """Issue 31: an RSL-RL checkpoint converted onto a full disk ended in torch's "[enforce fail at
    inline_container.cc]"; now one line names the output and the space left, and no temporary file stays."""
    rsl = ROOT / "checkpoints/quadruped_flat_physx/model_999.pt"  # 576 KiB: it cannot fit
    code = main(["convert", str(rsl), "--to", "mjwarp", "-o", str(small_disk / "out.pt")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"{small_disk / 'out.pt'}: the disk is full" in err and "enforce fail" not in err
    assert list(small_disk.iterdir()) == []


def test_a_torchscript_written_onto_a_full_disk_is_one_line_not_a_native_abort(small_disk):
    """``convert policy.pt -o`` (and ``train``'s export) onto a disk that fills mid-archive died of SIGABRT in
    torch.jit.save's C++ writer (24 frames, exit 134) and left ``.c.pt.XXXX.tmp``: the archive is built in memory now
    and written as bytes, so the full disk is Python's ENOSPC, named with the file."""
    import subprocess
    import sys

    (small_disk / "filler").write_bytes(b"\0" * 200 * 1024)  # 56 KiB left: the 116 KiB policy cannot fit
    out = small_disk / "c.pt"
    done = subprocess.run(
        [sys.executable, "-m", "transfer.cli", "convert", str(QUADRUPED_CK), "--to", "mjwarp", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{out}: the disk is full" in done.stderr and "frame #" not in done.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def test_an_import_onto_a_full_disk_names_the_output_not_its_scratch_file(converters, small_disk, capsys):
    """``import robot.xml -o r.usda`` onto a full disk said "could not write the USD layer: Could not close
    .r-59eysctq.usda", naming a scratch file the user never asked for, and not that the disk was full."""
    _fill(small_disk)
    out = small_disk / "r.usda"
    assert main(["import", str(ROOT / "transfer/data/quadruped.xml"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the converter's progress line
    assert err.count("error:") == 1 and last.startswith(f"error: {out}: the disk is full") and ".r-" not in err, err
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def test_a_full_disk_never_truncates_what_was_there(small_disk, capsys):
    """``task --force`` onto an existing file of a full disk left it at 0 bytes (written in place); the file stays
    whole now, whatever the write."""
    mine = small_disk / "task.yaml"
    mine.write_text("# mine\n")
    _fill(small_disk)
    code = main(["task", "transfer:quadruped", "-o", str(mine), "--force"])
    err = capsys.readouterr().err
    assert code == 2 and f"{mine}: the disk is full" in err, err
    assert mine.read_text() == "# mine\n" and sorted(p.name for p in small_disk.iterdir()) == ["filler", "task.yaml"]


def test_sigterm_is_a_stop_on_request_not_a_crash(monkeypatch, capsys):
    """SIGTERM to a sweep on Ray made Ray's driver abort and the run end in "native code crashed (SIGABRT)" (or in
    Ray's native frames); a stop that was asked for is one line naming the signal, exit 143."""
    import signal
    import sys

    import transfer.cli as cli

    monkeypatch.delenv("TRANSFER_CHILD_PROCESS", raising=False)
    child = (
        "import os, signal, time; signal.signal(signal.SIGTERM, lambda *a: os.abort()); print('up', flush=True);"
        " time.sleep(60)"
    )
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", child])
    for command, kept in (("sweep", "--resume goes on"), ("replay", "no output was written in part")):
        monkeypatch.setattr(sys, "argv", ["transfer", command])
        code = _entry_signalled(signal.SIGTERM)
        err = capsys.readouterr().err
        assert code == 143 and err.count("\n") == 1, err
        assert f"transfer {command} stopped by SIGTERM" in err and kept in err and "crashed" not in err, err
    assert "sweep" not in err  # a replay has no cells to resume


def test_a_sigterm_a_child_answers_by_exiting_with_its_number_is_a_stop_too(monkeypatch, capsys):
    """Ray's driver handler answers SIGTERM with ``sys.exit(15)`` (after printing a raw dump, 1 stop in 4): exit 15
    passed through with the dump above it. A child that exits with the signal's number after the stop was asked is
    stopped on request: the one line, exit 143; the sweep's stop handler silences the child's stderr first."""
    import signal
    import sys

    import transfer.cli as cli

    monkeypatch.delenv("TRANSFER_CHILD_PROCESS", raising=False)
    child = (
        "import os, signal, sys, time\n"
        "from transfer.runs.sweep.run import _quiet_stop\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('*** SIGTERM received', file=sys.stderr, flush=True), "
        "sys.exit(15)))\n"
        "_quiet_stop(); print('up', flush=True); time.sleep(60)"
    )
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", child])
    monkeypatch.setattr(sys, "argv", ["transfer", "sweep"])
    code = _entry_signalled(signal.SIGTERM, after=8.0)  # the child's imports done and its handler set
    err = capsys.readouterr().err
    assert code == 143 and err.count("\n") == 1 and "SIGTERM received" not in err, err
    assert "transfer sweep stopped by SIGTERM" in err


def test_an_actuator_network_of_another_shape_is_one_line_at_start(tmp_path):
    """A wrong-shaped actuator network printed a TorchScript traceback at the first step; it is refused when the
    actuators are built, naming the file and the input it was fed."""
    torch = pytest.importorskip("torch")

    from transfer.actuators import Actuators
    from transfer.actuators.spec import ActuatorError, ActuatorGroup

    path = tmp_path / "net.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 1)), str(path))  # takes 3 inputs; the group feeds 4
    group = ActuatorGroup(
        "legs", "mlp", ("a",), saturation_effort=1e3, velocity_limit=1e3, network_file=str(path), input_idx=(0, 1)
    )
    with pytest.raises(ActuatorError) as caught:
        Actuators([group], ["a"], num_envs=1, stiffness=[1.0], damping=[0.0], effort_limit=[1e3])
    text = str(caught.value)
    assert f"actuators.legs.network_file: {path} does not take this group's input: fed (1, 4)" in text
    assert "\n" not in text and "Traceback" not in text


@pytest.mark.engines
def test_a_sweep_on_a_disk_that_fills_names_the_file_and_leaves_no_half_file(small_disk, tmp_path, capsys):
    """A sweep whose disk filled said "No space left on device" (no file) and left a 0-byte heatmap.png; now the
    file is named and every file there is whole (what was written before stays)."""
    pytest.importorskip("ovphysx")
    filler = _fill(small_disk)  # then give back three pages: the marker, the spec and the records fit, the plot not
    size = filler.stat().st_size
    with open(filler, "r+b") as fh:
        fh.truncate(max(0, size - 3 * 4096))
    out = small_disk / "out"
    code = main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--in-process"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err and ("the disk is full" in err[-1] or "cannot append" in err[-1]), err
    assert str(out) in err[-1]
    files = list(out.iterdir()) if out.exists() else []
    assert not [f.name for f in files if f.stat().st_size == 0 or f.name.endswith(".tmp")], files


@pytest.mark.parametrize("child", [True, False])
def test_the_child_ends_without_teardown_yet_runs_its_exit_handlers_and_flushes(tmp_path, child):
    """Issue 33: the run's child skips the interpreter's teardown (~2.7 s of a Newton replay freeing modules), but
    what a normal exit does that matters still happens: the exit handlers (Ray's shutdown is one), the logs and the
    buffered output written, the exit status passed on. An object freed only by teardown shows which way it ended."""
    import os
    import subprocess
    import sys

    log = tmp_path / "run.log"
    script = f"""
import atexit, logging, sys
from transfer.cli import finish
atexit.register(lambda: open({str(tmp_path / "handler")!r}, 'w').write('ran'))
logging.basicConfig(filename={str(log)!r}, level=logging.INFO); logging.info('logged')
class Freed:
    def __del__(self): sys.stderr.write('torn down')
kept = Freed()
sys.stdout.write('buffered, no newline')
finish(3)
"""
    env = {k: v for k, v in os.environ.items() if k != "TRANSFER_CHILD_PROCESS"}
    if child:
        env["TRANSFER_CHILD_PROCESS"] = "1"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stdout == "buffered, no newline"
    assert (tmp_path / "handler").read_text() == "ran" and "logged" in log.read_text()
    assert ("torn down" in done.stderr) is not child, done.stderr


def test_a_ctrl_c_while_the_child_is_being_started_stops_it(monkeypatch, sigint_handled):
    """A Ctrl-C that reached the console script while it was starting the child (before the child's process
    existed) was recorded but never passed on: the run went on to its end and said exit 0. It is the child's now."""
    import os
    import signal
    import subprocess
    import sys

    import transfer.cli as cli

    monkeypatch.delenv("TRANSFER_CHILD_PROCESS", raising=False)
    real = subprocess.Popen

    def popen_after_a_ctrl_c(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # handled by entry()'s forwarder, which has no child to hand it to yet
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen_after_a_ctrl_c)
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", "import time; time.sleep(60)"])
    monkeypatch.setattr(sys, "argv", ["transfer", "replay"])
    started = time.perf_counter()
    code = cli.entry()
    assert code in (1, 128 + signal.SIGINT) and time.perf_counter() - started < 30, code


# ---- the third battery (issue 31): read nothing outside the request, destroy nothing, no hang, no traceback

QUADRUPED_CK = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"


def test_an_mjcf_include_outside_the_robots_folder_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    """An ``<include file="/etc/passwd"/>`` was opened and parsed (its XML error printed) before the refusal."""
    from transfer.robot.assets import mjcf, sources

    secret = tmp_path / "secret.xml"
    secret.write_text("<mujoco/>")
    robot = tmp_path / "robot" / "r.xml"
    robot.parent.mkdir()
    robot.write_text(f'<mujoco><include file="{secret}"/><worldbody/></mujoco>')
    parsed = []
    real = sources._parse
    monkeypatch.setattr(sources, "_parse", lambda p: parsed.append(Path(p).resolve()) or real(p))
    monkeypatch.setattr(mjcf, "_parse", lambda p: parsed.append(Path(p).resolve()) or real(p))
    for read in (lambda: sources.references(robot), lambda: mjcf.mjcf_joint_names(robot)):
        with pytest.raises(sources.AssetError, match="outside the robot's folder"):
            read()
    assert secret.resolve() not in parsed


def test_a_robot_file_of_too_many_links_is_refused_before_converting(tmp_path):
    """A 100,000-link URDF ran the converter past two minutes; the link count is checked when the file is read."""
    from transfer.robot.assets.sources import MAX_LINKS, AssetError, source_format

    links = "".join(f'<link name="l{i}"/>' for i in range(MAX_LINKS + 1))
    path = tmp_path / "many.urdf"
    path.write_text(f'<robot name="many">{links}</robot>')
    with pytest.raises(AssetError, match=f"{MAX_LINKS + 1} links or bodies, more than the {MAX_LINKS}"):
        source_format(path)


def test_a_zip_bomb_checkpoint_is_refused_unread(tmp_path, monkeypatch):
    """An 8 MB TorchScript-shaped zip unpacking to 8 GiB made ``info`` take 17 GB for 70 s; the archive's sizes are
    read first (the bound is lowered here so that the test writes megabytes, not gigabytes)."""
    import zipfile

    from transfer.formats import base
    from transfer.formats.base import PolicyError, Probe

    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\0" * (4 << 20))
    assert bomb.stat().st_size < 100_000
    monkeypatch.setattr(base, "MAX_UNPACKED", 1 << 20)
    with pytest.raises(PolicyError, match=r"unpacks to 0\.0 GiB \(at most 0\.000976562 GiB"):
        Probe.of(bomb)


def test_a_pickle_refusal_never_relays_torchs_advice_to_load_it_unsafely(tmp_path, capsys):
    """torch's message ("Re-running torch.load with weights_only set to False will likely succeed") reached the
    user; the refusal says what the file is and never to load it unsafely."""
    import pickle

    path = tmp_path / "plain.pt"
    path.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plain.pt" in err and "will likely succeed" not in err and "Warning" not in err
    # a pickle that would run code: the global it asks for is named, torch's advice still not relayed
    torch = pytest.importorskip("torch")

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'RAN'}",))

    evil = tmp_path / "evil.pt"
    torch.save({"actor_state_dict": Evil()}, evil)
    assert main(["info", str(evil)]) == 2
    err = capsys.readouterr().err
    assert "posix.system" in err and "will likely succeed" not in err and "weights_only` set to `False" not in err, err
    assert not (tmp_path / "RAN").exists()


def test_outputs_replace_only_regular_files_and_a_plot_only_an_image(tmp_path, capsys):
    """``task -o FIFO --force`` (or a device, or /proc/self/fd/1) replaced the node with a file; ``--plot`` replaced
    any file. Both are refused, the file left as it was; a plot drawn before is drawn over."""
    import os

    from transfer.traces import figures as _figures

    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    assert main(["task", str(ROOT / "transfer/data/quadruped.usda"), "-o", str(fifo), "--force"]) == 2
    assert "not a regular file" in capsys.readouterr().err and fifo.is_fifo()
    plt = _figures.pyplot()
    precious = tmp_path / "notes.png"
    precious.write_text("precious")
    with pytest.raises(ValueError, match="exists and is not a PNG image"):
        _figures.save(plt.figure(), precious)
    assert precious.read_text() == "precious"
    _figures.save(plt.figure(), tmp_path / "plot.png")
    _figures.save(plt.figure(), tmp_path / "plot.png")  # a plot over a plot
    (tmp_path / "empty.png").touch()
    _figures.save(plt.figure(), tmp_path / "empty.png")  # nothing to lose
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
    # refused before the run, not after it (the run's results were thrown away, ~40 lines of engine output first)
    for command in (
        ["replay", str(QUADRUPED_CK), "--target", "physx", "--seconds", "300"],
        ["traces", str(QUADRUPED_CK), str(QUADRUPED_CK)],
    ):
        assert main([*command, "--plot", str(precious)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "exists and is not a PNG image" in err, err


def test_the_run_ends_when_the_console_script_is_killed(tmp_path):
    """``kill -9`` of ``transfer`` left its child running, writing its outputs 30 s later with no one to report to;
    the child now gets SIGTERM when its parent dies."""
    import os
    import signal
    import subprocess
    import sys

    marker = tmp_path / "child.pid"
    child = (
        f"from transfer.cli import _end_with_the_parent; _end_with_the_parent(); import os, time; "
        f"open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    parent = (
        f"import sys, transfer.cli as c; c._CHILD_COMMAND = [sys.executable, '-c', {child!r}]; "
        "sys.argv = ['transfer', 'replay']; c.entry()"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TRANSFER_CHILD_PROCESS", "TRANSFER_PARENT_PID")}
    proc = subprocess.Popen([sys.executable, "-c", parent], env=env)
    try:
        for _ in range(300):
            if marker.exists() and marker.read_text():
                break
            time.sleep(0.1)
        pid = int(marker.read_text())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

        def gone() -> bool:
            try:
                return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] in "ZX"
            except (FileNotFoundError, IndexError):
                return True

        for _ in range(100):
            if gone():
                break
            time.sleep(0.1)
        assert gone(), "the child outlived the console script"
    finally:
        proc.kill()


def test_closed_streams_and_a_false_debug_flag_give_no_traceback(tmp_path):
    """``transfer info CK >&-`` and ``--help >&-`` printed an AttributeError traceback and exited 1, then exited 0
    with the result lost; they are refused now, before any work. An error with stderr closed exited 1;
    ``TRANSFER_DEBUG=0`` turned tracebacks on."""
    import os
    import subprocess
    import sys

    cli = f"{sys.executable} -m transfer.cli"
    env = {k: v for k, v in os.environ.items() if k not in ("TRANSFER_CHILD_PROCESS", "TRANSFER_DEBUG")}
    for command, code in (
        (f"{cli} info {QUADRUPED_CK} >&-", 2),
        (f"{cli} --help >&-", 2),
        (f"{cli} info /nonexistent.pt 2>&-", 2),
    ):
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == code and "Traceback" not in done.stderr, (command, done.stderr)
        if ">&-" in command and "2>&-" not in command:  # the result had nowhere to go: said, not lost with exit 0
            assert (
                done.stderr == "error: standard output is closed (>&-): the result would be lost; send it to a "
                "file or to /dev/null\n"
            ), done.stderr
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx file at all")
    done = subprocess.run(
        [*cli.split(), "info", str(bad)],
        env={**env, "TRANSFER_DEBUG": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.startswith("error: ")


def test_a_key_given_twice_in_a_yaml_file_is_refused_naming_its_line(tmp_path):
    """A task file's second ``decimation: 8`` silently replaced the first; a merge's keys may still be overridden."""
    from transfer.errors import read_yaml_mapping

    twice = tmp_path / "t.yaml"
    twice.write_text("name: t\ndecimation: 4\nsim_dt: 0.005\ndecimation: 8\n")
    with pytest.raises(
        ValueError, match=r"t.yaml: not valid YAML, line 4, column 1: the key 'decimation' is given twice"
    ):
        read_yaml_mapping(twice, ValueError, "a mapping")
    merged = tmp_path / "m.yaml"
    merged.write_text("base: &b {x: 1, y: 2}\nrun:\n  <<: *b\n  x: 3\n")
    assert read_yaml_mapping(merged, ValueError, "a mapping")["run"] == {"x": 3, "y": 2}


def test_a_joint_name_file_is_not_echoed_and_one_name_per_line_is_read(tmp_path, capsys):
    """``--to /etc/passwd`` printed the file's first 80 characters in the error; a plain one-name-per-line file, which
    the help promised, was refused."""
    from transfer.ordering import read_name_file

    private = tmp_path / "private.txt"
    private.write_text("secret-token with spaces\nsecond line here\n")
    assert main(["convert", str(QUADRUPED_CK), "--to", str(private), "-o", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err
    assert "private.txt" in err and "secret-token" not in err
    names = tmp_path / "names.txt"
    names.write_text("# the checkpoint's order\nLF_HAA\nLF_HFE\n")
    assert read_name_file(names) == ["LF_HAA", "LF_HFE"]
    # a name listed twice was "The explicit order is not a permutation" (no file named); a FIFO, "not a convention"
    names.write_text("LF_HAA\nLF_HFE\nLF_HAA\n")
    with pytest.raises(ValueError, match=r"names.txt: lists LF_HAA more than once"):
        read_name_file(names)
    names.write_text("\n".join(f"j{i}" for i in range(20_000)))  # a 20 kB one-line error named no file
    with pytest.raises(ValueError, match=r"names.txt: lists 20000 names, more than any robot has joints"):
        read_name_file(names)
    loop = tmp_path / "loop.pt"
    loop.symlink_to(tmp_path / "loop.pt")
    assert main(["info", str(loop)]) == 2
    assert "is a symbolic link that leads to no file" in capsys.readouterr().err
    odd = tmp_path / "evil\x1b[2J\nline.yaml"
    assert main(["replay", str(QUADRUPED_CK), "--target", "physx", "--config", str(odd)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "evil\\x1b[2J\\nline.yaml: file not found" in err, err
    fifo = tmp_path / "order.fifo"
    os.mkfifo(fifo)
    assert main(["replay", str(QUADRUPED_CK), "--target", "physx", "--source", str(fifo)]) == 2
    assert f"--source {fifo}: not a regular file (a FIFO, a device or a socket)" in capsys.readouterr().err


def test_a_read_only_folder_is_not_reported_as_a_full_disk(small_disk):
    """A read-only file system was reported as "the disk is full" (little space free there); only ENOSPC is."""
    import errno

    from transfer.formats.checkpoint import DiskFullError, _disk_full

    _fill(small_disk)
    out = small_disk / "task.yaml"
    assert _disk_full(out, OSError(errno.EROFS, "Read-only file system")) is None
    assert isinstance(_disk_full(out, OSError(errno.ENOSPC, "No space left on device")), DiskFullError)


@pytest.mark.engines
def test_a_checkpoint_of_other_sizes_is_one_line_before_any_engine_starts(tmp_path, capfd):
    """The size check ran once the engine was up: ~13 lines of Warp and PhysX start-up came before the one line."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("ovphysx")

    path = tmp_path / "square.pt"
    torch.jit.save(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(48, 48))), str(path))
    capfd.readouterr()
    args = [
        "replay",
        str(path),
        "--target",
        "physx",
        "--seconds",
        "0.2",
        "--source",
        "physx",
        "--config",
        str(ROOT / "presets/tasks/quadruped_flat_velocity.yaml"),
    ]
    assert main(args) == 2
    out, err = capfd.readouterr()
    assert err.count("\n") == 1 and "writes 48 actions" in err and "drives 12 joints" in err, err
    assert "omni.physx" not in out + err and "Warp" not in out + err


def test_flags_that_contradict_each_other_are_refused(capsys):
    """``--compare --no-reorder`` ignored --no-reorder; ``--address`` with ``--in-process`` ignored the address."""
    assert main(["replay", str(QUADRUPED_CK), "--target", "physx", "--compare", "--no-reorder"]) == 2
    assert "drop --no-reorder" in capsys.readouterr().err
    spec = ROOT / "presets" / "tasks" / "quadruped_flat_velocity.yaml"  # any file: refused before it is read
    assert main(["sweep", str(spec), "-o", "out", "--in-process", "--address", "auto"]) == 2
    assert "give one of the two" in capsys.readouterr().err


def test_names_and_metadata_that_cannot_be_shown_are_one_line(tmp_path):
    """A file name of bytes that are no UTF-8 gave a TypeError; PYTHONIOENCODING=ascii lost all output to an
    encoding error; metadata nested 10^5 deep ended in "RecursionError (unexpected)"."""
    import os
    import subprocess
    import sys

    from transfer.formats.checkpoint import CheckpointError, decode_metadata

    env = {k: v for k, v in os.environ.items() if k != "TRANSFER_CHILD_PROCESS"}
    odd = os.fsdecode(bytes(tmp_path) + b"/bad\xff.pt")
    done = subprocess.run(
        [sys.executable, "-m", "transfer.cli", "info", odd], env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 2 and b"not UTF-8" in done.stderr and done.stderr.count(b"\n") == 1, done.stderr
    named = tmp_path / "pölicy ✓.pt"
    named.write_bytes(QUADRUPED_CK.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "transfer.cli", "info", str(named)],
        env={**env, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0 and b"p\\xf6licy \\u2713.pt" in done.stdout, done.stderr
    with pytest.raises(CheckpointError, match="nests too deeply"):
        decode_metadata("[" * 100_000 + "]" * 100_000, "deep.onnx (metadata)")


def test_a_root_layer_without_up_axis_over_a_z_up_robot_is_warned_of(tmp_path):
    """A layer that only sublayers the Z-up demo authors no upAxis, so USD makes the stage Y-up: PhysX pulled the
    robot over (100 % fell) while Newton stood it, and nothing said why. Every replay now warns of it."""
    pytest.importorskip("pxr")
    from transfer.robot import Robot

    demo = ROOT / "transfer/data/quadruped.usda"
    wrap = tmp_path / "wrap.usda"
    wrap.write_text(f"#usda 1.0\n(\n    subLayers = [@{demo}@]\n)\n")
    said = tmp_path / "said.usda"
    said.write_text(f'#usda 1.0\n(\n    upAxis = "Z"\n    subLayers = [@{demo}@]\n)\n')
    warning = Robot(wrap).up_axis_warning
    assert warning is not None and "wrap.usda authors no upAxis" in warning and "quadruped.usda says Z" in warning
    assert Robot(said).up_axis_warning is None and Robot(demo).up_axis_warning is None


def test_an_absurd_action_scale_is_refused_naming_the_field():
    """``--set action.scale=1e30`` ran (0 % fell, 0.005 m/s): a scale no policy is trained with."""
    from transfer.task import TaskError
    from transfer.task.action import MAX_ACTION_SCALE, ActionTerm

    assert ActionTerm(scale=MAX_ACTION_SCALE).scale == MAX_ACTION_SCALE
    with pytest.raises(TaskError, match=r"action.scale: \{'LF_HAA': 1e\+30\} is more than 100"):
        ActionTerm(scale={"LF_HAA": 1e30})


def test_a_cache_that_cannot_be_written_says_which_variable_moves_it(tmp_path, monkeypatch, capfd):
    """``XDG_CACHE_HOME`` pointing at a file (or a read-only HOME) gave "...: Not a directory" with no word of the
    cache or of the variable that moves it."""
    import errno

    from transfer.cli import _describe

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "afile"))
    inside = _describe(OSError(errno.ENOTDIR, "Not a directory", str(tmp_path / "afile/transfer/converters")))
    assert inside.endswith("point XDG_CACHE_HOME at a folder you can write, or make this one writable)")
    assert "XDG_CACHE_HOME" not in _describe(OSError(errno.EACCES, "Permission denied", str(tmp_path / "out.pt")))
    # a command that reports an OS error itself said "[Errno 2] No such file or directory: '/proc/nope'"
    from transfer._console import print_error

    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/nope")
    print_error(FileNotFoundError(errno.ENOENT, "No such file or directory", "/proc/nope"))
    assert capfd.readouterr().err == (
        "error: /proc/nope: No such file or directory (the cache folder /proc/nope: "
        "point XDG_CACHE_HOME at a folder you can write, or make this one writable)\n"
    )


def test_an_onnx_model_named_pt_is_read_as_onnx(tmp_path):
    """An ONNX file renamed ``policy.pt`` was "not a policy file this version reads": protobuf has no magic number, so
    detection now also reads a model's first bytes; a pickle, a zip and text still are not ONNX."""
    import numpy as np

    from tests.test_checkpoint import onnx_mlp
    from transfer.formats import detect_format, load_policy

    model = onnx_mlp(tmp_path / "m.onnx", [(np.ones((2, 3), np.float32), np.zeros(2, np.float32))])
    renamed = tmp_path / "policy.pt"
    renamed.write_bytes(model.read_bytes())
    assert detect_format(renamed) == "onnx"
    policy = load_policy(renamed)
    assert (policy.input_size, policy.output_size) == (3, 2)
    pickled = tmp_path / "legacy.pt"
    pickled.write_bytes(b"\x80\x04\x95" + bytes(64))
    assert detect_format(pickled) == "rsl_rl"
    for head in (b"version: 1\n", b"\x08\x01\x99 not a model"):
        other = tmp_path / "other.pt"
        other.write_bytes(head + bytes(64))
        with pytest.raises(Exception, match="not a policy file this version reads"):
            detect_format(other)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_standard_output_is_named(tmp_path):
    """``transfer info CK > /dev/full`` said "No space left on device" and named no file; ``--help`` there ended in
    Python's "Exception ignored" traceback at exit."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("TRANSFER_CHILD_PROCESS", "TRANSFER_DEBUG")}
    for args in (["info", str(QUADRUPED_CK)], ["info", str(QUADRUPED_CK), "--json"], ["--help"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "transfer.cli", *args],
                env=env,
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip() == "error: standard output: No space left on device", (args, done.stderr)


def test_usd_composition_warnings_do_not_reach_stderr_raw(tmp_path, capfd):
    """A sublayer cycle printed USD's own "Warning: in _ReportErrors at line 3315 of stage.cpp -- ..." beside
    transfer's report of the same error; now only the report (naming the layers) is shown."""
    pytest.importorskip("pxr")
    robot = tmp_path / "q.usda"
    robot.write_text((ROOT / "transfer/data/quadruped.usda").read_text())
    (tmp_path / "a.usda").write_text("#usda 1.0\n(\n    subLayers = [@b.usda@, @q.usda@]\n)\n")
    (tmp_path / "b.usda").write_text("#usda 1.0\n(\n    subLayers = [@a.usda@]\n)\n")
    main(["inspect", str(tmp_path / "a.usda")])
    out, err = capfd.readouterr()
    assert "Sublayer hierarchy with root layer" in out and "has cycles" in out  # transfer's own report
    assert "_ReportErrors" not in out + err and "stage.cpp" not in out + err


def test_no_output_lands_on_any_file_the_command_reads(tmp_path, capsys):
    """``convert -o`` onto its ``--source`` names file, onto a hard link of ``--config`` or ``--asset``; ``import -o``
    onto a hard or symbolic link of its input; ``task -o`` onto a layer the robot references: each replaced a file
    the same command read (exit 0). Now refused before any work, ``--force`` or not, the file unchanged."""
    import os
    import shutil

    pytest.importorskip("pxr")
    data = ROOT / "transfer/data"
    ck = tmp_path / "p.pt"
    shutil.copyfile(QUADRUPED_CK, ck)
    names = tmp_path / "names.pt"
    names.write_text("\n".join(json.loads((QUADRUPED_CK.parents[1] / "train.json").read_text())["joint_names"]) + "\n")
    task = tmp_path / "task.yaml"
    shutil.copyfile(ROOT / "presets/tasks/quadruped_flat_velocity.yaml", task)
    robot = tmp_path / "q.usda"
    shutil.copyfile(data / "quadruped.usda", robot)
    mjcf = tmp_path / "q.xml"
    shutil.copyfile(data / "quadruped.xml", mjcf)
    os.link(task, tmp_path / "task_link.pt")
    os.link(robot, tmp_path / "robot_link.pt")
    os.link(mjcf, tmp_path / "mjcf_link.usda")
    os.symlink("q.xml", tmp_path / "mjcf_symlink.usd")
    top = tmp_path / "top.usda"  # a robot whose physics comes from a sublayer: q.usda is read through it
    top.write_text('#usda 1.0\n(\n    subLayers = [@q.usda@]\n    upAxis = "Z"\n)\n')
    os.link(robot, tmp_path / "layer_link.yaml")
    cases = [
        (["convert", ck, "--source", names, "--to", "mjwarp", "-o", names], names),
        (["convert", ck, "--config", task, "--to", "mjwarp", "-o", tmp_path / "task_link.pt"], task),
        (["convert", ck, "--asset", robot, "--to", "mjwarp", "-o", tmp_path / "robot_link.pt"], robot),
        (["import", mjcf, "-o", tmp_path / "mjcf_link.usda"], mjcf),
        (["import", mjcf, "-o", tmp_path / "mjcf_symlink.usd"], mjcf),
        (["task", top, "-o", tmp_path / "layer_link.yaml"], robot),
    ]
    for args, hurt in cases:
        before = hurt.read_bytes()
        assert main([*map(str, args), "--force"]) == 2, args
        err = capsys.readouterr().err
        assert "refusing to write over a file this command reads" in err, (args, err)
        assert hurt.read_bytes() == before, args
    assert "a file the robot" in err and str(top) in err  # the layer is named as the robot's


def test_a_metadata_document_naming_a_key_twice_is_refused_not_read_last_one_wins(tmp_path, capsys):
    """A TorchScript checkpoint whose stored document gives ``joint_names`` twice (the second reversed) was read
    last-one-wins: the order reversed, exit 0. ONNX's ``metadata_props`` and YAML already refused a key twice; the
    JSON of every stored document (checkpoints, traces) does now too."""
    torch = pytest.importorskip("torch")
    from transfer.formats.torchscript import TORCHSCRIPT_EXTRA_FILE, extra_files

    demo = ROOT / "checkpoints" / "quadruped_flat_physx" / "exported" / "policy.pt"
    files = extra_files(demo)
    text = files[TORCHSCRIPT_EXTRA_FILE].decode()
    names = json.loads(text)["joint_names"]
    twice = text[:-1] + ', "joint_names": ' + json.dumps(names[::-1]) + "}"
    out = tmp_path / "twice.pt"
    torch.jit.save(torch.jit.load(str(demo)), str(out), _extra_files={**files, TORCHSCRIPT_EXTRA_FILE: twice})
    assert main(["info", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "the key 'joint_names' is given twice" in err and out.name in err, err
    from transfer.errors import strict_json

    assert strict_json('{"a": {"b": 1}, "c": [{"b": 2}]}') == {"a": {"b": 1}, "c": [{"b": 2}]}  # nested: not twice


def test_a_huge_text_config_is_refused_by_its_size_before_it_is_parsed(tmp_path, monkeypatch):
    """A 200 MB YAML of comments as --config, a sweep spec or --source took ~55 s and 557 MB before its refusal:
    every configuration reader refuses a file over MAX_CONFIG_BYTES unread (the limit made small here)."""
    import transfer.errors as errors
    from transfer.errors import read_yaml_mapping
    from transfer.ordering import read_name_file
    from transfer.task.isaaclab import IsaacLabError, load_isaaclab_yaml

    monkeypatch.setattr(errors, "MAX_CONFIG_BYTES", 1024)
    big = tmp_path / "big.yaml"
    big.write_text("format: transfer-task/1\n" + "# comment\n" * 200)
    with pytest.raises(ValueError, match=r"big.yaml: 0 MiB is more than a configuration file holds"):
        read_yaml_mapping(big, ValueError, "a mapping")
    with pytest.raises(ValueError, match=r"big.yaml: .* more than a list of joint names holds"):
        read_name_file(big)
    with pytest.raises(IsaacLabError, match=r"big.yaml: .* more than a run's configuration holds"):
        load_isaaclab_yaml(big)
    monkeypatch.setattr(errors, "MAX_CONFIG_BYTES", 1 << 20)
    assert read_yaml_mapping(big, ValueError, "a mapping") == {"format": "transfer-task/1"}


def test_the_engine_log_is_shown_for_an_engine_s_error_not_before_one_of_transfer_s_own(capfd):
    """A full disk at the end of a replay (or a refused plot) came after ~40 lines of the engines' log: transfer's
    own errors name their cause in one line; an engine's error still shows the log's tail."""
    from transfer._console import engine_output
    from transfer._files import DiskFullError

    for exc, shown in ((DiskFullError(28, "out.png: the disk is full"), False), (RuntimeError("PxScene"), True)):
        with pytest.raises(type(exc)):
            with engine_output():
                os.write(1, b"[Warning] [omni.physx] an engine line\n")
                raise exc
        err = capfd.readouterr().err
        assert ("an engine line" in err) is shown and ("--- engine output" in err) is shown, err


def test_an_output_file_given_with_a_trailing_slash_is_refused(tmp_path, capsys):
    """``--record d4.parquet/`` (no such folder) wrote a file named d4.parquet: the slash was dropped in parsing."""
    out = tmp_path / "d4.parquet"
    assert main(["replay", str(QUADRUPED_CK), "--target", "physx", "--record", f"{out}/"]) == 2
    err = capsys.readouterr().err
    assert f"--record {out}/ names a folder (it ends in /)" in err and not out.exists(), err


def test_a_checkpoint_tensor_declaring_more_than_it_stores_is_refused_before_any_use(tmp_path, capsys):
    """An RSL-RL checkpoint whose actor weight is a stride-0 view of 48 floats shaped (10^9, 48) made convert ask
    torch for 192 GB ("[enforce fail at alloc_cpu.cpp]", "unexpected"): refused when loaded, naming the tensor."""
    torch = pytest.importorskip("torch")
    ck = torch.load(str(ROOT / "checkpoints/quadruped_flat_physx/model_999.pt"), weights_only=True)
    ck["actor_state_dict"] = dict(ck["actor_state_dict"])
    ck["actor_state_dict"]["mlp.0.weight"] = torch.zeros(48).as_strided((10**9, 48), (0, 1))
    bad = tmp_path / "model_1.pt"
    torch.save(ck, bad)
    assert main(["convert", str(bad), "--to", "mjwarp", "-o", str(tmp_path / "out.pt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tensor actor_state_dict.mlp.0.weight declares shape (1000000000, 48)" in err, err
    assert not (tmp_path / "out.pt").exists()


def test_a_metadata_joint_list_of_absurd_size_or_unprintable_names_is_refused_at_once():
    """10^5 joint names were checked pairwise (names.count: 10^10 steps) and ended in a 20 kB message; a name with
    escape sequences was carried into every table. Refused when the task is read, in one short line."""
    import time

    from transfer.task import Task, TaskError, load_task

    data = load_task(ROOT / "presets/tasks/quadruped_flat_velocity.yaml").to_dict()
    start = time.perf_counter()
    with pytest.raises(TaskError, match="100000 names, more than any robot has") as err:
        Task.from_dict({**data, "joint_names": [f"j{i}" for i in range(100_000)]})
    assert time.perf_counter() - start < 5 and len(str(err.value)) < 300
    with pytest.raises(TaskError, match=r"the name 'LF_\\x1b\[31m' holds control characters"):
        Task.from_dict({**data, "joint_names": ["LF_\x1b[31m", "LF_HFE"]})


def test_a_pattern_that_backtracks_without_end_is_refused_in_seconds():
    """An Isaac Lab run whose ``init_state.joint_pos`` keyed ``(.*)*(.*)*...Z`` made ``info`` run until killed (Python's
    re backtracks exponentially); every name pattern is matched under a time bound and such a one refused by name."""
    import signal
    import time

    from transfer._patterns import PatternError, full_matches
    from transfer.task import TaskError, expand_joint_values

    evil = "(.*)*" * 14 + "Z"
    start = time.perf_counter()
    with pytest.raises(TaskError, match=r"took over 2 s to match 12 names: nested repetition"):
        expand_joint_values({evil: 0.0, ".*": 0.0}, [f"LF_HAA_{i}" for i in range(12)], field="joint_pos")
    assert time.perf_counter() - start < 10
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None) and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    assert full_matches("LF_.*", ["LF_HAA", "RF_HAA", "LF_KFE"]) == ["LF_HAA", "LF_KFE"]
    with pytest.raises(PatternError, match=r"'\(' is not a valid regular expression"):
        full_matches("(", ["a"])


@pytest.mark.engines
def test_a_stage_that_did_not_compose_whole_is_warned_of_on_physx(tmp_path):
    """A robot whose USD sublayers a file that does not exist replayed on PhysX with no word of it (Newton refuses
    such a stage): the run says the stage did not compose whole."""
    pytest.importorskip("ovphysx")
    from transfer.runs.replay import replay

    text = (ROOT / "transfer/data/quadruped.usda").read_text()
    robot = tmp_path / "robot.usda"
    robot.write_text(text.replace('upAxis = "Z"\n', 'upAxis = "Z"\n    subLayers = [@./missing.usda@]\n', 1))
    result = replay(QUADRUPED_CK, "physx", asset=robot, seconds=0.2, progress=False)
    (said,) = [w for w in result.warnings if "did not compose whole" in w]
    assert f"Could not load sublayer @{tmp_path / 'missing.usda'}@" in said and "skipping.;" not in said, said


def test_an_output_that_appears_while_it_is_written_is_kept(tmp_path, monkeypatch, capsys):
    """``-o`` was checked at the start and renamed over at the end: a file created there meanwhile (by the user, or
    by a second convert to the same -o, which both said "wrote") was destroyed. Without --force the output is put
    in place only where nothing is by then."""
    from transfer.formats.checkpoint import CheckpointError, atomic_write, new_output

    out = tmp_path / "o.pt"

    def write(tmp):
        tmp.write_text("ours")
        out.write_text("theirs")  # another run got there first

    with new_output(out, force=False), pytest.raises(CheckpointError, match="a file appeared there while"):
        atomic_write(out, write)
    assert out.read_text() == "theirs" and sorted(p.name for p in tmp_path.iterdir()) == ["o.pt"]
    with new_output(out, force=True):
        atomic_write(out, lambda tmp: tmp.write_text("forced"))
    assert out.read_text() == "forced"
    from transfer._files import put_in_place  # the same rule for import's USD

    (tmp_path / "scratch").write_text("new")
    with pytest.raises(FileExistsError):
        put_in_place(tmp_path / "scratch", out, replace=False)
    assert out.read_text() == "forced" and (tmp_path / "scratch").exists()
    put_in_place(tmp_path / "scratch", tmp_path / "fresh.pt", replace=False)
    assert (tmp_path / "fresh.pt").read_text() == "new" and not (tmp_path / "scratch").exists()
    # the command line: convert without --force, the file appearing while the checkpoint is checked
    import transfer.runs.convert as convert

    real = convert._reorder
    target = tmp_path / "c.pt"

    def meanwhile(*args, **kwargs):
        target.write_text("user data")
        return real(*args, **kwargs)

    dangling = tmp_path / "dangling.pt"
    dangling.symlink_to(tmp_path / "nowhere.pt")  # was "a file appeared there while ..." at the end of the run
    assert main(["convert", str(QUADRUPED_CK), "--to", "mjwarp", "-o", str(dangling)]) == 2
    assert "is a symbolic link that leads to no file" in capsys.readouterr().err and dangling.is_symlink()
    monkeypatch.setattr(convert, "_reorder", meanwhile)
    assert main(["convert", str(QUADRUPED_CK), "--to", "mjwarp", "-o", str(target)]) == 2
    assert target.read_text() == "user data" and not list(tmp_path.glob(".c.pt*"))


def test_a_usd_layer_named_by_a_url_is_refused_before_any_engine_opens_it(tmp_path, capsys):
    """A sublayer ``@http://example.com/x.usd@`` made ``replay --target physx`` look example.com up (PhysX's own
    resolver) and exit 0: refused by every command that takes a robot, before an engine sees the file."""
    text = (ROOT / "transfer/data/quadruped.usda").read_text()
    robot = tmp_path / "robot.usda"
    robot.write_text(text.replace('upAxis = "Z"\n', 'upAxis = "Z"\n    subLayers = [@http://example.com/x.usd@]\n', 1))
    for command in (
        ["inspect", str(robot), "--truth"],
        ["task", str(robot), "-o", str(tmp_path / "t.yaml")],
        ["replay", str(QUADRUPED_CK), "--asset", str(robot), "--target", "physx"],
    ):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert (
            "names 'http://example.com/x.usd' (a layer, value clip or asset) by a URL; transfer fetches nothing" in err
        ), err
    # value clips (PhysX looked the host up for them too) and asset-valued attributes
    from transfer.robot.usd_files import url_references

    clips = (
        'def Xform "extra" (\n clips = {\n  dictionary default = {\n   double2[] active = [(0, 0)]\n   asset[] '
        'assetPaths = [@http://example.com/clip.usda@]\n   string primPath = "/extra"\n   double2[] times = [(0, 0)]'
        "\n  }\n }\n)\n{\n}\n"
    )
    attribute = 'def Shader "tex"\n{\n asset inputs:file = @ https://example.com/t.png@\n}\n'
    for extra, url in ((clips, "http://example.com/clip.usda"), (attribute, " https://example.com/t.png")):
        robot.write_text(text + extra)
        assert [u for _, u in url_references(robot)] == [url]
    robot.write_text(text)
    assert url_references(robot) == []


def test_onnxruntime_is_loaded_with_its_telemetry_off_unless_the_user_turned_it_on():
    """onnxruntime 1.32 sent DNS queries for mobile.events.data.microsoft.com ~10 s into any run that loaded an ONNX
    policy (measured with strace); ORT_DISABLE_TELEMETRY=1 before its import stops them (measured: none)."""
    import subprocess
    import sys

    pytest.importorskip("onnxruntime")
    probe = (
        "import os; from transfer.formats.onnx import onnxruntime; onnxruntime(); "
        "print(os.environ['ORT_DISABLE_TELEMETRY'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    for given, expected in ((None, "1"), ("0", "0")):
        run_env = env if given is None else {**env, "ORT_DISABLE_TELEMETRY": given}
        done = subprocess.run([sys.executable, "-c", probe], env=run_env, capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == expected, done.stderr


def test_a_recurrent_onnx_whose_state_comes_back_in_another_shape_is_refused_when_loaded(tmp_path):
    """h_in (1, 1, 64) fed by an h_out of (1, 1, 128): replay ended in onnxruntime's 3-line InvalidArgument
    ("unexpected"), verify in numpy's "could not broadcast"; neither named the file."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from transfer.formats import load_policy
    from transfer.formats.policy import PolicyError

    info = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["obs", "W"], ["actions"]), helper.make_node("Identity", ["H"], ["h_out"])],
        "g",
        [info("obs", TensorProto.FLOAT, [1, 48]), info("h_in", TensorProto.FLOAT, [1, 1, 64])],
        [info("actions", TensorProto.FLOAT, [1, 12]), info("h_out", TensorProto.FLOAT, [1, 1, 128])],
        [
            numpy_helper.from_array(np.zeros((48, 12), np.float32), "W"),
            numpy_helper.from_array(np.zeros((1, 1, 128), np.float32), "H"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "rec.onnx"))
    with pytest.raises(
        PolicyError, match=r"rec.onnx: the recurrent state h_in is \[1, 1, 64\] in but h_out comes back"
    ):
        load_policy(tmp_path / "rec.onnx")
