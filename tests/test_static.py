"""Static checks over ``transfer/`` (docs/architecture.md): the shape the second architecture pass holds the code to.

- no import cycle between ``transfer`` modules (imports under ``if TYPE_CHECKING`` aside; a name imported from a
  package resolves to the module its ``__init__`` re-exports it from);
- no underscore name imported from another package of ``transfer/runs/`` (what one run shares with another is
  public, or moves down to the input layer);
- no backend's name (``"physx"``, ``"newton"``: every name in the registry), as a string or in a tuple, list, set,
  dict, ``Literal``, comparison, default or argument, in any module above ``transfer/backends/``: what differs
  between engines is said behind the registry (each backend's entry, its settings module, the scene description,
  the backend contract). Only reading another project's document by its own words is allowed: a key looked up
  (``sim["physx"]``, ``sim.get("physx")``) or a word searched for in its text (``"physx" in class_name``);
  docstrings are prose;
- no function longer than :data:`MAX_FUNCTION_LINES` lines, no module longer than :data:`MAX_MODULE_LINES`;
- ``ArticulationData`` reads its articulation only through the :class:`StateFeed` contract: no underscore attribute
  of another object (``art._backend``) in ``articulation/data.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from transfer.backends import backend_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "transfer"
MAX_FUNCTION_LINES = 80
BACKEND_NAMES = frozenset(backend_names())
BELOW_THE_ENGINES = (  # floors 0-3 (docs/architecture.md): the registry and what it stands on
    "transfer.ordering",
    "transfer._arrays",
    "transfer._rotations",
    "transfer.name_map",
    "transfer._console",
    "transfer.errors",
    "transfer.orders",
    "transfer.presets",
    "transfer.robot.profile",
    "transfer.robot.assets",
    "transfer.kernels",
    "transfer.kernels.plan",
    "transfer.backends",
    "transfer.actuators",
)


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text()) for name, (path, _) in MODULES.items()}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def _absolute(module: str, node: ast.ImportFrom) -> str:
    base = node.module or ""
    if node.level:
        package = module if MODULES[module][1] else module.rpartition(".")[0]
        parts = package.split(".")
        anchor = ".".join(parts[: len(parts) - (node.level - 1)])
        base = f"{anchor}.{base}" if base else anchor
    return base


def _reexports(package: str) -> dict[str, str]:
    """Names a package's ``__init__`` imports from its modules: name -> module."""
    out = {}
    for node in ast.walk(TREES[package]):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(package, node)
            for alias in node.names:
                out[alias.asname or alias.name] = base
    return out


def _targets(module: str) -> set[str]:
    """The ``transfer`` modules ``module`` imports, at any depth, type-checking imports aside."""
    tree = TREES[module]
    skip = _type_checking_nodes(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in MODULES:
                    out.add(full)
                elif base in MODULES and MODULES[base][1] and alias.name in _reexports(base):
                    out.add(_reexports(base)[alias.name])
                elif base in MODULES:
                    out.add(base)
    out.discard(module)
    return {t for t in out if t in MODULES and t != "transfer"}


def import_cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {m: _targets(m) for m in MODULES if m != "transfer"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def _runs_package(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and parts[1] == "runs" else None


def private_imports_across_runs() -> list[str]:
    out = []
    for module, tree in TREES.items():
        own = _runs_package(module)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _absolute(module, node)
            theirs = _runs_package(base)
            if theirs is None or theirs == own:
                continue
            out += [
                f"{module}:{node.lineno} imports {a.name} from {base}" for a in node.names if a.name.startswith("_")
            ]
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            out.add(id(body[0].value))
    return out


def _foreign_reads(tree: ast.AST) -> set[int]:
    """ids of the string constants that read another project's document by its own words: ``doc["key"]``,
    ``doc.get("key")`` / ``.pop``, ``"word" in text``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            out.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop"):
            out |= {id(a) for a in node.args[:1]}
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            if not isinstance(node.comparators[0], (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Constant)):
                out.add(id(node.left))
    return out


def backend_names_named(trees: dict[str, ast.AST] | None = None) -> list[str]:
    """Every string constant equal to a backend's name in a module above ``transfer/backends/``, docstrings and
    foreign reads (:func:`_foreign_reads`) aside: ``module:line 'name'``."""
    out = []
    for module, tree in (TREES if trees is None else trees).items():
        if module == "transfer" or any(module == p or module.startswith(p + ".") for p in BELOW_THE_ENGINES):
            continue
        skip = _docstrings(tree) | _foreign_reads(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in BACKEND_NAMES and id(node) not in skip:
                out.append(f"{module}:{node.lineno} {node.value!r}")
    return out


def long_functions() -> dict[str, int]:
    """``module:function`` -> its line count, for functions over :data:`MAX_FUNCTION_LINES`."""
    out = {}
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out[f"{module}:{node.name}"] = n
    return out


# What the second architecture pass (issue 22) has still to fold, listed so that nothing new joins it: each check
# fails on a violation not listed here, and on a listed one that is gone (remove it from the list then).
KNOWN_CYCLES: list[list[str]] = []
KNOWN_PRIVATE: set[str] = set()
KNOWN_BACKEND_NAMES: set[str] = set()
KNOWN_LONG: set[str] = set()


def test_no_import_cycle():
    assert sorted(import_cycles()) == sorted(KNOWN_CYCLES)


def test_the_schema_and_the_policy_interface_import_no_format_module():
    """``checkpoint.py`` (the metadata schema) and ``policy.py`` (the ``Policy`` interface) sit below the formats:
    each format module imports them, never the other way round (that was the checkpoint <-> policy cycle)."""
    for module in ("transfer.formats.checkpoint", "transfer.formats.policy"):
        formats = sorted(t for t in _targets(module) if t == "transfer.formats" or t.startswith("transfer.formats."))
        assert formats == [], f"{module} imports {formats}"
    assert "transfer.formats.policy" not in _targets("transfer.formats.checkpoint")
    assert "transfer.formats.checkpoint" not in _targets("transfer.formats.policy")


def test_no_private_name_crosses_runs_packages():
    found = private_imports_across_runs()
    assert {f.split(" imports ")[1].split(" from ")[0] for f in found} == KNOWN_PRIVATE, found


def test_no_backend_name_above_the_backends():
    found = backend_names_named()
    assert {f.split(":")[0] for f in found} == KNOWN_BACKEND_NAMES, found


def test_the_backend_name_check_sees_every_spelling():
    named = (
        'def f(target: Literal["physx", "newton"] = "physx", sim=None):\n'
        '    """physx is prose here"""\n'
        '    pair = ("physx", "newton")\n'
        '    by = {"newton": 1}\n'
        '    call(trained_on="newton")\n'
        '    if target == "physx" or target in ("newton",):\n'
        '        return sim["physx"], sim.get("newton"), "physx" in str(sim)\n'
    )
    found = [f.split(" ", 1)[1] for f in backend_names_named({"transfer.runs.synthetic": ast.parse(named)})]
    assert found.count("'physx'") == 4 and found.count("'newton'") == 5, found
    assert backend_names_named({"transfer.backends.synthetic": ast.parse(named)}) == []


MAX_MODULE_LINES = 600
STAGE_READERS = ("transfer.robot.usd", "transfer.robot.assets.chains")
"""Where a USD stage is composed outside the engines: the USD reader (its read cache shares the stage with every
reader of the robot: orders, base, spawn, colliders, the profile) and the MJCF joint-chain rewrite inside the
conversion."""


def stage_compositions(trees: dict[str, ast.AST] | None = None) -> list[str]:
    """Calls of ``Usd.Stage.Open`` / ``CreateNew`` / ``CreateInMemory`` above the engines outside
    :data:`STAGE_READERS`: ``module:line call``."""
    out = []
    for module, tree in (TREES if trees is None else trees).items():
        if module in STAGE_READERS or module.startswith("transfer.backends"):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("Open", "CreateNew", "CreateInMemory")
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "Stage"
            ):
                out.append(f"{module}:{node.lineno} {ast.unparse(node.func)}")
    return out


def test_the_robot_is_composed_by_the_usd_reader_only():
    """Every other module reads the robot through ``transfer.robot.usd`` (``read_topology``, ``file_stage``,
    ``open_stage``): one composition per process, counted by ``stage_compositions()``."""
    assert stage_compositions() == []
    sneaky = ast.parse("from pxr import Usd\ndef f(p):\n    return Usd.Stage.Open(str(p))\n")
    assert stage_compositions({"transfer.runs.synthetic": sneaky}) == ["transfer.runs.synthetic:3 Usd.Stage.Open"]


def test_no_module_over_600_lines():
    """A module over :data:`MAX_MODULE_LINES` lines does several jobs: split it where they part."""
    long = {m: n for m, (path, _) in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, long


def test_no_function_over_80_lines():
    found = long_functions()
    assert set(found) == KNOWN_LONG, found


def foreign_private_reads(module: str, tree: ast.AST | None = None) -> list[str]:
    """``x._name`` reads in ``module`` where ``x`` is not ``self`` or ``cls`` (dunders aside)."""
    found = []
    for node in ast.walk(TREES[module] if tree is None else tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    return found


def test_articulation_data_reads_the_articulation_through_its_feed_only():
    assert foreign_private_reads("transfer.articulation.data") == []


def test_the_checks_see_what_they_look_for():
    """The checkers on the code as it stands: they find modules, imports and functions at all."""
    assert "transfer.runs.replay" in MODULES and "transfer.env" in MODULES
    assert "transfer.task.model" in _targets("transfer.formats.checkpoint") or "transfer.task" in _targets(
        "transfer.formats.checkpoint"
    )
    snippet = ast.parse("def f(self, art):\n    return self._feed, art._backend, art.__class__")
    assert foreign_private_reads("snippet", snippet) == ["snippet:2 art._backend"]
    tree = ast.parse("def f():\n" + "    x = 1\n" * 90)
    assert tree.body[0].end_lineno - tree.body[0].lineno + 1 > MAX_FUNCTION_LINES


INPUT_LAYER = "transfer.runs.inputs"
INPUT_JOBS = frozenset(
    {
        "load_policy",
        "open_checkpoint",
        "read_config",
        "load_task",
        "find_run",
        "read_isaaclab_run",
        "metadata_to_task",
        "resolve_asset",
        "locate_asset",
        "convert_source",
        "read_metadata",
    }
)
"""What resolving a run's inputs takes: loading or describing the checkpoint, reading its task, config or run
folder, locating and converting its robot. Above floor 6 only the input layer does them."""
INPUT_JOB_EXCEPTIONS = {
    "transfer.cli._checks": {"locate_asset"},  # a flag checked while parsing: the file exists, nothing resolved
    "transfer.cli.inspect": {"locate_asset", "convert_source"},  # `transfer inspect` shows an asset's conversion
}


def input_jobs_outside_the_layer(trees: dict[str, ast.AST] | None = None) -> list[str]:
    """``module:line name`` of every import or call of an :data:`INPUT_JOBS` function in ``transfer.runs`` and
    ``transfer.cli`` outside :data:`INPUT_LAYER`."""
    out = []
    for module, tree in (TREES if trees is None else trees).items():
        if module == INPUT_LAYER or not module.startswith(("transfer.runs", "transfer.cli")):
            continue
        allowed = INPUT_JOB_EXCEPTIONS.get(module, set())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            out += [f"{module}:{node.lineno} {n}" for n in names if n in INPUT_JOBS and n not in allowed]
    return sorted(set(out))


def test_no_function_of_the_input_layers_job_outside_it():
    """Issue 29: every command's checkpoint, task, config, run folder and robot are resolved by
    :data:`INPUT_LAYER` (``resolve_inputs``, ``resolve_task``, ``locate_checkpoint``, ``open_policy``,
    ``Robot.of``) and handed down; a synthetic module doing it itself is caught."""
    assert input_jobs_outside_the_layer() == []
    sneaky = ast.parse(
        "def f(p):\n    from transfer.formats import load_policy\n    import transfer.task as t\n"
        "    return load_policy(p), t.load_task(p)\n"
    )
    assert input_jobs_outside_the_layer({"transfer.runs.synthetic": sneaky}) == [
        "transfer.runs.synthetic:2 load_policy",
        "transfer.runs.synthetic:4 load_task",
    ]
