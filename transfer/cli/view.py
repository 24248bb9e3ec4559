"""``transfer view``: recorded runs on a web page, side by side, with a time slider."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import print_error
from transfer.cli._checks import PORT, SECONDS_OR_NONE
from transfer.cli._help import DEFAULT_IN_TEXT
from transfer.cli.traces import TRACE


@dataclass(frozen=True)
class View:
    """Serve a web page that plays traces written by transfer replay --record side by side, with a time slider and
    a play box: each robot drawn from its own file (the meshes MuJoCo sees) and posed from what its trace recorded.

    The page is served on 127.0.0.1 (open the printed address in a browser; over SSH, forward the port); Ctrl-C
    stops it. Traces of one robot only.

    Examples, from the repository root (the replay writes trace.native-physx.parquet and two more):
      transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target mujoco --asset transfer:quadruped.xml --compare --seconds 4 --record trace.parquet
      transfer view trace.native-physx.parquet trace.reordered-mujoco.parquet trace.naive-mujoco.parquet

    Read docs/video.md (the video and the page)."""

    traces: Annotated[tuple[Path, ...], tyro.conf.Positional, tyro.conf.arg(metavar="TRACE.parquet"), TRACE]
    """The traces to play (one or more, of one robot)."""
    port: Annotated[int, PORT] = 8080
    """The port to serve the page on (127.0.0.1)."""
    seconds: Annotated[float | None, SECONDS_OR_NONE, DEFAULT_IN_TEXT] = None
    """Serve for this long, then stop (default: until Ctrl-C)."""


def run_view(cmd: View) -> int:
    from transfer.runs.view import ViewError, serve
    from transfer.traces import TraceError

    if not cmd.traces:
        print_error("give one or more traces to view (TRACE.parquet, written by transfer replay --record)")
        return 2
    try:
        page = serve(cmd.traces, port=cmd.port)
    except (ViewError, TraceError, OSError, ValueError) as exc:
        print_error(exc)
        return 2
    print(f"serving {len(cmd.traces)} run(s) at {page.url} (Ctrl-C stops)", file=sys.stderr)
    try:
        page.play(cmd.seconds)
    finally:
        page.stop()
    return 0


__all__ = ["View", "run_view"]
