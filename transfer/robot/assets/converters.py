"""The official converters (``mujoco-usd-converter``, ``urdf-usd-converter``) in an environment of their own.

Both converters depend on ``usd-exchange``, which ships its own ``pxr`` (it cannot share a Python environment with
``usd-core``), and ``mujoco-usd-converter`` 0.8 pins ``mujoco>=3.16,<3.17`` where Newton 1.8 pins ``mujoco~=3.17.0``.
So they live in a virtual environment of their own, created on first use and reached only as a subprocess:

- where: ``$TRANSFER_CONVERTERS`` (default ``$XDG_CACHE_HOME/transfer/converters``, i.e.
  ``~/.cache/transfer/converters``), one folder per pair of converter versions and Python version
  (:func:`environment_dir`): ``venv/`` the environment, ``cache/<key>/`` the converted files;
- created once (:func:`ensure_environment`) with ``python -m venv`` and ``pip install`` of the pinned versions
  (:data:`CONVERTERS`), under a file lock (concurrent first uses wait for one creation), with one line on stderr;
  an environment made by hand at that place is accepted once it answers with the pinned versions;
- each conversion (:func:`run_converter`) runs the converter's public API (``Converter(layer_structure=False)``:
  one flattened ``.usdc`` holding the meshes) in that environment.

When the environment cannot be created (no network, no pip), :class:`ConverterSetupError` says why and gives the
commands to create it by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer.errors import MissingPackageError
from transfer.robot.assets.sources import AssetError, ros_packages

__all__ = [
    "CONVERTERS",
    "HOME_VARIABLE",
    "Converter",
    "ConverterSetupError",
    "converters_home",
    "ensure_environment",
    "environment_dir",
    "export_layer",
    "run_converter",
]

HOME_VARIABLE = "TRANSFER_CONVERTERS"
"""Environment variable naming the folder of the converter environments and their cache."""


@dataclass(frozen=True)
class Converter:
    """One official converter: its PyPI ``package``, the pinned ``version`` and the Python ``module``."""

    format: str
    package: str
    version: str
    module: str

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


CONVERTERS: Mapping[str, Converter] = MappingProxyType(
    {
        "mjcf": Converter("mjcf", "mujoco-usd-converter", "0.8.0", "mujoco_usd_converter"),
        "urdf": Converter("urdf", "urdf-usd-converter", "0.3.4", "urdf_usd_converter"),
    }
)
"""The converter of each format, at the version this release of transfer is tested with."""

_REPORTED = ("usd-exchange", "mujoco")
"""Packages of the environment whose versions are recorded beside the converters'."""
_READY = ".transfer-ready"
_RESULT = "TRANSFER-RESULT "
_CONVERT = f"""
import json, sys
fmt, source, out, packages = sys.argv[1:5]
if fmt == "mjcf":
    import mujoco_usd_converter as package
    converter = package.Converter(layer_structure=False)
else:
    import urdf_usd_converter as package
    converter = package.Converter(layer_structure=False, ros_packages=json.loads(packages))
path = converter.convert(source, out)
print({_RESULT!r} + json.dumps({{"usd": path.path, "version": package.__version__}}), flush=True)
"""
_EXPORT = "import sys\nfrom pxr import Sdf\nsys.exit(0 if Sdf.Layer.FindOrOpen(sys.argv[1]).Export(sys.argv[2]) else 1)"


class ConverterSetupError(MissingPackageError):
    """The converter environment is missing and could not be created: ``why`` says what failed, the message gives
    the commands that create it by hand."""

    def __init__(self, venv: Path, why: str) -> None:
        pins = ", ".join(c.label for c in CONVERTERS.values())
        install = _by_hand(venv)
        super().__init__(
            " and ".join(c.package for c in CONVERTERS.values()),
            "MJCF/URDF import",
            install,
            f"MJCF/URDF import needs the official converters ({pins}) in an environment of their own, and creating "
            f"it in {venv} failed: {why}. Run the command again where PyPI can be reached, or create it by hand: "
            f"{install}",
        )


def converters_home() -> Path:
    """The folder holding the converter environments and their cache (``$TRANSFER_CONVERTERS``, else
    ``$XDG_CACHE_HOME/transfer/converters``, else ``~/.cache/transfer/converters``)."""
    given = os.environ.get(HOME_VARIABLE)
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "transfer" / "converters"


def environment_dir() -> Path:
    """The folder of this release's converter pair on this Python: ``venv/`` and ``cache/`` live in it."""
    parts = [f"{c.package}-{c.version}" for c in CONVERTERS.values()]
    return converters_home() / ("_".join(parts) + f"_py{sys.version_info.major}.{sys.version_info.minor}")


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _clean_env() -> dict[str, str]:
    """This process's environment without what would leak the main environment's Python or USD into the
    converters' (``PYTHONPATH``, ``PYTHONHOME``, ``PXR_*``, the active venv)."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "__PYVENV_LAUNCHER__")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PXR_")}


def _versions(python: Path) -> dict[str, str] | None:
    """The installed versions of the converters (and :data:`_REPORTED`) in the environment of ``python``."""
    names = [c.package for c in CONVERTERS.values()] + list(_REPORTED)
    code = f"import json, importlib.metadata as m\nprint(json.dumps({{n: m.version(n) for n in {names!r}}}))"
    try:
        done = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, env=_clean_env(), timeout=120, check=False
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def _ready(venv: Path) -> dict[str, str] | None:
    stamp = venv / _READY
    if stamp.is_file():
        with contextlib.suppress(ValueError, OSError):
            return json.loads(stamp.read_text())
    if not _python(venv).is_file():
        return None
    versions = _versions(_python(venv))  # made by hand: accepted when it holds the pinned converters
    if versions is None or any(versions.get(c.package) != c.version for c in CONVERTERS.values()):
        return None
    with contextlib.suppress(OSError):  # a read-only copy is used as it is
        stamp.write_text(json.dumps(versions))
    return versions


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (a file beside the environment) for as long as the block runs."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (one creation at a time is then the user's affair)
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _by_hand(venv: Path) -> str:
    pins = " ".join(c.requirement for c in CONVERTERS.values())
    return f"{sys.executable} -m venv {venv} && {_python(venv)} -m pip install {pins}"


def ensure_environment(stream: Any = None) -> dict[str, str]:
    """The converter environment, created on first use; returns the installed versions (package -> version).

    Creation prints one line on ``stream`` (default stderr) and takes a file lock: a second process waits for the
    first one's environment instead of building its own. A folder left half-made by an interrupted creation is
    removed and made again.

    Raises:
        ConverterSetupError: ``venv`` or ``pip install`` failed (no network, no package index); the message says
            what pip said and the commands that create the environment by hand.
    """
    venv = environment_dir() / "venv"
    versions = _ready(venv)
    if versions is not None:
        return versions
    venv.parent.mkdir(parents=True, exist_ok=True)
    with _locked(venv.parent / "create.lock"):
        versions = _ready(venv)
        if versions is not None:
            return versions
        pins = ", ".join(c.label for c in CONVERTERS.values())
        print(
            f"transfer: first MJCF/URDF import: creating the converter environment ({pins}) in {venv}; this takes "
            "a minute or less and about 350 MB, once",
            file=stream or sys.stderr,
            flush=True,
        )
        shutil.rmtree(venv, ignore_errors=True)
        _create(venv)
        versions = _versions(_python(venv))
        if versions is None:
            raise ConverterSetupError(
                venv, "the environment was made but does not answer with the converters' versions"
            )
        (venv / _READY).write_text(json.dumps(versions))
    return versions


def _create(venv: Path) -> None:
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [
            str(_python(venv)),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            *(c.requirement for c in CONVERTERS.values()),
        ],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, env=_clean_env(), check=False)
        except OSError as exc:
            done = subprocess.CompletedProcess(step, 1, "", str(exc))
        if done.returncode != 0:
            said = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            errors = [line for line in said if line.startswith("ERROR")] or said[-2:] or ["no output"]
            shutil.rmtree(venv, ignore_errors=True)
            raise ConverterSetupError(venv, f"{step[2] if step[1] == '-m' else step[0]} said: {' '.join(errors)[:600]}")


def _failure(text: str) -> str:
    """The converter's own reason, out of USD's ``Error in '...' at line N in file F : 'why'`` wrapping."""
    import re

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reasons = re.findall(r" : '(?:Python runtime error: )?(.*)'\s*$", text, flags=re.MULTILINE)
    if reasons:
        return reasons[-1]
    raised = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception): ", line)]
    if raised:  # a Python traceback: its last line says what went wrong
        return raised[-1][-800:]
    return " ".join(lines[-3:])[-800:] if lines else "no output"


def run_converter(fmt: str, source: Path, out_dir: Path) -> tuple[Path, list[str], float]:
    """Convert ``source`` (``fmt``: ``"mjcf"`` or ``"urdf"``) into ``out_dir``; return the USD file it wrote, the
    converter's warnings and the seconds it took. Raises :class:`AssetError` with the converter's reason."""
    ensure_environment()
    converter = CONVERTERS[fmt]
    python = _python(environment_dir() / "venv")
    start = time.perf_counter()
    packages = [{"name": n, "path": str(p)} for n, p in ros_packages(source).items()] if fmt == "urdf" else []
    done = subprocess.run(
        [str(python), "-c", _CONVERT, fmt, str(source.resolve()), str(out_dir), json.dumps(packages)],
        capture_output=True,
        text=True,
        env=_clean_env(),
        cwd=str(out_dir),
        check=False,
    )
    seconds = time.perf_counter() - start
    result = next((line for line in done.stdout.splitlines() if line.startswith(_RESULT)), None)
    if done.returncode != 0 or result is None:
        raise AssetError(f"{source}: {converter.label} could not convert it: {_failure(done.stderr + done.stdout)}")
    usd = Path(json.loads(result[len(_RESULT) :])["usd"])
    warnings = [_warning(line) for line in done.stderr.splitlines() if line.startswith(("Warning", "[Warning"))]
    return usd, warnings, seconds


def _warning(line: str) -> str:
    """A converter warning without USD's ``Warning: in <function> at line N of <file> --`` preamble."""
    return line.split(" -- ", 1)[1].strip() if " -- " in line else line.strip()


def export_layer(usd: Path, out: Path, shown: Path | None = None) -> None:
    """Write ``usd`` to ``out`` in the format ``out``'s suffix names (``.usda``: text), with the converter
    environment's USD (the main environment's ``pxr`` is kept to the USD reader and the backends). ``shown``: the
    file errors name (the output ``out`` is written for)."""
    python = _python(environment_dir() / "venv")
    done = subprocess.run(
        [str(python), "-c", _EXPORT, str(usd), str(out)], capture_output=True, text=True, env=_clean_env(), check=False
    )
    if done.returncode != 0:
        raise AssetError(f"{shown or out}: could not write the USD layer: {_failure(done.stderr + done.stdout)}")
