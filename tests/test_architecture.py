"""The floors of ``transfer`` (docs/architecture.md), checked on the source.

Every module under ``transfer/`` is parsed with :mod:`ast`; every import counts, wherever it sits (module level,
inside a function, under ``if TYPE_CHECKING``) and however it is spelt (``import``, ``from ... import``, relative,
``import_module("...")``). Two rules:

- the engines (ovphysx, ovstage, newton, mujoco) are imported only under ``transfer/backends/``, and pxr only there and in
  the robot wing ``transfer/robot/`` (its USD reader, the profile, the joint-chain rewrite);
- no module imports a ``transfer`` module of a higher floor. A module's floor is its folder's (:data:`FOLDERS`); a
  module directly under ``transfer/`` is floor 0. Modules on one floor may import each other.
  ``transfer/__init__.py`` is the package's face: it names every floor lazily and sits on none.

A new folder under ``transfer/`` must be given a floor here and in docs/architecture.md.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "transfer"
DOC = ROOT / "docs" / "architecture.md"

# The floors, bottom to top, by folder: a module's floor is the floor of the folder directly under ``transfer/`` that
# holds it. A module directly under ``transfer/`` (ordering, name_map, presets, errors, the underscore helpers) is a
# core value, floor 0: what needs more than floor 0 belongs in a folder.
FOLDERS: dict[str, int] = {
    "orders": 1,  # the conventions: an articulation graph in, an order out
    "robot": 1,  # the robot as read once: the Robot value, USD reading and its cache, the asset door, the profile
    "kernels": 2,
    "backends": 3,  # the only door to the engines
    "actuators": 3,
    "articulation": 4,
    "task": 5,
    "formats": 5,  # checkpoint formats, their metadata document and the Policy interface
    "env": 6,
    "traces": 6,
    "runs": 7,
    "cli": 8,
}
CORE = 0

FACE = "transfer"  # transfer/__init__.py: lazy exports from every floor, no floor of its own
ENGINES = frozenset({"ovphysx", "ovstage", "newton", "mujoco"})
ENGINE_HOMES = ("transfer.backends",)
PXR_HOMES = ("transfer.backends", "transfer.robot")
ADD_IT = "add the folder to FOLDERS in tests/test_architecture.py and to the floor table in docs/architecture.md"


@dataclass(frozen=True)
class Import:
    """One import in a module: the dotted name it reaches and the line it is on."""

    target: str
    line: int


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def floor_of(module: str, folders: dict[str, int] = FOLDERS, package: Path = PACKAGE) -> int | None:
    """The floor of ``module``: its folder's (:data:`FOLDERS`), :data:`CORE` for a module directly under
    ``transfer/``, ``None`` for a folder no row names. ``module`` may be a name inside a module
    (``transfer.ordering.dof_names``)."""
    parts = module.split(".")
    if parts[0] != FACE or len(parts) < 2:
        return None
    if parts[1] in folders:
        return folders[parts[1]]
    return CORE if (package / f"{parts[1]}.py").is_file() else None


def imports_of(source: str, module: str, *, is_package: bool = False) -> list[Import]:
    """Every import in ``source`` (the text of ``module``), at any depth, as absolute dotted names.

    ``from a.b import c`` gives ``a.b.c`` (``c`` may be a module or a name in ``a.b``; floors are by folder, so both
    resolve). Relative imports are made absolute against ``module``. ``import_module("x")``,
    ``importlib.import_module("x")`` and ``__import__("x")`` with a literal name count too.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{anchor}.{base}" if base else anchor
            found += [
                Import(base if alias.name == "*" else f"{base}.{alias.name}", node.lineno) for alias in node.names
            ]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            first = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                found.append(Import(first.value, node.lineno))
    return found


def engine_violations(module: str, imports: list[Import]) -> list[str]:
    """Imports of an engine (or pxr) from a module that is not allowed to reach it."""
    out = []
    for imp in imports:
        top = imp.target.split(".")[0]
        if top in ENGINES and not any(_within(module, home) for home in ENGINE_HOMES):
            out.append(f"{module}:{imp.line} imports {imp.target}; engines are reached only through transfer.backends")
        if top == "pxr" and not any(_within(module, home) for home in PXR_HOMES):
            out.append(
                f"{module}:{imp.line} imports {imp.target}; USD is read only by transfer.robot.usd and the backends"
            )
    return out


def floor_violations(
    module: str, imports: list[Import], folders: dict[str, int] = FOLDERS, exports: dict[str, str] | None = None
) -> list[str]:
    """Imports of a ``transfer`` module on a higher floor than ``module``'s.

    ``from transfer import name`` resolves through the package's lazy ``exports`` (``transfer._EXPORTS``) when
    ``name`` is one of them.
    """
    if module == FACE:
        return []
    own = floor_of(module, folders)
    if own is None:
        return [f"{module} has no floor; {ADD_IT}"]
    out = []
    for imp in imports:
        if not _within(imp.target, FACE) or imp.target == FACE:
            continue
        target = imp.target
        head, _, name = target.partition(".")[2].partition(".")
        if not name and exports and head in exports:
            target = exports[head]
        theirs = floor_of(target, folders)
        if theirs is not None and theirs > own:
            out.append(
                f"{module}:{imp.line} (floor {own}) imports {imp.target} (floor {theirs}); "
                "nothing imports from a floor above its own"
            )
    return out


def package_modules(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Every module under ``package``: dotted name -> (file, is a package ``__init__``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def lazy_exports(package: Path = PACKAGE) -> dict[str, str]:
    """``_EXPORTS`` of ``transfer/__init__.py``, read from the source (nothing is imported)."""
    for node in ast.parse((package / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


MODULES = package_modules()
EXPORTS = lazy_exports()


def _imports(module: str) -> list[Import]:
    path, is_package = MODULES[module]
    return imports_of(path.read_text(), module, is_package=is_package)


# --- the tree --------------------------------------------------------------------------------------------------------


def test_every_module_has_a_floor():
    missing = [m for m in MODULES if m != FACE and floor_of(m) is None]
    assert not missing, f"modules without a floor: {missing}; {ADD_IT}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_engines_only_in_backends(module):
    assert engine_violations(module, _imports(module)) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_from_a_higher_floor(module):
    assert floor_violations(module, _imports(module), exports=EXPORTS) == []


def test_lazy_exports_sit_on_floors():
    assert EXPORTS, "transfer/__init__.py defines no _EXPORTS"
    assert {name: mod for name, mod in EXPORTS.items() if floor_of(mod) is None} == {}


def test_doc_names_every_floor():
    text = DOC.read_text()
    written = sorted({m.split(".")[1] for m in MODULES if m != FACE and m.split(".")[1] in FOLDERS})
    unnamed = [f"transfer/{folder}/" for folder in written if f"`transfer/{folder}/" not in text]
    assert not unnamed, f"docs/architecture.md does not name {unnamed}"


# --- the checker itself, on synthetic sources ------------------------------------------------------------------------

SYNTHETIC = """
from __future__ import annotations
import json
from typing import TYPE_CHECKING
from transfer.ordering import dof_names
from transfer import kernels
if TYPE_CHECKING:
    from transfer.cli import main

def lazy():
    import newton
    from transfer.articulation.core import Articulation
    from ovphysx.types import TensorType

class Deep:
    def method(self):
        from importlib import import_module
        return import_module("transfer.env"), __import__("ovstage")

def exported():
    from transfer import open_articulation, __version__
"""


def test_checker_finds_imports_at_every_depth():
    targets = {imp.target for imp in imports_of(SYNTHETIC, "transfer.kernels.select")}
    assert {
        "json",
        "transfer.ordering.dof_names",
        "transfer.kernels",
        "transfer.cli.main",
        "newton",
        "transfer.articulation.core.Articulation",
        "ovphysx.types.TensorType",
        "transfer.env",
        "ovstage",
        "transfer.open_articulation",
    } <= targets


def test_checker_flags_higher_floors_and_engines():
    imports = imports_of(SYNTHETIC, "transfer.kernels.select")
    floors = floor_violations(
        "transfer.kernels.select", imports, exports={"open_articulation": "transfer.articulation"}
    )
    assert len(floors) == 4, floors
    for reached in ("transfer.cli.main", "transfer.articulation.core", "transfer.env", "transfer.open_articulation"):
        assert any(f"imports {reached}" in v for v in floors), (reached, floors)
    assert not any("ordering" in v or "imports transfer.kernels " in v or "__version__" in v for v in floors)
    engines = engine_violations("transfer.kernels.select", imports)
    assert sorted(v.split(" imports ")[1].split(";")[0] for v in engines) == [
        "newton",
        "ovphysx.types.TensorType",
        "ovstage",
    ]


def test_checker_allows_lower_and_same_floors():
    source = (
        "from transfer.kernels import checks\nfrom transfer.orders import read_topology\nimport transfer.ordering\n"
    )
    assert floor_violations("transfer.kernels.plan", imports_of(source, "transfer.kernels.plan")) == []
    source = "import newton\nfrom pxr import Usd\nfrom transfer.articulation import Articulation\n"
    assert (
        engine_violations("transfer.backends.newton.views", imports_of(source, "transfer.backends.newton.views")) == []
    )
    assert engine_violations("transfer.robot.usd", imports_of("from pxr import Usd\n", "transfer.robot.usd")) == []
    assert engine_violations("transfer.orders.graph", imports_of("from pxr import Usd\n", "transfer.orders.graph"))


def test_checker_resolves_relative_imports():
    imports = imports_of("from ..articulation import core\nfrom . import reorder\n", "transfer.kernels.select")
    assert [imp.target for imp in imports] == ["transfer.articulation.core", "transfer.kernels.reorder"]
    in_package = imports_of("from .reorder import x\n", "transfer.kernels", is_package=True)
    assert [imp.target for imp in in_package] == ["transfer.kernels.reorder.x"]
    assert len(floor_violations("transfer.kernels.select", imports)) == 1


def test_checker_refuses_a_module_without_a_floor():
    (message,) = floor_violations("transfer.brand_new", [])
    assert "transfer.brand_new has no floor" in message
    assert "tests/test_architecture.py" in message and "docs/architecture.md" in message


def test_floor_by_folder():
    folders = {"a": 1, "b": 3}
    assert floor_of("transfer.b.c.d", folders) == 3
    assert floor_of("transfer.a", folders) == 1
    assert floor_of("transfer.ordering.dof_names", folders) == CORE  # a module directly under transfer/
    assert floor_of("transfer.brand_new_folder.x", folders) is None
    assert floor_of("json", folders) is None
