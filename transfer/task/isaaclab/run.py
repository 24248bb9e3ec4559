"""An Isaac Lab run folder: finding it (:func:`find_run`), its checkpoint (:func:`run_checkpoint`), its
``params/env.yaml`` and ``params/agent.yaml`` (:func:`read_isaaclab_run`), and which engine trained it, in which
joint order (:func:`training_engine`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transfer.backends import native_backend
from transfer.ordering import OrderingConvention
from transfer.task._checks import convention_names
from transfer.task.isaaclab.yaml_safe import IsaacLabError, load_isaaclab_yaml

ENV_YAML = Path("params/env.yaml")
AGENT_YAML = Path("params/agent.yaml")


def find_run(path: str | Path) -> tuple[Path, Path | None] | None:
    """``(run folder, named checkpoint or None)`` when ``path`` is an Isaac Lab run folder (it holds
    ``params/env.yaml``) or a file inside one (``model_<iter>.pt``, ``exported/policy.onnx``); else ``None``.
    Reads nothing but the folder's listing."""
    path = Path(path)
    if path.is_dir():
        return (path, None) if (path / ENV_YAML).is_file() else None
    if path.is_file():
        for folder in (path.parent, path.parent.parent):
            if (folder / ENV_YAML).is_file():
                return folder, path
    return None


_MODEL = re.compile(r"model_(\d+)\.pt")


def run_checkpoint(folder: str | Path) -> Path:
    """The checkpoint a run folder is replayed with: the newest ``model_<iter>.pt`` (by iteration number), else
    ``exported/policy.pt``, else ``exported/policy.onnx``."""
    folder = Path(folder)
    models = [(int(m.group(1)), p) for p in folder.glob("model_*.pt") if (m := _MODEL.fullmatch(p.name))]
    if models:
        newest = max(models)[1]
        if not newest.is_file():  # a link to nothing, or a folder: skipping it would replay an older checkpoint
            raise FileNotFoundError(
                f"{newest}: the run's newest checkpoint is no readable file (a link that leads "
                "nowhere, or a folder); fix or remove it, or name the checkpoint to replay"
            )
        return newest
    for name in ("exported/policy.pt", "exported/policy.onnx"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"{folder}: an Isaac Lab run folder without a checkpoint: no model_<iter>.pt, exported/policy.pt or "
        "exported/policy.onnx. Name the checkpoint file instead of the folder."
    )


@dataclass(frozen=True)
class IsaacLabRun:
    """An Isaac Lab run folder as read (:func:`read_isaaclab_run`); the task needs the asset (:func:`isaaclab_task`).

    ``order``: the checkpoint's joint order: a convention (``physx``, ``mjwarp``, ``robot_schema``) or an explicit
    tuple of joint names (``scene.robot.joint_ordering``); by default the training engine's own.
    """

    folder: Path
    checkpoint: Path
    env: Mapping[str, Any] = field(repr=False)
    agent: Mapping[str, Any] | None = field(repr=False)
    trained_on: str
    order: str | tuple[str, ...]
    newton_solver: str | None
    usd_path: str | None
    notes: tuple[str, ...] = ()

    @property
    def env_yaml(self) -> Path:
        return self.folder / ENV_YAML

    @property
    def convention(self) -> str | None:
        return self.order if isinstance(self.order, str) else None

    @property
    def name(self) -> str:
        """The experiment's name (agent.yaml's ``experiment_name``, else the folder above the run's)."""
        name = (self.agent or {}).get("experiment_name")
        return name if isinstance(name, str) and name else (self.folder.resolve().parent.name or "isaaclab_run")

    def asset_path(self, asset: str | Path | None = None) -> Path:
        """The robot's USD file: ``asset`` when given (it must exist), else the run's ``usd_path`` when that is a
        local file. A URL or a missing file is an error naming the path the run records and asking for --asset."""
        if asset is not None:
            path = Path(asset)
            if not path.is_file():
                raise FileNotFoundError(f"Asset file not found: {path}")
            return path
        where = f"{self.env_yaml} (scene.robot.spawn.usd_path)"
        if not self.usd_path:
            raise IsaacLabError(f"--asset is needed: {where} names no USD file for the robot")
        local = "://" not in self.usd_path and Path(self.usd_path).is_file()
        if not local:
            raise IsaacLabError(
                f"--asset is needed: the run names the robot {self.usd_path!r} ({where}), which is not a local "
                "file (a Nucleus or web URL cannot be fetched offline). Pass --asset with a local copy of that USD."
            )
        return Path(self.usd_path)

    def policy_options(self) -> dict[str, Any]:
        """``load_policy`` options for an RSL-RL checkpoint of this run (the actor's activation in agent.yaml)."""
        agent = self.agent or {}
        for key in ("actor", "policy"):  # rsl-rl-lib 5 (actor: MLPModel), older (policy: ActorCritic)
            section = agent.get(key)
            if isinstance(section, Mapping) and isinstance(section.get("activation"), str):
                return {"activation": section["activation"]}
        return {}


def read_isaaclab_run(path: str | Path, *, checkpoint: str | Path | None = None) -> IsaacLabRun:
    """Read an Isaac Lab run folder (or the folder of a checkpoint file inside one): ``params/env.yaml`` and
    ``params/agent.yaml`` (safely, :func:`load_isaaclab_yaml`), the training engine, the checkpoint's joint order
    and the checkpoint file (``checkpoint``, the named file, else :func:`run_checkpoint`). Loads no checkpoint."""
    found = find_run(path)
    if found is None:
        raise IsaacLabError(f"{path}: not an Isaac Lab run folder (no {ENV_YAML} in it or above the file)")
    folder, named = found
    env = load_isaaclab_yaml(folder / ENV_YAML)
    agent = load_isaaclab_yaml(folder / AGENT_YAML) if (folder / AGENT_YAML).is_file() else None
    where = str(folder / ENV_YAML)
    notes: list[str] = []
    native, solver = training_engine(env, where)
    trained_on = native_backend(native) or native.value
    robot = _robot(env, where)
    order = _joint_ordering(robot, native, where)
    if native == TRAINS_IN["Newton"] and solver != "mujoco_warp":
        notes.append(f"trained on Newton with the {solver or 'default'} solver; replays on Newton use MuJoCo-Warp")
    spawn = robot.get("spawn")
    usd = spawn.get("usd_path") if isinstance(spawn, Mapping) else None
    ckpt = Path(checkpoint) if checkpoint is not None else named or run_checkpoint(folder)
    if not ckpt.is_file():
        raise FileNotFoundError(f"Checkpoint not found: {ckpt}")
    return IsaacLabRun(
        folder=folder,
        checkpoint=ckpt,
        env=env,
        agent=agent,
        trained_on=trained_on,
        order=order,
        newton_solver=solver,
        usd_path=usd if isinstance(usd, str) else None,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------------- engine, order


TRAINS_IN = {"PhysX": OrderingConvention.PHYSX, "Newton": OrderingConvention.MJWARP}
"""The order each of Isaac Lab's physics (its PhysX and Newton managers) trains a robot in."""


def training_engine(env: Mapping[str, Any], where: str = "env.yaml") -> tuple[OrderingConvention, str | None]:
    """``(the order its engine lists joints in, Newton solver type)`` of the run: ``(MJWARP, "mujoco_warp")`` for a
    Newton physics config with a MuJoCo-Warp solver (Isaac Lab 3.0 ``sim.physics`` with a Newton manager, or the
    Newton branch's ``sim.newton_cfg``), ``(PHYSX, None)`` for a PhysX one (``sim.physics`` with a PhysX manager,
    or Isaac Lab 2's ``sim.physx``). The backend that reproduces it is :func:`transfer.backends.native_backend` of
    the order: Isaac Lab's words for its physics are read here, and name no backend of ours."""
    sim = env.get("sim")
    if not isinstance(sim, Mapping):
        raise IsaacLabError(f"{where}: no `sim` section; is this an Isaac Lab env.yaml?")
    physics = sim.get("physics")
    if isinstance(physics, Mapping):
        kind = str(physics.get("class_type") or "")
        solver_cfg = physics.get("solver_cfg")
        solver = solver_cfg.get("solver_type") if isinstance(solver_cfg, Mapping) else None
        low = kind.lower()
        if "newton" in low or "mjwarp" in low or "mujoco" in low or isinstance(solver_cfg, Mapping):
            if solver is None and ("mjwarp" in low or "mujoco" in low):
                solver = "mujoco_warp"
            return TRAINS_IN["Newton"], solver if isinstance(solver, str) else None
        if "physx" in low or physics.get("isaacsim_physx") is not None or physics.get("ovphysx") is not None:
            return TRAINS_IN["PhysX"], None
        raise IsaacLabError(
            f"{where}: sim.physics.class_type {kind!r} is not a physics backend transfer knows (a PhysX manager "
            "trains in physx order, a Newton manager with the MuJoCo-Warp solver in mjwarp order). Pass --source "
            "with the checkpoint's joint order."
        )
    newton = sim.get("newton_cfg")
    if isinstance(newton, Mapping):
        solver_cfg = newton.get("solver_cfg")
        solver = solver_cfg.get("solver_type") if isinstance(solver_cfg, Mapping) else "mujoco_warp"
        return TRAINS_IN["Newton"], solver if isinstance(solver, str) else None
    if isinstance(sim.get("physx"), Mapping):
        return TRAINS_IN["PhysX"], None
    raise IsaacLabError(
        f"{where}: sim names no physics backend (no sim.physics, sim.newton_cfg or sim.physx): cannot tell which "
        "engine trained the checkpoint. Pass --source with its joint order."
    )


def _robot(env: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    scene = env.get("scene")
    robot = scene.get("robot") if isinstance(scene, Mapping) else None
    if not isinstance(robot, Mapping):
        raise IsaacLabError(f"{where}: no scene.robot (the articulation the policy drives)")
    return robot


def _joint_ordering(robot: Mapping[str, Any], native: OrderingConvention, where: str) -> str | tuple[str, ...]:
    value = robot.get("joint_ordering")
    if value is None:
        return native.value
    if isinstance(value, str):
        if value not in convention_names():
            raise IsaacLabError(
                f"{where}: scene.robot.joint_ordering {value!r}: expected one of {convention_names()}, a list of "
                "joint names, or null"
            )
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(n, str) for n in value):
        return tuple(value)
    raise IsaacLabError(
        f"{where}: scene.robot.joint_ordering: expected a convention, a list of names or null, got {value!r}"
    )
