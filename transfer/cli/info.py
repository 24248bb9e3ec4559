"""``transfer info``: a checkpoint's format, sizes and metadata (or how to add it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transfer._console import print_error
from transfer.cli._inputs import CheckpointInputs


@dataclass(frozen=True, kw_only=True)
class Info(CheckpointInputs):
    """Print CHECKPOINT's format, its input and output sizes, and the metadata it carries (joint order, task,
    asset, history).

    Without metadata, say how `transfer convert` adds it. For an Isaac Lab run folder (RUN_DIR,
    with params/env.yaml), print the metadata derived from the run: its checkpoint (the newest model_<iter>.pt,
    else exported/policy.pt or .onnx), the joint order of the engine that trained it, the task on --asset. With
    --config (a task file or a deploy config the checkpoint ships with: Unitree's deploy.yaml, legged_gym's
    deploy_mujoco config), show the task as replay reads it, each part with the file it came from. The inputs are
    resolved as replay resolves them.

    Examples, from the repository root:
      transfer info checkpoints/quadruped_flat_physx/exported/policy.pt
      transfer info checkpoints/quadruped_flat_physx/model_999.pt --json
      transfer info checkpoints/quadruped_flat_physx/exported/policy.pt --config presets/tasks/quadruped_flat_velocity.yaml

    Read docs/checkpoints.md (and docs/isaaclab.md for run folders)."""

    json: bool = False
    """Print one JSON object: checkpoint, format, input_size, output_size, observation_size, metadata, notes (and
    run for a run folder, sources with --config)."""


def add_metadata_hint(checkpoint: str) -> str:
    """The command that stores metadata in ``checkpoint`` without touching its weights."""
    return (
        f"transfer convert {checkpoint} --source CONVENTION --to CONVENTION --config TASK.yaml --asset ROBOT.usd -o OUT"
    )


def _values(mapping: dict[str, float]) -> str:
    if not mapping:
        return "(the asset's)"
    values = set(mapping.values())
    if len(values) == 1:
        return f"{next(iter(values)):g} (every joint)"
    return ", ".join(f"{k} {v:g}" for k, v in mapping.items())


def _settings(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """The simulation settings and actuator models the metadata records, one row each (unset: what replay uses)."""
    from transfer.backends import backend_names, describe_settings
    from transfer.backends.scene import DEFAULT_GROUND

    sim = meta["sim"]
    rows = [
        (
            "sim",
            f"dt {sim['dt']:g} s, decimation {sim['decimation']} (policy {1 / (sim['dt'] * sim['decimation']):g} Hz)",
        )
    ]
    gravity = meta.get("gravity")
    rows.append(("gravity", "9.81 m/s^2 down (default)" if gravity is None else f"{tuple(gravity)} m/s^2"))
    rows += [(name, describe_settings(name, meta.get(name))) for name in backend_names()]
    ground = meta.get("ground")
    g = ground or DEFAULT_GROUND.to_dict()
    rows.append(
        (
            "ground",
            f"friction {g['static_friction']:g} static / {g['dynamic_friction']:g} dynamic "
            f"({g['friction_combine']} combine), restitution {g['restitution']:g} ({g['restitution_combine']})"
            + ("" if ground else " (default)"),
        )
    )
    collisions = meta.get("self_collisions")
    rows.append(("collisions", "the asset's" if collisions is None else ("on" if collisions else "off")))
    groups = meta.get("actuators") or []
    if not groups:
        rows.append(("actuators", "implicit (the engine's PD) on every joint"))
    for group in groups:
        extra = {k: v for k, v in group.items() if k not in ("name", "model", "joints")}
        shown = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in extra.items())
        rows.append(
            (
                "actuators",
                f"{group['name']}: {group['model']} on {len(group['joints'])} joints"
                + (f" ({shown})" if shown else ""),
            )
        )
    return rows


def _term(t: dict[str, Any]) -> str:
    """One observation term: its name and entries, its axis, and its scale, clip, history and params when set."""
    extra = [t["axis"]] if t["axis"] != "none" else []
    scale = t.get("scale", 1.0)
    if scale != 1.0:
        extra.append(f"x {scale:g}" if not isinstance(scale, list) else f"x [{', '.join(f'{v:g}' for v in scale)}]")
    if t.get("clip") is not None:
        extra.append(f"clip [{t['clip'][0]:g}, {t['clip'][1]:g}]")
    if t.get("params"):
        extra.append(", ".join(f"{k} {v:g}" for k, v in t["params"].items()))
    history = int(t.get("history_length") or 0)
    size = f"{t['size']}" if history < 2 else f"{history} x {t['size']}"
    return f"{t['name']} {size}" + (f" ({'; '.join(extra)})" if extra else "")


def _lines(info: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("format", info["format"]),
        ("sizes", f"{info['input_size']} observations -> {info['output_size']} actions"),
    ]
    meta = info["metadata"]
    if meta is None:
        rows.append(("metadata", "none: the joint order, task and asset must be given on each replay"))
        rows.append(("add it", add_metadata_hint(Path(info["checkpoint"]).name)))
        rows.append(("", "(--to equal to --source stores the metadata and leaves the weights untouched)"))
        return rows
    names = meta["joint_names"]
    tools = [h.get("tool") for h in meta.get("history") or []]
    if tools[:1] == ["mjlab"]:
        rows.append(("metadata", f"mjlab's metadata_props, read as {meta['format']} (unrecorded: mjlab's defaults)"))
    else:
        rows.append(("metadata", meta["format"]))
    rows.append(("joint order", f"{meta['convention'] or 'explicit list'} ({len(names)}): {' '.join(names)}"))
    if meta["body_names"] is not None:
        rows.append(("body order", f"({len(meta['body_names'])}): {' '.join(meta['body_names'])}"))
    rows.append(("trained on", str(meta["trained_on"] or "unknown")))
    rows.append(("asset", str(meta["asset"] or "none (pass --asset to replay)")))
    source = meta.get("asset_source")
    if source:  # an MJCF/URDF asset: what it was when the checkpoint was written (docs/import.md)
        rows.append(
            (
                "",
                f"{source['format']}, sha256 {str(source['sha256'])[:16]}..., converted by "
                f"{source['converter']} {source['converter_version']}",
            )
        )
    rows.append(("task", str(meta["name"])))
    terms = ", ".join(_term(t) for t in meta["observation"])
    rows.append(("observation", f"{terms} = {info['observation_size']}"))
    action = meta["action"]
    joints = "all joints" if action["joints"] is None else " ".join(action["joints"])
    scale, offset = action["scale"], action.get("offset") or 0.0
    offset_text = "default" if action["use_default_offset"] else "offset" if isinstance(offset, dict) else f"{offset:g}"
    scale_text = f"{scale:g}" if not isinstance(scale, dict) else "scale"
    raw = "action" if action.get("clip_actions") is None else f"clip(action, +-{action['clip_actions']:g})"
    target = f"{offset_text} + {scale_text} x {raw}"
    target = target if action.get("clip") is None else f"clip({target})"
    rows.append(("action", f"{action['kind']}: target = {target}, {joints}"))
    if isinstance(scale, dict):
        rows.append(("action scale", _values(scale)))
    if isinstance(offset, dict):
        rows.append(("action offset", _values(offset)))
    if action.get("clip") is not None:
        clip = action["clip"]
        bounds = [clip] if isinstance(clip, list) else list(clip.values())
        every = len({tuple(b) for b in bounds}) == 1 and (
            isinstance(clip, list) or len(clip) == len(meta["joint_names"])
        )
        rows.append(
            (
                "target clip",
                f"[{bounds[0][0]:g}, {bounds[0][1]:g}] (every joint)"
                if every
                else ", ".join(f"{k} [{lo:g}, {hi:g}]" for k, (lo, hi) in clip.items()),
            )
        )
    rows.append(("defaults", _values(meta["default_joint_pos"])))
    for gain in ("stiffness", "damping", "armature", "friction"):
        rows.append((gain, _values(meta.get(gain) or {})))
    if meta.get("effort_limit"):
        rows.append(("max effort", _values(meta["effort_limit"])))
    rows += _settings(meta)
    for entry in meta.get("history", []):
        rows.append(("history", ", ".join(f"{k} {v}" for k, v in entry.items())))
    return rows


def run_info(cmd: Info) -> int:
    from transfer.runs.info import checkpoint_info

    try:
        info = checkpoint_info(cmd.checkpoint, asset=cmd.asset, config=cmd.config, source=cmd.source)
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        if info["metadata"] is None:
            info["hint"] = add_metadata_hint(str(cmd.checkpoint))
        print(json.dumps(info, indent=2))
        return 0
    from transfer._console import printable

    print(printable(cmd.checkpoint))
    rows = _lines(info)
    run = info.get("run")
    if run is not None:
        rows[:0] = [
            (
                "run",
                f"Isaac Lab run, trained on {run['trained_on']}: {Path(run['env_yaml']).relative_to(run['folder'])}, "
                f"checkpoint {Path(run['checkpoint']).relative_to(run['folder'])}",
            ),
            ("usd_path", f"{run['usd_path']} (the run's; --asset replaces it)"),
        ]
        if info["metadata"] is not None:
            vx, vy, wz = info["metadata"]["command"]
            rows.append(("command", f"vx {vx:g} m/s, vy {vy:g} m/s, wz {wz:g} rad/s (replay's fixed command)"))
    rows[:0] = [(f"{what} from", where) for what, where in (info.get("sources") or {}).items()]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:  # the metadata is the file's: nothing in it reaches the terminal raw
        print(f"  {key.ljust(width)}  {printable(value)}")
    for note in info["notes"]:
        print(f"  note: {printable(note)}")
    return 0
