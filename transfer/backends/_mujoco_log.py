"""MuJoCo's warnings go to Python logging, never to a ``MUJOCO_LOG.TXT`` in the user's working directory.

MuJoCo's C engine reports a warning (e.g. "Nan, Inf or huge value in QACC at DOF 1. The simulation is unstable.")
through ``mju_user_warning`` when one is set; otherwise it prints it and appends it to ``MUJOCO_LOG.TXT`` in the
current directory. :func:`install` sets that handler once per process, to one that logs to
``logging.getLogger("transfer.backends.mujoco.engine")``: the instability warnings (the ones after which MuJoCo
resets the simulation, mjWARN_BADQPOS/BADQVEL/BADQACC/BADCTRL: "The simulation is unstable") at ERROR, the rest at
WARNING. ``transfer validate`` collects these records into its report; any other command shows them on stderr
(inside ``engine_output``: in its log, shown with ``--verbose``). A handler the host application set before is
left in place.

Both backends that run MuJoCo call :func:`install` on import: Newton's importer (every Newton path) and the MuJoCo
backend's model reader.
"""

from __future__ import annotations

import logging

__all__ = ["LOGGER", "install"]

LOGGER = "transfer.backends.mujoco.engine"
UNSTABLE = "The simulation is unstable"
_installed = False


def _on_warning(message: str) -> None:
    text = str(message).strip()
    level = logging.ERROR if UNSTABLE in text else logging.WARNING
    logging.getLogger(LOGGER).log(level, "MuJoCo: %s", text)


def install() -> bool:
    """Route MuJoCo's warnings to :data:`LOGGER` (idempotent). ``False`` when MuJoCo is not installed or the host
    set its own handler (then that handler decides where warnings go)."""
    global _installed
    if _installed:
        return True
    try:
        import mujoco
    except ImportError:
        return False
    if mujoco.get_mju_user_warning() not in (None, _on_warning):
        return False
    mujoco.set_mju_user_warning(_on_warning)
    _installed = True
    return True
