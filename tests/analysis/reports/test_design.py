"""analysis.reports.design: the arms of the design, read from the arm specs (conf/arm) rather than from
names."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.reports import design


def write_spec(folder: Path, name: str, model: str, retrieval: bool, tools: bool, attribution: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(
        f"model: {model}\nretrieval: {str(retrieval).lower()}\ntools: {str(tools).lower()}\n"
        f"attribution: {attribution}\n"
    )


def test_the_repository_arms_give_the_seven_arm_design():
    seven = ["base", "trained", "+rag", "+tools", "trained+rag", "trained+tools", "trained+rag+tools"]
    assert seven == design.CANONICAL_ARMS
    assert design.DEFAULT_ATTRIBUTION == {
        "base": "reference", "trained": "parametric", "+rag": "lookup", "+tools": "tool_access",
        "trained+rag": "mixed", "trained+tools": "mixed", "trained+rag+tools": "ceiling",
    }  # fmt: skip
    assert design.MARGINAL_CONTRASTS == [("trained+rag", "+rag"), ("trained+tools", "+tools")]
    # +rag+tools has no spec: its cell is named from the one-factor arms, in the design's order.
    assert list(design.FACTORIAL_CELLS.items()) == [
        ("base", (0, 0, 0)), ("trained", (1, 0, 0)), ("+rag", (0, 1, 0)), ("+tools", (0, 0, 1)),
        ("trained+rag", (1, 1, 0)), ("trained+tools", (1, 0, 1)), ("+rag+tools", (0, 1, 1)),
        ("trained+rag+tools", (1, 1, 1)),
    ]  # fmt: skip


def test_cells_follow_the_specs_not_the_names(tmp_path):
    specs = tmp_path / "arm"
    write_spec(specs, "base", "m0", False, False, "reference")
    write_spec(specs, "trained", "m1", False, False, "parametric")
    write_spec(specs, "lookup", "m0", True, False, "lookup")
    write_spec(specs, "calc", "m0", False, True, "tool_access")
    write_spec(specs, "both", "m1", True, False, "mixed")
    write_spec(specs, "placebo", "m2", False, False, "placebo")
    read = design.read_arm_specs(specs)
    cells = design.design_cells(read)
    # The placebo's model is neither the reference's nor the trained arm's: it is no cell.
    assert list(cells.items()) == [
        ("base", (0, 0, 0)), ("trained", (1, 0, 0)), ("lookup", (0, 1, 0)), ("calc", (0, 0, 1)),
        ("both", (1, 1, 0)),
    ]  # fmt: skip
    assert design.marginal_contrasts(read, cells) == [("both", "lookup")]
    named = design.cell_names(cells)
    assert named["trainedcalc"] == (1, 0, 1) and named["lookupcalc"] == (0, 1, 1) and len(named) == 8


def test_no_specs_no_design(tmp_path):
    assert design.read_arm_specs(tmp_path / "absent") == {}
    assert design.design_cells({}) == {} and design.cell_names({}) == {}


def test_a_spec_that_is_not_one_is_refused_naming_its_file(tmp_path):
    (tmp_path / "odd.yaml").write_text("model: m0\nretrieval: maybe\ntools: false\nattribution: x\n")
    with pytest.raises(ValueError, match="odd.yaml"):
        design.read_arm_specs(tmp_path)
