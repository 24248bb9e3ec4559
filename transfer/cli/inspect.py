"""``transfer inspect``: every convention's joint and body order of an asset, side by side (and the engines')."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from transfer._console import engine_output, print_error
from transfer.cli._checks import ROBOT
from transfer.cli._help import DEFAULT_IN_TEXT


def usd_conventions() -> tuple[str, ...]:
    """The conventions a USD stage is inspected in: every registered one the USD keeps."""
    from transfer.orders import conventions

    return tuple(c.name for c in conventions() if c.from_usd)


def file_conventions() -> tuple[str, ...]:
    """The conventions an MJCF/URDF robot is also inspected in: those read from the file itself (MuJoCo's)."""
    from transfer.orders import conventions

    return tuple(c.name for c in conventions() if not c.from_usd)


@dataclass(frozen=True)
class Inspect:
    """Print each articulation's elected root, base type, loop joints and the joint and body orders of every
    convention side by side.

    Without ASSET, inspects the Ant shipped inside the installed newton package. --truth also asks the real engines
    and says, per engine, whether the order it gives is the one emulated.

    Examples, from the repository root (transfer:quadruped.usda is the project's own quadruped):
      transfer inspect transfer:quadruped.usda
      transfer inspect transfer:quadruped.usda --truth
      transfer inspect --json

    Read docs/conventions.md (how each engine orders an articulation) and docs/concepts.md."""

    asset: Annotated[tyro.conf.Positional[Path | None], tyro.conf.arg(metavar="ASSET"), ROBOT, DEFAULT_IN_TEXT] = None
    """USD file to inspect, or an MJCF (.xml) or URDF (.urdf) file (converted; docs/import.md). Default: newton's
    bundled Ant."""
    root: Annotated[str | None, tyro.conf.arg(metavar="PRIM"), DEFAULT_IN_TEXT] = None
    """Path of the prim carrying PhysicsArticulationRootAPI (default: every articulation)."""
    json: bool = False
    """Print one JSON object instead of tables."""
    truth: bool = False
    """Also ask the real engines (ovphysx, Newton) and print a match/mismatch verdict."""
    verbose: bool = False
    """Show what the engines and Warp print (kept off the terminal by default)."""


DEFAULT_ASSET = "newton:ant.usda"
"""The demo asset: the Ant shipped inside the installed newton package."""


def default_asset() -> Path:
    """:data:`DEFAULT_ASSET`, found without importing its package."""
    from transfer.robot.assets import locate_asset

    try:
        return locate_asset(DEFAULT_ASSET)
    except FileNotFoundError:
        raise SystemExit(
            "No ASSET given and newton is not installed to provide the default Ant. "
            "Pass a USD file, or `pip install 'transfer[newton]'`."
        ) from None


def _convention_block(graph: Any, convention: str) -> dict[str, Any] | None:
    from transfer.orders import OrderingError, get_convention

    try:
        order = get_convention(convention).order(graph)
    except OrderingError as exc:
        return {"error": str(exc)}
    if order is None:
        return None
    return {"joints": list(order.joints), "bodies": list(order.bodies)}


def inspect_asset(asset: Path, root: str | None = None, truth: bool = False, verbose: bool = False) -> dict[str, Any]:
    """The ``inspect`` report as plain data (what ``--json`` prints). An MJCF/URDF ``asset`` is inspected as the USD
    its converter makes (``converted`` says which converter, and where the USD is)."""
    from transfer.orders import OrderingError, physx_order, read_topology
    from transfer.orders.physx import physx_holds_base
    from transfer.robot.assets import convert_source, locate_asset, source_format

    given, converted, source = asset, None, None
    asset = locate_asset(asset)
    if source_format(asset) is not None:
        source = asset
        conversion = convert_source(asset)
        asset = conversion.usd
        converted = {
            "usd": str(asset),
            "converter": f"{conversion.record['converter']} {conversion.record['converter_version']}",
            "cached": conversion.cached,
        }
    from transfer.robot import refuse_urls

    refuse_urls(asset)  # before any engine (--truth) opens it: an engine's resolver may fetch a URL
    topo = read_topology(asset, root)
    engines: dict[str, Any] = {}
    if truth:
        with engine_output(verbose):  # engines print to the C streams; keep stdout clean for --json
            engines = _truth(asset, root)
            if source is not None and len(topo) == 1:
                engines.update({name: {topo.roots[0]: _file_engine(source, name)} for name in _engine_file_orders()})
    out = []
    for graph in topo:
        entry: dict[str, Any] = {"root": graph.root}
        try:
            px = physx_order(graph)
            entry["root_body"] = px.root_body
            entry["fixed_base"] = px.fixed_base
            entry["held_by_world"] = not px.fixed_base and physx_holds_base(graph)
            entry["loop_joints"] = list(px.loop_joints)
        except OrderingError:
            entry["root_body"], entry["fixed_base"], entry["loop_joints"] = None, None, []
            entry["held_by_world"] = None
        for convention in usd_conventions():
            entry[convention] = _convention_block(graph, convention)
        if source is not None and len(topo) == 1:  # MuJoCo's order is the MJCF's or URDF's, not the USD's
            entry.update({name: _file_block(source, name) for name in file_conventions()})
        if truth:
            entry["truth"] = {name: _engine_entry(result, graph.root) for name, result in engines.items()}
            entry["truth"]["match"] = {name: _matches(entry[name], entry["truth"][name]) for name in engines}
        out.append(entry)
    report: dict[str, Any] = {"asset": str(given)}
    if converted is not None:
        report["converted"] = converted
    return {**report, "articulations": out}


def _file_block(source: Path, convention: str) -> dict[str, Any]:
    """The ``convention`` order of the robot file ``source`` read from the file alone: its DoFs, and its bodies where
    the convention reads them (MuJoCo's of an MJCF; a URDF's bodies are MuJoCo's compiler's to merge: ``None``)."""
    from transfer.orders import get_convention
    from transfer.robot.assets.sources import AssetError

    conv = get_convention(convention)
    try:
        joints = list(conv.names_from_source(source))
        bodies = conv.bodies_from_source(source) if conv.bodies_from_source is not None else None
    except AssetError as exc:
        return {"error": str(exc)}
    return {"joints": joints, "bodies": None if bodies is None else list(bodies)}


def _engine_file_orders() -> tuple[str, ...]:
    """The file conventions an engine orders by (``--truth`` asks it)."""
    from transfer.backends import native_backend

    return tuple(name for name in file_conventions() if native_backend(name) is not None)


def _file_engine(source: Path, convention: str) -> dict[str, Any]:
    """The order of ``source`` (``{"joints", "bodies"}``) as the engine that orders by ``convention`` compiles it
    (MuJoCo's model), or ``{"error": reason}``."""
    from transfer.backends import engine_orders, native_backend
    from transfer.backends.base import EngineRefusal

    try:
        (order,) = engine_orders(native_backend(convention), source)
    except EngineRefusal as exc:
        return {"error": exc.reason}
    except ImportError as exc:
        return {"error": f"engine not installed ({exc}); pip install 'transfer[all]'"}
    return {"joints": list(order.joints), "bodies": list(order.bodies)}


def _truth(asset: Path, root: str | None) -> dict[str, dict[str, Any]]:
    """Each engine's answer by convention: ``{root: {"joints", "bodies"}}``, or ``{"error": reason}`` for the
    whole stage (:func:`transfer.backends.engine_orders` of every backend, under its native convention)."""
    from transfer.backends import backend_names, engine_orders, native_convention
    from transfer.backends.base import EngineRefusal
    from transfer.errors import MissingPackageError

    results: dict[str, dict[str, Any]] = {}
    usd = usd_conventions()
    for name, backend in ((native_convention(b), b) for b in backend_names() if native_convention(b) in usd):
        try:
            orders = engine_orders(backend, asset, root)
            results[name] = {o.root: {"joints": list(o.joints), "bodies": list(o.bodies)} for o in orders}
        except EngineRefusal as exc:
            results[name] = {"error": exc.reason}
        except MissingPackageError:
            raise  # the engine is there but lacks a package this asset needs: the message says what to install
        except ImportError as exc:
            results[name] = {"error": f"engine not installed ({exc}); pip install 'transfer[all]'"}
    return results


def _engine_entry(result: dict[str, Any], root: str) -> dict[str, Any] | None:
    return result if "error" in result else result.get(root)


def _matches(emulated: dict[str, Any] | None, engine: dict[str, Any] | None) -> bool | None:
    if emulated is None or engine is None:
        return None
    if "error" in emulated or "error" in engine:
        return ("error" in emulated) == ("error" in engine)
    bodies = emulated["bodies"] is None or emulated["bodies"] == engine["bodies"]  # a URDF's: joints alone
    return emulated["joints"] == engine["joints"] and bodies


def _print_report(report: dict[str, Any]) -> None:
    print(f"asset: {report['asset']}")
    if "converted" in report:
        print(f"  converted by {report['converted']['converter']}: {report['converted']['usd']}")
    for art in report["articulations"]:
        base = {True: "fixed", False: "floating", None: "unknown"}[art["fixed_base"]]
        if art.get("held_by_world"):  # the converters' world joint: PhysX keeps it as a constraint, Newton as the root
            base = "floating articulation held to the world by a fixed joint (Newton: a fixed base; docs/import.md)"
        print(f"\narticulation root: {art['root']}")
        print(f"  elected root link (physx): {art['root_body']}   base: {base}")
        print(f"  loop joints left out: {', '.join(art['loop_joints']) or 'none'}")
        columns = [(c, art[c]) for c in (*usd_conventions(), *file_conventions()) if c in art]
        if "truth" in art:
            columns += [(f"{c} (engine)", art["truth"][c]) for c in art["truth"]["match"]]
        for kind in ("joints", "bodies"):
            _print_table(kind, columns)
        for name, ok in art.get("truth", {}).get("match", {}).items():
            verdict = {True: "MATCH", False: "MISMATCH", None: "n/a"}[ok]
            print(f"  {name}: emulation vs engine: {verdict}")


def _print_table(kind: str, columns: list[tuple[str, dict[str, Any] | None]]) -> None:
    cells: list[list[str]] = []
    notes = []
    for title, block in columns:
        if block is None:
            cells.append(["(not authored)"])
        elif "error" in block:
            cells.append(["(refused, see below)"])
            lines = block["error"].splitlines()
            shown = "\n    ".join(lines[:4]) + (
                f"\n    ... ({len(lines) - 4} more lines; --json prints all)" if len(lines) > 4 else ""
            )
            notes.append(f"  {title}: {shown}")
        elif block[kind] is None:
            cells.append(["(compiled by MuJoCo)"])
        else:
            cells.append(list(block[kind]))
    rows = max(len(c) for c in cells)
    widths = [max([len(t), *(len(x) for x in c)]) for (t, _), c in zip(columns, cells, strict=True)]
    header = "  ".join(t.ljust(w) for (t, _), w in zip(columns, widths, strict=True))
    print(f"\n  {kind}:")
    print(f"    #   {header}")
    for i in range(rows):
        line = "  ".join((c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True))
        print(f"    {i:<3} {line.rstrip()}")
    for note in dict.fromkeys(notes) if kind == "bodies" else ():
        print(note)


def run_inspect(cmd: Inspect) -> int:
    from transfer.orders import OrderingError

    if cmd.root is not None and not cmd.root.startswith("/"):
        print(
            f"error: --root {cmd.root!r}: give the articulation root's prim path, starting with / (e.g. /ant)",
            file=sys.stderr,
        )
        return 2
    asset = cmd.asset or default_asset()
    try:
        report = inspect_asset(asset, cmd.root, cmd.truth, cmd.verbose)
    except (OrderingError, FileNotFoundError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report)
    return 0
