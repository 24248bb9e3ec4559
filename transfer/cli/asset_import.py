"""``transfer import``: an MJCF or URDF robot converted to USD by the official converter, kept as a file
(:func:`transfer.robot.assets.import_asset`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer.cli._checks import InputFile, OutputFile

__all__ = ["Import", "run_import"]

USD_OUT = OutputFile((".usd", ".usda", ".usdc"), "USD file")


@dataclass(frozen=True)
class Import:
    """Convert ROBOT (MJCF .xml or URDF .urdf) to USD with the official converter and write it to -o.

    The converters (mujoco-usd-converter, urdf-usd-converter) run in an environment of their own, created with pip
    on first use. Every command also takes ROBOT.xml / ROBOT.urdf as --asset directly, converting through the same
    cache; import keeps a copy. Exit 2 on bad input.

    Examples, from the repository root:
      transfer import transfer:quadruped.xml -o quadruped.usd
      transfer import newton:quadruped.urdf -o quadruped_urdf.usda --json
      transfer inspect quadruped.usd --truth

    Read docs/import.md."""

    source: Annotated[
        tyro.conf.Positional[Path],
        tyro.conf.arg(metavar="ROBOT.xml|ROBOT.urdf"),
        InputFile("an MJCF or URDF file", hints=True),
    ]
    """The robot's MJCF (.xml) or URDF (.urdf) file (the meshes it names are read relative to it), or
    <package>:<name> for one shipped in an installed engine package (newton:quadruped.urdf)."""
    output: Annotated[Path, tyro.conf.arg(name="output", aliases=("-o",), metavar="ROBOT.usd"), USD_OUT]
    """The USD file to write (.usd or .usdc: binary; .usda: text). Refused when it exists, unless --force."""
    force: bool = False
    """Replace an existing output file."""
    json: bool = False
    """Print what was done (source, output, converter, hashes, cached) as one JSON object."""


def run_import(cmd: Import) -> int:
    from transfer.robot.assets import import_asset

    conversion = import_asset(cmd.source, cmd.output, force=cmd.force)
    record = conversion.record
    summary = {
        "source": str(cmd.source),
        "format": conversion.format,
        "output": str(cmd.output),
        "converter": record["converter"],
        "converter_version": record["converter_version"],
        "sha256": record["sha256"],
        "references": record.get("references", []),
        "cached": conversion.cached,
        "cache": str(conversion.usd),
        "warnings": record.get("warnings", []),
    }
    if cmd.json:
        print(json.dumps(summary, indent=2))
        return 0
    kind = {"mjcf": "MJCF", "urdf": "URDF"}[conversion.format]
    print(f"wrote {cmd.output}: {cmd.source} ({kind}) converted by {record['converter']} {record['converter_version']}")
    refs = summary["references"]
    shown = ", ".join(refs[:4]) + (f" and {len(refs) - 4} more" if len(refs) > 4 else "")
    print(f"  read      {cmd.source} (sha256 {record['sha256'][:16]}...)" + (f" and {shown}" if refs else ""))
    print(f"  cache     {conversion.usd} ({'already there' if conversion.cached else 'new'})")
    for warning in summary["warnings"]:
        print(f"  converter {warning}")
    print(f"  next      transfer inspect {cmd.output} --truth")
    return 0
