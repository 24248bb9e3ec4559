import subprocess
import sys

import transfer

HEAVY = ["torch", "pxr", "newton", "ovphysx", "ovstage", "warp", "omegaconf"]


def test_import_transfer_loads_no_engine():
    code = (
        "import sys, transfer\n"
        "from transfer import OrderingConvention, parse_ordering, build_name_map, apply_articulation_ordering_preset\n"
        "from transfer import ArticulationNameMap\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_names_exist():
    for name in transfer.__all__:
        assert getattr(transfer, name) is not None
    assert {
        "OrderingConvention",
        "parse_ordering",
        "ArticulationNameMap",
        "build_name_map",
        "apply_articulation_ordering_preset",
        "resolve_ordering",
        "read_topology",
    } <= set(transfer.__all__)


def test_all_matches_lazy_exports():
    assert sorted(transfer.__all__) == sorted(transfer._EXPORTS)
