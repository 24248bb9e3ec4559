"""Isaac Lab run folders: ``params/env.yaml`` read safely and mapped to the same :class:`~transfer.task.Task`.

An Isaac Lab training run leaves ``logs/rsl_rl/<experiment>/<timestamp>/`` with ``params/env.yaml`` and
``params/agent.yaml`` (the whole configuration, written by ``isaaclab.utils.io.dump_yaml``: ``class_to_dict`` of
the config classes, then ``yaml.dump`` with PyYAML's default dumper), RSL-RL checkpoints ``model_<iter>.pt`` and
often ``exported/policy.pt`` / ``policy.onnx``. :func:`read_isaaclab_run` reads such a folder;
:func:`isaaclab_task` maps its ``env.yaml`` to a task on an asset's joint names.

Safety. The dump holds Python tags (``!!python/tuple``, ``!!python/object/apply:builtins.slice``, ...). They are
read with a :class:`yaml.SafeLoader` subclass that turns the known harmless ones (:data:`HARMLESS_TAGS`) into
plain values and refuses every other Python tag, naming it and its line: nothing is imported, constructed or
executed, and the ``.pkl`` files Isaac Lab writes beside the YAML are never opened.

What is read (everything else in the file is ignored):

- ``observations.policy``: the terms in order, by ``func`` (:data:`OBSERVATION_FUNCS`), with ``scale``, ``clip``
  and ``history_length`` (0 or 1; more is refused); ``noise`` is a training-time corruption and is not applied
  at replay; an unknown ``func`` is refused, naming it and saying how to describe the term in a task file;
- ``actions``: one ``JointPositionAction`` (``scale``, ``offset``, ``use_default_offset``, ``joint_names``,
  ``preserve_order``, ``clip``); the other action types are refused (none maps onto a position target around the
  defaults);
- ``scene.robot``: ``init_state.joint_pos`` / ``joint_vel`` and the ``actuators`` (``joint_names_expr``,
  ``stiffness``, ``damping``, ``armature``, ``effort_limit(_sim)``, ``velocity_limit(_sim)``) as full-match
  regular expressions on the asset's joint names, Isaac Lab's way (a pattern matching nothing, or a joint matched
  twice, is an error); ``spawn.usd_path`` (the asset the run names);
  ``spawn.articulation_props`` solver iterations; ``joint_ordering`` (Isaac Lab 3.0: the checkpoint's order when
  it is not the engine's own);
- ``sim.dt``, ``decimation``, ``commands.<name>.ranges`` (replay picks a fixed command: :func:`fixed_command`);
- which engine trained it (:func:`training_engine`): ``sim.physics`` with a Newton manager (or Isaac Lab's
  Newton branch ``sim.newton_cfg``) and a MuJoCo-Warp solver means Newton, ``mjwarp`` joint order; a PhysX
  physics config (or Isaac Lab 2's ``sim.physx``) means PhysX, ``physx`` order;
- ``params/agent.yaml``: ``experiment_name`` (the task's name), the actor's ``activation`` (RSL-RL checkpoints),
  ``clip_actions`` (the raw-action bound, kept as the action term's ``clip_actions``) and ``obs_groups`` (the actor must read the ``policy`` group).

Layout: :mod:`~transfer.task.isaaclab.yaml_safe` (the safe loader), :mod:`~transfer.task.isaaclab.run` (the
folder, its checkpoint, the training engine), :mod:`~transfer.task.isaaclab.terms` (observation and action terms)
and :mod:`~transfer.task.isaaclab.mapping` (env cfg -> task).
"""

from __future__ import annotations

from transfer.task.isaaclab.mapping import fixed_command, isaaclab_task
from transfer.task.isaaclab.run import AGENT_YAML as AGENT_YAML
from transfer.task.isaaclab.run import (
    ENV_YAML,
    IsaacLabRun,
    find_run,
    read_isaaclab_run,
    run_checkpoint,
    training_engine,
)
from transfer.task.isaaclab.terms import OBSERVATION_FUNCS
from transfer.task.isaaclab.terms import expand_joint_values as expand_joint_values
from transfer.task.isaaclab.yaml_safe import HARMLESS_TAGS, IsaacLabError, load_isaaclab_yaml

__all__ = [
    "ENV_YAML",
    "HARMLESS_TAGS",
    "OBSERVATION_FUNCS",
    "IsaacLabError",
    "IsaacLabRun",
    "find_run",
    "fixed_command",
    "isaaclab_task",
    "load_isaaclab_yaml",
    "read_isaaclab_run",
    "run_checkpoint",
    "training_engine",
]
