"""The arms of the training x retrieval x tools design, read from the arm specs in conf/arm.

conf/arm/<name>.yaml owns what an arm is (its model, whether it retrieves, whether it calls tools, its
attribution). The arm comparison reads from those specs, never from a list of names: an arm is a cell of the
2 x 2 x 2 design when its model is the primary contrast's reference model or its arm's model (training off
or on); its retrieval and tools flags are the other two factors. From the cells follow

- the order arms are reported in (the reference, then one factor on, then two, then all three; training
  before retrieval before tools);
- each cell's attribution, used when a log records none;
- the marginal contrasts: a mixed arm (training plus augmentations) against the arm with the same
  augmentations on the reference model, which isolates the training's gain on top of them;
- the name of every cell of the design, a cell with no spec (the base model with retrieval and tools, which
  the default arms leave out) named by joining the names of its one-factor arms, as the specs name theirs.

Arms of other models (a placebo, mid-training checkpoints) are no cells. Without conf/arm (the analyses
installed without the repository) the design is empty: arms are reported in name order, without a
factorial read-out or marginal contrasts.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from analysis.estimators.factorial import Cell
from analysis.reports.contrasts import PRIMARY_ARM, PRIMARY_REFERENCE
from contract.arm import ArmSpec

ARM_SPECS = Path(__file__).resolve().parents[2] / "conf" / "arm"


def read_arm_specs(folder: Path = ARM_SPECS) -> dict[str, ArmSpec]:
    """Every arm spec of a folder of <name>.yaml files, by name; empty when the folder is absent."""
    specs = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        try:
            specs[path.stem] = ArmSpec(name=path.stem, **data)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: not an arm spec (model, retrieval, tools, attribution): {e}") from None
    return specs


def design_cells(specs: dict[str, ArmSpec]) -> dict[str, Cell]:
    """The arms that are cells of the design, each with its (training, retrieval, tools), in report order."""
    if PRIMARY_REFERENCE not in specs or PRIMARY_ARM not in specs:
        return {}
    models = {specs[PRIMARY_REFERENCE].model: 0, specs[PRIMARY_ARM].model: 1}
    cells: dict[str, Cell] = {
        name: (models[s.model], int(s.retrieval), int(s.tools))
        for name, s in specs.items()
        if s.model in models
    }
    return dict(sorted(cells.items(), key=lambda kv: (sum(kv[1]), [-x for x in kv[1]])))


def cell_names(cells: dict[str, Cell]) -> dict[str, Cell]:
    """Every cell of the 2 x 2 x 2 design by name, in report order: the arms' own, the others composed."""
    name_of = {cell: name for name, cell in cells.items()}
    units = [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
    if (0, 0, 0) not in name_of or not all(u in name_of for u in units):
        return dict(cells)
    every: dict[str, Cell] = {}
    for bits in range(8):
        cell: Cell = ((bits >> 0) & 1, (bits >> 1) & 1, (bits >> 2) & 1)
        on = [name_of[u] for f, u in enumerate(units) if cell[f]]
        every[name_of.get(cell) or "".join(on)] = cell
    return dict(sorted(every.items(), key=lambda kv: (sum(kv[1]), [-x for x in kv[1]])))


def marginal_contrasts(specs: dict[str, ArmSpec], cells: dict[str, Cell]) -> list[tuple[str, str]]:
    """(mixed arm, its augmentation arm) pairs: training's gain on top of the same augmentations."""
    name_of = {cell: name for name, cell in cells.items()}
    return [
        (name, name_of[(0, cell[1], cell[2])])
        for name, cell in cells.items()
        if cell[0] == 1 and specs[name].attribution == "mixed" and (0, cell[1], cell[2]) in name_of
    ]


_SPECS = read_arm_specs()
_CELLS = design_cells(_SPECS)
# The arms of the design (conf/arm), in report order; the arm comparison reports those not found as missing.
CANONICAL_ARMS = list(_CELLS)
DEFAULT_ATTRIBUTION = {name: _SPECS[name].attribution for name in _CELLS}
MARGINAL_CONTRASTS = marginal_contrasts(_SPECS, _CELLS)
FACTORIAL_CELLS = cell_names(_CELLS)
