"""MJCF and URDF robots through the official converters (issue 20, item 3), and mesh colliders on Newton (item 2).

- the files a robot references and the cache key, without converting (hypothesis: the key changes iff a byte of the
  robot file or of a file it references changes, wherever the files lie);
- the converter environment (its own mujoco 3.16 and usd-exchange beside this environment's mujoco 3.17 and
  usd-core), created once per session (``converters`` in conftest.py), its error when no package can be installed;
- the cache, ``transfer import`` and its bad inputs;
- differential: robots written here (tests/robotgen.py) and the MJCF/URDF robots Newton ships, converted: our
  emulated orders equal what ovphysx and Newton build from the same USD;
- mesh colliders on Newton (a USD robot written here with a convex-hull mesh collider) on both engines, and a
  missing scipy named with its install command in ``inspect --truth``, ``validate`` and ``replay``;
- the command line end to end on an MJCF walker: ``task``, ``train`` (its metadata records the source),
  ``replay`` on the other engine from that metadata or with ``--asset robot.xml``, ``convert``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.robotgen import mjcf_robot, urdf_robot, write_obj
from tests.test_bad_inputs import refused
from transfer.cli import main
from transfer.robot.assets import (
    AssetError,
    asset_source,
    convert_source,
    import_asset,
    locate_asset,
    resolve_asset,
)
from transfer.robot.assets.converters import CONVERTERS, ConverterSetupError, ensure_environment, environment_dir
from transfer.robot.assets.sources import content_key, file_sha256, references, source_format

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: object, env: dict[str, str] | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    """``transfer ARGS`` in a fresh interpreter (``code``: a script that runs ``main`` itself)."""
    command = [sys.executable, "-c", code, *map(str, args)] if code else [sys.executable, "-m", "transfer.cli"]
    if not code:
        command += list(map(str, args))
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)


# ------------------------------------------------------------------------------------------ sources and the key


def test_the_root_element_decides_the_format(tmp_path):
    assert source_format(mjcf_robot(tmp_path / "m")) == "mjcf"
    assert source_format(urdf_robot(tmp_path / "u")) == "urdf"
    as_xml = tmp_path / "robot.xml"
    as_xml.write_text((tmp_path / "u" / "urbot.urdf").read_text())
    assert source_format(as_xml) == "urdf"  # a URDF saved as .xml is read as URDF
    assert source_format(tmp_path / "robot.usda") is None  # any other suffix is USD: not even opened
    (tmp_path / "scene.xml").write_text("<scene/>")
    with pytest.raises(AssetError, match=r"scene.xml: the root element is <scene>.*<mujoco>.*<robot>"):
        source_format(tmp_path / "scene.xml")
    (tmp_path / "torn.urdf").write_text("<robot name='x'><link")
    with pytest.raises(AssetError, match="torn.urdf: not well-formed XML"):
        source_format(tmp_path / "torn.urdf")
    with pytest.raises(FileNotFoundError, match="absent.xml"):
        source_format(tmp_path / "absent.xml")


def test_references_follow_meshdir_package_and_includes(tmp_path):
    (mjcf,) = references(mjcf_robot(tmp_path / "m"))
    assert (mjcf.text, mjcf.element, mjcf.exists) == ("foot.obj", "mesh", True)
    assert mjcf.path == (tmp_path / "m" / "meshes" / "foot.obj").absolute()  # under <compiler meshdir="meshes">
    urdf = {r.text: r for r in references(urdf_robot(tmp_path / "u"))}
    assert set(urdf) == {"meshes/link.stl", "package://urbot_description/meshes/tool.stl"}
    assert all(r.exists for r in urdf.values())  # package:// found by walking up from the URDF's folder
    main_file = tmp_path / "i" / "robot.xml"
    write_obj(tmp_path / "i" / "assets" / "part.obj")
    (tmp_path / "i" / "parts.xml").write_text(
        '<mujoco><asset><mesh name="part" file="part.obj"/><mesh name="gone" file="gone.stl"/></asset></mujoco>'
    )
    main_file.write_text(
        '<mujoco model="r"><compiler assetdir="assets"/><include file="parts.xml"/><worldbody/></mujoco>'
    )
    refs = {r.text: r for r in references(main_file)}
    assert set(refs) == {"parts.xml", "part.obj", "gone.stl"}
    assert refs["part.obj"].exists and not refs["gone.stl"].exists  # listed anyway: the converter decides


def test_an_mjcf_is_parsed_once_while_it_and_its_includes_stay_unchanged(tmp_path, monkeypatch):
    """Every caller of one robot file (the asset door, the cache key, the conversion record) gets its format and its
    references from one parse; a changed byte in the file or in an included file is read again."""
    from transfer.robot.assets import sources

    parsed: list[Path] = []
    real = sources._parse
    monkeypatch.setattr(sources, "_parse", lambda path: parsed.append(Path(path).name) or real(path))
    monkeypatch.setattr(sources, "_RACY_NS", -1)  # files written just now count as settled (their stamps still differ)
    main_file, parts = tmp_path / "robot.xml", tmp_path / "parts.xml"
    parts.write_text('<mujoco><asset><mesh name="a" file="a.obj"/></asset></mujoco>')
    main_file.write_text('<mujoco model="r"><include file="parts.xml"/><worldbody/></mujoco>')
    for _ in range(3):
        assert source_format(main_file) == "mjcf"
        assert [r.text for r in references(main_file)] == ["parts.xml", "a.obj"]
        content_key(main_file, "mujoco-usd-converter 0.8.0")
    assert parsed == ["robot.xml", "robot.xml", "parts.xml"]  # the format once, the references once (two files)
    digest = file_sha256(main_file)
    parts.write_text('<mujoco><asset><mesh name="b" file="longer.obj"/></asset></mujoco>')
    assert [r.text for r in references(main_file)] == ["parts.xml", "longer.obj"]  # the include changed: read again
    main_file.write_text('<robot name="r"><link name="base"/></robot>')
    assert source_format(main_file) == "urdf"  # the file changed: read again
    assert file_sha256(main_file) != digest  # its hash too (one mechanism remembers both)
    main_file.write_text("<mujoco><worldbody>")
    for _ in range(2):  # a refusal is never remembered as an answer
        with pytest.raises(AssetError, match="not well-formed"):
            source_format(main_file)


MJCF_VARIANTS = [
    '<mujoco model="k"><asset><mesh name="m" file="m.obj"/></asset><worldbody/></mujoco>',
    '<mujoco model="k"><asset><mesh name="m" file="m.obj"/></asset><worldbody/></mujoco>\n',
    '<mujoco model="k2"><asset><mesh name="m" file="m.obj"/></asset><worldbody/></mujoco>',
]
MESHES = [b"v 0 0 0\n", b"v 0 0 1\n", b""]


@given(
    a=st.tuples(st.sampled_from(range(3)), st.sampled_from(range(3))),
    b=st.tuples(st.sampled_from(range(3)), st.sampled_from(range(3))),
    clutter=st.binary(max_size=16),
    version=st.sampled_from(["mujoco-usd-converter 0.8.0", "mujoco-usd-converter 0.8.1"]),
)
def test_the_key_changes_iff_the_content_does(a, b, clutter, version):
    """Two robots (an MJCF file and the mesh it names) in two folders: equal keys exactly when both files are equal
    byte for byte and the converter is the same; a file the robot does not name changes nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        keys = []
        for name, (xml, mesh), extra in (("a", a, None), ("b", b, clutter)):
            folder = Path(tmp) / name
            folder.mkdir()
            (folder / "robot.xml").write_text(MJCF_VARIANTS[xml])
            (folder / "m.obj").write_bytes(MESHES[mesh])
            if extra is not None:
                (folder / "notes.obj").write_bytes(extra)
            keys.append(content_key(folder / "robot.xml", CONVERTERS["mjcf"].label if name == "a" else version))
    same_converter = version == CONVERTERS["mjcf"].label
    assert (keys[0] == keys[1]) == (a == b and same_converter)


def test_a_missing_mesh_has_its_own_key(tmp_path):
    robot = mjcf_robot(tmp_path)
    with_mesh = content_key(robot, "c 1")
    (tmp_path / "meshes" / "foot.obj").unlink()
    without = content_key(robot, "c 1")
    (tmp_path / "meshes" / "foot.obj").write_bytes(b"")
    empty = content_key(robot, "c 1")
    assert len({with_mesh, without, empty}) == 3


# ----------------------------------------------------------------------------------------- the converter environment


def test_a_converter_failure_is_told_by_its_reason_not_its_traceback():
    from transfer.robot.assets.converters import _failure

    traceback = """Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/urdf_usd_converter/_impl/urdf_parser/parser.py", line 83, in parse
    raise RuntimeError(f"Error parsing XML: {e}")
RuntimeError: Error parsing XML: robot: name is required (line: 1)
"""
    assert _failure(traceback) == "RuntimeError: Error parsing XML: robot: name is required (line: 1)"
    usd = "Error in 'pxrInternal::Foo' at line 12 in file bar.cpp : 'Python runtime error: the mesh is empty'\n"
    assert _failure(usd) == "the mesh is empty"
    assert _failure("") == "no output"


def test_the_environment_keeps_its_own_mujoco_and_usd(converters):
    """The two conflicts: the converters' mujoco 3.16 and usd-exchange live in their environment; this one keeps
    Newton's mujoco 3.17 and usd-core, and no usd-exchange."""
    versions = ensure_environment()
    assert {name: versions[c.package] for name, c in CONVERTERS.items()} == {
        name: c.version for name, c in CONVERTERS.items()
    }
    assert versions["mujoco"].startswith("3.16.") and versions["usd-exchange"]
    if importlib_has("newton"):
        assert version("mujoco").startswith("3.17.")
    assert version("usd-core")
    with pytest.raises(PackageNotFoundError):
        version("usd-exchange")
    assert environment_dir().parent == converters
    assert (environment_dir() / "venv" / ".transfer-ready").is_file()


def test_an_environment_made_by_hand_is_taken_as_it_is(converters):
    """No stamp (pip run by hand at that place): it answers with the pinned versions, so it is used, not rebuilt."""
    import io

    stamp = environment_dir() / "venv" / ".transfer-ready"
    stamp.unlink()
    said = io.StringIO()
    assert ensure_environment(stream=said)["mujoco-usd-converter"] == "0.8.0"
    assert said.getvalue() == "" and stamp.is_file()


def importlib_has(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_no_package_index_is_one_error_with_the_commands(tmp_path, monkeypatch):
    """pip finding nothing (as on a machine without network): ConverterSetupError names the packages, what pip
    said, and the commands that create the environment by hand; the half-made environment is removed."""
    monkeypatch.setenv("TRANSFER_CONVERTERS", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    with pytest.raises(ConverterSetupError) as error:
        ensure_environment(stream=open(os.devnull, "w"))  # noqa: SIM115
    text = str(error.value)
    assert "mujoco-usd-converter" in text and "urdf-usd-converter" in text
    assert "No matching distribution" in text or "Could not find a version" in text
    assert f"-m venv {environment_dir() / 'venv'}" in text and "pip install mujoco-usd-converter==0.8.0" in text
    assert not (environment_dir() / "venv").exists()


# ------------------------------------------------------------------------------------------------------- the cache


def test_converted_once_then_from_the_cache_by_content(converters, tmp_path):
    robot = urdf_robot(tmp_path / "a")
    nonce = f"<!-- {uuid.uuid4()} -->"  # content no earlier session converted (the cache outlives sessions)
    robot.write_text(robot.read_text().replace("<robot ", f"{nonce}\n<robot ", 1))
    first = convert_source(robot, stream=open(os.devnull, "w"))  # noqa: SIM115
    start = time.perf_counter()
    again = convert_source(robot)
    assert again.cached and again.usd == first.usd and time.perf_counter() - start < 1.0
    copy = shutil.copytree(tmp_path / "a", tmp_path / "elsewhere")
    assert convert_source(Path(copy) / "urbot.urdf").usd == first.usd  # the same bytes, wherever they lie
    record = first.record
    assert record["sha256"] == file_sha256(robot) and record["converter"] == "urdf-usd-converter"
    assert set(record["references"]) == {"meshes/link.stl", "package://urbot_description/meshes/tool.stl"}
    (tmp_path / "a" / "meshes" / "tool.stl").write_text(
        (tmp_path / "a" / "meshes" / "tool.stl").read_text().replace("0.05", "0.06")
    )
    changed = convert_source(robot, stream=open(os.devnull, "w"))  # noqa: SIM115
    assert not changed.cached and changed.usd != first.usd and first.usd.is_file()


def test_two_processes_converting_one_robot_leave_one_entry(converters, tmp_path):
    robot = mjcf_robot(tmp_path, name="twice")
    code = "import sys; from transfer.robot.assets import convert_source; print(convert_source(sys.argv[1]).usd)"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(robot)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    (usd,) = {o[0].decode().strip().splitlines()[-1] for o in outs}
    assert Path(usd).is_file()
    key = content_key(robot, CONVERTERS["mjcf"].label)
    assert [p.name for p in (environment_dir() / "cache").iterdir() if p.name.startswith(f".{key[:16]}")] == []


def test_asset_source_is_what_metadata_records(tmp_path):
    robot = mjcf_robot(tmp_path)
    source = asset_source(robot)
    assert source == {
        "file": str(robot.resolve()),
        "format": "mjcf",
        "sha256": file_sha256(robot),
        "references_sha256": source["references_sha256"],
        "converter": "mujoco-usd-converter",
        "converter_version": "0.8.0",
    }
    assert len(source["references_sha256"]) == 64
    assert asset_source(tmp_path / "robot.usda") is None and asset_source(None) is None


# ----------------------------------------------------------------------------------------------- transfer import


def test_import_writes_usd_keeps_it_and_says_what_it_did(converters, tmp_path, capsys):
    robot = mjcf_robot(tmp_path)
    out = tmp_path / "robot.usd"
    assert main(["import", str(robot), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}" in said and "mujoco-usd-converter 0.8.0" in said and "foot.obj" in said
    assert out.read_bytes()[:8] == b"PXR-USDC"  # .usd: the converter's binary layer as it is
    before = out.read_bytes()
    err = refused(capsys, "import", robot, "-o", out)
    assert "exists" in err and "--force" in err and out.read_bytes() == before
    text = tmp_path / "robot.usda"
    assert main(["import", str(robot), "-o", str(text), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cached"] is True and summary["converter_version"] == "0.8.0"
    assert text.read_text().startswith("#usda 1.0") and 'def Mesh "foot"' in text.read_text()
    old = os.umask(0o022)
    try:
        assert main(["import", str(robot), "-o", str(out), "--force"]) == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644  # the umask's mode, not mkstemp's 0600


def test_import_bad_inputs(converters, tmp_path, capsys):
    robot = mjcf_robot(tmp_path)
    err = refused(capsys, "import", robot, "-o", tmp_path / "robot.obj")
    assert "-o" in err and ".usd, .usda, .usdc" in err
    usd = tmp_path / "already.usda"
    usd.write_text("#usda 1.0\n")
    assert "a USD file needs no import" in refused(capsys, "import", usd, "-o", tmp_path / "x.usd")
    assert "file not found" in refused(capsys, "import", tmp_path / "absent.urdf", "-o", tmp_path / "x.usd")
    (tmp_path / "meshes" / "foot.obj").unlink()
    err = refused(capsys, "import", robot, "-o", tmp_path / "x.usd")
    assert "mujoco-usd-converter 0.8.0 could not convert" in err and "foot.obj" in err and "do not exist" in err
    assert not (tmp_path / "x.usd").exists()


def test_every_command_takes_the_robot_file_and_refuses_a_bad_one(tmp_path, capsys):
    bad = tmp_path / "robot.xml"
    bad.write_text("<sdf version='1.9'/>")
    policy = ROOT / "checkpoints/ant_flat_physx/exported/policy.pt"
    for args in (
        ["inspect", bad],
        ["validate", bad],
        ["task", bad, "-o", tmp_path / "t.yaml"],
        ["replay", policy, "--target", "physx", "--asset", bad],
    ):
        err = refused(capsys, *args)
        assert "robot.xml: the root element is <sdf>" in err, (args, err)
    err = refused(capsys, "inspect", "newton:no_such_robot.urdf")
    assert "no_such_robot.urdf" in err and "available" in err


# ------------------------------------------------------------------------------- differential: both real engines

GENERATED = {
    "mjcf_floating": lambda d: mjcf_robot(d, floating=True),
    "mjcf_fixed": lambda d: mjcf_robot(d, floating=False),
    "urdf_floating": lambda d: urdf_robot(d, floating=True),
    "urdf_fixed": lambda d: urdf_robot(d, floating=False),
}
SHIPPED = ["newton:nv_ant.xml", "newton:nv_humanoid.xml", "newton:quadruped.urdf", "newton:cartpole.urdf"]


def _robot(name: str, folder: Path) -> Path:
    if name in GENERATED:
        return GENERATED[name](folder)
    pytest.importorskip("newton")
    return locate_asset(name)


@pytest.mark.engines
@pytest.mark.parametrize("name", [*GENERATED, *SHIPPED])
@pytest.mark.usefixtures("converters")
def test_converted_orders_equal_both_engines(name, tmp_path):
    """Convert, then ask ovphysx and Newton: every articulation's joints, bodies and base equal our emulation of
    that engine's convention on the same USD."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    import warnings

    from transfer.backends import engine_orders
    from transfer.orders import resolve_ordering

    usd = resolve_asset(_robot(name, tmp_path))
    seen = {}
    for backend, convention in (("physx", "physx"), ("newton", "mjwarp")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engines = engine_orders(backend, usd)
        assert engines, f"{backend} built no articulation from {name}"
        for engine in engines:
            emulated = resolve_ordering(usd, convention, root=engine.root)
            assert (emulated.joints, emulated.bodies, emulated.fixed_base) == (
                engine.joints,
                engine.bodies,
                engine.fixed_base,
            ), (name, backend)
        seen[backend] = engines[0]
    if name in GENERATED:  # branched: breadth-first and depth-first orders differ, so the test can tell them apart
        assert seen["physx"].joints != seen["newton"].joints


@pytest.mark.engines
@pytest.mark.usefixtures("converters")
def test_what_the_generated_robots_exercise(tmp_path):
    """The ball joint, the two-joint body, the fixed links and the mesh colliders reach both engines: the two-joint
    body is a chain (transfer/robot/assets/chains.py), so both engines have both joints by their MJCF names, through the
    frame ``left_thigh_left_hip_x_frame``."""
    pytest.importorskip("pxr")
    from pxr import Usd, UsdPhysics

    from transfer.orders import resolve_ordering

    usd = resolve_asset(mjcf_robot(tmp_path / "m"))
    physx, mjwarp = resolve_ordering(usd, "physx"), resolve_ordering(usd, "mjwarp")
    assert {"neck:0", "neck:1", "neck:2"} <= set(physx.joints) & set(mjwarp.joints)
    assert {"left_hip_x", "left_hip_y"} <= set(physx.joints) & set(mjwarp.joints)
    assert sorted(physx.joints) == sorted(mjwarp.joints)
    assert "left_thigh_left_hip_x_frame" in set(physx.bodies) & set(mjwarp.bodies)
    assert {"left_foot", "right_foot"} <= set(physx.bodies) & set(mjwarp.bodies)  # welded links stay bodies
    for robot in (usd, resolve_asset(urdf_robot(tmp_path / "u"))):
        stage = Usd.Stage.Open(str(robot))
        meshes = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.MeshCollisionAPI)]
        assert meshes and all(
            UsdPhysics.MeshCollisionAPI(p).GetApproximationAttr().Get() == "convexHull" for p in meshes
        )


# ------------------------------------------------------------------------------------ mesh colliders on Newton

BLOCK_SCIPY = """
import sys, importlib.abc
class NoScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoScipy())
from transfer.cli import main
sys.exit(main(sys.argv[1:]))
"""
"""``transfer ARGS`` as on a machine without scipy (its import fails as a missing package's does)."""


def _mesh_robot(path: Path) -> Path:
    """A USD robot: a floating base box and a link on a revolute joint whose collider is a box mesh with
    ``physics:approximation = "convexHull"`` (what the converters author for meshes)."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    from tests.robotgen import BOX, BOX_FACES

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    UsdGeom.Xform.Define(stage, "/robot")
    for name, z in (("base", 0.5), ("link", 0.3)):
        body = UsdGeom.Xform.Define(stage, f"/robot/{name}")
        body.AddTranslateOp().Set(Gf.Vec3d(0, 0, z))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateMassAttr(1.0)
    cube = UsdGeom.Cube.Define(stage, "/robot/base/box")
    cube.CreateSizeAttr(0.2)
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    mesh = UsdGeom.Mesh.Define(stage, "/robot/link/hull")
    mesh.CreatePointsAttr([Gf.Vec3f(0.05 * x, 0.05 * y, 0.1 * z) for x, y, z in BOX])
    mesh.CreateFaceVertexCountsAttr([3] * len(BOX_FACES))
    mesh.CreateFaceVertexIndicesAttr([i for face in BOX_FACES for i in face])
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/robot/base/hinge")
    joint.CreateAxisAttr("Y")
    joint.CreateBody0Rel().SetTargets(["/robot/base"])
    joint.CreateBody1Rel().SetTargets(["/robot/link"])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, -0.2))
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/robot/base"))
    stage.Save()
    return path


@pytest.fixture(scope="module")
def mesh_robot(tmp_path_factory) -> Path:
    pytest.importorskip("pxr")
    return _mesh_robot(tmp_path_factory.mktemp("mesh") / "mesh_robot.usda")


@pytest.mark.engines
def test_a_mesh_collider_imports_on_both_engines(mesh_robot):
    """Newton builds the convex hull (scipy, from transfer[newton]) and both engines answer with our orders."""
    pytest.importorskip("ovphysx")
    newton = pytest.importorskip("newton")
    import warnings

    from transfer.backends import engine_orders
    from transfer.backends.newton.importer import add_usd
    from transfer.orders import resolve_ordering

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = newton.ModelBuilder()
        add_usd(builder, str(mesh_robot))
        model = builder.finalize(device="cpu")
        assert int(newton.GeoType.CONVEX_MESH) in set(model.shape_type.numpy().tolist())
        for backend, convention in (("physx", "physx"), ("newton", "mjwarp")):
            (engine,) = engine_orders(backend, mesh_robot)
            assert engine.joints == resolve_ordering(mesh_robot, convention).joints == ("hinge",)


@pytest.mark.engines
@pytest.mark.parametrize("command", [["inspect", "{asset}", "--truth"], ["validate", "{asset}", "--backend", "newton"]])
def test_without_scipy_newton_names_the_package_and_the_install_command(mesh_robot, command):
    pytest.importorskip("newton")
    result = cli(*(str(a).replace("{asset}", str(mesh_robot)) for a in command), code=BLOCK_SCIPY)
    assert result.returncode == 2, (result.stdout[-2000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr
    error = result.stderr[result.stderr.index("error: ") :].strip()
    assert "'scipy'" in error and "pip install 'transfer[newton]'" in error and "mesh_robot.usda" in error
    assert len(error.splitlines()) == 1


# --------------------------------------------------------------------------- the command line, end to end


@pytest.fixture(scope="module")
def walker_run(tmp_path_factory, converters) -> dict[str, Path]:
    """An MJCF walker (hinges only, mesh feet), its task from `transfer task`, and one PPO iteration on Newton."""
    pytest.importorskip("newton")
    pytest.importorskip("rsl_rl")
    folder = tmp_path_factory.mktemp("walker")
    robot = mjcf_robot(folder, name="walker", walker=True)
    task = folder / "walker.yaml"
    result = cli("task", robot, "-o", task)
    assert result.returncode == 0, result.stderr[-2000:]
    text = task.read_text()
    assert "\nasset: walker.xml\n" in text  # the task names the robot file given, not the converted USD
    text = text.replace("\nconvention: null", "\nconvention: mjwarp").replace(
        "\nstiffness: {}", '\nstiffness: {".*": 20.0}'
    )
    task.write_text(text.replace("\ndamping: {}", '\ndamping: {".*": 1.0}'))
    run = folder / "run"
    result = cli("train", "--task", task, "--backend", "newton", "-o", run, "--iterations", "1", "--num-envs", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    return {"robot": robot, "task": task, "policy": run / "exported" / "policy.pt", "folder": folder}


@pytest.mark.engines
def test_train_metadata_records_the_source_the_hash_and_the_converter(walker_run):
    from transfer.formats import read_metadata

    meta = read_metadata(walker_run["policy"])
    robot = walker_run["robot"]
    assert meta["asset"] == str(robot.resolve()) and meta["trained_on"] == "newton"
    assert meta["asset_source"]["file"] == str(robot.resolve())
    assert meta["asset_source"]["sha256"] == file_sha256(robot)
    assert (meta["asset_source"]["converter"], meta["asset_source"]["converter_version"]) == (
        "mujoco-usd-converter",
        "0.8.0",
    )
    assert list(meta)[list(meta).index("asset") + 1] == "asset_source"
    info = cli("info", walker_run["policy"])
    assert info.returncode == 0 and "mjcf, sha256 " in info.stdout, info.stdout
    assert "converted by mujoco-usd-converter 0.8.0" in info.stdout


@pytest.mark.usefixtures("converters")
def test_a_task_for_a_shipped_robot_names_its_token(tmp_path, capsys):
    pytest.importorskip("newton")
    out = tmp_path / "cartpole.yaml"
    assert main(["task", "newton:cartpole.urdf", "-o", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "\nasset: newton:cartpole.urdf\n" in text and "\nname: cartpole_flat_velocity\n" in text


@pytest.mark.engines
@pytest.mark.parametrize("how", ["metadata", "--asset"])
def test_replay_on_physx_from_the_mjcf_file(walker_run, how):
    pytest.importorskip("ovphysx")
    extra = ["--asset", walker_run["robot"]] if how == "--asset" else []
    result = cli("replay", walker_run["policy"], "--target", "physx", "--seconds", "1.5", "--json", *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads(result.stdout)
    assert run["asset"] == str(walker_run["robot"] if how == "--asset" else walker_run["robot"].resolve())
    assert (run["target"], run["source"], run["reordered"], run["nonfinite_envs"]) == ("physx", "mjwarp", True, 0)
    assert run["warnings"] == []  # the robot file is the one the checkpoint recorded


@pytest.mark.usefixtures("converters")
def test_a_robot_changed_since_the_checkpoint_is_named_before_the_run(walker_run, tmp_path):
    """The checkpoint records the MJCF's sha256 (and its meshes'): a copy that differs by one comment is used, with a
    warning that says what changed; an identical copy elsewhere is not warned about."""
    from transfer.runs.inputs import resolve_inputs

    shutil.copytree(walker_run["folder"] / "meshes", tmp_path / "meshes")
    same = tmp_path / "walker.xml"
    shutil.copy(walker_run["robot"], same)
    assert resolve_inputs(walker_run["policy"], asset=same).warnings == ()
    edited = tmp_path / "edited.xml"
    edited.write_text(walker_run["robot"].read_text() + "<!-- a changed robot -->\n")
    (warning,) = resolve_inputs(walker_run["policy"], asset=edited).warnings
    assert "edited.xml's bytes changed" in warning and "the files it references" not in warning
    assert str(walker_run["robot"].resolve()) in warning and "replay with that file" in warning
    (tmp_path / "meshes" / "foot.obj").write_text((tmp_path / "meshes" / "foot.obj").read_text() + "\n")
    (warning,) = resolve_inputs(walker_run["policy"], asset=same).warnings
    assert "the files it references changed" in warning and "bytes" not in warning


@pytest.mark.engines
def test_replay_without_scipy_names_it(walker_run):
    """The walker's feet are mesh colliders: on Newton without scipy, replay ends in one line naming it."""
    result = cli("replay", walker_run["policy"], "--target", "newton", "--seconds", "0.5", code=BLOCK_SCIPY)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "'scipy'" in result.stderr and "pip install 'transfer[newton]'" in result.stderr


@pytest.mark.engines
def test_convert_keeps_the_source_in_its_metadata(walker_run):
    from transfer.formats import read_metadata

    out = walker_run["folder"] / "physx_order.pt"
    result = cli("convert", walker_run["policy"], "--to", "physx", "-o", out)
    assert result.returncode == 0, result.stderr[-3000:]
    meta = read_metadata(out)
    assert meta["convention"] == "physx" and meta["asset_source"]["sha256"] == file_sha256(walker_run["robot"])
    assert meta["history"][-1]["convert"] == "mjwarp -> physx"


def test_import_asset_refuses_before_converting(tmp_path):
    robot = mjcf_robot(tmp_path)
    taken = tmp_path / "taken.usd"
    taken.write_text("mine")
    with pytest.raises(AssetError, match="exists; pass --force"):
        import_asset(robot, taken)
    with pytest.raises(AssetError, match="suffix says the format"):
        import_asset(robot, tmp_path / "robot.fbx")
    assert taken.read_text() == "mine"


@pytest.mark.usefixtures("converters")
def test_inspect_says_when_physx_holds_a_floating_articulation_to_the_world(tmp_path, capsys):
    """The converters anchor a robot without a free joint with a fixed joint from the world: PhysX keeps it out of a
    floating articulation as a constraint, Newton makes it the root. inspect says so, not just "floating"."""
    for floating in (False, True):
        robot = mjcf_robot(tmp_path / str(floating), floating=floating, walker=True)
        assert main(["inspect", str(robot), "--json"]) == 0
        (art,) = json.loads(capsys.readouterr().out)["articulations"]
        assert (art["fixed_base"], art["held_by_world"]) == (False, not floating)
    assert main(["inspect", str(robot.parent.parent / "False" / robot.name)]) == 0
    assert "floating articulation held to the world by a fixed joint" in capsys.readouterr().out


def _robot_with_its_tool_in_another_package(tmp_path: Path) -> tuple[Path, Path]:
    """The generated URDF with ``package://urbot_description/meshes/tool.stl`` moved into a ROS workspace elsewhere
    (``ws/src/urbot_description`` with a ``package.xml``), where walking up from the URDF does not find it."""
    robot = urdf_robot(tmp_path / "robot")
    package = tmp_path / "ws" / "src" / "urbot_description"
    (package / "meshes").mkdir(parents=True)
    (package / "package.xml").write_text("<package><name>urbot_description</name></package>\n")
    shutil.move(robot.parent / "meshes" / "tool.stl", package / "meshes" / "tool.stl")
    return robot, package


def test_ros_package_path_finds_a_package_the_urdf_folder_does_not_hold(tmp_path, monkeypatch):
    from transfer.robot.assets.sources import ros_packages

    robot, package = _robot_with_its_tool_in_another_package(tmp_path)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    (tool,) = [r for r in references(robot) if r.text.startswith("package://")]
    assert not tool.path.is_file() and ros_packages(robot) == {}
    before = content_key(robot, "urdf-usd-converter 0.3.4")
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path / 'nowhere'}:{tmp_path / 'ws'}")
    (tool,) = [r for r in references(robot) if r.text.startswith("package://")]
    assert tool.path == package.resolve() / "meshes" / "tool.stl" and tool.path.is_file()
    assert ros_packages(robot) == {"urbot_description": package.resolve()}
    assert content_key(robot, "urdf-usd-converter 0.3.4") != before  # the mesh's bytes are in the key now


@pytest.mark.usefixtures("converters")
def test_a_urdf_converts_with_its_package_on_ros_package_path(tmp_path, monkeypatch):
    pytest.importorskip("pxr")
    from pxr import Usd, UsdGeom

    robot, _ = _robot_with_its_tool_in_another_package(tmp_path)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ws" / "src"))
    usd = convert_source(robot).usd
    stage = Usd.Stage.Open(str(usd))
    meshes = [p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh) and "tool" in str(p.GetPath())]
    assert meshes and all(len(UsdGeom.Mesh(m).GetPointsAttr().Get() or []) > 0 for m in meshes)


@pytest.mark.usefixtures("converters")
def test_a_urdf_mesh_that_is_not_found_is_refused_not_left_out(tmp_path, monkeypatch, capsys):
    """urdf-usd-converter converts a URDF whose mesh it cannot find, without that mesh: refused instead, naming the
    reference, where it was looked for and ROS_PACKAGE_PATH."""
    robot, _ = _robot_with_its_tool_in_another_package(tmp_path)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    err = refused(capsys, "import", robot, "-o", tmp_path / "robot.usd")
    assert "package://urbot_description/meshes/tool.stl" in err and "ROS_PACKAGE_PATH" in err
    assert not (tmp_path / "robot.usd").exists()


def _with_visual_shell(robot: Path, how: str) -> Path:
    """The generated MJCF with a visual-only mesh on the base whose file its folder does not ship (a Go2's base
    visual): by attributes (``contype``/``conaffinity`` 0) or by a default class, as MuJoCo Menagerie writes it."""
    text = robot.read_text()
    geom = (
        '<geom type="mesh" mesh="shell" contype="0" conaffinity="0" group="2"/>'
        if how == "attributes"
        else '<geom class="visual" type="mesh" mesh="shell"/>'
    )
    text = text.replace(
        '<mesh name="foot" file="foot.obj"/>',
        '<mesh name="foot" file="foot.obj"/>\n    <mesh name="shell" file="base_shell.obj"/>',
    )
    text = text.replace(
        '<geom type="box" size="0.2 0.1 0.05" mass="4"/>', f'<geom type="box" size="0.2 0.1 0.05" mass="4"/>{geom}'
    )
    text = text.replace(
        "<asset>",
        '<default><default class="visual"><geom contype="0" conaffinity="0" group="2"/></default></default>\n  <asset>',
    )
    robot.write_text(text)
    return robot


@pytest.mark.parametrize("how", ["attributes", "class"])
def test_a_missing_visual_mesh_is_left_out_with_a_warning(converters, tmp_path, capsys, how):
    robot = _with_visual_shell(mjcf_robot(tmp_path / how, walker=True), how)
    refs = {r.text: r for r in references(robot)}
    assert refs["base_shell.obj"].visual_only and not refs["base_shell.obj"].exists
    assert not refs["foot.obj"].visual_only  # the feet collide
    conversion = convert_source(robot)
    assert conversion.record["left_out_visuals"] == ["base_shell.obj"]
    assert "only visual geometry uses them: left out" in capsys.readouterr().err
    from transfer.orders import resolve_ordering
    from transfer.robot.assets import conversion_warnings

    assert "base_shell.obj" in conversion_warnings(robot)[0]
    assert len(resolve_ordering(conversion.usd, "physx").joints) == 8  # the robot is whole
    (tmp_path / how / "meshes" / "foot.obj").unlink()  # a collision mesh missing is still refused, named
    err = refused(capsys, "import", robot, "-o", tmp_path / "x.usd")
    assert "foot.obj" in err and "do not exist" in err and not (tmp_path / "x.usd").exists()


def test_a_missing_urdf_visual_mesh_is_left_out_and_a_collision_one_refused(converters, tmp_path, capsys):
    robot = urdf_robot(tmp_path)
    text = robot.read_text().replace(
        '<collision><geometry><box size="0.3 0.2 0.1"/></geometry></collision>',
        '<collision><geometry><box size="0.3 0.2 0.1"/></geometry></collision>\n'
        '    <visual><geometry><mesh filename="meshes/base_visual.dae"/></geometry></visual>',
    )
    robot.write_text(text)
    refs = {r.text: r for r in references(robot)}
    assert refs["meshes/base_visual.dae"].visual_only and not refs["meshes/link.stl"].visual_only
    assert convert_source(robot).record["left_out_visuals"] == ["meshes/base_visual.dae"]
    (tmp_path / "meshes" / "link.stl").unlink()
    err = refused(capsys, "import", robot, "-o", tmp_path / "x.usd")
    assert "link.stl" in err and "would leave them out" in err


@pytest.mark.parametrize(
    ("filename", "match"),
    [
        ("http://example.com/link.stl", "is a URL; transfer fetches nothing"),
        ("file:///etc/passwd", "outside the robot's folder"),
        ("package://urbot/../../../etc/link.stl", "climbs out of its package"),
        ("meshes/fifo.stl", "not a regular file (a folder, a FIFO or a device); name the mesh file itself"),
        ("../../../../../../../../../../etc/passwd", "outside the robot's folder"),
    ],
)
def test_a_reference_no_converter_should_follow_is_refused(tmp_path, capsys, filename, match):
    """Issue 31: a URDF mesh named by a URL, an absolute path outside the robot or a package escape was dropped with
    exit 0; a FIFO blocked the converter. Refused before any converter runs, naming the element."""
    robot = urdf_robot(tmp_path)
    os.mkfifo(tmp_path / "meshes" / "fifo.stl")
    robot.write_text(robot.read_text().replace('filename="meshes/link.stl"', f'filename="{filename}"'))
    err = refused(capsys, "import", robot, "-o", tmp_path / "x.usd")
    assert match in err and "<mesh>" in err and not (tmp_path / "x.usd").exists()


def test_a_conversion_stopped_by_a_signal_leaves_no_scratch_folder_behind(converters, tmp_path):
    """SIGTERM during ``import`` left an empty ``.<key>-XXXX/`` in the cache (the process ended before its own
    clean-up); the next conversion removes the scratch folders of processes that are gone, not of live ones."""
    from transfer.robot.assets import _cache_dir, convert_source

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    abandoned = cache / f".0123456789abcdef-{int(gone.stdout)}-x1y2"
    live = cache / f".0123456789abcdef-{os.getpid()}-x1y2"
    for folder in (abandoned, live):
        folder.mkdir()
    try:
        convert_source(mjcf_robot(tmp_path, name="scratched"))
        assert not abandoned.exists() and live.exists()
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(abandoned, ignore_errors=True)


def test_a_collision_mesh_the_converter_cannot_read_is_refused_not_left_out(converters, tmp_path, capsys):
    """urdf-usd-converter said "Failed to convert mesh: ...link.stl: File too large" and succeeded: ``import`` wrote
    the robot without that link's collision shape, exit 0 (the MJCF converter refuses such a mesh itself)."""
    robot = urdf_robot(tmp_path)
    (tmp_path / "meshes" / "link.stl").write_bytes(b"\0" * 80 + (10**9).to_bytes(4, "little") + b"\1" * 200)
    err = refused(capsys, "import", robot, "-o", tmp_path / "x.usd")
    assert "could not read the mesh meshes/link.stl (" in err and "without its collision shape" in err, err
    assert not (tmp_path / "x.usd").exists()


def test_a_mesh_link_out_of_the_robot_is_refused_and_a_sibling_meshes_folder_is_not(tmp_path, capsys):
    """A mesh that is a link to a file outside the robot (``meshes/evil.stl -> /etc/passwd``) was opened and fed to
    the converter (exit 0); ``urdf/robot.urdf`` naming ``../meshes/link.stl`` (ROS packages' and legged_gym's
    layout) is the robot's own and passes the check."""
    from transfer.robot.assets.sources import check_reference, references

    robot = urdf_robot(tmp_path)
    (tmp_path / "meshes" / "evil.stl").symlink_to("/etc/passwd")
    robot.write_text(robot.read_text().replace('filename="meshes/link.stl"', 'filename="meshes/evil.stl"'))
    err = refused(capsys, "import", robot, "-o", tmp_path / "x.usd")
    assert "outside the robot's folder" in err and "/etc/passwd" in err and not (tmp_path / "x.usd").exists()
    (tmp_path / "urdf").mkdir()
    sibling = tmp_path / "urdf" / "robot.urdf"
    sibling.write_text(robot.read_text().replace('filename="meshes/evil.stl"', 'filename="../meshes/link.stl"'))
    (ref,) = [r for r in references(sibling) if r.text == "../meshes/link.stl"]
    check_reference(sibling, ref)  # no refusal


def test_a_huge_or_special_robot_file_is_refused_before_it_is_parsed(tmp_path, capsys):
    from transfer.robot.assets import sources

    huge = tmp_path / "huge.xml"
    with open(huge, "wb") as fh:  # sparse: the size is what is refused, before a byte is read
        fh.truncate(sources.MAX_ROBOT_FILE + 1)
    assert "more than the 64 MB a robot file is read up to" in refused(capsys, "import", huge, "-o", tmp_path / "x.usd")
    fifo = tmp_path / "pipe.urdf"
    os.mkfifo(fifo)
    assert "not a regular file" in refused(capsys, "import", fifo, "-o", tmp_path / "y.usd")
