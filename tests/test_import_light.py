"""``import transfer`` is light, and its lazy exports are the real objects of the modules ``_EXPORTS`` names."""

import json
import subprocess
import sys
from importlib import import_module

import pytest

import transfer

HEAVY = [
    "torch",
    "pxr",
    "newton",
    "ovphysx",
    "ovstage",
    "warp",
    "omegaconf",
    "onnxruntime",
    "onnx",
    "yaml",
    "rsl_rl",
    "ray",
]

# Names whose modules are pure Python over the standard library (and numpy): using them loads no heavy package.
LIGHT_NAMES = [
    "OrderingConvention",
    "parse_ordering",
    "ArticulationNameMap",
    "build_name_map",
    "apply_articulation_ordering_preset",
    "check_ordering_overrides",
    "resolve_ordering",
    "read_topology",
    "Task",
    "load_task",
    "Policy",
    "resolve_asset",
    "import_asset",
]


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it ends by printing a JSON value, returned here."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_transfer_loads_nothing_but_the_face():
    loaded = _fresh(
        "import json, sys, transfer\n"
        f"print(json.dumps({{'heavy': [m for m in {HEAVY!r} if m in sys.modules],"
        " 'transfer': sorted(m for m in sys.modules if m.startswith('transfer'))}))"
    )
    assert loaded == {"heavy": [], "transfer": ["transfer"]}


def test_light_names_load_no_engine():
    names = [n for n in LIGHT_NAMES if n in transfer._EXPORTS]
    heavy = _fresh(
        f"import json, sys, transfer\nfor n in {names!r}: getattr(transfer, n)\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    assert heavy == []


def test_a_name_loads_only_its_own_module():
    loaded = _fresh(
        "import json, sys, transfer\ntransfer.parse_ordering\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('transfer'))))"
    )
    assert loaded == ["transfer", "transfer.ordering"]


@pytest.mark.parametrize("name", sorted(transfer._EXPORTS))
def test_lazy_name_is_the_object_its_module_defines(name):
    module_name = transfer._EXPORTS[name]
    value = getattr(transfer, name)
    assert value is getattr(import_module(module_name), name)
    home = getattr(value, "__module__", None)
    assert home == module_name or home.startswith(module_name + "."), (name, home, module_name)
    assert transfer.__dict__[name] is value  # cached: the next access is a plain attribute


def test_all_equals_exports():
    assert len(transfer.__all__) == len(set(transfer.__all__)), "duplicate names in transfer.__all__"
    assert set(transfer.__all__) == set(transfer._EXPORTS)


def test_star_import_gives_every_export():
    namespace: dict = {}
    exec("from transfer import *", namespace)
    assert {n for n in namespace if n != "__builtins__"} == set(transfer._EXPORTS)


def test_dir_lists_exports_before_they_load():
    listed = _fresh("import json, transfer\nprint(json.dumps(dir(transfer)))")
    assert set(transfer._EXPORTS) <= set(listed)
    assert listed == sorted(listed)


def test_core_api_is_exported():
    assert {
        "OrderingConvention",
        "parse_ordering",
        "ArticulationNameMap",
        "build_name_map",
        "apply_articulation_ordering_preset",
        "resolve_ordering",
        "read_topology",
        "open_articulation",
    } <= set(transfer._EXPORTS)


def test_unknown_attribute_names_itself():
    with pytest.raises(AttributeError, match="'no_such_name'"):
        transfer.no_such_name  # noqa: B018
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from transfer import no_such_name", {})
    assert not hasattr(transfer, "no_such_name")
