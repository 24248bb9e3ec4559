"""The engines, each behind one door: a registry of :class:`~transfer.backends.base.Backend` classes.

Every engine the project talks to (ovphysx, Newton) is reached only through this package, and nothing above it
names one: a backend declares who it is in its :class:`BackendEntry` (its class, the pip extra that installs its
engine, the convention its engine orders by, the conventions of the trainings it stands in for, its settings
module and its joint movement probe), and everything above asks this registry: the CLI's choices
(:func:`backend_names`), the training engine of a checkpoint in a convention (:func:`native_backend`), a task's
per-engine settings (:func:`check_settings`, :func:`describe_settings`, :func:`training_settings`).

Importing this package imports no engine: a class module is imported on first use of :func:`backend_class`, a
settings module (light: no engine, no warp) on first use of the settings functions.

Adding a backend: write ``transfer/backends/<name>/`` with a :class:`~transfer.backends.base.Backend` subclass, a
``settings.py`` (``check``, ``describe``, ``training``, ``starting``), its joint movement probe (:mod:`transfer.backends.probes`),
and add one entry to :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transfer.backends.base import Backend, EngineOrder

__all__ = [
    "REGISTRY",
    "BackendEntry",
    "backend_class",
    "backend_names",
    "check_settings",
    "default_backend",
    "default_targets",
    "describe_settings",
    "engine_orders",
    "movement_probe",
    "native_backend",
    "native_convention",
    "probed_backends",
    "collision_variations",
    "reference_body_poses",
    "render_frames",
    "robot_poses",
    "robot_shapes",
    "source_notes",
    "solver_variations",
    "starting_settings",
    "training_settings",
    "warm_robot",
]


@dataclass(frozen=True)
class BackendEntry:
    """One registered backend.

    Attributes:
        module, cls: Where its :class:`~transfer.backends.base.Backend` class lives.
        extra: The pip extra that installs its engine (``pip install 'transfer[<extra>]'``).
        movement_probe: A module with ``probe(asset, joints, plan)`` (:mod:`transfer.backends.probes`), or ``None``
            for an engine ``transfer validate`` does not probe (:func:`probed_backends`).
        settings: Its settings module: ``check(value, where) -> Mapping`` (raises ``ValueError``),
            ``describe(value) -> str``, ``training(setup, facts) -> Mapping`` (the settings a training setup
            such as ``isaaclab``, ``isaaclab_legged``, ``legged_gym`` or ``mjlab`` implies for this engine) and
            ``starting(asset_settings) -> (settings, comment, decide)`` (what ``transfer task`` writes) and
            ``variations(settings) -> [(label, settings)]`` (the solver settings ``transfer diagnose`` tries).
        native_convention: The convention its engine orders articulations by (the class's ``native_convention``).
        stands_in_for: Conventions of trainings no registered engine orders by natively that this one reproduces.
        default_target: Whether a sweep with no ``targets`` runs on it (MuJoCo does not: it steps a robot's own
            MJCF, which a USD robot does not have; list it where the robots have one).
        kinematics: A module with ``body_poses(asset, root_pos, root_quat, joint_names, joint_pos, bodies)``: forward
            kinematics of a robot file (:func:`reference_body_poses`), or ``None``.
        notes: A module with ``notes(path) -> tuple[str, ...]``: what this engine reads in a robot's own file that
            the others will not have (:func:`source_notes`), or ``None``.
        renderer: A module with ``frames(asset, joint_names, base, joint_pos, width, height)``: pictures of recorded
            states of any engine's run (:func:`render_frames`), or ``None``.
        warm: A module with ``warm(path)``: starts reading a robot's own file in the background while a command
            loads its policy (:func:`warm_robot`), or ``None``.
    """

    module: str
    cls: str
    extra: str
    movement_probe: str | None
    settings: str
    native_convention: str | None = None
    stands_in_for: tuple[str, ...] = ()
    default_target: bool = True
    kinematics: str | None = None
    notes: str | None = None
    renderer: str | None = None
    warm: str | None = None


REGISTRY: Mapping[str, BackendEntry] = MappingProxyType(
    {
        "physx": BackendEntry(
            "transfer.backends.physx",
            "PhysxBackend",
            "physx",
            "transfer.backends.physx.movement",
            "transfer.backends.physx.settings",
            "physx",
        ),
        "newton": BackendEntry(
            "transfer.backends.newton",
            "NewtonBackend",
            "newton",
            "transfer.backends.newton.movement",
            "transfer.backends.newton.settings",
            "mjwarp",
            stands_in_for=("mujoco",),
        ),
        "mujoco": BackendEntry(
            "transfer.backends.mujoco",
            "MujocoBackend",
            "mujoco",
            None,
            "transfer.backends.mujoco.settings",
            "mujoco",
            default_target=False,
            kinematics="transfer.backends.mujoco.kinematics",
            notes="transfer.backends.mujoco.notes",
            renderer="transfer.backends.mujoco.render",
            warm="transfer.backends.mujoco.model",
        ),
    }
)
"""Every backend, by name; the first is the default (:func:`default_backend`)."""


def backend_names() -> tuple[str, ...]:
    """The registered backend names."""
    return tuple(REGISTRY)


def default_targets() -> tuple[str, ...]:
    """The backends a sweep with no ``targets`` runs on (:attr:`BackendEntry.default_target`)."""
    return tuple(name for name, entry in REGISTRY.items() if entry.default_target)


def default_backend() -> str:
    """The backend a command uses when none is named: the first registered."""
    return next(iter(REGISTRY))


def native_backend(convention: Any) -> str | None:
    """The backend whose engine orders by ``convention`` (a convention or its name), else the first that stands in
    for a training in it, else ``None`` (``robot_schema`` is no engine's)."""
    key = getattr(convention, "value", convention)
    for pick in (lambda e: e.native_convention == key, lambda e: key in e.stands_in_for):
        for name, entry in REGISTRY.items():
            if pick(entry):
                return name
    return None


def native_convention(name: str) -> str | None:
    """The convention backend ``name``'s engine orders articulations by."""
    return REGISTRY[_key(name)].native_convention


def _key(name: str) -> str:
    key = str(name).strip().lower()
    if key not in REGISTRY:
        raise ValueError(f"Unknown backend {name!r}; valid backends: {', '.join(REGISTRY)}")
    return key


def backend_class(name: str) -> type[Backend]:
    """The :class:`~transfer.backends.base.Backend` subclass registered as ``name`` (imports its module).

    Raises:
        ValueError: no backend of that name.
        ImportError: its engine is not installed (the message names the pip extra).
    """
    key = _key(name)
    entry = REGISTRY[key]
    return getattr(_import(key, entry.module), entry.cls)


def _import(key: str, module: str) -> Any:
    try:
        return import_module(module)
    except ImportError as exc:
        extra = REGISTRY[key].extra
        raise ImportError(f"The {key} backend needs its engine: pip install 'transfer[{extra}]' ({exc})") from exc


def _settings(name: str) -> Any:
    return import_module(REGISTRY[_key(name)].settings)


def check_settings(name: str, value: Any, where: str | None = None) -> Mapping[str, Any]:
    """Backend ``name``'s settings ``value`` checked by its settings module (read-only; raises ``ValueError``
    naming ``where``, by default the backend's name)."""
    return _settings(name).check(value, where or str(name))


def describe_settings(name: str, value: Mapping[str, Any] | None) -> str:
    """One line saying what backend ``name``'s settings ``value`` mean (``{}``: the engine's defaults)."""
    return _settings(name).describe(value or {})


def training_settings(setup: str, facts: Mapping[str, Any] | None = None) -> dict[str, Mapping[str, Any]]:
    """``{backend: settings}`` a training ``setup`` implies on every backend (empty settings left out): what a file
    from that project does not record. ``facts`` carries what the file did say (Isaac Lab's
    ``articulation_props``, its Newton solver)."""
    out = {name: _settings(name).training(setup, facts or {}) for name in REGISTRY}
    return {name: settings for name, settings in out.items() if settings}


def collision_variations(name: str, value: Mapping[str, Any] | None) -> list[tuple[str, Mapping[str, Any]]]:
    """``[(label, settings)]``: backend ``name``'s collision geometry settings to try instead of ``value``
    (``transfer diagnose``'s collision factor): its settings module's ``collision_variations``, where it has one
    (an engine whose colliders are the robot file's alone has none)."""
    vary = getattr(_settings(name), "collision_variations", None)
    return list(vary(value or {})) if vary is not None else []


def solver_variations(name: str, value: Mapping[str, Any] | None) -> list[tuple[str, Mapping[str, Any]]]:
    """``[(label, settings)]``: backend ``name``'s solver settings to try instead of ``value`` (``transfer
    diagnose``'s solver factor), each backend's own say."""
    return list(_settings(name).variations(value or {}))


def starting_settings(asset: Any) -> dict[str, tuple[Mapping[str, Any], str, bool]]:
    """``{backend: (settings, comment, a human must decide)}``: what a new task file starts from on an asset whose
    authored settings are ``asset`` (:class:`transfer.robot.profile.AssetSettings`), each backend's own say."""
    return {name: _settings(name).starting(asset) for name in REGISTRY}


def probed_backends() -> tuple[str, ...]:
    """The backends with a joint movement probe (what ``transfer validate`` runs on)."""
    return tuple(name for name, entry in REGISTRY.items() if entry.movement_probe is not None)


def movement_probe(name: str) -> Any:
    """The joint movement probe of backend ``name`` (``probe(asset, joints, plan) -> MovementTrace``; imports its
    engine on first use)."""
    key = str(name).strip().lower()
    if key not in REGISTRY or REGISTRY[key].movement_probe is None:
        raise ValueError(f"No joint movement probe for backend {name!r}; probes: {', '.join(probed_backends())}")
    return _import(key, REGISTRY[key].movement_probe).probe


def engine_orders(name: str, asset: Any, root: str | None = None) -> list[EngineOrder]:
    """Ask backend ``name``'s engine how it orders the articulations of the USD file ``asset``."""
    return backend_class(name).engine_orders(asset, root)


def _offering(role: str) -> Any:
    """The module of the first backend that offers ``role`` (a :class:`BackendEntry` field: ``renderer``,
    ``kinematics``), imported."""
    name = next(name for name, entry in REGISTRY.items() if getattr(entry, role) is not None)
    return _import(name, getattr(REGISTRY[name], role))


def render_frames(
    asset: Any, joint_names: Any, base: Any, joint_pos: Any, width: int, height: int, ghost: Any = None
) -> Any:
    """Pictures of the robot ``asset`` at recorded states (``base`` ``(T, 7)`` root pose xyzw, ``joint_pos`` ``(T, J)``
    by ``joint_names``; ``ghost``: a reference motion's ``(base, joint_pos)``, drawn see-through), by the first engine
    that draws (:attr:`BackendEntry.renderer`: MuJoCo, on the robot's own file): one renderer for the runs of every
    engine. An iterator of ``(height, width, 3)`` uint8 arrays."""
    return _offering("renderer").frames(asset, joint_names, base, joint_pos, width, height, ghost=ghost)


def robot_shapes(asset: Any) -> Any:
    """The robot's visible geometry as triangle meshes on its bodies, from its own file, by the engine that draws
    (:attr:`BackendEntry.renderer`): what ``transfer view`` puts on its page."""
    return _offering("renderer").shapes(asset)


def robot_poses(asset: Any, joint_names: Any, base: Any, joint_pos: Any) -> Any:
    """Each body's world pose ``{body: (T, 7)}`` (position, then w, x, y, z) at ``T`` recorded states, by the engine
    that draws (forward kinematics of the robot's own file)."""
    return _offering("renderer").poses(asset, joint_names, base, joint_pos)


def warm_robot(targets: Any, asset: Any) -> None:
    """Let the engines of ``targets`` (backend names) that read a robot's own file start reading ``asset`` in the
    background (:attr:`BackendEntry.warm`: MuJoCo compiles it on a thread), while the command goes on loading the
    policy. Nothing for the other engines, an unknown name or an engine not installed: the run itself says so."""
    for name in dict.fromkeys(str(t).strip().lower() for t in targets):
        entry = REGISTRY.get(name)
        if entry is None or entry.warm is None:
            continue
        try:
            _import(name, entry.warm).warm(asset)
        except ImportError:
            continue


def source_notes(path: Any) -> tuple[str, ...]:
    """What the engines that read a robot's own file (an MJCF) find in ``path`` that the others will not have, one
    line each (:attr:`BackendEntry.notes`: MuJoCo's activation dynamics); ``()`` where an engine is not installed."""
    out: tuple[str, ...] = ()
    for name, entry in REGISTRY.items():
        if entry.notes is not None:
            try:
                out += tuple(_import(name, entry.notes).notes(path))
            except ImportError:  # the engine is not installed: it has nothing to say
                continue
    return out


def reference_body_poses(
    asset: Any, root_pos: Any, root_quat: Any, joint_names: Any, joint_pos: Any, bodies: Any
) -> tuple[Any, Any]:
    """``(positions (T, B, 3), quaternions (T, B, 4) xyzw)`` of the ``bodies`` of the robot ``asset`` at ``T`` states
    of its base and joints: forward kinematics by the first engine that offers it (:attr:`BackendEntry.kinematics`:
    MuJoCo, on the robot's file), as mjlab computes a clip's body poses. Raises ``ValueError`` naming a body or joint
    the robot lacks."""
    return _offering("kinematics").body_poses(asset, root_pos, root_quat, joint_names, joint_pos, bodies)
