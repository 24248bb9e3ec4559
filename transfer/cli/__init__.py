"""The ``transfer`` command line: thin commands over the API (each prints tables or JSON, draws plots).

- ``transfer inspect``: every convention's order of an asset (:mod:`transfer.cli.inspect`);
- ``transfer replay``: a checkpoint on a backend, reordered, naive or compared (:mod:`transfer.cli.replay`);
- ``transfer verify``: the transfer checklist on both backends, exit 0 or 1 (:mod:`transfer.cli.verify`);
- ``transfer train``: PPO on a task, on any backend, checkpoints that know their order (:mod:`transfer.cli.train`);
- ``transfer info``: a checkpoint's format, sizes and metadata (:mod:`transfer.cli.info`);
- ``transfer convert``: a checkpoint rewritten to another joint order, with metadata (:mod:`transfer.cli.convert`);
- ``transfer validate``: the joint_movement test on both engines and the robot profile (:mod:`transfer.cli.validate`).
"""

from __future__ import annotations

import tyro

from transfer.cli.convert import Convert, run_convert
from transfer.cli.info import Info, run_info
from transfer.cli.inspect import Inspect, default_asset, inspect_asset, run_inspect
from transfer.cli.replay import Replay, run_replay
from transfer.cli.train import Train, run_train
from transfer.cli.validate import Validate, run_validate
from transfer.cli.verify import Verify, run_verify

__all__ = ["default_asset", "inspect_asset", "main"]

SUBCOMMANDS = {
    "inspect": tyro.conf.FlagCreatePairsOff[Inspect],
    "replay": tyro.conf.FlagCreatePairsOff[Replay],
    "verify": tyro.conf.FlagCreatePairsOff[Verify],
    "train": tyro.conf.FlagCreatePairsOff[Train],
    "info": tyro.conf.FlagCreatePairsOff[Info],
    "convert": tyro.conf.FlagCreatePairsOff[Convert],
    "validate": tyro.conf.FlagCreatePairsOff[Validate],
}
RUNNERS = {
    Inspect: run_inspect, Replay: run_replay, Verify: run_verify, Train: run_train, Info: run_info,
    Convert: run_convert, Validate: run_validate,
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``transfer`` console script."""
    cmd = tyro.extras.subcommand_cli_from_dict(
        SUBCOMMANDS,
        args=argv,
        prog="transfer",
        description="Run a policy trained on one physics backend on another, every vector matched by name.",
    )
    return RUNNERS[type(cmd)](cmd)
