"""Item 4 of issue 15 for model files: a checksum written and verified on reading."""
import json
from pathlib import Path

import pytest

from lopub.io import unverified_reads
from lopub.model.format import ModelFormatError
from lopub.model.graphical import Model


def test_model_has_a_checksum_and_loads(files):
    obj = json.loads(Path(files["m.json"]).read_text())
    assert obj["checksum"].startswith("sha256:") and len(obj["checksum"]) == 71
    assert Model.load(files["m.json"]).n == obj["n"]


@pytest.mark.parametrize("edit", ["n", "p", "label"])
def test_edited_model_fails_its_checksum(files, tmp_path, edit):
    obj = json.loads(Path(files["m.json"]).read_text())
    if edit == "n":
        obj["n"] += 1
    elif edit == "p":  # still a valid distribution: only the checksum can tell
        p = obj["cliques"][0]["p"]
        p[0], p[1] = p[1], p[0]
    else:
        obj["domain"]["attributes"][0]["categories"][0] = "X"
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(obj))
    with pytest.raises(ModelFormatError, match="edited.json: fails its checksum"):
        Model.load(bad)


def test_bit_flipped_model_is_refused(files, tmp_path):
    data = bytearray(Path(files["m.json"]).read_bytes())
    original = Model.load(files["m.json"])
    bad = tmp_path / "flip.json"
    for pos in range(0, len(data), 3):
        flipped = bytearray(data)
        flipped[pos] ^= 1 << (pos % 7)
        bad.write_bytes(bytes(flipped))
        try:
            got = Model.load(bad)
        except ModelFormatError as exc:
            assert "flip.json" in str(exc)
            continue
        # a flip that JSON ignores (whitespace-equivalent) must leave the model unchanged
        assert got.to_dict() == original.to_dict()


def test_bad_checksum_field_is_named(files, tmp_path):
    obj = json.loads(Path(files["m.json"]).read_text())
    obj["checksum"] = 5
    bad = tmp_path / "ck.json"
    bad.write_text(json.dumps(obj))
    with pytest.raises(ModelFormatError, match="field 'checksum' \\(5\\)"):
        Model.load(bad)


def test_model_without_checksum_is_refused_unless_unverified(files, tmp_path):
    """Issue 25: a model without checksum (edited by hand, or older) is refused; it loads only
    when the user says so (--no-verify), with a warning."""
    obj = json.loads(Path(files["m.json"]).read_text())
    del obj["checksum"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(obj))
    with pytest.raises(ModelFormatError, match="old.json.*no checksum.*--no-verify"):
        Model.load(old)
    with unverified_reads(), pytest.warns(UserWarning, match="WITHOUT any integrity check"):
        assert Model.load(old).n == obj["n"]
