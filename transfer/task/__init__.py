"""The task model: what a checkpoint needs from the world, named by joint and body, never by column.

A :class:`Task` holds the observation terms in order (:class:`ObsTerm`: name, size, the axis it indexes,
scale, clip), the action term (:class:`ActionTerm`), default joint positions and gains by joint name or
full-match pattern, sim dt and decimation, per-backend solver settings, the spawn height, the command and an
asset hint. Several formats describe one; each reader returns the same value::

    task = load_task("presets/tasks/anymal_c_flat_velocity.yaml")
    task = load_task("../shared/policies/anybotics_anymal_c/rl_policies/anymal.yaml").with_convention("physx")
    task = task.with_joint_names(articulation.joint_names)  # checks the listed order, expands the patterns
    task.observation_size(articulation.num_joints)          # 48 for ANYmal C

:meth:`Task.to_dict` / :meth:`Task.from_dict` round-trip exactly through JSON: that dict becomes a
self-describing checkpoint's metadata.
"""

from transfer.task._checks import TaskError
from transfer.task.isaaclab import IsaacLabError, IsaacLabRun, isaaclab_task, load_isaaclab_yaml, read_isaaclab_run
from transfer.task.model import (
    ACTION_KINDS,
    FLAT_VELOCITY_OBSERVATION,
    OBS_TERMS,
    TASK_FORMAT,
    ActionTerm,
    KnownTerm,
    ObsTerm,
    Task,
)
from transfer.task.names import check_listed_order, expand_joint_values
from transfer.task.readers import (
    NEWTON_POLICY_FIELDS,
    load_task,
    read_newton_policy_yaml,
    read_task_yaml,
    resolve_asset,
)

__all__ = [
    "ACTION_KINDS",
    "FLAT_VELOCITY_OBSERVATION",
    "IsaacLabError",
    "IsaacLabRun",
    "NEWTON_POLICY_FIELDS",
    "OBS_TERMS",
    "TASK_FORMAT",
    "ActionTerm",
    "KnownTerm",
    "ObsTerm",
    "Task",
    "TaskError",
    "check_listed_order",
    "expand_joint_values",
    "isaaclab_task",
    "load_isaaclab_yaml",
    "load_task",
    "read_isaaclab_run",
    "read_newton_policy_yaml",
    "read_task_yaml",
    "resolve_asset",
]
