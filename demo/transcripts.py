"""The demo's training transcripts: the training problems as (prompt, completion) pairs, by a mixture.

Pairs of the training problems in the four prompt protocols the arms use, drawn by a mixture of kinds (a
family and format, or a copy drill), and the problems about new fictional satellites whose passage is the only
way to the answer.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from augment.tools.orbital import TOOLS
from contract.jsonl import read_jsonl
from contract.textformat import ANSWER_TAG, format_tool_call, format_tool_response
from pipeline.prompts import build_prompt

DEMO = Path(__file__).resolve().parent
FORMATS = ("plain", "rag", "tools", "rag_tools")
TOOL_NAMES = tuple(sorted(TOOLS))
# Share of transcripts per (family, format). Every combination the suite meets in some arm is present.
MIXTURE: dict[tuple[str, str], float] = {
    ("raise", "plain"): 0.26,
    ("raise", "rag"): 0.03,
    ("raise", "tools"): 0.03,
    ("raise", "rag_tools"): 0.02,
    ("compute", "plain"): 0.16,
    ("compute", "rag"): 0.02,
    ("compute", "tools"): 0.12,
    ("compute", "rag_tools"): 0.03,
    ("lookup", "plain"): 0.02,
    ("lookup", "rag"): 0.12,
    ("lookup", "tools"): 0.01,
    ("lookup", "rag_tools"): 0.03,
    ("compound", "plain"): 0.01,
    ("compound", "rag"): 0.03,
    ("compound", "tools"): 0.02,
    ("compound", "rag_tools"): 0.09,
}
RAISE_SLIP_RATE = 0.1
# The base stage is a curriculum of two phases; a mixture maps a kind to its share of transcripts. A kind is
# "family/format" (MIXTURE's transcripts) or one of the dense copy drills: "repeat" (Question: Repeat 1198.
# Answer: 1198), "lookup1" / "compound1" (a look-up / compound question with only its gold passage).
# A first recipe (MIXTURE alone, 3,000 steps) learned every format but copied almost no number from its
# context, because answer tokens are a small share of a stream dominated by passages and questions.
SKILLS_MIXTURE: dict[str, float] = {
    "repeat": 0.35,
    "raise/plain": 0.30,
    "lookup1": 0.15,
    "compute/tools": 0.10,
    "compute/plain": 0.10,
}
FORMATS_MIXTURE: dict[str, float] = {
    "repeat": 0.10,
    "lookup1": 0.08,
    "compound1": 0.05,
    **{f"{fam}/{fmt}": 0.77 * w for (fam, fmt), w in MIXTURE.items()},
}
# Phase 3 (--phase3-steps): passages about satellites the model has never seen ("new:" kinds: a fresh
# fictional satellite replaces the gold passage, question and answer), so that reading the passage is the
# only way to the answer. Up to phase 2 the look-up transcripts named the 150 TRAIN satellites, whose facts
# the model memorized instead of reading them (3-passage suite look-ups: 1/24 right after phase 2).
TOOLS_MIXTURE: dict[str, float] = {f"{fam}/{fmt}": 0.35 * w for (fam, fmt), w in MIXTURE.items()}
for _kind, _extra in (
    ("compute/tools", 0.15),
    ("new:lookup/rag", 0.25),
    ("new:compound/rag_tools", 0.12),
    ("new:lookup/rag_tools", 0.05),
    ("new:compound/rag", 0.03),
    ("repeat", 0.05),
):
    TOOLS_MIXTURE[_kind] = TOOLS_MIXTURE.get(_kind, 0.0) + _extra


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file."""
    return [row for _, row in read_jsonl(path)]


def load_world() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Training problems and the corpus text by doc id."""
    problems = load_jsonl(DEMO / "train_data" / "train_problems.jsonl")
    docs = {d["doc_id"]: d["text"] for d in load_jsonl(DEMO / "corpus" / "space-text.jsonl")}
    return problems, docs


def slip(answer: str, rng: random.Random) -> str:
    """A plausible head-arithmetic slip: one digit place off by one."""
    value = int(answer) + rng.choice((-100, -10, -1, 1, 10, 100))
    return str(value)


def completion(problem: dict[str, Any], fmt: str, answer: str) -> str:
    """What the model writes after the prompt (tool response included where the runner would append it)."""
    if fmt in ("plain", "rag"):
        return f" {answer}\n"
    tool = problem.get("tool")
    if tool is None:
        return f"{ANSWER_TAG} {answer}\n"
    call = format_tool_call(tool, problem["arguments"])
    response = format_tool_response({TOOLS[tool].result_key: float(problem["answer"])})
    return f"{call}{response}{ANSWER_TAG} {answer}\n"


def render(problem: dict[str, Any], fmt: str, docs: dict[str, str], rng: random.Random) -> tuple[str, str]:
    """(prompt, completion) of one problem in one format; passages in a random order, raise slips drawn."""
    passages: list[str] = []
    if fmt in ("rag", "rag_tools"):
        ids = list(problem["passages"])
        rng.shuffle(ids)
        texts = {**docs, **problem.get("extra_docs", {})}
        passages = [texts[i] for i in ids]
    tools = TOOL_NAMES if fmt in ("tools", "rag_tools") else ()
    answer = problem["answer"]
    if problem["family"] == "raise" and rng.random() < RAISE_SLIP_RATE:
        answer = slip(answer, rng)
    return build_prompt(problem["question"], passages, tools), completion(problem, fmt, answer)


def sft_transcripts(
    problems: list[dict[str, Any]],
    docs: dict[str, str],
    n: int,
    rng: random.Random,
    mixture: dict[str, float] | None = None,
) -> list[tuple[str, str]]:
    """n (prompt, completion) pairs drawn by a mixture (default MIXTURE); each family's problems cycle."""
    mix = mixture or {f"{fam}/{fmt}": w for (fam, fmt), w in MIXTURE.items()}
    by_family: dict[str, list[dict[str, Any]]] = {}
    for p in problems:
        by_family.setdefault(p["family"], []).append(p)
    pools = {f: rng.sample(ps, len(ps)) for f, ps in by_family.items()}
    cursor = dict.fromkeys(pools, 0)
    # Drills quote only passages of TRAIN satellites: those the training problems were given.
    train_sats = sorted({d for p in problems for d in p["passages"] if d.startswith("sat-")})
    keys = list(mix)
    weights = [mix[k] for k in keys]
    out = []
    for _ in range(n):
        kind = rng.choices(keys, weights)[0]
        if kind == "repeat":
            out.append(repeat_drill(rng, [docs[d] for d in train_sats]))
            continue
        fresh = kind.startswith("new:")
        fam, fmt = kind.removeprefix("new:").split("/") if "/" in kind else (_DRILLS[kind], "")
        pool = pools[fam]
        p = pool[cursor[fam] % len(pool)]
        cursor[fam] += 1
        if fresh:
            p = fresh_satellite_problem(p, docs, rng)
        if kind in _DRILLS:
            p, fmt = {**p, "passages": [_gold(p, docs)]}, ("rag" if fam == "lookup" else "rag_tools")
        out.append(render(p, fmt, docs, rng))
    return out


_DRILLS = {"lookup1": "lookup", "compound1": "compound"}


def fresh_satellite_problem(
    problem: dict[str, Any], docs: dict[str, str], rng: random.Random
) -> dict[str, Any]:
    """The same question about a new fictional satellite (in no catalog); its passage replaces the gold."""
    from demo import make_world as mw

    taken = {t.split(":", 1)[0] for d, t in docs.items() if d.startswith("sat-")}
    name = next(
        n
        for n in (
            "".join(rng.choice(x) for x in (mw.ONSETS, mw.VOWELS, mw.ONSETS, mw.VOWELS, mw.CODAS))
            + f"-{rng.randint(10, 99)}"
            for _ in range(1000)
        )
        if n not in taken
    )
    sat = {
        "doc_id": "new",
        "name": name,
        "operator": rng.choice(mw.OPERATORS),
        "altitude_km": rng.randint(mw.ALT_MIN, mw.ALT_MAX),
        "inclination_deg": round(rng.uniform(0.0, 105.0), 1),
        "launch_year": rng.randint(1998, 2025),
    }
    if problem["family"] == "lookup":
        attr = next(
            a
            for a, t in mw.LOOKUP_TEMPLATES.items()
            if t.format(name=problem["satellite"]) == problem["question"]
        )
        new = mw.lookup_problem(sat, attr)
    else:
        new = mw.compound_problem(sat, problem["tool"])
    new["passages"] = [d for d in problem["passages"] if d != problem["gold_doc"]][:2] + ["new"]
    new["extra_docs"] = {"new": mw.satellite_text(sat)}
    return new


def repeat_drill(rng: random.Random, passages: list[str]) -> tuple[str, str]:
    """A copy drill: a number, decimal or catalog phrase (from one of passages) to repeat verbatim."""
    r = rng.random()
    if r < 0.4:
        x = str(rng.randint(10, 99999))
    elif r < 0.7:
        x = f"{rng.uniform(0, 200):.{rng.randint(1, 2)}f}"
    else:
        words = rng.choice(passages).rstrip(".").split(", ")
        x = rng.choice(words).split(": ")[-1]
    return build_prompt(f"Repeat {x}."), f" {x}\n"


def _gold(problem: dict[str, Any], docs: dict[str, str]) -> str:
    """The doc id of the passage that names the problem's satellite."""
    name = problem["satellite"]
    return next(d for d in problem["passages"] if docs[d].startswith(name + ":"))
