"""The partial-prompt probes of one checkpoint (Wu et al. 2025, arXiv 2507.10532), greedy, over a suite.

- completion: the model is given `Question: ` and the first `prefix` share of the question (cut back to a
  word boundary) as raw text, with no chat template, and continues it greedily; the continuation, cut to
  the rest's number of words, is compared with the rest by exact match (whitespace collapsed) and by
  ROUGE-L F1 (Google's `rouge-score`, the implementation the paper's field reports);
- answer: the truncated question is asked in the model's own plain or chat prompt, the answer read and
  judged by the suite's verifier (scoring.verifiers), as a sample is scored.

Both are one greedy request per item: a model that recites the rest, or answers a question it was not
fully asked, has likely seen the item. Neither proves the opposite (docs/contamination.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from contract.contamination import ProbeItem
from contract.engine import Decoding, Engine, GenRequest
from contract.suite import SuiteItem
from pipeline.prompts import PLAIN_STOP, is_chat_model, make_prompt
from scoring.verifiers import score, scored_text

COMPLETION_HEAD = "Question: "
GREEDY = Decoding(temperature=0.0, top_p=1.0)


def rouge_name() -> str:
    """The ROUGE-L implementation the probe files record."""
    return f"rouge-score {version('rouge-score')} (rougeL F1, no stemming)"


def split_question(question: str, prefix: float) -> tuple[str, str]:
    """The first `prefix` share of the question's characters, cut back to a word boundary, and the rest."""
    cut = round(len(question) * prefix)
    space = question.rfind(" ", 0, cut + 1)
    if space <= 0:
        space = question.find(" ")
    if space <= 0:
        return question, ""
    return question[:space], question[space:].strip()


def collapse(text: str) -> str:
    """Whitespace collapsed to single spaces."""
    return " ".join(text.split())


def compare(rest: str, continuation: str) -> tuple[str, bool, float]:
    """The continuation cut to the rest's words, exact match (whitespace collapsed), ROUGE-L F1."""
    from rouge_score import rouge_scorer

    cut = " ".join(continuation.split()[: len(rest.split())])
    if not rest:
        return cut, False, 0.0
    f1 = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False).score(rest, cut)["rougeL"].fmeasure
    return cut, collapse(cut) == collapse(rest), float(f1)


@dataclass(frozen=True)
class ProbePrompts:
    """The two prompts of each item and the parts of its question."""

    items: list[SuiteItem]
    parts: list[tuple[str, str]]
    completion: list[str]
    answer: list[str]
    chat: bool


def probe_prompts(items: Sequence[SuiteItem], prefix: float, tokenizer: Any) -> ProbePrompts:
    """Each item's completion prompt (raw text) and answer prompt (the model's own prompt format)."""
    chat = is_chat_model(tokenizer)
    parts = [split_question(it.question, prefix) for it in items]
    completion = [COMPLETION_HEAD + head for head, _ in parts]
    answer = [make_prompt(tokenizer, chat, head, (), ()) for head, _ in parts]
    return ProbePrompts(list(items), parts, completion, answer, chat)


def run_probes(
    engine: Engine, prompts: ProbePrompts, extra_tokens: int, answer_tokens: int
) -> tuple[list[ProbeItem], float]:
    """Both probes of every item on a started engine (greedy); the per-item records and the seconds taken."""
    t0 = time.perf_counter()
    # The completion prompts are raw text: the engine adds the BOS token a plain prompt needs.
    engine.chat = False
    completion_requests = [
        GenRequest(("complete", i), prompt, 0, engine.count_tokens(" " + rest) + extra_tokens, ("\n",))
        for i, (prompt, (_, rest)) in enumerate(zip(prompts.completion, prompts.parts, strict=True))
    ]
    completions = engine.generate(completion_requests, GREEDY)
    engine.chat = prompts.chat
    # A plain prompt's answer ends where the plain format stops every arm's sample (a chat model: at EOS).
    stop = () if prompts.chat else PLAIN_STOP
    answer_requests = [
        GenRequest(("answer", i), prompt, 0, answer_tokens, stop) for i, prompt in enumerate(prompts.answer)
    ]
    answers = engine.generate(answer_requests, GREEDY)
    rows = []
    for it, (head, rest), done, said, prompt in zip(
        prompts.items, prompts.parts, completions, answers, prompts.answer, strict=True
    ):
        cut, exact, rouge_l = compare(rest, done.text)
        verdict = score(it, scored_text(prompt, said.text), prompts.chat)
        rows.append(
            ProbeItem(
                item_id=it.item_id, prefix=head, rest=rest, completion=cut, exact=exact, rouge_l=rouge_l,
                answer_text=said.text, answer=verdict.answer, answer_right=verdict.score == 1.0,
            )
        )  # fmt: skip
    return rows, time.perf_counter() - t0
