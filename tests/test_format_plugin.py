"""The checkpoint-format plug-in point (issue 29): a new format is one ``CheckpointFormat`` class and one entry in
``transfer.formats.FORMATS``; detection, loading, metadata and ``transfer info`` dispatch through it unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

import transfer.formats as formats
from transfer.formats.base import CheckpointFormat, Probe
from transfer.formats.policy import Policy

MAGIC = b"LINP"


class LinearPolicy(Policy):
    """A linear map stored as ``LINP`` + JSON: ``{"weights": [[...]], "metadata": {...}}``."""

    format = "linear"
    native = "numpy"

    def __init__(self, path: Path, device: str = "cpu"):
        self.doc = json.loads(Path(path).read_bytes()[len(MAGIC) :])
        self.weights = np.asarray(self.doc["weights"], dtype=np.float32)
        super().__init__(path, self.weights.shape[1], self.weights.shape[0], device)

    def read_metadata(self):
        return self.doc.get("metadata")

    def _forward(self, x):
        return x @ self.weights.T


class LinearFormat(CheckpointFormat):
    name = "linear"
    policy = LinearPolicy
    permutation = object

    @classmethod
    def detect(cls, probe: Probe) -> bool:
        return probe.head == MAGIC

    @classmethod
    def read_metadata(cls, path: Path):
        return json.loads(Path(path).read_bytes()[len(MAGIC) :]).get("metadata")

    @classmethod
    def write_metadata(cls, checkpoint: Path, out: Path, metadata):
        doc = json.loads(Path(checkpoint).read_bytes()[len(MAGIC) :]) | {"metadata": dict(metadata)}
        Path(out).write_bytes(MAGIC + json.dumps(doc).encode())
        return Path(out)


@pytest.fixture
def linear(monkeypatch, tmp_path):
    monkeypatch.setattr(formats, "FORMATS", MappingProxyType({**formats.FORMATS, "linear": LinearFormat}))
    path = tmp_path / "policy.lin"
    path.write_bytes(MAGIC + json.dumps({"weights": [[1.0, 0.0, 2.0], [0.0, -1.0, 0.0]]}).encode())
    return path


def test_a_format_registered_once_is_detected_and_loaded(linear):
    assert formats.detect_format(linear) == "linear"
    policy = formats.load_policy(linear)
    assert isinstance(policy, LinearPolicy) and (policy.input_size, policy.output_size) == (3, 2)
    np.testing.assert_allclose(policy(np.ones((4, 3), np.float32)), [[3.0, -1.0]] * 4)
    assert formats.read_metadata(linear) is None
    assert formats.permutation_class("linear") is object


def test_its_options_are_its_own(linear):
    with pytest.raises(TypeError, match=r"options \['activation'\] do not apply to linear checkpoints"):
        formats.load_policy(linear, activation="elu")


def test_the_built_in_formats_each_claim_their_own_files_only(tmp_path):
    """Every registered format's ``detect`` on each kind of file: exactly one says yes."""
    zip_ts = Probe(tmp_path / "a.pt", b"PK\x03\x04", ("a/code/__torch__.py", "a/constants.pkl"))
    zip_rsl = Probe(tmp_path / "m.pt", b"PK\x03\x04", ("archive/data.pkl",))
    pickle = Probe(tmp_path / "m.pt", b"\x80\x02}q", None)
    onnx = Probe(tmp_path / "p.onnx", b"\x08\x07\x12\x07", None)
    for probe, expected in ((zip_ts, "torchscript"), (zip_rsl, "rsl_rl"), (pickle, "rsl_rl"), (onnx, "onnx")):
        claimed = [name for name, fmt in formats.FORMATS.items() if fmt.detect(probe)]
        assert claimed == [expected], (probe, claimed)
