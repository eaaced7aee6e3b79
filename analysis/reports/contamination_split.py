"""Every delta split on possibly-seen and clean items, from the contamination stage's files.

An item is possibly seen when any evidence the `flag` thresholds of params.yaml `contamination` name holds
for it: a probed checkpoint recites the rest of its question (exact match, or ROUGE-L at the threshold),
answers it right from the truncated question, or the question shares an n-gram run or is a MinHash
near-duplicate of a named training text. One set of flags serves every contrast of every report (the union
over the probed checkpoints), so an item is in the same group wherever it is printed.

Each contrast is then estimated three times by the paired contrast of every report (contrasts.mean_contrast:
the interval and sign-flip p at each group's size), on all items, the possibly-seen ones and the clean
rest, the three decided as one Benjamini-Hochberg family; and the permutation test of the difference of the
two groups' mean deltas (estimators.group_difference) says whether the delta differs between them. Its
call, and how often it is made falsely, are measured by benchmarks/bench_calibration.py (`--part split`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import yaml
from pydantic import ValidationError

from analysis.estimators.group_difference import group_difference_test
from analysis.estimators.resampling import rng_for
from analysis.reports import contrasts as ct
from analysis.reports.refusal import Refusal
from analysis.reports.report_parts import MeanContrast, Real, ReportSection
from analysis.reports.settings import AnalysisSettings, checked
from contract.contamination import (
    OVERLAP_FILE,
    PROBE_PREFIX,
    ContaminationSettings,
    OverlapFile,
    ProbeFile,
    ProbeItem,
)

R = TypeVar("R", bound=ReportSection)
ONLY_SEEN = "GAIN ONLY ON POSSIBLY-SEEN ITEMS"
DIFFERS = "DELTA DIFFERS BETWEEN SEEN AND CLEAN"
NO_DIFFERENCE = "no difference detected"
NOTHING = "nothing to split"
EVIDENCE_KINDS = ("recited", "rouge_l", "answered", "ngram", "near_duplicate")


@dataclass
class Audit:
    """The contamination files the analyses read, with the settings that flag an item."""

    settings: ContaminationSettings
    folder: Path
    probes: dict[str, ProbeFile]
    overlap: OverlapFile | None
    # item id -> the evidence that flags it (empty: clean), in words, computed once by `flag`.
    reasons: dict[str, list[str]] = field(default_factory=dict)
    kinds: dict[str, set[str]] = field(default_factory=dict)


def _read(path: Path, model: type[ProbeFile] | type[OverlapFile]) -> Any:
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise Refusal(f"{path}: {where}: {err['msg']}; rerun python -m pipeline.contamination") from None


def read_audit(params: str | Path | None) -> Audit | None:
    """The audit of params.yaml `contamination` (None without the section): its files read and checked."""
    p = Path(params) if params is not None else Path("params.yaml")
    if not p.is_file():
        return None
    section = (yaml.safe_load(p.read_text()) or {}).get("contamination")
    if section is None:
        return None
    cfg = checked(ContaminationSettings, section, p, "contamination")
    folder = Path(cfg.out)
    if cfg.flag.reference is not None and cfg.flag.reference not in cfg.models:
        raise Refusal(
            f"{p}: contamination.flag.reference: {cfg.flag.reference!r} is not probed; name one of "
            f"contamination.models ({', '.join(cfg.models) or 'none'})"
        )
    probes = {}
    for model in cfg.models:
        path = folder / f"{PROBE_PREFIX}{model}.json"
        if not path.is_file():
            raise Refusal(
                f"{path}: missing (contamination.models names {model}); run python -m pipeline.contamination"
            )
        probes[model] = _read(path, ProbeFile)
    overlap = None
    if cfg.training_data:
        path = folder / OVERLAP_FILE
        if not path.is_file():
            raise Refusal(
                f"{path}: missing (contamination.training_data is set); run python -m pipeline.contamination"
            )
        overlap = _read(path, OverlapFile)
    return flag(Audit(cfg, folder, probes, overlap))


def _recites(row: ProbeItem, rouge_l: float | None) -> bool:
    return rouge_l is not None and row.rouge_l >= rouge_l


def flag(audit: Audit) -> Audit:
    """Each item's evidence under the thresholds: audit.reasons (words) and audit.kinds (EVIDENCE_KINDS)."""
    rule = audit.settings.flag

    def add(item_id: str, kind: str, text: str) -> None:
        audit.reasons.setdefault(item_id, []).append(text)
        audit.kinds.setdefault(item_id, set()).add(kind)

    reference = {r.item_id: r for r in audit.probes[rule.reference].items} if rule.reference else {}
    for model, probe in audit.probes.items():
        if model == rule.reference:
            continue
        for it in probe.items:
            audit.reasons.setdefault(it.item_id, [])
            ref = reference.get(it.item_id)
            if rule.exact and it.exact and not (ref and ref.exact):
                add(it.item_id, "recited", f"{model} continues “{it.prefix}” with the rest word for word")
            elif _recites(it, rule.rouge_l) and not (ref and (ref.exact or _recites(ref, rule.rouge_l))):
                add(
                    it.item_id,
                    "rouge_l",
                    f"{model} continues with “{it.completion}” (ROUGE-L {it.rouge_l:.2f})",
                )
            if rule.answer and it.answer_right and not (ref and ref.answer_right):
                add(it.item_id, "answered", f"{model} answers the truncated question right ({it.answer})")
    for row in audit.overlap.items if audit.overlap is not None else []:
        audit.reasons.setdefault(row.item_id, [])
        if rule.same_numbers and not row.same_numbers:
            continue
        if rule.ngram and row.longest_run > 0:
            numbers = ", the same numbers" if row.same_numbers else ", other numbers"
            add(row.item_id, "ngram", f"{row.longest_run}-word run in {row.source}{numbers}: “{row.span}”")
        if rule.near_duplicate and row.near_duplicate is not None:
            add(
                row.item_id,
                "near_duplicate",
                f"near-duplicate of {row.near_duplicate} (Jaccard {row.jaccard:.2f})",
            )
    return audit


def seen_mask(audit: Audit, order: list[str]) -> np.ndarray:
    """Which items of the report's order are possibly seen; Refusal when a file lacks one of them."""
    files = [*((f"{PROBE_PREFIX}{m}.json", p.items) for m, p in audit.probes.items())]
    files += [(OVERLAP_FILE, audit.overlap.items)] if audit.overlap is not None else []
    for name, items in files:
        have = {it.item_id for it in items}
        missing = [i for i in order if i not in have]
        if missing:
            raise Refusal(
                f"{audit.folder / name}: item {missing[0]} of the logs is not in it (of another suite?); "
                "rerun python -m pipeline.contamination"
            )
    return np.array([bool(audit.kinds.get(i)) for i in order])


class SplitRow(MeanContrast):
    """One contrast on one group of items."""

    items: str  # "all", "possibly seen" or "clean"


class ContaminationSplit(ReportSection):
    """One contrast on all, possibly-seen and clean items, the difference test and its call."""

    reference: str
    arm: str
    n_seen: int
    n_clean: int
    evidence: dict[str, int]
    sources: list[str]
    rows: list[SplitRow]
    difference: Real | None
    difference_p: Real | None
    difference_exact: bool | None
    difference_n_perm: int | None
    call: str
    call_detail: str


def evidence_counts(audit: Audit, order: list[str]) -> dict[str, int]:
    """How many of the report's items each kind of evidence flags."""
    return {k: sum(k in audit.kinds.get(i, ()) for i in order) for k in EVIDENCE_KINDS}


def difference_p(diff: Any) -> str:
    """The difference test's p in words: a p at the floor of random splits as the bound it is."""
    if not diff.exact and diff.p <= 1 / (1 + diff.n_perm):
        return f"permutation p <= {diff.p:.2g}, the floor of {diff.n_perm:,} random splits"
    return f"permutation p {diff.p:.3g}"


def _call(rows: list[dict[str, Any]], diff: Any, settings: AnalysisSettings) -> tuple[str, str]:
    """The split's call: a gain only on possibly-seen items, a difference, or none detected."""
    every, seen, clean = rows
    if diff.p > settings.alpha:
        return NO_DIFFERENCE, (
            f"the delta on possibly-seen items ({seen['delta']:+.4f}) and on clean items "
            f"({clean['delta']:+.4f}) do not differ detectably ({difference_p(diff)}); "
            "not evidence that they are equal"
        )
    gain_only = every["significant"] and every["delta"] > 0 and seen["significant"] and seen["delta"] > 0
    if gain_only and not clean["significant"] and diff.difference > 0:
        return ONLY_SEEN, (
            f"the gain of {every['delta']:+.4f} lives on the {seen['n_items']} possibly-seen items "
            f"({seen['delta']:+.4f}); on the {clean['n_items']} clean items {clean['delta']:+.4f} is not "
            f"significant, and the two differ ({difference_p(diff)}): memorized, not reasoned, "
            "until shown otherwise"
        )
    side = "larger" if diff.difference > 0 else "smaller"
    return DIFFERS, (
        f"the delta is {side} on possibly-seen items ({seen['delta']:+.4f}) than on clean items "
        f"({clean['delta']:+.4f}), {difference_p(diff)}"
    )


def split(audit: Audit, order: list[str], ref: np.ndarray, arm: np.ndarray, names: tuple[str, str],
          settings: AnalysisSettings) -> ContaminationSplit:  # fmt: skip
    """One contrast (per-item means of reference and arm, in order) on all, seen and clean items."""
    seen = seen_mask(audit, order)
    key = f"/contamination/{names[0]}/{names[1]}"
    base = {
        "reference": names[0],
        "arm": names[1],
        "n_seen": int(seen.sum()),
        "n_clean": int((~seen).sum()),
        "evidence": evidence_counts(audit, order),
        "sources": sorted(str(audit.folder / n) for n in _files(audit)),
    }
    if seen.all() or not seen.any():
        every = {"items": "all", **ct.mean_contrast(ref, arm, settings).fields()}
        ct.decide_bh([every], settings)
        which = "no item" if not seen.any() else "every item"
        return ContaminationSplit(
            **base, rows=[every], difference=None, difference_p=None, difference_exact=None,
            difference_n_perm=None, call=NOTHING,
            call_detail=f"{which} is flagged as possibly seen by the evidence recorded "
            f"({_evidence_words(audit)}): the delta on all items is the only one there is",
        )  # fmt: skip
    # All items: the same draws as the report's own row of this contrast (no key), so the numbers agree.
    rows = [
        {"items": "all", **ct.mean_contrast(ref, arm, settings).fields()},
        {
            "items": "possibly seen",
            **ct.mean_contrast(ref[seen], arm[seen], settings, key=f"{key}/seen").fields(),
        },
        {"items": "clean", **ct.mean_contrast(ref[~seen], arm[~seen], settings, key=f"{key}/clean").fields()},
    ]
    ct.decide_bh(rows, settings)
    diff = group_difference_test(
        arm - ref, seen, settings.n_perm, rng_for(settings.seed, f"{key}/difference")
    )
    call, detail = _call(rows, diff, settings)
    return ContaminationSplit(
        **base, rows=rows, difference=diff.difference, difference_p=diff.p, difference_exact=diff.exact,
        difference_n_perm=diff.n_perm, call=call, call_detail=detail,
    )  # fmt: skip


def _files(audit: Audit) -> list[str]:
    return [*(f"{PROBE_PREFIX}{m}.json" for m in audit.probes), *([OVERLAP_FILE] if audit.overlap else [])]


def _evidence_words(audit: Audit) -> str:
    parts = [f"probes of {', '.join(audit.probes)}"] if audit.probes else []
    if audit.overlap is not None:
        parts.append(f"overlap with {', '.join(s.path for s in audit.overlap.sources)}")
    return "; ".join(parts) or "none"


def with_split(
    report: R,
    audit: Audit | None,
    order: list[str],
    data: dict[str, Any],
    pairs: list[tuple[str, str]],
    settings: AnalysisSettings,
) -> R:
    """The arm comparison with every (reference, arm) contrast split (data: each arm's ArmData); as it was
    without an audit."""
    if audit is None:
        return report
    splits = [split(audit, order, data[r].item_mean, data[a].item_mean, (r, a), settings) for r, a in pairs]
    return report.with_fields(contamination=splits)


def item_evidence(audit: Audit | None) -> dict[str, list[str]]:
    """Each item's evidence in words, for the item browser (an empty list: clean)."""
    return {} if audit is None else {i: list(r) for i, r in audit.reasons.items()}
