"""Bad input to the commands (issue 19), through the command line: every case gets one clear ``error:`` line naming
the flag, file or field, is refused before any engine starts where it can be, overwrites nothing and prints no
traceback. One section per kind of failure the issue measured: work destroyed, numbers that make no sense, outputs
that lie, tracebacks, messages that mislead, outputs checked too late.

Most cases fail in the command line's own checks (:mod:`transfer.cli._checks`) and take well under a second; the few
that need an engine (a replay that meets NaN actions, Newton on a stage with unresolved references, a --force
training run, Ctrl-C in the middle of a replay) are marked ``engines``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from transfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "checkpoints/ant_flat_physx/exported/policy.pt"
TASK = ROOT / "presets/tasks/ant_flat_velocity.yaml"


def refused(capsys, *args: object) -> str:
    """Run ``transfer ARGS`` in-process; assert exit 2 and one error on stderr, no traceback; return stderr."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 2, (args, out, err)
    assert "error: " in err and "Traceback" not in err, err
    return err


def cli(*args: object, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "transfer.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        **kwargs,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def nan_policy(tmp_path_factory) -> Path:
    """The shipped Ant policy with its first weight matrix set to NaN (its metadata kept)."""
    torch = pytest.importorskip("torch")
    from transfer.formats import read_metadata
    from transfer.formats.torchscript import save_torchscript

    module = torch.jit.load(str(POLICY), map_location="cpu")
    with torch.no_grad():
        next(iter(module.parameters())).fill_(float("nan"))
    return save_torchscript(module, tmp_path_factory.mktemp("nan") / "nan.pt", read_metadata(POLICY))


# ------------------------------------------------------------------------------------------------ 1. work destroyed


def test_train_refuses_a_folder_holding_an_earlier_run_and_leaves_it_untouched(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "exported").mkdir(parents=True)
    (run / "model_499.pt").write_bytes(b"the earlier run's weights")
    (run / "exported" / "policy.pt").write_bytes(b"the earlier export")
    before = snapshot(run)
    err = refused(capsys, "train", "--task", TASK, "-o", run, "--iterations", "1")
    assert "-o " in err and "model_499.pt" in err and "--force" in err
    assert snapshot(run) == before


def test_train_refuses_an_output_that_is_a_file(tmp_path, capsys):
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    err = refused(capsys, "train", "--task", TASK, "-o", file)
    assert "is a file" in err and "-o" in err
    assert file.read_text() == "mine"


@pytest.mark.engines
def test_train_force_replaces_the_earlier_run_and_keeps_other_files(tmp_path, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("rsl_rl")
    run = tmp_path / "run"
    run.mkdir()
    (run / "model_499.pt").write_bytes(b"stale")
    (run / "notes.txt").write_text("mine")
    (run / "model_best.pt").write_bytes(b"my best weights")  # matches model_*.pt, and was deleted (issue 31)
    args = ["train", "--task", str(TASK), "-o", str(run), "--iterations", "1", "--num-envs", "1", "--force"]
    assert main(args) == 0, capsys.readouterr().err
    names = {p.name for p in run.iterdir()}
    assert "model_499.pt" not in names and "model_0.pt" in names  # run-folder loading now picks this run's
    assert (run / "notes.txt").read_text() == "mine" and (run / "model_best.pt").read_bytes() == b"my best weights"


def test_convert_never_replaces_an_existing_output_without_force(tmp_path, capsys):
    out = tmp_path / "out.pt"
    out.write_bytes(b"keep me")
    err = refused(capsys, "convert", POLICY, "--to", "mjwarp", "-o", out)
    assert "--force" in err and out.read_bytes() == b"keep me"


# ------------------------------------------------------------------------------------------------ 2. numbers

NUMBERS = [
    (["replay", POLICY, "--target", "newton"], "--seconds", ["0"]),
    (["replay", POLICY, "--target", "newton"], "--seconds", ["-1"]),
    (["replay", POLICY, "--target", "newton"], "--seconds", ["inf"]),
    (["replay", POLICY, "--target", "newton"], "--seconds", ["nan"]),
    (["replay", POLICY, "--target", "newton"], "--seconds", ["1e12"]),
    (["replay", POLICY, "--target", "newton"], "--command", ["nan", "0", "0"]),
    (["replay", POLICY, "--target", "newton"], "--command", ["0.5", "inf", "0"]),
    (["replay", POLICY, "--target", "newton"], "--command", ["1e30", "0", "0"]),
    (["replay", POLICY, "--target", "newton"], "--num-envs", ["0"]),
    (["replay", POLICY, "--target", "newton"], "--num-envs", ["100000000"]),
    (["replay", POLICY, "--target", "physx"], "--seed", ["-1"]),
    (["replay", POLICY, "--target", "physx"], "--motion-fps", ["0"]),
    (["replay", POLICY, "--target", "physx"], "--motion-fps", ["nan"]),
    (["verify", POLICY], "--trace", ["-1"]),
    (["verify", POLICY], "--trace", ["nan"]),
    (["verify", POLICY], "--samples", ["0"]),
    (["verify", POLICY], "--seed", ["-3"]),
    (["train", "--task", TASK], "--iterations", ["0"]),
    (["train", "--task", TASK], "--iterations", ["-1"]),
    (["train", "--task", TASK], "--episode-seconds", ["0"]),
    (["train", "--task", TASK], "--obs-noise", ["nan"]),
    (["train", "--task", TASK], "--obs-noise", ["-0.5"]),
    (["train", "--task", TASK], "--num-envs", ["0"]),
    (["train", "--task", TASK], "--seed", ["-1"]),
    (["sweep", ROOT / "presets/sweeps/anymal_c_acceptance.yaml"], "--workers", ["0"]),
    (["sweep", ROOT / "presets/sweeps/anymal_c_acceptance.yaml"], "--workers", ["100000"]),
]


@pytest.mark.parametrize(("command", "flag", "values"), NUMBERS, ids=lambda v: v if isinstance(v, str) else None)
def test_a_number_that_makes_no_sense_is_refused_naming_the_flag(command, flag, values, tmp_path, capsys):
    out = ["-o", tmp_path / "run"] if command[0] in ("train", "sweep") else []
    err = refused(capsys, *command, *out, flag, *values)
    assert f"error: {flag} {' '.join(values)}" in err.replace("1e+12", "1e12").replace("1e+30", "1e30"), err
    assert "expected" in err or "must be" in err
    assert not (tmp_path / "run").exists()


def _numeric(hint: object) -> bool:
    import typing

    return hint in (int, float) or any(_numeric(a) for a in typing.get_args(hint))


def test_every_numeric_flag_of_every_command_is_checked():
    """No command grows a number that is not checked: every int or float field carries a :class:`Number` marker."""
    import dataclasses
    import typing

    from transfer.cli import _commands
    from transfer.cli._checks import Number

    unchecked, seen = [], 0
    for name, annotated in _commands()[0].items():
        cls = typing.get_args(annotated)[0]
        types, hints = typing.get_type_hints(cls), typing.get_type_hints(cls, include_extras=True)
        for field in dataclasses.fields(cls):
            if _numeric(types[field.name]):
                seen += 1
                if not any(isinstance(m, Number) for m in getattr(hints[field.name], "__metadata__", ())):
                    unchecked.append(f"{name} --{field.name.replace('_', '-')}")
    assert not unchecked, unchecked
    assert seen >= 12  # replay 4, verify 3, train 5: the test sees them


def test_the_task_episode_is_at_least_one_policy_step(tmp_path):
    from transfer.runs.train import train

    with pytest.raises(ValueError, match="shorter than one policy step"):
        train(TASK, "physx", tmp_path / "run", episode_seconds=1e-6, iterations=1, progress=False)
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------------ 3. outputs that lie


def test_convert_refuses_a_suffix_that_names_another_format(tmp_path, capsys):
    pytest.importorskip("onnx")
    from tests.test_checkpoint import onnx_mlp, random_mlp

    err = refused(capsys, "convert", POLICY, "--to", "mjwarp", "-o", tmp_path / "policy.onnx")
    assert "torchscript" in err and ".pt" in err
    onnx_file = onnx_mlp(tmp_path / "small.onnx", random_mlp(np.random.default_rng(0), [4, 3, 2]))
    err = refused(capsys, "convert", onnx_file, "--to", "mjwarp", "--source", "physx", "-o", tmp_path / "x.pt")
    assert "onnx" in err and ".onnx" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.onnx"]


def test_convert_refuses_a_policy_writing_nan_instead_of_calling_it_equal(nan_policy, tmp_path, capsys):
    out = tmp_path / "out.pt"
    err = refused(capsys, "convert", nan_policy, "--to", "mjwarp", "-o", out)
    assert "non-finite" in err and "NaN" in err and "Nothing written" in err
    assert "largest difference 0" not in err and not out.exists()


def test_verify_refuses_a_policy_writing_nan_before_the_engines_start(nan_policy, capsys):
    err = refused(capsys, "verify", nan_policy)
    assert "non-finite" in err and "nan.pt" in err
    assert "engine output" not in err


def test_diagnose_refuses_a_policy_writing_nan_instead_of_blaming_a_setting(nan_policy, capsys):
    err = refused(capsys, "diagnose", nan_policy, "--target", "newton", "--seconds", "2")
    assert "nan.pt: the policy writes non-finite actions" in err and "No engine setting changes that" in err
    assert "engine output" not in err  # before any run


def test_replay_table_names_non_finite_actions():
    import io

    from transfer.cli.replay import print_table

    row = {
        "label": "reordered on physx",
        "order": "physx",
        "forward_velocity": None,
        "fall_fraction": 1.0,
        "survival_seconds": 0.0,
        "num_envs": 4,
        "nonfinite_envs": 3,
        "seconds": 5.0,
    }
    text = io.StringIO()
    print_table([row], text)
    assert "non-finite" in text.getvalue() and "3 of 4 env(s)" in text.getvalue()
    text = io.StringIO()
    print_table([{**row, "nonfinite_envs": 0}], text)
    assert "non-finite" not in text.getvalue()


@pytest.mark.engines
def test_a_replay_of_a_nan_policy_says_so(nan_policy, capsys):
    pytest.importorskip("ovphysx")
    assert main(["replay", str(nan_policy), "--target", "physx", "--seconds", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "non-finite: " in out and "the policy wrote NaN or inf actions in 1 of 1 env(s)" in out


# ------------------------------------------------------------------------------------------------ 4. tracebacks


def test_a_closed_pipe_ends_quietly():
    """``transfer inspect ... | head``: the reader is gone before the command writes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "transfer.cli", "inspect", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


def _sigint_as_a_terminal_delivers_it() -> None:
    """In the child: Ctrl-C's default, whatever the test runner inherited (a shell starts background jobs with SIGINT
    ignored, and Python keeps a SIGINT ignored at start-up ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.engines
def test_ctrl_c_is_one_line_and_exit_130():
    pytest.importorskip("ovphysx")
    proc = subprocess.Popen(
        [sys.executable, "-m", "transfer.cli", "replay", str(POLICY), "--target", "physx", "--seconds", "3000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_as_a_terminal_delivers_it,
    )
    time.sleep(8)  # well into the replay, usually; a press during start-up is the next test's
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted (Ctrl-C); nothing more was written"
    assert out == ""


class _SwallowingLoader:
    """A loader that does what USD's ``Tf_PyPostProcessModule`` does: a Ctrl-C arrives while the module is being
    finished, and the error it raises is caught and dropped."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # bytecode runs: Python's handler raises KeyboardInterrupt in here
                time.sleep(0)
        except BaseException:
            pass


def test_a_ctrl_c_pressed_while_usd_finishes_a_module_is_delivered_after_it():
    """Measured before the fix: a replay interrupted 2 s after start, while it imported pxr, ran on."""
    from types import ModuleType

    from transfer._console import _CtrlCAfterLoad

    module = ModuleType("pxr.Fake")
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # as on a terminal, whatever ran pytest
    try:
        _SwallowingLoader().exec_module(module)  # unguarded: the Ctrl-C is lost
        with pytest.raises(KeyboardInterrupt):
            _CtrlCAfterLoad(_SwallowingLoader()).exec_module(module)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is Python's again
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _CtrlCAfterLoad(_SwallowingLoader()).exec_module(module)  # a process ignoring SIGINT keeps ignoring it
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_usd_modules_load_through_the_guard(tmp_path):
    """The command line installs the guard: pxr's modules then import through it."""
    script = (
        "import sys\n"
        "from transfer._console import ctrl_c_survives_usd_imports, _CtrlCAfterLoad\n"
        "ctrl_c_survives_usd_imports(); ctrl_c_survives_usd_imports()\n"
        "from pxr import Usd\n"
        "print(type(sys.modules['pxr.Usd'].__spec__.loader).__name__, sum(type(f).__name__ == '_CtrlCAfterImport' "
        "for f in sys.meta_path), Usd.Stage.CreateInMemory() is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["_CtrlCAfterLoad", "1", "True"], done.stderr[-2000:]


def test_a_broken_source_yaml_is_one_line(tmp_path, capsys):
    broken = tmp_path / "order.yaml"
    broken.write_text("- LF_HAA\n- [unclosed\n")
    err = refused(capsys, "replay", POLICY, "--target", "physx", "--source", broken)
    assert f"--source {broken}: not a readable YAML list of joint names" in err
    numbers = tmp_path / "numbers.yaml"
    numbers.write_text("- 1\n- 2\n")
    assert "expected a YAML list of joint names" in refused(
        capsys, "convert", POLICY, "--to", numbers, "-o", tmp_path / "o.pt"
    )


def test_an_unwritable_output_is_one_line(capsys):
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    err = refused(capsys, "convert", POLICY, "--to", "mjwarp", "-o", "/proc/transfer-out.pt")
    assert "-o /proc/transfer-out.pt: cannot write in /proc" in err
    assert "cannot write in /proc" in refused(capsys, "train", "--task", TASK, "-o", "/proc/run")


def test_errors_main_does_not_expect_are_short_and_named():
    """What a command does not report itself reaches :func:`main`'s handler: OS errors by file and reason, long
    engine messages cut to a few lines, other types named (the engine case itself is the Newton test below)."""
    from transfer.cli import MAX_LINES, _describe

    assert _describe(PermissionError(13, "Permission denied", "/x/y.pt")) == "/x/y.pt: Permission denied"
    text = _describe(RuntimeError("USD stage has composition errors:\n" + "- missing\n" * 30))
    assert len(text.splitlines()) == MAX_LINES + 1 and "(and 26 more lines)" in text and "Props/" in text
    assert _describe(KeyError("joint")).startswith("'joint'")
    assert "TRANSFER_DEBUG=1" in _describe(AssertionError("boom")) and "AssertionError" in _describe(AssertionError())


@pytest.mark.engines
def test_newton_on_a_stage_with_unresolved_references_is_clear(anymal_files, tmp_path):
    pytest.importorskip("newton")
    alone = tmp_path / "anymal_c.usda"  # the asset without its Props/ folder: its mesh references do not resolve
    shutil.copy(anymal_files["asset"], alone)
    result = cli(
        "replay",
        anymal_files["mjw_pt"],
        "--target",
        "newton",
        "--source",
        "mjwarp",
        "--config",
        anymal_files["yaml"],
        "--asset",
        alone,
        "--seconds",
        "0.5",
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    tail = result.stderr[result.stderr.index("error: ") :]
    # Its collision meshes are in the missing files: refused before Newton, naming the first unresolved reference.
    assert "no link of this floating-base robot" in tail and "composition errors" in tail and "Props/" in tail


# ------------------------------------------------------------------------------------------------ 5. misleading


def test_convert_to_an_unknown_order_blames_to(tmp_path, capsys):
    err = refused(capsys, "convert", POLICY, "--to", "bullet", "-o", tmp_path / "x.pt")
    assert "--to 'bullet'" in err and "--source" not in err


def test_convert_api_blames_to_as_well(tmp_path):
    from transfer.runs.convert import ConvertError, convert

    with pytest.raises(ConvertError, match="--to 'bullet'"):
        convert(POLICY, "bullet", out=tmp_path / "x.pt")


def test_the_mujoco_order_on_a_usd_robot_asks_for_its_mjcf(tmp_path, capsys):
    """``mujoco`` is the MJCF's own order, which a USD file does not keep: refused in one line naming the fix."""
    err = refused(capsys, "convert", POLICY, "--to", "mujoco", "-o", tmp_path / "x.pt")
    assert "--to mujoco is the joint order MuJoCo gives the robot's MJCF" in err and "--asset" in err
    assert not (tmp_path / "x.pt").exists()


def test_a_truncated_or_empty_checkpoint_says_so(tmp_path, capsys):
    truncated = tmp_path / "policy.pt"
    truncated.write_bytes(POLICY.read_bytes()[:3000])
    assert "truncated or corrupt" in refused(capsys, "info", truncated)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    assert "empty file" in refused(capsys, "replay", empty, "--target", "physx")


@pytest.mark.parametrize(
    "command",
    [
        ["replay", POLICY, "--target", "physx", "--asset", "{dir}"],
        ["verify", POLICY, "--asset", "{dir}"],
        ["convert", POLICY, "--to", "mjwarp", "-o", "{dir}/x.pt", "--asset", "{dir}"],
        ["info", POLICY, "--asset", "{dir}"],
        ["validate", "{dir}"],
        ["inspect", "{dir}"],
        ["replay", POLICY, "--target", "physx", "--config", "{dir}"],
        ["train", "--task", "{dir}", "-o", "{dir}/run"],
        ["convert", "{dir}", "--to", "mjwarp", "-o", "{dir}/x.pt"],
        ["task", "{dir}", "-o", "{dir}/task.yaml"],
    ],
    ids=lambda c: " ".join(str(a) for a in c[:1] + c[-2:]),
)
def test_a_folder_given_for_a_file_is_called_a_folder(command, tmp_path, capsys):
    err = refused(capsys, *(str(a).replace("{dir}", str(tmp_path)) for a in command))
    assert "is a folder" in err and "not found" not in err


def test_a_folder_without_params_env_yaml_names_that_file(tmp_path, capsys):
    (tmp_path / "model_0.pt").write_bytes(POLICY.read_bytes())
    assert "params/env.yaml" in refused(capsys, "info", tmp_path)
    assert "params/env.yaml" in refused(capsys, "replay", tmp_path, "--target", "physx")


def test_a_file_that_is_not_usd_says_so_in_one_line(capsys, tmp_path):
    """A robot named by a file no USD format reads (a checkpoint, a config, a file without a suffix) is called what
    it is, not a USD file that failed to open."""
    bare = tmp_path / "robot"
    bare.write_text("not a robot\n")
    config = tmp_path / "env.yaml"
    config.write_text("sim: {dt: 0.005}\n")
    for command in (
        ("inspect", POLICY),
        ("replay", POLICY, "--target", "mujoco", "--asset", config),
        ("inspect", bare),
    ):
        err = refused(capsys, *command)
        assert f"{command[-1]}: not a robot file" in err and "Give a USD file" in err, err
        assert "Error in '" not in err and "Could not open USD file" not in err and err.count("\n") == 1, err


def test_inspect_root_must_be_a_prim_path(capsys):
    assert "starting with /" in refused(capsys, "inspect", "--root", "")


def test_info_says_when_asset_is_not_used(tmp_path, capsys):
    usd = tmp_path / "robot.usda"
    usd.write_text("#usda 1.0\n")
    assert main(["info", str(POLICY), "--asset", str(usd)]) == 0
    assert f"note: --asset {usd} is not used" in capsys.readouterr().out


def test_train_on_a_task_without_an_asset_names_trains_flag(tmp_path, capsys):
    task = tmp_path / "task.yaml"
    task.write_text(TASK.read_text().replace("asset: ovphysx:Ant", "asset: null"))
    err = refused(capsys, "train", "--task", task, "-o", tmp_path / "run")
    assert "--asset" in err and "pass asset=" not in err
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------------ 6. checked too late


@pytest.mark.parametrize(
    "command",
    [
        ["replay", POLICY, "--target", "physx"],
        ["verify", POLICY, "--trace", "1"],
        ["validate", TASK],
    ],
    ids=lambda c: c[0],
)
def test_plot_paths_are_checked_before_the_work(command, tmp_path, capsys):
    folder = tmp_path / "adir"
    folder.mkdir()
    start = time.perf_counter()
    err = refused(capsys, *command, "--plot", tmp_path / "missing/dir/p.png")
    assert "--plot" in err and "missing/dir does not exist" in err
    err = refused(capsys, *command, "--plot", folder)
    assert "is a folder" in err
    err = refused(capsys, *command, "--plot", tmp_path / "p")
    assert "ending in .png" in err
    assert time.perf_counter() - start < 30  # no engine was started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"] and not any(folder.iterdir())


def test_verify_plot_without_trace_is_refused_before_the_work(capsys):
    assert "--trace" in refused(capsys, "verify", POLICY, "--plot", "v.png")


def test_convert_output_folder_is_checked_before_the_work(tmp_path, capsys):
    assert "does not exist" in refused(capsys, "convert", POLICY, "--to", "mjwarp", "-o", tmp_path / "no/x.pt")
    assert "is a folder" in refused(capsys, "convert", POLICY, "--to", "mjwarp", "-o", tmp_path)
    assert "ending in" in refused(capsys, "convert", POLICY, "--to", "mjwarp", "-o", tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_a_floating_robot_without_colliders_is_refused_before_any_engine(tmp_path, capsys):
    """The project's quadruped with every collision API removed would fall through the ground (as the shared Go2
    assets do, whose collision prims are empty): replay refuses it, naming the asset and the fix."""
    from pxr import Usd, UsdPhysics

    from transfer.robot.assets import locate_asset

    stage = Usd.Stage.Open(str(locate_asset("transfer:quadruped")))
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            prim.RemoveAPI(UsdPhysics.CollisionAPI)
    bare = tmp_path / "no_colliders.usda"
    stage.GetRootLayer().Export(str(bare))
    policy = Path(__file__).parents[1] / "checkpoints/quadruped_flat_physx/exported/policy.pt"
    err = refused(capsys, "replay", policy, "--asset", bare, "--target", "physx", "--seconds", "1")
    assert "no_colliders.usda: no link of this floating-base robot" in err and "fall through the ground" in err
    assert "PhysicsCollisionAPI" in err


def test_a_native_crash_in_the_child_is_one_line_and_its_signal(monkeypatch, capsys):
    """The console script runs the command in a child process (``transfer.cli.entry``): a child that dies of a
    segmentation fault (a real one: the child sends itself SIGSEGV, as an engine's fault would) ends in one line
    naming it and exit 139; a child's own exit status passes through."""
    import transfer.cli as cli

    monkeypatch.delenv("TRANSFER_CHILD_PROCESS", raising=False)
    crash = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", crash])
    monkeypatch.setattr(sys, "argv", ["transfer", "replay"])
    assert cli.entry() == 139
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "transfer replay stopped: native code crashed (SIGSEGV)" in err
    monkeypatch.setattr(cli, "_CHILD_COMMAND", [sys.executable, "-c", "import sys; sys.exit(2)"])
    assert cli.entry() == 2 and capsys.readouterr().err == ""


def test_the_console_script_runs_the_command_in_a_child():
    """``transfer --help`` through the installed script: the child answers, the exit status is its."""
    script = Path(sys.executable).parent / "transfer"
    if not script.is_file():
        pytest.skip("the console script is not installed in this environment")
    assert "import entry" in script.read_text()  # the installed script is the guard, not main itself
    done = subprocess.run([str(script), "info", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage: transfer info" in done.stdout


QUADRUPED = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"


@pytest.mark.parametrize("path", ["fifo", "/dev/zero"])
def test_a_checkpoint_that_is_no_regular_file_is_refused_before_a_byte_is_read(tmp_path, capsys, path):
    """Issue 31: a FIFO as the checkpoint blocked ``info`` and ``replay`` forever; ``/dev/zero`` was read until the
    machine ran out of memory (23 GB, then the OOM killer)."""
    if path == "fifo":
        path = tmp_path / "policy.pt"
        os.mkfifo(path)
    for command in (
        ["info", path],
        ["replay", path, "--target", "physx"],
        ["convert", path, "--to", "physx", "-o", tmp_path / "x.pt"],
    ):
        assert "not a regular file (a FIFO or a device)" in refused(capsys, *command)


def test_an_error_quoting_a_files_content_reaches_the_terminal_escaped(tmp_path, capsys):
    """Issue 31: a checkpoint whose metadata names an asset with terminal escapes printed them raw in the error
    (retitling and clearing the terminal); now escaped, the message's own line breaks kept."""
    from transfer.formats import read_metadata, write_metadata

    meta = dict(read_metadata(QUADRUPED), asset="\x1b]0;pwned\x07\x1b[2Jx.usda")
    evil = tmp_path / "evil.pt"
    write_metadata(QUADRUPED, evil, meta)
    err = refused(capsys, "replay", evil, "--target", "physx")
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err
    from transfer._console import shown

    assert shown("one\ntwo\x1b[2J") == "one\ntwo\\x1b[2J" and shown("x" * 30_000).endswith("(30000 characters)")


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ("newton.solver_options={iterations: 0}", r"solver_options.iterations: expected an integer in \[1, 10000\]"),
        ("newton.solver_options.iterations=0", r"solver_options.iterations: expected an integer in \[1, 10000\]"),
        ("newton.solver_options={ls_iterations: 100000000}", r"ls_iterations: expected an integer in \[1, 10000\]"),
        ("mujoco.iterations=0", r"mujoco.iterations: expected an integer in \[1, 10000\], got 0"),
        ("trained_on=mujoco", "--set trained_on=mujoco contradicts policy.pt: .* says it was trained on physx"),
    ],
)
def test_settings_an_engine_cannot_run_or_that_contradict_the_checkpoint_are_refused(capsys, setting, match):
    """Issue 31: 0 solver iterations ran with exit 0 (the robot fell, no word), 10^8 were accepted, and
    ``trained_on=mujoco`` on a PhysX-trained checkpoint relabelled its native run silently."""
    import re

    err = refused(capsys, "replay", QUADRUPED, "--target", "physx", "--set", setting, "--seconds", "0.1")
    assert re.search(match, err), err


@pytest.mark.engines
def test_a_newton_solver_option_the_solver_lacks_is_named_with_the_ones_it_has(capsys):
    """Issue 31: ``solver_options={bogus_option: 1}`` died in the solver's constructor as "TypeError ...
    (unexpected)"; now one line naming the option, the solver and its options."""
    pytest.importorskip("newton")
    err = refused(
        capsys,
        "replay",
        QUADRUPED,
        "--target",
        "newton",
        "--set",
        "newton.solver_options={bogus_option: 1}",
        "--seconds",
        "0.1",
    )
    assert "['bogus_option'] are not options of SolverMuJoCo" in err and "'ls_iterations'" in err


@pytest.mark.engines
def test_a_runs_warnings_go_to_stderr_and_its_table_alone_to_stdout(capsys):
    """Issue 31: a replay's warnings (here a spawn that puts the feet into the ground) were printed on stdout after
    the table, mixed with the results a script reads; they go to stderr, as errors do."""
    pytest.importorskip("ovphysx")
    assert main(["replay", str(QUADRUPED), "--target", "physx", "--seconds", "0.5", "--set", "spawn_height=0.36"]) == 0
    out, err = capsys.readouterr()
    assert "warning: spawn_height 0.36 m puts" in err and "warning" not in out and "fwd m/s" in out
