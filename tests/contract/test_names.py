"""Names (arm, model, family, suite): NFC-normalised, refused when they hold what a reader cannot see."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
import yaml

from contract.arm import ArmSpec
from contract.jsonl import read_jsonl
from contract.names import clean_name
from contract.suite import SuiteError, load_suite
from demo.worlds import DEMO_SUITE, ROOT
from pipeline.config import ConfigError, load_arm, load_params


@pytest.mark.parametrize(
    ("name", "char"),
    [("base\u200b", "U+200B ZERO WIDTH SPACE"), ("base\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
     ("ba\tse", "U+0009"), ("base\u2028", "U+2028 LINE SEPARATOR"), ("b\x00", "U+0000")],
)  # fmt: skip
def test_a_name_with_an_invisible_or_control_character_is_refused_naming_it(name: str, char: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"holds an invisible or control character, {char}")):
        clean_name(name)
    with pytest.raises(ValueError, match="invisible or control character"):
        ArmSpec(name=name, model="base", retrieval=False, tools=False, attribution="baseline")


def test_names_are_nfc_and_plain_names_pass() -> None:
    decomposed = unicodedata.normalize("NFD", "caf\u00e9")
    assert decomposed != "caf\u00e9" and clean_name(decomposed) == "caf\u00e9"
    assert ArmSpec(name="trained+rag", model=decomposed, retrieval=True, tools=False,
                   attribution="x").model == "caf\u00e9"  # fmt: skip
    for bad in (" base", "base ", ""):
        with pytest.raises(ValueError):
            clean_name(bad)


def test_an_arm_file_named_with_a_zero_width_space_is_refused(tmp_path: Path) -> None:
    (tmp_path / "arm").mkdir()
    raw = yaml.safe_load((ROOT / "conf" / "arm" / "base.yaml").read_text())
    (tmp_path / "arm" / "base\u200b.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"name: .*U\+200B ZERO WIDTH SPACE"):
        load_arm("base\u200b", tmp_path)


def test_a_suite_family_and_params_names_with_hidden_characters_are_refused(tmp_path: Path) -> None:
    rows = [row for _, row in read_jsonl(DEMO_SUITE)][:2]
    rows[1]["family"] = "lookup\u200b"
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SuiteError, match=r"s.jsonl:2: family: .*U\+200B"):
        load_suite(suite)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"]["name"] = "sda-mini\u200b"
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError, match=r"suite.name: .*U\+200B"):
        load_params(p)
