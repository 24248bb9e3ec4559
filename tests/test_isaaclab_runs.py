"""Isaac Lab run folders everywhere a checkpoint is accepted: ``transfer info / replay / verify / convert RUN_DIR``.

The run folders are written here the way Isaac Lab writes them: the configuration as ``class_to_dict`` leaves it
(callables as ``"module:name"`` strings, tuples, ``slice(None)`` joint ids, nested config dicts) dumped by
``yaml.dump(..., default_flow_style=False, sort_keys=False)`` with PyYAML's default dumper, as
``isaaclab.utils.io.dump_yaml`` does, so the files carry the real ``!!python/tuple`` and
``!!python/object/apply:builtins.slice`` tags and ``&id`` anchors. Two ANYmal C flat-velocity runs point at the
shared checkpoints: one trained on Newton / MuJoCo-Warp (Isaac Lab 3.0 ``sim.physics`` with a Newton manager and
an MJWarp solver; ``exported/policy.pt`` = ``mjw_anymal.pt``) and one trained on PhysX (a PhysX manager;
``exported/policy.onnx`` = ``physx_anymal.onnx``).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from transfer.task.isaaclab import (
    IsaacLabError,
    find_run,
    fixed_command,
    isaaclab_task,
    load_isaaclab_yaml,
    read_isaaclab_run,
    run_checkpoint,
    training_engine,
)

pytestmark = pytest.mark.filterwarnings("ignore")

USD_URL = (
    "https://omniverse-content-production.s3-us-west-2.amazonaws.com/Assets/Isaac/5.1/Isaac/IsaacLab/Robots/"
    "ANYbotics/ANYmal-C/anymal_c.usd"
)
ALL = slice(None, None, None)  # SceneEntityCfg's default *_ids: one object, so the dump anchors it (&id001)


# ---------------------------------------------------------------------------------------------------- run writers


def _entity(name: str = "robot", **names: Any) -> dict[str, Any]:
    """A ``SceneEntityCfg`` as ``class_to_dict`` leaves it."""
    return {
        "name": name,
        "joint_names": names.get("joint_names"),
        "joint_ids": ALL,
        "fixed_tendon_names": None,
        "fixed_tendon_ids": ALL,
        "body_names": names.get("body_names"),
        "body_ids": ALL,
        "object_collection_names": None,
        "object_collection_ids": ALL,
        "preserve_order": False,
    }


def _noise(n: float) -> dict[str, Any]:
    return {"func": "isaaclab.utils.noise.noise_model:uniform_noise", "operation": "add", "n_min": -n, "n_max": n}


def _obs(func: str, params: dict | None = None, noise: float | None = None, **extra: Any) -> dict[str, Any]:
    term = {
        "func": f"isaaclab.envs.mdp.observations:{func}",
        "params": params or {},
        "modifiers": None,
        "noise": None if noise is None else _noise(noise),
        "clip": None,
        "scale": None,
        "history_length": 0,
        "flatten_history_dim": True,
    }
    term.update(extra)
    return term


def _physics(engine: str) -> tuple[str, Any]:
    """``(key, value)`` of the sim's physics config for ``engine``, as each Isaac Lab version dumps it."""
    if engine == "physx":  # Isaac Lab 3.0: sim.physics = PhysxCfg()
        return "physics", {
            "class_type": "isaaclab_physx.physics.physx_manager:PhysxManager",
            "solver_type": 1,
            "min_position_iteration_count": 1,
            "max_position_iteration_count": 255,
            "min_velocity_iteration_count": 0,
            "max_velocity_iteration_count": 255,
            "enable_ccd": False,
            "enable_stabilization": False,
            "enable_enhanced_determinism": False,
            "bounce_threshold_velocity": 0.5,
            "friction_offset_threshold": 0.04,
            "friction_correlation_distance": 0.025,
            "gpu_max_rigid_contact_count": 8388608,
            "gpu_max_rigid_patch_count": 163840,
        }
    if engine == "newton":  # Isaac Lab 3.0: sim.physics = NewtonCfg(solver_cfg=MJWarpSolverCfg(...))
        return "physics", {
            "class_type": "isaaclab_newton.physics.newton_manager:NewtonManager",
            "num_substeps": 1,
            "debug_mode": False,
            "use_cuda_graph": True,
            "solver_cfg": {
                "solver_type": "mujoco_warp",
                "njmax": 300,
                "nconmax": None,
                "iterations": 100,
                "ls_iterations": 50,
                "solver": "newton",
                "integrator": "implicitfast",
                "use_mujoco_cpu": False,
                "disable_contacts": False,
                "default_actuator_gear": None,
                "actuator_gears": None,
                "update_data_interval": 1,
                "save_to_mjcf": None,
                "impratio": 1.0,
                "cone": "pyramidal",
                "ls_parallel": False,
                "use_mujoco_contacts": True,
            },
        }
    if engine == "physx2":  # Isaac Lab 2.x: sim.physx = PhysxCfg()
        return "physx", {"solver_type": 1, "min_position_iteration_count": 1, "enable_ccd": False}
    if engine == "newton_branch":  # Isaac Lab's Newton feature branch: sim.newton_cfg
        return "newton_cfg", {
            "num_substeps": 1,
            "debug_mode": False,
            "use_cuda_graph": True,
            "solver_cfg": {"solver_type": "mujoco_warp", "njmax": 300},
        }
    raise ValueError(engine)


def isaaclab_env(engine: str = "physx") -> dict[str, Any]:
    """``class_to_dict(Isaac-Velocity-Flat-Anymal-C env cfg)`` trained on ``engine``: implicit PD actuators (300,
    10, armature 0.06: the gains of the shared checkpoints), the flat-terrain policy observation with training
    noise, a 0.5-scaled joint position action, a 200 Hz sim with decimation 4."""
    key, physics = _physics(engine)
    sim = {
        "physics_prim_path": "/physicsScene",
        "device": "cuda:0",
        "dt": 0.005,
        "render_interval": 4,
        "gravity": (0.0, 0.0, -9.81),
        "enable_scene_query_support": False,
        "use_fabric": True,
        key: physics,
        "physics_material": {
            "func": "isaaclab.sim.spawners.materials.physics_materials:spawn_rigid_body_material",
            "static_friction": 1.0,
            "dynamic_friction": 1.0,
            "restitution": 0.0,
            "improve_patch_friction": True,
            "friction_combine_mode": "multiply",
            "restitution_combine_mode": "multiply",
        },
        "render": {"enable_translucency": None, "enable_reflections": None, "rendering_mode": None},
    }
    robot = {
        "class_type": "isaaclab.assets.articulation.articulation:Articulation",
        "prim_path": "/World/envs/env_.*/Robot",
        "spawn": {
            "func": "isaaclab.sim.spawners.from_files.from_files:spawn_from_usd",
            "visible": True,
            "semantic_tags": None,
            "copy_from_source": True,
            "mass_props": None,
            "deformable_props": None,
            "rigid_props": {
                "rigid_body_enabled": None,
                "kinematic_enabled": None,
                "disable_gravity": False,
                "linear_damping": 0.0,
                "angular_damping": 0.0,
                "max_linear_velocity": 1000.0,
                "max_angular_velocity": 1000.0,
                "max_depenetration_velocity": 1.0,
                "retain_accelerations": False,
            },
            "collision_props": None,
            "activate_contact_sensors": True,
            "scale": None,
            "articulation_props": {
                "articulation_enabled": None,
                "enabled_self_collisions": True,
                "solver_position_iteration_count": 4,
                "solver_velocity_iteration_count": 0,
                "sleep_threshold": None,
                "stabilization_threshold": None,
                "fix_root_link": None,
            },
            "fixed_tendons_props": None,
            "joint_drive_props": None,
            "visual_material_path": "material",
            "visual_material": None,
            "usd_path": USD_URL,
            "variants": None,
        },
        "init_state": {
            "pos": (0.0, 0.0, 0.6),
            "rot": (0.0, 0.0, 0.0, 1.0),
            "lin_vel": (0.0, 0.0, 0.0),
            "ang_vel": (0.0, 0.0, 0.0),
            "joint_pos": {".*HAA": 0.0, ".*F_HFE": 0.4, ".*H_HFE": -0.4, ".*F_KFE": -0.8, ".*H_KFE": 0.8},
            "joint_vel": {".*": 0.0},
        },
        "collision_group": 0,
        "debug_vis": False,
        "articulation_root_prim_path": None,
        "soft_joint_pos_limit_factor": 0.95,
        "actuators": {
            "legs": {
                "class_type": "isaaclab.actuators.actuator_pd:ImplicitActuator",
                "joint_names_expr": [".*HAA", ".*HFE", ".*KFE"],
                "effort_limit": None,
                "velocity_limit": 7.5,
                "effort_limit_sim": None,
                "velocity_limit_sim": None,
                "stiffness": {".*": 300.0},
                "damping": {".*": 10.0},
                "armature": {".*": 0.06},
                "friction": None,
                "dynamic_friction": None,
                "viscous_friction": None,
            },
        },
        "actuator_value_resolution_debug_print": False,
        "joint_ordering": None,
        "body_ordering": None,
    }
    scene = {
        "num_envs": 4096,
        "env_spacing": 2.5,
        "lazy_sensor_update": True,
        "replicate_physics": True,
        "filter_collisions": True,
        "clone_in_fabric": False,
        "terrain": {
            "class_type": "isaaclab.terrains.terrain_importer:TerrainImporter",
            "collision_group": -1,
            "prim_path": "/World/ground",
            "num_envs": 1,
            "terrain_type": "plane",
            "terrain_generator": None,
            "env_spacing": None,
            "max_init_terrain_level": 5,
            "debug_vis": False,
        },
        "robot": robot,
        "height_scanner": None,
        "contact_forces": {
            "class_type": "isaaclab.sensors.contact_sensor.contact_sensor:ContactSensor",
            "prim_path": "/World/envs/env_.*/Robot/.*",
            "update_period": 0.005,
            "history_length": 3,
            "debug_vis": False,
            "track_pose": False,
            "track_air_time": True,
            "force_threshold": 1.0,
            "filter_prim_paths_expr": [],
        },
        "sky_light": {"class_type": None, "prim_path": "/World/skyLight", "spawn": {"intensity": 750.0}},
    }
    policy = {
        "concatenate_terms": True,
        "concatenate_dim": -1,
        "enable_corruption": True,
        "history_length": None,
        "flatten_history_dim": True,
        "base_lin_vel": _obs("base_lin_vel", noise=0.1),
        "base_ang_vel": _obs("base_ang_vel", noise=0.2),
        "projected_gravity": _obs("projected_gravity", noise=0.05),
        "velocity_commands": _obs("generated_commands", {"command_name": "base_velocity"}),
        "joint_pos": _obs("joint_pos_rel", noise=0.01),
        "joint_vel": _obs("joint_vel_rel", noise=1.5),
        "actions": _obs("last_action"),
        "height_scan": None,  # the flat task disables the rough task's height scan
    }
    reward = lambda func, weight, **params: {"func": func, "params": params, "weight": weight}  # noqa: E731
    return {
        "viewer": {
            "eye": (7.5, 7.5, 7.5),
            "lookat": (0.0, 0.0, 0.0),
            "cam_prim_path": "/OmniverseKit_Persp",
            "resolution": (1280, 720),
            "origin_type": "world",
            "env_index": 0,
            "asset_name": None,
        },
        "sim": sim,
        "ui_window_class_type": "isaaclab.envs.ui.manager_based_rl_env_window:ManagerBasedRLEnvWindow",
        "seed": 42,
        "decimation": 4,
        "scene": scene,
        "recorders": {
            "dataset_file_handler_class_type": "isaaclab.utils.datasets.hdf5_dataset_file_handler:HDF5DatasetFileHandler"
        },
        "observations": {"policy": policy},
        "actions": {
            "joint_pos": {
                "class_type": "isaaclab.envs.mdp.actions.joint_actions:JointPositionAction",
                "asset_name": "robot",
                "debug_vis": False,
                "clip": None,
                "joint_names": [".*"],
                "scale": 0.5,
                "offset": 0.0,
                "preserve_order": False,
                "use_default_offset": True,
            },
        },
        "events": {
            "physics_material": {
                "func": "isaaclab.envs.mdp.events:randomize_rigid_body_material",
                "mode": "startup",
                "params": {
                    "asset_cfg": _entity(body_names=".*"),
                    "static_friction_range": (0.8, 0.8),
                    "dynamic_friction_range": (0.6, 0.6),
                    "restitution_range": (0.0, 0.0),
                    "num_buckets": 64,
                },
                "interval_range_s": None,
                "is_global_time": False,
                "min_step_count_between_reset": 0,
            },
            "reset_robot_joints": {
                "func": "isaaclab.envs.mdp.events:reset_joints_by_scale",
                "mode": "reset",
                "params": {"position_range": (0.5, 1.5), "velocity_range": (0.0, 0.0)},
                "interval_range_s": None,
                "is_global_time": False,
                "min_step_count_between_reset": 0,
            },
        },
        "rerender_on_reset": False,
        "wait_for_textures": True,
        "xr": None,
        "is_finite_horizon": False,
        "episode_length_s": 20.0,
        "rewards": {
            "track_lin_vel_xy_exp": reward(
                "isaaclab.envs.mdp.rewards:track_lin_vel_xy_exp", 1.0, command_name="base_velocity", std=0.5
            ),
            "dof_torques_l2": reward("isaaclab.envs.mdp.rewards:joint_torques_l2", -2.5e-05),
            "feet_air_time": reward(
                "isaaclab_tasks.manager_based.locomotion.velocity.mdp.rewards:feet_air_time",
                0.5,
                sensor_cfg=_entity("contact_forces", body_names=".*FOOT"),
                command_name="base_velocity",
                threshold=0.5,
            ),
            "undesired_contacts": reward(
                "isaaclab.envs.mdp.rewards:undesired_contacts",
                -1.0,
                sensor_cfg=_entity("contact_forces", body_names=".*THIGH"),
                threshold=1.0,
            ),
        },
        "terminations": {
            "time_out": {"func": "isaaclab.envs.mdp.terminations:time_out", "params": {}, "time_out": True},
            "base_contact": {
                "func": "isaaclab.envs.mdp.terminations:illegal_contact",
                "time_out": False,
                "params": {"sensor_cfg": _entity("contact_forces", body_names="base"), "threshold": 1.0},
            },
        },
        "curriculum": {"terrain_levels": None},
        "commands": {
            "base_velocity": {
                "class_type": "isaaclab.envs.mdp.commands.velocity_command:UniformVelocityCommand",
                "resampling_time_range": (10.0, 10.0),
                "debug_vis": True,
                "asset_name": "robot",
                "heading_command": True,
                "heading_control_stiffness": 0.5,
                "rel_standing_envs": 0.02,
                "rel_heading_envs": 1.0,
                "ranges": {
                    "lin_vel_x": (-1.0, 1.0),
                    "lin_vel_y": (-1.0, 1.0),
                    "ang_vel_z": (-1.0, 1.0),
                    "heading": (-3.141592653589793, 3.141592653589793),
                },
            },
        },
    }


def isaaclab_agent(experiment: str = "anymal_c_flat") -> dict[str, Any]:
    """``class_to_dict(RslRlOnPolicyRunnerCfg)`` (rsl-rl-lib 5 layout)."""
    return {
        "seed": 42,
        "device": "cuda:0",
        "num_steps_per_env": 24,
        "max_iterations": 300,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "clip_actions": None,
        "save_interval": 50,
        "experiment_name": experiment,
        "run_name": "",
        "logger": "tensorboard",
        "resume": False,
        "load_run": ".*",
        "load_checkpoint": "model_.*.pt",
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [128, 128, 128],
            "activation": "elu",
            "obs_normalization": False,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
        },
        "critic": {
            "class_name": "MLPModel",
            "hidden_dims": [128, 128, 128],
            "activation": "elu",
            "obs_normalization": False,
        },
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": 5,
            "num_mini_batches": 4,
            "learning_rate": 0.001,
            "schedule": "adaptive",
            "gamma": 0.99,
            "lam": 0.95,
            "entropy_coef": 0.005,
            "desired_kl": 0.01,
            "max_grad_norm": 1.0,
            "value_loss_coef": 1.0,
            "use_clipped_value_loss": True,
            "clip_param": 0.2,
        },
    }


def dump_yaml(path: Path, data: dict[str, Any]) -> Path:
    """``isaaclab.utils.io.dump_yaml``: PyYAML's default dumper, block style, keys in definition order."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        yaml.dump(data, fh, default_flow_style=False, sort_keys=False)
    return path


def write_run(
    folder: Path, engine: str, *, exported: Path | None = None, env: dict | None = None, agent: dict | None = None
) -> Path:
    """An Isaac Lab run folder: ``params/env.yaml``, ``params/agent.yaml`` (and the ``.pkl`` files beside them,
    here booby-trapped: loading one would create ``PICKLE_RAN`` in the folder), ``exported/policy.<ext>``."""
    dump_yaml(folder / "params/env.yaml", isaaclab_env(engine) if env is None else env)
    dump_yaml(folder / "params/agent.yaml", isaaclab_agent() if agent is None else agent)
    marker = folder / "PICKLE_RAN"
    for name in ("env.pkl", "agent.pkl"):  # what pickle.load would run: os.system("touch PICKLE_RAN")
        (folder / "params" / name).write_bytes(b"cos\nsystem\n(V" + f"touch {marker}".encode() + b"\ntR.")
    if exported is not None:
        (folder / "exported").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(exported, folder / "exported" / f"policy{exported.suffix}")
    return folder


@pytest.fixture(scope="module")
def anymal(anymal_files):
    return anymal_files


@pytest.fixture(scope="module")
def runs(anymal, tmp_path_factory):
    """The two runs: trained on Newton (TorchScript export) and on PhysX (ONNX export)."""
    root = tmp_path_factory.mktemp("logs") / "rsl_rl/anymal_c_flat"
    return {
        "newton": write_run(root / "2026-11-30_10-00-00_newton", "newton", exported=anymal["mjw_pt"]),
        "physx": write_run(root / "2026-11-30_11-00-00_physx", "physx", exported=anymal["physx_onnx"]),
    }


def _with(env: dict, path: str, value: Any) -> dict:
    """A copy of ``env`` with the dotted ``path`` set to ``value`` (``None`` value with a ``-`` prefix: removed)."""
    out = copy.deepcopy(env)
    *parents, last = path.split(".")
    node = out
    for p in parents:
        node = node[p]
    node[last] = value
    return out


# ---------------------------------------------------------------------------------------------------- reading safely


def test_the_dump_carries_isaac_labs_python_tags_and_reads_back_as_plain_values(tmp_path):
    path = dump_yaml(tmp_path / "env.yaml", isaaclab_env("newton"))
    text = path.read_text()
    assert "!!python/tuple" in text and "!!python/object/apply:builtins.slice" in text and "&id001" in text
    env = load_isaaclab_yaml(path)
    assert env["sim"]["gravity"] == (0.0, 0.0, -9.81) and isinstance(env["sim"]["gravity"], tuple)
    assert env["commands"]["base_velocity"]["ranges"]["lin_vel_x"] == (-1.0, 1.0)
    assert env["events"]["physics_material"]["params"]["asset_cfg"]["joint_ids"] == slice(None)
    assert env["observations"]["policy"]["height_scan"] is None


def test_a_key_given_twice_in_a_run_s_config_is_refused_naming_its_line(tmp_path):
    """``sim: {dt: 0.005, dt: 0.05}`` in params/env.yaml was read last-one-wins (``info`` said 5 Hz); every other
    YAML transfer reads refused it. Numbers written ``1e-3`` read as numbers, as in the task files."""
    path = dump_yaml(tmp_path / "env.yaml", isaaclab_env("newton"))
    text = path.read_text()
    twice = tmp_path / "twice.yaml"
    twice.write_text(text.replace("sim:\n", "sim:\n  dt: 0.05\n", 1))
    with pytest.raises(IsaacLabError, match=r"twice.yaml.*line \d+: refused: the key 'dt' is given twice"):
        load_isaaclab_yaml(twice)
    exponent = tmp_path / "exponent.yaml"
    exponent.write_text("sim:\n  dt: 5e-3\n")
    assert load_isaaclab_yaml(exponent) == {"sim": {"dt": 0.005}}


@pytest.mark.parametrize(
    "value",
    [
        "!!python/object/apply:os.system ['touch {marker}']",
        "!!python/object/new:subprocess.Popen [['touch', '{marker}']]",
        "!!python/object:isaaclab.utils.noise.noise_cfg.UniformNoiseCfg {{n_min: -0.1, n_max: 0.1}}",
        "!!python/name:builtins.eval ''",
        "!!python/module:os ''",
        '!!python/object/apply:builtins.eval [\'open("{marker}", "w")\']',
        "!!python/object/apply:torch._utils._rebuild_tensor_v2 [1, 2]",
        "!custom_tag {{kind: robot}}",
    ],
)
def test_an_unknown_python_tag_is_refused_naming_it_and_its_line_and_nothing_runs(value, tmp_path, monkeypatch):
    import transfer.env
    import transfer.formats
    import transfer.formats.info
    import transfer.runs.inputs

    def no(*args, **kwargs):
        raise AssertionError("nothing may be loaded or run for a refused env.yaml")

    monkeypatch.setattr(transfer.env.PolicyEnv, "__init__", no)
    monkeypatch.setattr(transfer.formats, "load_policy", no)
    # info binds the name at import: patched there too (imported under the patch, it kept the stand-in for good)
    monkeypatch.setattr(transfer.formats.info, "load_policy", no)
    monkeypatch.setattr(transfer.runs.inputs, "load_policy", no)  # the input layer binds it too
    marker = tmp_path / "RAN"
    folder = write_run(tmp_path / "run", "physx")
    (folder / "exported").mkdir()
    (folder / "exported/policy.onnx").write_bytes(b"not read")
    env_yaml = folder / "params/env.yaml"
    lines = env_yaml.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("seed:"))
    lines[at] = "seed: " + value.format(marker=marker)
    env_yaml.write_text("\n".join(lines) + "\n")
    tag = value.split()[0].replace("!!python/", "").split("[")[0]
    for call in (
        lambda: load_isaaclab_yaml(env_yaml),
        lambda: read_isaaclab_run(folder),
    ):
        with pytest.raises(IsaacLabError) as err:
            call()
        assert f"line {at + 1}" in str(err.value) and tag in str(err.value), err.value
    from transfer.cli import main

    for args in (
        ["info", str(folder)],
        ["replay", str(folder), "--target", "physx"],
        ["verify", str(folder)],
        ["convert", str(folder), "--to", "physx", "-o", str(tmp_path / "out.onnx")],
    ):
        assert main(args) == 2
    assert not marker.exists() and not (folder / "PICKLE_RAN").exists() and not (tmp_path / "out.onnx").exists()


def test_the_pkl_files_beside_the_yaml_are_never_opened(tmp_path, monkeypatch):
    import builtins
    import pickle

    opened: list[str] = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle.load called"))
    folder = write_run(tmp_path / "run", "physx")
    (folder / "exported").mkdir()
    (folder / "exported/policy.onnx").write_bytes(b"x")
    opened.clear()
    read_isaaclab_run(folder)
    assert not [f for f in opened if f.endswith(".pkl")] and not (folder / "PICKLE_RAN").exists()


# ---------------------------------------------------------------------------------------------------- the folder


def test_the_newest_model_is_chosen_by_iteration_number_unless_one_is_named(tmp_path, anymal):
    pytest.importorskip("torch")
    pytest.importorskip("rsl_rl")
    from tests.rsl_rl_helpers import make_runner

    folder = write_run(tmp_path / "run", "physx")
    (folder / "exported").mkdir()
    (folder / "exported/policy.onnx").write_bytes(b"x")
    assert run_checkpoint(folder) == folder / "exported/policy.onnx"
    runner = make_runner(obs=48, act=12, hidden=(16, 16))
    for it in (50, 999, 1000, 250):
        runner.current_learning_iteration = it
        runner.save(str(folder / f"model_{it}.pt"))
    (folder / "model_best.pt").write_bytes(b"not an iteration")
    assert run_checkpoint(folder) == folder / "model_1000.pt"  # 1000 > 999, though "model_999" sorts after
    assert read_isaaclab_run(folder).checkpoint == folder / "model_1000.pt"
    named = read_isaaclab_run(folder / "model_250.pt")
    assert named.folder == folder and named.checkpoint == folder / "model_250.pt"
    assert find_run(folder / "exported/policy.onnx") == (folder, folder / "exported/policy.onnx")
    assert find_run(tmp_path) is None
    assert read_isaaclab_run(folder).policy_options() == {"activation": "elu"}
    from transfer.runs.info import checkpoint_info

    info = checkpoint_info(folder, asset=anymal["asset"])  # the newest model, loaded with weights_only=True
    assert info["checkpoint"] == str(folder / "model_1000.pt") and info["format"] == "rsl_rl"
    assert info["input_size"] == info["observation_size"] == 48 and info["metadata"]["convention"] == "physx"
    (folder / "model_2000.pt").symlink_to(folder / "model_2000.pt")  # a loop: it was skipped, model_1000 replayed
    with pytest.raises(FileNotFoundError, match=r"model_2000.pt: the run's newest checkpoint is no readable file"):
        run_checkpoint(folder)


def test_the_training_engine_and_the_checkpoint_order_come_from_the_physics_config():
    """Isaac Lab's physics config gives the order its engine lists joints in; the registry the backend."""
    assert training_engine(isaaclab_env("physx")) == ("physx", None)
    assert training_engine(isaaclab_env("newton")) == ("mjwarp", "mujoco_warp")
    assert training_engine(isaaclab_env("physx2")) == ("physx", None)
    assert training_engine(isaaclab_env("newton_branch")) == ("mjwarp", "mujoco_warp")
    with pytest.raises(IsaacLabError, match="no physics backend"):
        training_engine(_with(isaaclab_env("physx"), "sim.physics", None))
    with pytest.raises(IsaacLabError, match="SomeOtherManager"):
        training_engine(_with(isaaclab_env("physx"), "sim.physics.class_type", "x.y:SomeOtherManager"))


def test_the_replay_command_is_the_fastest_forward_speed_without_turning():
    assert fixed_command({"lin_vel_x": (-1.0, 1.0), "lin_vel_y": (-1.0, 1.0), "ang_vel_z": (-1.0, 1.0)}) == (1.0, 0, 0)
    assert fixed_command({"lin_vel_x": (0.0, 2.0), "lin_vel_y": (0.2, 0.5), "ang_vel_z": (-0.5, -0.1)}) == (
        2.0,
        0.2,
        -0.1,
    )
    assert fixed_command(None) == (0.0, 0.0, 0.0)


# ---------------------------------------------------------------------------------------------------- the task, no engine


def _task(tmp_path: Path, env: dict, anymal: dict, engine: str = "physx"):
    from transfer.orders import resolve_ordering

    folder = write_run(tmp_path / "run", engine, env=env)
    (folder / "exported").mkdir(exist_ok=True)
    (folder / "exported/policy.onnx").write_bytes(b"x")
    run = read_isaaclab_run(folder)
    return isaaclab_task(run, resolve_ordering(anymal["asset"], run.order).joints, asset=anymal["asset"])


def test_info_and_the_input_layer_read_a_run_folder_alike(runs, anymal):
    """``transfer info`` (floor 5) and the input layer (replay, verify, convert) map a run folder the same way: the
    metadata info shows is the document of the task a replay would run."""
    from transfer.formats.checkpoint import build_metadata
    from transfer.runs.info import checkpoint_info
    from transfer.runs.inputs import resolve_inputs

    for engine in ("newton", "physx"):
        task = resolve_inputs(runs[engine], asset=anymal["asset"]).task
        shown = checkpoint_info(runs[engine], asset=anymal["asset"])["metadata"]
        expected = build_metadata(
            task, task.joint_names, convention=task.convention, trained_on=task.trained_on, asset=task.asset
        )
        assert shown == expected


def test_info_derives_the_newton_yamls_layout_and_defaults(runs, anymal, capsys):
    """The Newton-trained run gives Newton's policy YAML for ANYmal C in mjwarp order, the PhysX one in physx
    order: same joint order, defaults, gains, action, observation layout and timing."""
    from transfer.cli import main
    from transfer.formats.checkpoint import build_metadata
    from transfer.orders import resolve_ordering
    from transfer.task import load_task

    yaml_task = load_task(anymal["yaml"])
    for engine, convention in (("newton", "mjwarp"), ("physx", "physx")):
        assert main(["info", str(runs[engine]), "--asset", str(anymal["asset"]), "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        meta = info["metadata"]
        expected = build_metadata(
            yaml_task.with_convention(convention),
            resolve_ordering(anymal["asset"], convention).joints,
            convention=convention,
        )
        assert meta["joint_names"] == list(yaml_task.joint_names_by_convention[convention])
        for key in (
            "joint_names",
            "convention",
            "observation",
            "action",
            "default_joint_pos",
            "stiffness",
            "damping",
            "armature",
            "sim",
        ):
            assert meta[key] == expected[key], key
        assert meta["trained_on"] == engine and meta["command"] == [1.0, 0.0, 0.0]
        assert meta["asset"] == str(anymal["asset"].resolve()) and meta["format"] == "transfer-checkpoint/1"
        assert info["observation_size"] == info["input_size"] == 48 and info["output_size"] == 12
        assert info["run"]["usd_path"] == USD_URL and Path(info["checkpoint"]).parent.name == "exported"
        assert any("noise" in n for n in info["notes"])


def test_a_pattern_matching_no_joint_is_named(tmp_path, anymal):
    env = _with(isaaclab_env(), "scene.robot.init_state.joint_pos.LF_WHEEL", 0.3)
    with pytest.raises(IsaacLabError) as err:
        _task(tmp_path, env, anymal)
    assert "'LF_WHEEL'" in str(err.value) and "init_state.joint_pos" in str(err.value)
    env = _with(isaaclab_env(), "scene.robot.actuators.legs.joint_names_expr", [".*HAA", ".*HFE", ".*_ARM"])
    with pytest.raises(IsaacLabError, match=r"'\.\*_ARM'.*no joint"):
        _task(tmp_path / "b", env, anymal)
    env = _with(isaaclab_env(), "actions.joint_pos.joint_names", ["LF_.*", "XX_.*"])
    with pytest.raises(IsaacLabError, match=r"'XX_\.\*'"):
        _task(tmp_path / "c", env, anymal)


def test_a_joint_matched_twice_is_an_error(tmp_path, anymal):
    env = _with(isaaclab_env(), "scene.robot.init_state.joint_pos.LF_HAA", 0.1)  # also matched by .*HAA
    with pytest.raises(IsaacLabError, match="'LF_HAA' is matched by both"):
        _task(tmp_path, env, anymal)
    env = _with(
        isaaclab_env(),
        "scene.robot.actuators.knees",
        {
            **isaaclab_env()["scene"]["robot"]["actuators"]["legs"],
            "joint_names_expr": [".*KFE"],
        },
    )
    with pytest.raises(IsaacLabError, match="driven by two actuator groups: legs and knees"):
        _task(tmp_path / "b", env, anymal)


def test_an_unknown_observation_term_is_named_with_how_to_describe_it(tmp_path, anymal):
    term = _obs("height_scan", {"sensor_cfg": _entity("height_scanner")})
    env = _with(isaaclab_env(), "observations.policy.height_scan", term)
    with pytest.raises(IsaacLabError) as err:
        _task(tmp_path, env, anymal)
    text = str(err.value)
    assert "isaaclab.envs.mdp.observations:height_scan" in text and "observations.policy.height_scan" in text
    assert "task file" in text and "--config" in text


def test_a_project_s_own_command_observation_reads_as_the_velocity_command_it_names(tmp_path, anymal):
    """Issue 42: a fork's ``keyboard_velocity_commands`` (its own function, ``params.command_name: base_velocity``,
    a UniformVelocityCommand) is the velocity command; a term of its own function and no command maps by
    ``observation_aliases`` (keys: the term or the function), and the refusal says how."""
    env = copy.deepcopy(isaaclab_env())
    policy = env["observations"]["policy"]
    own = {**policy["velocity_commands"], "func": "my_robot.tasks.mdp:keyboard_velocity_commands"}
    policy["velocity_commands"] = own
    task = _task(tmp_path, env, anymal)
    assert "velocity_commands" in [t.name for t in task.observation]
    assert dict(task.observation_aliases) == {}  # the key is the term's own name: nothing was renamed
    env = _with(env, "observations.policy.velocity_commands.params.command_name", "joystick")
    with pytest.raises(IsaacLabError, match=r"--set observation_aliases.velocity_commands=TERM"):
        _task(tmp_path / "b", env, anymal)
    from transfer.orders import resolve_ordering

    run = read_isaaclab_run(tmp_path / "b/run")
    names = resolve_ordering(anymal["asset"], run.order).joints
    task = isaaclab_task(run, names, asset=anymal["asset"], aliases={"keyboard_velocity_commands": "velocity_commands"})
    assert "velocity_commands" in [t.name for t in task.observation]


def test_patterns_gains_scales_and_limits_are_expanded_the_isaac_lab_way(tmp_path, anymal):
    env = isaaclab_env()
    legs = env["scene"]["robot"]["actuators"]["legs"]
    legs.update(
        joint_names_expr=[".*HAA", ".*HFE"],
        stiffness=80.0,
        damping={".*HAA": 2.0, ".*HFE": 3.0},
        effort_limit_sim=60.0,
        armature=None,
    )
    env["scene"]["robot"]["actuators"]["knees"] = {
        **legs,
        "joint_names_expr": ["(L|R)(F|H)_KFE"],
        "stiffness": 90.0,
        "damping": 4.0,
        "effort_limit_sim": {".*": 70.0},
    }
    env["scene"]["robot"]["init_state"]["joint_pos"] = {".*F_HFE": 0.4, ".*H_HFE": -0.4}  # the rest start at 0
    policy = env["observations"]["policy"]
    policy["base_ang_vel"]["scale"] = (0.25, 0.25, 0.25)
    policy["joint_vel"]["clip"] = (-5.0, 5.0)
    policy["joint_pos"]["func"] = "isaaclab.envs.mdp.observations:joint_pos"
    env["actions"]["joint_pos"]["joint_names"] = [".*HFE", ".*KFE"]
    env["actions"]["joint_pos"]["scale"] = {".*HFE": 0.5, ".*KFE": 0.25}  # per joint, as Unitree's configs give
    task = _task(tmp_path, env, anymal)
    assert set(task.stiffness.values()) == {80.0, 90.0} and task.stiffness["LF_KFE"] == 90.0
    assert task.damping["RH_HAA"] == 2.0 and task.damping["RH_HFE"] == 3.0 and task.damping["RH_KFE"] == 4.0
    assert task.effort_limit["LF_HAA"] == 60.0 and task.effort_limit["LF_KFE"] == 70.0 and not task.armature
    assert task.default_joint_pos["LF_KFE"] == 0.0 and task.default_joint_pos["LH_HFE"] == -0.4
    terms = {t.name: t for t in task.observation}
    assert terms["base_ang_vel"].scale == 0.25 and terms["joint_vel_rel"].clip == (-5.0, 5.0) and "joint_pos" in terms
    assert task.action.joints == tuple(n for n in task.joint_names if not n.endswith("HAA"))
    assert task.action.scale["LF_HFE"] == 0.5 and task.action.scale["RH_KFE"] == 0.25
    assert task.observation_size(12) == 3 * 4 + 12 * 2 + 8


def test_velocity_limit_sim_is_the_engines_limit_and_an_implicit_velocity_limit_alone_is_dropped(tmp_path, anymal):
    """Isaac Lab hands ``velocity_limit_sim`` to the engine; an implicit group's ``velocity_limit`` without it is
    dropped (its test_implicit_actuator_init_velocity_limits: the asset's stands); a limit on some joints only
    is not applied (a task's covers every joint)."""
    env = isaaclab_env()
    legs = env["scene"]["robot"]["actuators"]["legs"]
    assert legs["velocity_limit"] == 7.5 and legs["velocity_limit_sim"] is None
    assert _task(tmp_path, env, anymal).velocity_limit is None
    legs["velocity_limit_sim"] = 8.0
    assert set(_task(tmp_path, env, anymal).velocity_limit.values()) == {8.0}
    legs.update(joint_names_expr=[".*HAA", ".*HFE"])
    env["scene"]["robot"]["actuators"]["knees"] = {**legs, "joint_names_expr": [".*KFE"], "velocity_limit_sim": None}
    assert _task(tmp_path, env, anymal).velocity_limit is None


def test_histories_per_entry_scales_offsets_and_clips_map_as_isaac_lab_applies_them(tmp_path, anymal):
    env = isaaclab_env()
    env = _with(env, "observations.policy.base_ang_vel.history_length", 3)
    env = _with(env, "observations.policy.velocity_commands.scale", (2.0, 2.0, 0.25))
    env = _with(env, "actions.joint_pos.use_default_offset", False)
    env = _with(env, "actions.joint_pos.offset", {".*HAA": 0.1, ".*(HFE|KFE)": -0.2})
    env = _with(env, "actions.joint_pos.clip", {".*": (-1.5, 1.5)})
    task = _task(tmp_path, env, anymal)
    terms = {t.name: t for t in task.observation}
    assert terms["base_ang_vel"].history_length == 3 and terms["base_lin_vel"].history_length == 0
    assert terms["velocity_commands"].scale == (2.0, 2.0, 0.25)
    assert task.observation_size(12) == 48 + 2 * 3
    assert not task.action.use_default_offset and task.action.offset["LF_HAA"] == 0.1
    expanded = task.with_joint_names(task.joint_names).action
    assert expanded.offset["RH_KFE"] == -0.2 and expanded.clip["LH_HFE"] == (-1.5, 1.5)
    # a group's history_length overrides every term's (ObservationGroupCfg)
    grouped = _task(tmp_path / "g", _with(env, "observations.policy.history_length", 5), anymal)
    assert {t.history_length for t in grouped.observation} == {5} and grouped.observation_size(12) == 5 * 48
    unflat = _with(env, "observations.policy.base_ang_vel.flatten_history_dim", False)
    with pytest.raises(IsaacLabError, match="base_ang_vel.flatten_history_dim is false"):
        _task(tmp_path / "u", unflat, anymal)


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        ("observations.policy.base_lin_vel.history_length", -1, "history_length"),
        ("observations.policy.base_lin_vel.scale", (1.0, 2.0), "2 scales for a term of 3 entries"),
        (
            "actions.joint_pos.class_type",
            "isaaclab.envs.mdp.actions.joint_actions:RelativeJointPositionAction",
            "RelativeJointPositionAction",
        ),
        ("actions.joint_pos.clip", (-1.0, 1.0), "clip"),
        ("actions.joint_pos.clip", {".*": (1.0, -1.0)}, "clip"),
        ("scene.robot.actuators.legs.class_type", "isaaclab.actuators.actuator_net:ActuatorNetLSTM", "ActuatorNetLSTM"),
        ("scene.robot.init_state.joint_vel", {".*": 0.5}, "joint_vel"),
        ("observations.policy.joint_pos.params", {"asset_cfg": _entity(joint_names=[".*HAA"])}, "subset"),
        # a value out of range: the run's file and its own field, not only the task's (battery 5)
        ("sim.dt", 0.0, r"env.yaml: sim_dt: 0.0 s is not a physics time step .*\(the run's sim.dt\)"),
        ("decimation", 10**9, r"env.yaml: decimation: 1000000000 physics steps .*\(the run's decimation\)"),
    ],
)
def test_what_does_not_map_is_refused_naming_the_field(tmp_path, anymal, path, value, match):
    with pytest.raises(IsaacLabError, match=match) as err:
        _task(tmp_path, _with(isaaclab_env(), path, value), anymal)
    assert path.rsplit(".", 1)[0].split(".")[0] in str(err.value)


def test_joint_ordering_of_an_isaac_lab_3_run_is_the_checkpoint_order(tmp_path, anymal):
    env = _with(isaaclab_env("physx"), "scene.robot.joint_ordering", "mjwarp")  # PhysX-trained, mjwarp vectors
    folder = write_run(tmp_path / "run", "physx", env=env)
    (folder / "exported").mkdir()
    (folder / "exported/policy.onnx").write_bytes(b"x")
    run = read_isaaclab_run(folder)
    assert run.trained_on == "physx" and run.order == "mjwarp"


def test_a_missing_asset_names_the_path_the_run_records(runs, anymal, capsys):
    from transfer.cli import main

    assert main(["info", str(runs["newton"])]) == 2
    err = capsys.readouterr().err
    assert USD_URL in err and "--asset" in err
    missing = anymal["asset"].parent / "no_such_robot.usda"
    assert main(["replay", str(runs["newton"]), "--target", "physx", "--asset", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- on the engines


@pytest.mark.engines
@pytest.mark.parametrize(("engine", "target"), [("newton", "physx"), ("physx", "newton")])
def test_the_run_walks_on_the_other_engine(runs, anymal, engine, target):
    """Native (the training engine) and reordered on the other engine, 2 envs, 6 s: reordered walks at >= 0.8x
    native with no falls. Nothing but the run folder and the asset is given: order, task and engine are the run's."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    pytest.importorskip("onnxruntime")
    from transfer.runs.inputs import resolve_inputs
    from transfer.runs.replay import replay

    inputs = resolve_inputs(runs[engine], asset=anymal["asset"])
    assert inputs.source_label == {"newton": "mjwarp", "physx": "physx"}[engine] and inputs.task.trained_on == engine
    common = dict(num_envs=2, seconds=6.0, progress=False, inputs=inputs)
    native = replay(runs[engine], engine, **common)
    moved = replay(runs[engine], target, **common)
    print(
        f"{engine} run: native on {engine} {native.forward_velocity:.3f} m/s, reordered on {target} "
        f"{moved.forward_velocity:.3f} m/s (x{moved.forward_velocity / native.forward_velocity:.2f})"
    )
    for run in (native, moved):
        assert run.fall_fraction == 0.0 and run.nonfinite_envs == 0, run
    assert native.forward_velocity > 0.5
    assert moved.forward_velocity >= 0.8 * native.forward_velocity, (native, moved)


@pytest.mark.engines
def test_verify_and_convert_take_the_run_folder(runs, anymal, tmp_path, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    from transfer.cli import main
    from transfer.formats import read_metadata

    asset = str(anymal["asset"])
    assert main(["verify", str(runs["newton"]), "--asset", asset, "--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert "(order: mjwarp)" in out and "1. sizes and names: ok" in out
    dst = tmp_path / "anymal_physx.pt"
    assert main(["convert", str(runs["newton"]), "--to", "physx", "--asset", asset, "-o", str(dst)]) == 0
    meta = read_metadata(dst)
    assert (
        meta["convention"] == "physx"
        and meta["trained_on"] == "newton"
        and meta["asset"] == str(anymal["asset"].resolve())
    )
    assert meta["history"][-1]["input"] == "policy.pt" and meta["history"][-1]["run"] == str(runs["newton"])
    capsys.readouterr()
    assert main(["info", str(dst), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["joint_names"] == meta["joint_names"]


# ---------------------------------------------------------------------------------------------------- actuator models


def go2_env() -> dict[str, Any]:
    """A Go2 flat-velocity run trained on PhysX, as Isaac Lab configures Unitree quadrupeds: one DCMotor group
    (UNITREE_GO2_CFG: stiffness 25, damping 0.5, effort limit and saturation 23.5 N·m, velocity limit 30 rad/s)."""
    env = isaaclab_env("physx")
    robot = env["scene"]["robot"]
    robot["spawn"]["usd_path"] = "go2_flat.usda"
    robot["spawn"]["articulation_props"]["enabled_self_collisions"] = False
    robot["init_state"]["joint_pos"] = {
        ".*L_hip_joint": 0.1,
        ".*R_hip_joint": -0.1,
        "F[L,R]_thigh_joint": 0.8,
        "R[L,R]_thigh_joint": 1.0,
        ".*_calf_joint": -1.5,
    }
    robot["actuators"] = {
        "base_legs": {
            "class_type": "isaaclab.actuators.actuator_pd:DCMotor",
            "joint_names_expr": [".*_hip_joint", ".*_thigh_joint", ".*_calf_joint"],
            "effort_limit": 23.5,
            "velocity_limit": 30.0,
            "effort_limit_sim": None,
            "velocity_limit_sim": None,
            "stiffness": 25.0,
            "damping": 0.5,
            "armature": None,
            "friction": 0.0,
            "dynamic_friction": None,
            "viscous_friction": None,
            "saturation_effort": 23.5,
        },
    }
    env["actions"]["joint_pos"]["scale"] = 0.25
    return env


def go2_with_feet(shared: Path, folder: Path) -> Path:
    """The shared ``go2_flat.usda`` (no link of which collides: it would fall through the ground, and every run
    refuses it) under a layer of its own that gives each foot a 2.2 cm collision sphere."""
    from pxr import Usd, UsdGeom, UsdPhysics

    path = folder / "go2_feet.usda"
    stage = Usd.Stage.CreateNew(str(path))
    stage.GetRootLayer().subLayerPaths.append(str(shared / "assets/unitree_go2/usd/go2_flat.usda"))
    for leg in ("FL", "FR", "RL", "RR"):
        sphere = UsdGeom.Sphere.Define(stage, f"/go2_description/{leg}_foot/foot_collider")
        sphere.CreateRadiusAttr(0.022)
        UsdPhysics.CollisionAPI.Apply(sphere.GetPrim())
    stage.SetDefaultPrim(stage.GetPrimAtPath("/go2_description"))
    stage.GetRootLayer().Save()
    return path


@pytest.mark.engines
def test_a_go2_run_with_a_dc_motor_is_read_shown_verified_and_replayed_on_both_engines(shared, tmp_path, capsys):
    """The DCMotor group maps to a dc_motor actuator with its numbers; info shows it; verify passes; the replay runs
    on both engines with the motor computing the torque (the shared Go2 has no colliders; given collision spheres at
    its feet, the replay is checked to run and to hand the engine motor-limited efforts, not to walk)."""
    from transfer.cli import main
    from transfer.env import PolicyEnv
    from transfer.runs.inputs import resolve_inputs

    asset = go2_with_feet(shared, tmp_path)
    run = write_run(
        tmp_path / "go2_run", "physx", env=go2_env(), exported=shared / "policies/unitree_go2/rl_policies/physx_go2.pt"
    )
    inputs = resolve_inputs(run, asset=asset)
    (group,) = inputs.task.actuators
    assert (group.model, group.saturation_effort, group.velocity_limit) == ("dc_motor", 23.5, 30.0)
    assert set(inputs.task.effort_limit.values()) == {23.5} and set(inputs.task.stiffness.values()) == {25.0}
    assert inputs.task.self_collisions is False and inputs.task.ground.friction_combine == "multiply"
    assert main(["info", str(run), "--asset", str(asset)]) == 0
    out = capsys.readouterr().out
    assert "base_legs: dc_motor on 12 joints (saturation_effort 23.5, velocity_limit 30)" in out
    assert "0 velocity iterations" in out and "multiply combine" in out
    assert main(["verify", str(run), "--asset", str(asset), "--samples", "2"]) == 0
    capsys.readouterr()
    for engine in ("physx", "newton"):
        with PolicyEnv(inputs.task, asset, engine, inputs.source, num_envs=2) as env:
            assert env.art.actuators is not None and env.art.data.joint_stiffness.numpy().max() == 0.0
            env.step(np.full((2, 12), 8.0, np.float32))  # targets 2 rad away: the PD asks ~50 N·m
            effort = env.art.applied_effort.numpy()  # the last physics step's: within the motor's 23.5 N·m box
            assert np.isfinite(effort).all() and 10.0 < np.abs(effort).max() <= 23.5 + 1e-3
        assert main(["replay", str(run), "--target", engine, "--asset", str(asset), "--seconds", "0.5"]) == 0
        capsys.readouterr()
