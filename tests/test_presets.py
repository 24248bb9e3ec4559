import dataclasses
import warnings
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from omegaconf import OmegaConf

from transfer import (
    OrderingConvention,
    OrderingOverrideWarning,
    apply_articulation_ordering_preset,
    check_ordering_overrides,
)

conventions = st.sampled_from([*OrderingConvention, "PhysX", "mjwarp", "ROBOT_SCHEMA"])


@dataclasses.dataclass(frozen=True)
class ArticulationCfg:
    prim_path: str = "/World/envs/env_.*/Robot"
    joint_ordering: object = None
    body_ordering: object = None


class ConfigClass:
    """Isaac Lab configclass style: attributes plus replace()."""

    def __init__(self, **kw):
        self.prim_path = "/Robot"
        self.joint_ordering = None
        self.body_ordering = None
        self.__dict__.update(kw)

    def replace(self, **kw):
        return ConfigClass(**{**self.__dict__, **kw})


class CopyConfig:
    def __init__(self):
        self.joint_ordering = self.body_ordering = None

    def copy(self):
        out = CopyConfig()
        out.__dict__.update(self.__dict__)
        return out


@dataclasses.dataclass
class StructuredCfg:
    prim_path: str = "/Robot"
    joint_ordering: str | None = None
    body_ordering: str | None = None


def make(kind):
    return {
        "dataclass": ArticulationCfg,
        "configclass": ConfigClass,
        "copy": CopyConfig,
        "dict": lambda: {"prim_path": "/Robot", "joint_ordering": None, "body_ordering": None},
        "omegaconf": lambda: OmegaConf.create({"prim_path": "/Robot", "joint_ordering": None, "body_ordering": None}),
        "omegaconf_struct": lambda: OmegaConf.structured(StructuredCfg),
    }[kind]()


KINDS = ["dataclass", "configclass", "copy", "dict", "omegaconf", "omegaconf_struct"]


def get(cfg, name):
    return cfg[name] if isinstance(cfg, dict) else getattr(cfg, name)


@pytest.mark.parametrize("kind", KINDS)
@given(ordering=conventions)
def test_preset_sets_both_fields_consistently_and_is_idempotent(kind, ordering):
    cfg = make(kind)
    once = apply_articulation_ordering_preset(cfg, ordering)
    twice = apply_articulation_ordering_preset(once, ordering)
    expected = OrderingConvention(str(ordering).lower())
    assert get(once, "joint_ordering") == get(once, "body_ordering") == expected
    assert get(twice, "joint_ordering") == get(once, "joint_ordering")
    assert get(twice, "body_ordering") == get(once, "body_ordering")
    assert get(cfg, "joint_ordering") is None, "the input config must not be modified"
    assert once is not cfg


@pytest.mark.parametrize("kind", KINDS)
def test_none_returns_cfg_unchanged(kind):
    cfg = make(kind)
    assert apply_articulation_ordering_preset(cfg, None) is cfg


def test_bad_inputs_raise_documented_errors():
    with pytest.raises(ValueError, match="physx, mjwarp, robot_schema"):
        apply_articulation_ordering_preset(ArticulationCfg(), "bullet")
    with pytest.raises(TypeError, match="explicit name list"):
        apply_articulation_ordering_preset(ArticulationCfg(), ["a", "b"])

    @dataclasses.dataclass
    class NoOrdering:
        x: int = 0

    with pytest.raises(AttributeError, match="joint_ordering"):
        apply_articulation_ordering_preset(NoOrdering(), "physx")
    with pytest.raises(TypeError, match="Cannot apply"):
        apply_articulation_ordering_preset(42, "physx")


prefixes = st.sampled_from(["env.scene.robot", "scene.robot", "robot"])


@given(prefixes, conventions)
def test_consistent_overrides_do_not_warn(prefix, ordering):
    value = str(ordering).lower()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            check_ordering_overrides(
                [f"{prefix}.joint_ordering={value}", f"{prefix}.body_ordering={value.upper()}", "physics=physx"]
            )
            == []
        )


@given(prefixes, conventions, st.sampled_from(["joint_ordering", "body_ordering"]))
def test_one_sided_override_warns_with_the_fix(prefix, ordering, field):
    value = str(ordering).lower()
    other = "body_ordering" if field == "joint_ordering" else "joint_ordering"
    with pytest.warns(OrderingOverrideWarning) as record:
        problems = check_ordering_overrides([f"{prefix}.{field}={value}"])
    assert len(problems) == 1 and f"{prefix}.{other}={value}" in problems[0]
    assert str(record[0].message) == problems[0]


def test_different_conventions_warn():
    with pytest.warns(OrderingOverrideWarning, match="different"):
        check_ordering_overrides(["env.scene.robot.joint_ordering=mjwarp", "env.scene.robot.body_ordering=physx"])


def test_two_robots_are_checked_separately():
    problems = check_ordering_overrides(
        ["a.robot.joint_ordering=physx", "a.robot.body_ordering=physx", "b.robot.joint_ordering=mjwarp"], warn=False
    )
    assert len(problems) == 1 and problems[0].startswith("b.robot.joint_ordering")


PRESETS = sorted((Path(__file__).resolve().parents[1] / "presets").glob("*.yaml"))


@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_shipped_presets_are_consistent(path):
    preset = yaml.safe_load(path.read_text())
    assert check_ordering_overrides(preset["overrides"], warn=False) == []
    cfg = apply_articulation_ordering_preset(ArticulationCfg(), preset["ordering"])
    assert cfg.joint_ordering == cfg.body_ordering == preset["ordering"]


def test_presets_exist():
    assert {p.stem for p in PRESETS} >= {"from_physx", "from_mjwarp"}
