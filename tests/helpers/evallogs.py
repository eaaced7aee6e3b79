"""EvalLog files built through the real schema: one pair of arms, or a folder of every arm of the design."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis.reports import arm_comparison
from contract.evallog import EvalLog

FAMILIES = ("lookup", "compute", "raise", "compound")


def write_log(
    path: Path,
    scores,
    *,
    item_ids=None,
    families=None,
    gen_tokens=None,
    samples=None,
    protocol: dict | None = None,
    **fields,
) -> Path:
    """Write a real EvalLog JSON built through the pydantic schema (so it is what the runner would write).

    Each file is of its own model (demo-<stem>) unless model_name is given: a delta compares two models.
    """
    scores = np.asarray(scores, dtype=float)
    n_items, k = scores.shape
    item_ids = item_ids or [f"q{i:04d}" for i in range(n_items)]
    items = []
    for i in range(n_items):
        it = {"item_id": item_ids[i], "scores": scores[i].tolist()}
        if families is not None:
            it["family"] = families[i]
        if gen_tokens is not None:
            it["gen_tokens"] = [int(t) for t in gen_tokens[i]]
        if samples is not None:
            it["samples"] = samples[i]
        items.append(it)
    proto = {"k": k, "max_tokens": 64, "temperature": 1.0, "top_p": 1.0, "seed": 1234, "max_tool_calls": 4}
    proto.update(protocol or {})
    record = {
        "model_name": f"demo-{path.stem}",
        "suite": "sda-mini",
        "suite_revision": "v1.0",
        "n_samples": k,
        "temperature": 1.0,
        "max_tokens": 64,
        "driver": "cpu test",
        "measured_at": "2026-01-01T00:00:00Z",
        "top_p": 1.0,
        "seed": 1234,
        "protocol": proto,
        "items": items,
    }
    record.update(fields)
    log = EvalLog.model_validate(record)
    path.write_text(log.model_dump_json(exclude_none=True, indent=1))
    return path


def synthetic_scores(rng: np.random.Generator, n_items: int, k: int, lift: float = 0.0, base=None):
    """0/1 scores with item difficulty shared across arms; returns (scores, item probabilities)."""
    logit = base if base is not None else rng.normal(0.0, 1.5, n_items)
    p = 1 / (1 + np.exp(-(logit + lift)))
    return (rng.random((n_items, k)) < p[:, None]).astype(float), logit


# Names a log may carry that mean something to markdown (table cells, HTML) or to matplotlib (mathtext).
HOSTILE_FAMILY = "a|b <i>x</i>"


HOSTILE_MODEL = "<img src=x onerror=alert(1)> org/m$^$_v*2*"


# arm -> (logit lift on every item, extra lift on lookup items, mean generated tokens)
WORLD = {
    "base": (0.0, 0.0, 40),
    "trained": (0.7, 0.0, 44),
    "+rag": (0.0, 3.0, 50),
    "+tools": (1.2, 0.0, 60),
    "trained+rag": (0.7, 3.0, 52),
    "trained+tools": (1.6, 0.0, 62),
    "trained+rag+tools": (1.9, 3.0, 70),
}


PATHS = ["clean", "answer_without_tool", "tool_result_ignored", "tool_error", "no_answer"]


def make_world(
    folder: Path, n_items: int = 96, k: int = 4, arms_: list[str] | None = None, seed: int = 0
) -> Path:
    """One EvalLog per arm with shared item difficulty, budgets, families and tool paths."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    fam = [FAMILIES[i % 4] for i in range(n_items)]
    lookup = np.array([f == "lookup" for f in fam])
    logit = rng.normal(-0.3, 1.3, n_items)
    for name in arms_ or list(WORLD):
        lift, lookup_lift, tokens = WORLD[name]
        p = 1 / (1 + np.exp(-(logit + lift + lookup_lift * lookup)))
        scores = (rng.random((n_items, k)) < p[:, None]).astype(float)
        gen = rng.integers(tokens - 8, tokens + 9, (n_items, k))
        samples = None
        if "tools" in name:
            samples = [
                [
                    {"index": j, "seed": j, "score": float(scores[i, j]), "path": PATHS[(i + j) % 5]}
                    for j in range(k)
                ]
                for i in range(n_items)
            ]
        model = "demo-trained" if name.startswith("trained") else "demo-base"
        write_log(folder / f"{name}.json", scores, families=fam, gen_tokens=gen, samples=samples, arm=name,
                  attribution=arm_comparison.DEFAULT_ATTRIBUTION[name], model_name=model)  # fmt: skip
    return folder


# An arm name with a table separator, HTML and a mathtext formula.
HOSTILE_ARM = "+rag$^$|<b>x</b>"


def hostile_world(folder: Path) -> Path:
    """base, trained and an arm named HOSTILE_ARM, over families named HOSTILE_FAMILY and 'plain'."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    fam = [HOSTILE_FAMILY if i % 2 else "plain" for i in range(48)]
    base, logit = synthetic_scores(rng, 48, 4)
    for name, arm, lift, model in (("base", "base", 0.0, HOSTILE_MODEL), ("trained", "trained", 0.8, "m1"),
                                   ("odd", HOSTILE_ARM, 1.5, HOSTILE_MODEL)):  # fmt: skip
        scores = base if name == "base" else synthetic_scores(rng, 48, 4, lift=lift, base=logit)[0]
        write_log(folder / f"{name}.json", scores, families=fam, arm=arm, model_name=model,
                  attribution="lookup" if name == "odd" else None)  # fmt: skip
    return folder
