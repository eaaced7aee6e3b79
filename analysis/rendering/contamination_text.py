"""The seen/clean split in words, for the delta report, the arm comparison and the index page.

The verdict line, the delta report's section, the arm comparison's table and the index page's line;
analysis.reports.contamination_split computes every number."""

from __future__ import annotations

from types import SimpleNamespace

from analysis.rendering.markdown_parts import table
from analysis.rendering.markdown_text import md, p_cell, significance_text
from analysis.reports.contamination_split import NOTHING, ContaminationSplit
from analysis.reports.contamination_split import difference_p as _p_words
from analysis.reports.number_text import interval, num, pvalue

EVIDENCE_WORDS = {
    "recited": "recited word for word",
    "rouge_l": "recited by ROUGE-L",
    "answered": "answered from the truncated question",
    "ngram": "n-gram run in the training data",
    "near_duplicate": "near-duplicate in the training data",
}


def difference_p(s: ContaminationSplit) -> str:
    """The difference test's p in words (a p at the floor as its bound)."""
    return _p_words(SimpleNamespace(p=s.difference_p, n_perm=s.difference_n_perm, exact=s.difference_exact))


def verdict_line(s: ContaminationSplit | None) -> list[str]:
    """The one line under the claim: what the split says of the gain."""
    if s is None:
        return []
    return [f"**Seen or clean: {md(s.call)}.** {md(_sentence(s.call_detail))}.", ""]


def _evidence(s: ContaminationSplit) -> str:
    counts = [f"{EVIDENCE_WORDS[k]} {n}" for k, n in s.evidence.items() if n]
    return "; ".join(counts) or "no evidence flags any item"


def split_lines(s: ContaminationSplit | None, pct: str, fdr: float) -> list[str]:
    """The delta report's section: the contrast on all, possibly-seen and clean items, and the difference."""
    if s is None:
        return []
    rows = [
        [md(r.items), str(r.n_items), num(r.mean_ref), num(r.mean_arm), num(r.delta, "+.4f"),
         interval(r.ci95), p_cell(r.p_value, r.perm_n, r.perm_exact), pvalue(r.q_value),
         significance_text(r, fdr)]
        for r in s.rows
    ]  # fmt: skip
    header = ["items", "n", md(s.reference), md(s.arm), "delta", f"{pct} CI", "p", "q (BH)", "significant"]
    difference = (
        []
        if s.difference is None
        else [
            f"Difference of the two groups' deltas (possibly seen - clean): {num(s.difference, '+.4f')}, "
            f"{difference_p(s)} (the group labels permuted across items).",
            "",
        ]
    )
    return [
        "## Seen or clean: the delta on items the models may have seen",
        "",
        f"{s.n_seen} of {s.n_seen + s.n_clean} items flagged as possibly seen ({_evidence(s)}; files: "
        f"{', '.join(md(x) for x in s.sources)}). A flag is evidence, not proof, and a clean item is only "
        "one no probe caught (docs/contamination.md).",
        "",
        *table(header, rows),
        "",
        *difference,
        f"**{md(s.call)}**: {md(s.call_detail)}. q: Benjamini-Hochberg over the {len(s.rows)} rows.",
        "",
    ]


def arms_lines(splits: list[ContaminationSplit] | None, pct: str) -> list[str]:
    """The arm comparison's table: every contrast on all, possibly-seen and clean items."""
    if not splits:
        return []
    rows = []
    for s in splits:
        by = {r.items: r for r in s.rows}
        cells = [
            f"{num(by[k].delta, '+.4f')} {interval(by[k].ci95)}" if k in by else "-"
            for k in ("all", "possibly seen", "clean")
        ]
        p = "-" if s.difference_p is None else pvalue(s.difference_p)
        rows.append([f"{md(s.arm)} vs {md(s.reference)}", *cells, p, md(s.call)])
    first = splits[0]
    return [
        "## Seen or clean",
        "",
        f"{first.n_seen} of {first.n_seen + first.n_clean} items flagged as possibly seen "
        f"({_evidence(first)}).",
        "",
        *table(["contrast", f"all ({pct} CI)", "possibly seen", "clean", "difference p", "call"], rows),
        "",
    ]


def index_line(s: ContaminationSplit | None) -> str | None:
    """The index page's line, or None without an audit."""
    if s is None:
        return None
    if s.call == NOTHING:
        return f"Seen or clean: {s.call_detail}."
    seen = f"{s.n_seen} of {s.n_seen + s.n_clean} items possibly seen"
    return f"Seen or clean ({seen}): {s.call}. {_sentence(s.call_detail)}."


def _sentence(text: str) -> str:
    """A clause that starts a sentence of its own, capitalised."""
    return text[:1].upper() + text[1:]
