"""The input layer: a checkpoint, its config, asset and source turned into the task, the robot and the joint orders.

Every command resolves its inputs here, once. :func:`resolve_inputs` (replay, verify, convert, info, sweep) reads the
checkpoint's own metadata (written by ``transfer convert``/``train``, or an mjlab export's), an Isaac Lab run
folder, or a task file / deploy config / Newton policy YAML given with ``--config``; reads the robot once
(:meth:`~transfer.robot.Robot.of`: USD, or MJCF/URDF through the converters); and says the checkpoint's joint
order (:class:`Inputs`). ``load=False`` describes the checkpoint without loading its weights (convert, info).
:func:`resolve_task` is ``train``'s (a task file and its robot), :func:`locate_checkpoint` the file a run folder
names, :func:`open_policy` a policy for its sizes alone (``transfer task``). :func:`native_backend` names the engine
a checkpoint was trained on; :func:`parse_source` reads ``--source``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transfer.backends import backend_names, source_notes
from transfer.backends import native_backend as convention_backend
from transfer.formats import detect_format, load_policy, open_checkpoint
from transfer.formats.checkpoint import merge_config, metadata_to_task
from transfer.formats.policy import Policy
from transfer.ordering import Ordering, OrderingConvention, convention_list, parse_ordering, read_name_file
from transfer.orders import get_convention
from transfer.robot import Robot
from transfer.robot.assets import AssetError, asset_source, conversion_warnings, locate_asset
from transfer.task import Task, load_task
from transfer.task.deploy import DeployConfig
from transfer.task.isaaclab import IsaacLabRun, find_run, isaaclab_task, read_isaaclab_run
from transfer.task.readers import read_config

Source = str | Sequence[str] | None
"""``--source`` as given: a convention's name, a file listing joint names, the names themselves, or none."""
PathLike = str | Path | None
"""A file as given (``--config``, ``--asset``; a robot may also be ``<package>:<name>``), or none."""
Aliases = Mapping[str, Any] | None
"""Joint-name aliases (a task's or a spec's ``aliases``), or none."""

__all__ = [
    "Inputs",
    "ReplayError",
    "native_backend",
    "one_torch_thread",
    "locate_checkpoint",
    "open_policy",
    "parse_source",
    "resolve_inputs",
    "resolve_task",
    "without_listed_order",
]


class ReplayError(ValueError):
    """A replay's inputs do not fit together (missing asset or convention, sizes that do not match)."""


@dataclass(frozen=True)
class Inputs:
    """A replay's resolved inputs: the policy, the task, the asset and the checkpoint's joint order."""

    policy: Policy
    task: Task
    robot: Robot
    """The robot, read once (:class:`~transfer.robot.Robot`): every floor below takes this value."""
    source: Ordering
    """An :class:`~transfer.ordering.OrderingConvention` or a tuple of joint names."""
    source_label: str
    warnings: tuple[str, ...] = ()
    """What the run goes ahead with but the user should know (an MJCF/URDF robot changed since the checkpoint was
    written); the command line prints each as ``warning: ...``."""
    policy_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """What the policy was loaded with beyond its file (an RSL-RL actor's activation, from its run's agent.yaml)."""
    run: IsaacLabRun | None = None
    """The Isaac Lab run folder the inputs were read from (:class:`transfer.task.isaaclab.IsaacLabRun`), else
    ``None``. Not carried by :meth:`to_dict`: a sweep cell needs only what was resolved from it."""
    notes: tuple[str, ...] = ()
    """What the inputs could not say and the run assumes (an env.yaml term without a counterpart): ``info`` shows
    them; a replay does not repeat them."""

    def to_dict(self) -> dict[str, Any]:
        """The resolved inputs as JSON-able data (what a sweep cell carries): :meth:`from_dict` of it loads the
        policy file again and resolves nothing else."""
        return {
            "policy": str(self.policy.path),
            "format": self.policy.format,
            "policy_options": dict(self.policy_options),
            "task": self.task.to_dict(),
            "task_source": self.task.source,
            "asset": str(self.robot.usd),
            "source": self.source.value if isinstance(self.source, OrderingConvention) else list(self.source),
            "source_label": self.source_label,
            "asset_file": None if self.asset_file is None else str(self.asset_file),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, device: str = "cpu") -> Inputs:
        """The inputs :meth:`to_dict` wrote: the policy loaded from its file, the rest as resolved."""

        policy = load_policy(data["policy"], device=device, format=data["format"], **dict(data["policy_options"]))
        task = Task.from_dict(data["task"], source=data.get("task_source"))
        asset_file = None if data["asset_file"] is None else Path(data["asset_file"])
        return cls(
            policy,
            task,
            Robot(Path(data["asset"]), asset_file),
            parse_ordering(data["source"]),
            data["source_label"],
            tuple(data["warnings"]),
            dict(data["policy_options"]),
        )

    @property
    def asset(self) -> Path:
        """The USD file the engines open."""
        return self.robot.usd

    @property
    def asset_file(self) -> Path | None:
        """The MJCF/URDF file the USD was converted from (``None``: the USD is the file given)."""
        return self.robot.file

    @property
    def asset_given(self) -> Path:
        """The robot file as the user gave it: the MJCF/URDF source, else the USD."""
        return self.robot.given

    def asset_named(self, explicit: Any = None) -> str:
        """The robot as a document written from these inputs names it: ``explicit`` (``--asset``) as an absolute
        path, else the task's own name for it (``transfer:quadruped.usda`` stays portable) when that is the file in
        use, else the file in use."""

        if explicit is None and self.task.asset is not None:
            try:
                if locate_asset(self.task.asset) == self.robot.given:
                    return str(self.task.asset)
            except (FileNotFoundError, ValueError):
                pass
        return str(self.robot.given.resolve())


def parse_source(source: str | Sequence[str] | None) -> Ordering:
    if source is None or not isinstance(source, str):
        return parse_ordering(source)
    path = Path(source)
    if path.is_file():
        try:
            return parse_ordering(read_name_file(path))
        except ValueError as exc:
            raise ReplayError(f"--source {exc}") from None
    try:
        return parse_ordering(source)
    except ValueError:
        raise ReplayError(
            f"--source {source!r}: not a convention ({convention_list()}) and not a file listing joint names"
        ) from None


def open_policy(checkpoint: str | Path) -> Policy:
    """The policy in the file ``checkpoint``, for a command that needs only the network (``transfer task`` checks
    its sizes): :func:`transfer.formats.load_policy`."""

    return load_policy(checkpoint)


def locate_checkpoint(path: str | Path) -> tuple[Path, dict[str, Any], Any]:
    """``(file, options, run)``: the checkpoint file ``path`` names (a file as it is; an Isaac Lab run folder, or a
    file inside one: the run's checkpoint), the options it loads with (an RSL-RL actor's, from the run's
    agent.yaml) and the run (``None`` outside one). The run's ``params/env.yaml`` is read (safely) first."""

    if find_run(path) is None:
        return Path(path), {}, None
    run = read_isaaclab_run(path)
    return run.checkpoint, (run.policy_options() if detect_format(run.checkpoint) == "rsl_rl" else {}), run


def resolve_task(task: str | Path, asset: str | Path | None = None) -> tuple[Any, Robot]:
    """The task file ``task`` and its robot (``asset``, else the task's): what ``train`` starts from. Raises
    ``ValueError`` naming the file when neither names a robot."""

    spec = load_task(task)
    given = asset if asset is not None else spec.asset
    if not given:
        raise ValueError(
            f"{task}: the task names no asset; add `asset: ROBOT.usd` to the task file, or give the robot's USD file "
            "with --asset (asset= in the API)"
        )
    return spec, Robot.of(given)


def resolve_inputs(
    checkpoint: str | Path,
    *,
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    load: bool = True,
    aliases: Mapping[str, str] | None = None,
    warm: Callable[[PathLike], None] | None = None,
) -> Inputs:
    """Load the checkpoint and the task, and settle the asset and the checkpoint's joint order.

    ``load=False``: the policy is a :class:`~transfer.formats.CheckpointFile` (format and metadata, the weights not
    loaded): what ``convert`` and ``info`` need, and the network is never run.

    A checkpoint carrying metadata (:mod:`transfer.formats.checkpoint`, written by ``transfer convert``) says all three:
    ``source``, ``config`` and ``asset`` are optional then. Given anyway, each is checked against it and refused
    when it contradicts it, showing both values: ``source`` must give the checkpoint's joint names on the asset,
    ``config`` must agree on every field both set (fields the metadata leaves unset are taken from it), and
    ``asset`` (or the asset the config or metadata names) must resolve the checkpoint's joint order.

    ``checkpoint`` may also be an Isaac Lab run folder (``params/env.yaml`` beside ``model_<iter>.pt`` or
    ``exported/policy.pt``), or a checkpoint file inside one: the task, the training engine (the default
    ``source``) and the asset path come from the run's ``env.yaml`` (docs/isaaclab.md).

    ``aliases``: observation terms a deploy config or run names otherwise -> the term each is (the task field
    ``observation_aliases``; :func:`aliases_in` finds them among ``--set`` settings).

    ``warm``: called with the robot file as soon as ``asset`` or ``config`` names it, before the policy is loaded
    (:func:`transfer.backends.warm_robot`: an engine reads the robot meanwhile).
    """

    found = None
    if warm is not None:
        found, robot = _named_robot(config, asset, aliases or {})
        if robot is not None:
            warm(robot)
    inputs = _resolve(checkpoint, source, config, asset, load, aliases or {}, found)
    extra = conversion_warnings(inputs.asset_file)
    if inputs.robot.file is not None and inputs.robot.file.suffix.lower() == ".xml":
        extra += source_notes(inputs.robot.file)  # what MuJoCo reads in the MJCF that the USD's drives do not keep
    return dataclasses.replace(inputs, warnings=(*inputs.warnings, *extra)) if extra else inputs


def _named_robot(config: PathLike, asset: PathLike, aliases: Aliases) -> tuple[Any, Path | None]:
    """``(the config as read, the robot file)``: the robot ``asset`` or the ``config`` names, located, before anything
    else. The config read here is handed on (``None`` when it was not read, or cannot be: it is read again, and
    refused in one line, in its turn); the robot is ``None`` when neither names one it can locate."""
    found = None
    if asset is None and config is not None:
        try:
            found = read_config(config, aliases=aliases)
        except Exception:  # noqa: BLE001 - the config's own reading reports what is wrong with it
            return None, None
    named = asset if asset is not None else getattr(found, "asset", None)
    try:
        return found, None if named is None else locate_asset(named)
    except (OSError, AssetError):
        return found, None


def _open(path: str | Path, load: bool, **options: Any) -> Policy:
    """The policy in ``path`` (``load``), else its :class:`~transfer.formats.CheckpointFile`."""

    return load_policy(path, **options) if load else open_checkpoint(path)


def aliases_in(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``observation_aliases`` among task ``settings`` (``--set observation_aliases.X=TERM`` or a whole mapping):
    the readers need them before the task exists, to read a term the file names otherwise."""
    out: dict[str, Any] = {}
    for key, value in (settings or {}).items():
        if key == "observation_aliases":
            if not isinstance(value, Mapping):
                raise ReplayError(f"--set observation_aliases: expected a mapping {{NAME: TERM}}, got {value!r}")
            out.update(value)
        elif str(key).startswith("observation_aliases."):
            out[str(key).removeprefix("observation_aliases.")] = value
    return out


def _resolve(
    checkpoint: str | Path,
    source: Source,
    config: PathLike,
    asset: PathLike,
    load: bool,
    aliases: Aliases,
    found: Any = None,
) -> Inputs:
    """:func:`resolve_inputs`'s inputs; ``found``: the ``config`` already read (else it is read here)."""

    if find_run(checkpoint) is not None and (config is None or Path(checkpoint).is_dir()):
        return _inputs_from_run(checkpoint, source, config, asset, load, aliases)
    policy = _open(checkpoint, load)
    meta = policy.metadata
    if meta is not None:
        return _inputs_from_metadata(policy, meta, source, config, asset, aliases, found)
    if config is None:
        raise ReplayError(
            f"{Path(checkpoint).name} carries no metadata: pass --config with a task file (presets/tasks/*.yaml), a "
            "deploy config or a Newton policy YAML describing the checkpoint's observation, action and defaults "
            "(no task configuration was given); or store them in the checkpoint once: transfer convert CHECKPOINT --source X --to X --config FILE.yaml --asset ROBOT.usd -o OUT."
        )
    found = found if found is not None else read_config(config, aliases=aliases)
    parsed = parse_source(source)
    if isinstance(found, DeployConfig):
        return _inputs_from_deploy(policy, found, parsed, asset, aliases)
    task = found
    if parsed is None and task.convention is not None:
        parsed = parse_ordering(task.convention)
    if parsed is None:
        raise ReplayError(
            f"--source is needed: the joint order of {Path(checkpoint).name} ({convention_list()}, or a file "
            f"listing its joint names); {config} does not say."
        )
    if isinstance(parsed, OrderingConvention):
        task = task.with_convention(parsed)
        label = parsed.value
    else:
        label = "explicit list"
    if asset is None and task.asset is None:
        raise ReplayError(f"--asset is needed: {config} names no asset for the robot (a USD, MJCF or URDF file)")
    robot = Robot.of(asset if asset is not None else task.asset)
    return Inputs(policy, task, robot, checkpoint_order(parsed, robot.file), label)


def checkpoint_order(parsed: Ordering, source_file: Path | None, flag: str = "--source") -> Ordering:
    """The order the floors below take for the checkpoint's ``parsed`` order: as it is, except a convention read
    from the robot's own file (``mujoco``: a converted USD does not keep it), which becomes the explicit list of the
    names that file gives. ``flag``: the option that gave it, as the refusal names it."""
    if not isinstance(parsed, OrderingConvention) or get_convention(parsed).from_usd:
        return parsed
    if source_file is None:
        raise ReplayError(
            f"{flag} {parsed} is {get_convention(parsed).no_order}, and the robot is a USD file: pass --asset with the "
            f"robot's MJCF (.xml) or URDF, or {flag} with a file listing the joint names"
        )
    return get_convention(parsed).names_from_source(source_file)


def _inputs_from_deploy(
    policy: Policy, config: DeployConfig, parsed: Ordering, asset: PathLike, aliases: Aliases
) -> Inputs:
    """:func:`resolve_inputs` for a deploy config (:mod:`transfer.task.deploy`): the robot is ``--asset`` (or the
    config's ``xml_path``), the policy's order ``--source`` (legged_gym's: the MJCF's, ``mujoco``), and the task the
    config's values put on the joint names of that order."""
    where = config.path
    given = asset if asset is not None else config.asset
    if given is None:
        raise ReplayError(
            config.asset_problem or f"--asset is needed: {where} names no robot file (the robot's USD, MJCF or URDF)"
        )
    robot = Robot.of(given)
    if parsed is None and config.kind == "legged_gym":
        parsed = OrderingConvention.MUJOCO  # Isaac Gym's order of the URDF, which the MJCF repeats
    if parsed is None:
        raise ReplayError(
            f"--source is needed: {where.name} lists its values in the policy's joint order without naming it: physx "
            "for an Isaac Lab-trained policy (unitree_rl_lab), mujoco for mjlab (unitree_rl_mjlab, with the MJCF as "
            "--asset), or a file listing the joint names"
        )
    order = checkpoint_order(parsed, robot.file)
    names = robot.order(order).joints
    task = config.task(names, aliases)  # its joint_names: the resolved order (mujoco's stays an explicit list)
    if isinstance(parsed, OrderingConvention) and get_convention(parsed).from_usd:
        task = dataclasses.replace(task, joint_names=None, convention=parsed.value)
    label = parsed.value if isinstance(parsed, OrderingConvention) else "explicit list"
    return Inputs(policy, task, robot, order, label)


def _inputs_from_run(
    path: str | Path, source: Source, config: PathLike, asset: PathLike, load: bool, aliases: Aliases
) -> Inputs:
    """:func:`resolve_inputs` for an Isaac Lab run folder (or a checkpoint file inside one, without ``config``).

    The run's ``params/env.yaml`` is read (safely) before anything else is loaded; the checkpoint is the named
    file, else the newest ``model_<iter>.pt``, else ``exported/policy.pt`` / ``.onnx``. The task is the env.yaml's
    (``config``, when given, replaces it: the way to describe what env.yaml cannot say), the order is ``source``
    or the one the training engine (or ``scene.robot.joint_ordering``) gives, the asset is ``asset`` or the run's
    ``usd_path`` when that is a local file. A checkpoint carrying metadata speaks for itself.
    """

    run = read_isaaclab_run(path)
    options = run.policy_options() if detect_format(run.checkpoint) == "rsl_rl" else {}
    policy = _open(run.checkpoint, load, **options)
    if policy.metadata is not None:
        inputs = _inputs_from_metadata(policy, policy.metadata, source, config, asset, aliases)
        return dataclasses.replace(
            inputs, run=run, notes=(f"{policy.path.name} carries its own metadata; params/env.yaml is not used",)
        )
    parsed = parse_source(source) if source is not None else parse_ordering(run.order)
    if config is not None:
        task = load_task(config)
        if isinstance(parsed, OrderingConvention):
            task = task.with_convention(parsed)
        task = dataclasses.replace(task, trained_on=task.trained_on or run.trained_on)
        if asset is None and task.asset is not None:
            asset = locate_asset(task.asset)
    robot = Robot.of(run.asset_path(asset))
    notes: list[str] = []
    if config is None:
        order = parsed.value if isinstance(parsed, OrderingConvention) else tuple(parsed)
        task = isaaclab_task(
            run, robot.order(parsed).joints, order=order, asset=robot.usd, notes=notes, aliases=aliases
        )
    label = parsed.value if isinstance(parsed, OrderingConvention) else "explicit list"
    return Inputs(policy, task, robot, parsed, label, policy_options=options, run=run, notes=tuple(notes))


def _inputs_from_metadata(
    policy: Policy,
    meta: dict[str, Any],
    source: Source,
    config: PathLike,
    asset: PathLike,
    aliases: Aliases,
    found: Any = None,
) -> Inputs:
    """:func:`resolve_inputs` for a checkpoint that describes itself: the metadata's task, order and asset, each
    explicit argument checked against them."""

    name = policy.path.name
    task = metadata_to_task(meta, source=f"{name} (metadata)")
    order: Ordering = parse_ordering(task.convention) if task.convention is not None else task.joint_names
    label = task.convention or "explicit list"
    config_task = None if config is None else _config_task(config, task.joint_names, aliases, found)
    if config_task is not None:
        task = merge_config(
            task,
            config_task,
            where=f"--config {config} contradicts {name}'s metadata",
            config_name=f"--config {config}",
        )
    hint = asset or (config_task.asset if config_task is not None else None) or task.asset
    if hint is None:
        raise ReplayError(
            f"--asset is needed: {name}'s metadata names no asset for the robot (convert it with --asset to store one)"
        )
    if asset is not None:
        robot = Robot.of(asset)
    else:
        try:
            robot = Robot.of(str(hint))
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                f"{exc} (named by {name}'s metadata); pass --asset with the robot's USD file"
            ) from None
    resolved = robot.order(order).joints
    if resolved != task.joint_names:
        raise ReplayError(
            f"{name}'s metadata lists its joints in {label} order as {list(task.joint_names)}, but {robot.given.name} resolves "
            f"that order to {list(resolved)}. Is this the checkpoint's robot? (--asset)"
        )
    if source is not None:
        parsed = parse_source(source)
        given = robot.order(parsed).joints
        if given != task.joint_names:
            shown = parsed.value if isinstance(parsed, OrderingConvention) else source
            raise ReplayError(
                f"--source {shown} contradicts {name}'s metadata: the checkpoint's joint order is {label} "
                f"{list(task.joint_names)}; --source {shown} gives {list(given)} on {robot.given.name}. Drop --source: the "
                "checkpoint says its order."
            )
    return Inputs(policy, task, robot, order, label, _asset_drift(meta, robot.file, name))


def _config_task(
    config: PathLike, joint_names: Sequence[str] | None, aliases: Aliases, found: Any = None
) -> Task | None:
    """The task ``config`` describes (``found``: as read already); a deploy config's, on the joint names the
    checkpoint's metadata lists."""

    found = found if found is not None else read_config(config, aliases=aliases)
    return found.task(joint_names, aliases) if isinstance(found, DeployConfig) else found


def _asset_drift(meta: dict[str, Any], source_file: Path | None, name: str) -> tuple[str, ...]:
    """A warning when the MJCF/URDF robot in use is not the one ``meta``'s ``asset_source`` recorded: its bytes, the
    files it references, or the converter version differ (docs/import.md, Metadata)."""
    recorded = meta.get("asset_source")
    if not recorded or source_file is None:
        return ()

    now = asset_source(source_file) or {}
    changed = [
        what
        for key, what in (
            ("sha256", f"{source_file.name}'s bytes"),
            ("references_sha256", "the files it references"),
            (
                "converter_version",
                f"the converter ({recorded.get('converter')} {recorded.get('converter_version')} "
                f"then, {now.get('converter_version')} now)",
            ),
        )
        if recorded.get(key) != now.get(key)
    ]
    if not changed:
        return ()
    return (
        f"the robot is not the one {name} was written with: {', '.join(changed)} changed (recorded: "
        f"{recorded.get('file')}, sha256 {str(recorded.get('sha256'))[:16]}...). The run goes on with the robot as it "
        "is now; if the policy was trained on the old one, replay with that file.",
    )


def native_backend(inputs: Inputs) -> str:
    """The backend the checkpoint was trained on: the task's ``trained_on`` (a converted checkpoint's metadata keeps
    it), else its convention's engine."""

    trained = inputs.task.trained_on
    if trained in backend_names():
        return trained
    convention = inputs.source  # a convention, or the names one gave (MuJoCo's order, read from the MJCF)
    if not isinstance(convention, OrderingConvention):
        convention = next((c for c in OrderingConvention if c.value == inputs.source_label), None)
    if convention is not None and convention_backend(convention) is not None:
        return convention_backend(convention)
    raise ReplayError(
        f"Cannot tell which backend {inputs.policy.path.name} was trained on from a {inputs.source_label} order: "
        f"pass --set trained_on=ENGINE ({', '.join(backend_names())}), or set trained_on in the task file."
    )


def without_listed_order(task: Task) -> Task:
    """``task`` with no joint order of its own: the naive control reads the checkpoint's vectors in the order of the
    engine it runs on."""
    return dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})


def one_torch_thread() -> None:
    """One torch thread: the simulator needs the other cores (measured: two threads fight on 2 cores)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
