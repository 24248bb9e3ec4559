"""``transfer validate``: the joint_movement test on PhysX and/or Newton, the same-child check and the robot profile."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from transfer._console import aligned, engine_output, print_error
from transfer.backends import probed_backends
from transfer.cli._checks import PLOT, ROBOT


@dataclass(frozen=True)
class Validate:
    """Check that ASSET is articulated on each engine, that every joint moves the same child body on both, and
    report the robot profile findings.

    Articulated: at least one joint moves its child relative to its parent (>= 1.0 deg or >= 2.0 % of the child's
    bounding-box diagonal). Each profile finding has a severity: error, warning, info.
    An engine that goes non-finite, carries a joint beyond its authored limits or reports errors fails its verdict.
    Exit 1 when joint_movement fails on a backend asked for, when the engines disagree (verdicts, a joint moving on
    one only, or a driven joint moving another way or reaching elsewhere), or, with --strict, when there are error or
    warning findings; 2 on bad input (a missing file, an empty stage).

    Examples, from the repository root:
      transfer validate transfer:quadruped.usda --plot validate.png
      transfer validate transfer:quadruped.usda --backend physx --json

    Read docs/validate.md."""

    asset: Annotated[tyro.conf.Positional[Path], tyro.conf.arg(metavar="ASSET"), ROBOT]
    """The USD file, or an MJCF (.xml) or URDF (.urdf) file (converted; docs/import.md). Never written: every change
    lives in an in-memory layer or the engine's builder."""
    backend: Annotated[
        Literal[(*probed_backends(), "all", "both")],  # type: ignore[valid-type]
        tyro.conf.arg(metavar="{" + ",".join((*probed_backends(), "all")) + "}"),
    ] = "all"
    """The engine(s) to run joint_movement on (all: every registered backend; both is the same); same_child_bodies
    needs two."""
    json: bool = False
    """Print one JSON object on stdout."""
    plot: Annotated[Path | None, tyro.conf.arg(metavar="FILE.png"), PLOT] = None
    """Write a PNG of each joint's rotation and translation over the attempt that moved it, per backend."""
    strict: bool = False
    """Profile findings of severity error or warning fail the run too (exit 1); info never does."""
    verbose: bool = False
    """Show what the engines and Warp print (kept off the terminal by default)."""


def _cell(joint: dict[str, Any] | None) -> str:
    if joint is None:
        return "-"
    if joint.get("skipped"):
        return "skipped"
    if joint.get("problem"):
        return "non-finite" if joint["problem"].startswith("non-finite") else "beyond limits"
    moved = "moved" if joint["moved"] else "idle"
    size = {"revolute": f"{joint['rotation_deg']:.1f} deg", "prismatic": f"{joint['translation_pct']:.1f} %"}.get(
        joint["type"], f"{joint['rotation_deg']:.1f} deg, {joint['translation_pct']:.1f} %"
    )
    against = f" (driven {joint['commanded']})" if joint.get("against_command") else ""
    return f"{moved} {size} {joint['direction'] or ''}".rstrip() + against


def print_report(report: dict[str, Any], out: Any = None) -> None:
    """The report as text: per backend the verdict, a joint table, same_child_bodies and the profile findings."""
    out = out or sys.stdout
    results = report["joint_movement"]
    print(f"transfer validate {report['asset']}", file=out)
    for name, r in results.items():
        print(f"  {name:<7} {r['status'].upper():<5} {r['reason']}", file=out)
    rows: dict[str, dict[str, Any]] = {}
    for name, r in results.items():
        for j in r["joints"]:
            rows.setdefault(j["path"], {"joint": j})[name] = j
    if rows:
        cells = [["joint", "type", "parent -> child", *results]]
        for row in rows.values():
            j = row["joint"]
            bodies = f"{(j['parent'] or 'world').rsplit('/', 1)[-1]} -> {j['child'].rsplit('/', 1)[-1]}"
            cells.append([j["name"], j["type"], bodies, *(_cell(row.get(name)) for name in results)])
        for line in aligned(cells):
            print("  " + line, file=out)
    for name, r in results.items():
        problems = r.get("problems", [])
        for line in problems[3:8]:
            print(f"  {name:<7}       {line}", file=out)
        engine_warnings = r.get("warnings", [])
        if engine_warnings:
            shown = "; ".join(engine_warnings[:3]) + (
                f"; +{len(engine_warnings) - 3} more (--json)" if len(engine_warnings) > 3 else ""
            )
            print(f"  {name:<7} engine warnings: {shown}", file=out)
    if report.get("engines_disagree"):
        print(f"  {report['engines_disagree']}", file=out)
    same = report["same_child_bodies"]
    if len(results) > 1:
        detail = report["same_child_detail"]
        text = "n/a (needs a pass on both engines)" if same is None else str(same).lower()
        print(f"  same_child_bodies: {text} ({len(detail)} joint(s) moved on both engines)", file=out)
        for d in detail:
            if not d["same"]:
                print(f"    {d['joint']}: {', '.join(f'{k} {v}' for k, v in d.items() if k in results)}", file=out)
    unresolved = report.get("unresolved", [])
    if unresolved:
        print(f"  unresolved: {len(unresolved)} reference(s), payload(s) or sublayer(s) do not resolve:", file=out)
        for line in unresolved[:8]:
            print(f"    - {line}", file=out)
        if len(unresolved) > 8:
            print(f"    (and {len(unresolved) - 8} more; --json lists all)", file=out)
    findings = report["profile"]
    counts = ", ".join(f"{sum(f['severity'] == s for f in findings)} {s}" for s in ("error", "warning", "info"))
    print(f"  profile: {len(findings)} finding(s)" + (f" ({counts}):" if findings else ""), file=out)
    for f in findings:
        print(f"    {f['severity']:<7} [{f['rule']}] {f['prim']}: {f['message']}\n      fix: {f['fix']}", file=out)


def run_validate(cmd: Validate) -> int:
    from transfer.orders import OrderingError
    from transfer.runs.validate import ValidateInputError, plot, validate

    backends = probed_backends() if cmd.backend in ("all", "both") else (cmd.backend,)
    try:
        with engine_output(cmd.verbose) as terminal:
            if cmd.verbose:
                logging.basicConfig(level=logging.INFO, stream=terminal, format="[transfer] %(message)s")
            report = validate(cmd.asset, backends, strict=cmd.strict)
            if cmd.plot is not None:
                plot(report, cmd.plot)
    except (FileNotFoundError, OrderingError, ValidateInputError) as exc:
        print_error(exc)
        return 2
    data = report.to_dict()
    if cmd.json:
        print(json.dumps(data, indent=2))
    else:
        print_report(data)
    if cmd.plot is not None:
        sys.stdout.flush()
        print(f"plot: {cmd.plot}", file=sys.stderr)
    return report.exit_code
