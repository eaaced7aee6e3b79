"""Generations plus the suite in, one EvalLog out: every sample's answer judged, and tool arms' paths read.

    log = score_generations(load_generations(G), load_suite(S), suite_name, suite_revision, suite_sha256)

The scorer checks that the generations answer this suite (the same item ids, and the questions they were
generated from, by their pinned sha256), then judges each sample with the item's verifier
(scoring.verifiers) and, in tool arms, gives it a path verdict (scoring.paths). The log records the
scorer's name, SCORER_VERSION and settings, so two logs scored differently are never taken for one. Each
item carries the suite's question and reference answer beside the prompt, for a reader. A tool arm's
counts of answered and failed calls and server restarts are carried into the log as they are.

`math` and `python` verifiers judge each answer under a time limit (verifier_timeout_s, 30 s by default; a
suite item's verifier may set its own `timeout_s`): an answer past it scores 0, its sample's
`no_answer_reason` says so, and the log counts such answers in `scorer.timeouts`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from contract.evallog import (
    FORMAT_VERSION,
    EvalLog,
    ItemResult,
    SampleRecord,
    ScorerInfo,
    VerifierInfo,
    undecided_of,
)
from contract.generations import Generations, GenItem, GenSample
from contract.provenance import NOT_RECORDED
from contract.suite import SuiteItem, questions_sha256
from scoring import reading, verifiers
from scoring.paths import path_verdict
from scoring.timelimit import DEFAULT_TIMEOUT_S

SCORER_NAME = "reasoning-delta"
# Bump whenever a verdict can change (answer extraction, a verifier, the path rules): the EvalLog records it,
# and the score stages rerun because their code changed.
SCORER_VERSION = "4.1"


class ScoringError(ValueError):
    """Generations that cannot be scored against this suite; the message names the files and the fix."""


def verifier_infos(items: Sequence[SuiteItem]) -> list[VerifierInfo]:
    """Each verifier the suite uses, once, with its implementation and version (imports user functions)."""
    seen: dict[tuple[str, str], VerifierInfo] = {}
    for item in items:
        try:
            name, version = verifiers.describe(item.verifier)
        except verifiers.VerifierError as e:
            raise ScoringError(f"suite item {item.item_id!r}: {e}") from e
        seen.setdefault(
            (item.verifier.type, name), VerifierInfo(type=item.verifier.type, name=name, version=version)
        )
    return list(seen.values())


def answer_setting(gens: Generations) -> str:
    """Where the scorer reads each sample's answer in these generations, in words (the log records it)."""
    rule = gens.protocol.answer
    if rule is not None:
        return f"protocol.answer {rule}: thinking stripped; {reading.RULE_TEXT[rule]}, placeholders skipped"
    if not gens.chat:
        return "thinking stripped; plain: the first 'Answer:' line with an answer (what follows is not read)"
    return f"thinking stripped; chat, the parity reader: {reading.PARITY_TEXT}; placeholders skipped"


def scorer_info(
    gens: Generations, items: Sequence[SuiteItem] = (), timeout_s: float = DEFAULT_TIMEOUT_S
) -> ScorerInfo:
    """Name, version, settings and verifiers of the scorer as it scores these generations."""
    return ScorerInfo(
        name=SCORER_NAME,
        version=SCORER_VERSION,
        settings={
            "answer": answer_setting(gens),
            "lenient_answer": reading.LENIENT_TEXT,
            "chat": gens.chat,
            "path_evaluation": gens.arm.tools,
            "verifier_timeout_s": timeout_s,
        },
        verifiers=verifier_infos(items) if items else None,
    )


def score_sample(
    item: SuiteItem,
    gen: GenItem,
    sample: GenSample,
    chat: bool,
    tool_arm: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rule: str | None = None,
) -> SampleRecord:
    """One scored sample: the answer read from its text, the verifier's score and (tool arms) its path."""
    return _scored(item, gen, sample, chat, tool_arm, timeout_s, rule)[0]


def _scored(
    item: SuiteItem,
    gen: GenItem,
    sample: GenSample,
    chat: bool,
    tool_arm: bool,
    timeout_s: float,
    rule: str | None = None,
) -> tuple[SampleRecord, verifiers.Verdict, float]:
    """score_sample's record, its verdict (timed out? read by which rule?) and the lenient reader's score."""
    text = verifiers.scored_text(gen.prompt, sample.text)
    verdict, lenient = verifiers.score_both(item, text, chat=chat, timeout_s=timeout_s, rule=rule)
    path = None
    if tool_arm:
        expected = frozenset([item.tool]) if item.tool else None
        path = path_verdict(expected, sample.tool_calls or [], verdict.answer, verdict.score == 1.0)
    # Every generated field is carried over as it is; scoring adds only its verdicts.
    record = SampleRecord(
        **sample.model_dump(),
        score=verdict.score,
        verdict=verifiers.verdict_word(verdict),
        answer=verdict.answer,
        lenient_answer=lenient.answer if lenient.answer != verdict.answer else None,
        no_answer_reason=verdict.reason,
        path=path,
    )
    return record, verdict, lenient.score


def _check_items(gens: Generations, items: Sequence[SuiteItem], where: str) -> None:
    """Refuse generations of other items or other questions than the suite's."""
    suite_ids = [it.item_id for it in items]
    gen_ids = {g.item_id for g in gens.items}
    missing = [i for i in suite_ids if i not in gen_ids]
    extra = sorted(gen_ids - set(suite_ids))
    if missing or extra:
        what = f"missing {len(missing)} suite items (first {missing[0]!r})" if missing else ""
        what += (", " if what else "") + (
            f"has {len(extra)} items not in the suite (first {extra[0]!r})" if extra else ""
        )
        raise ScoringError(f"{where}: items: {what}; regenerate the arm for this suite")
    pinned = gens.pins.get("questions")
    now = f"sha256:{questions_sha256(items)}"
    if pinned is not None and pinned != now:
        raise ScoringError(
            f"{where}: pins.questions: generated from other questions ({pinned[:19]}...) than the suite's "
            f"({now[:19]}...); regenerate the arm (dvc repro) before scoring"
        )


def score_generations(
    gens: Generations,
    items: Sequence[SuiteItem],
    suite_name: str,
    suite_revision: str,
    suite_sha256: str | None = None,
    where: str = "generations",
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> EvalLog:
    """The arm's EvalLog: every sample of gens judged against its suite item, items in suite order."""
    _check_items(gens, items, where)
    info = scorer_info(gens, items, timeout_s)
    by_id = {g.item_id: g for g in gens.items}
    proto = gens.protocol
    results = []
    timeouts = 0
    read_by: Counter[str] = Counter()
    for item in items:
        gen = by_id[item.item_id]
        try:
            scored = [
                _scored(item, gen, s, gens.chat, gens.arm.tools, timeout_s, proto.answer) for s in gen.samples
            ]
        except verifiers.VerifierError as e:
            raise ScoringError(f"{where}: suite {e}") from e
        samples = [record for record, _, _ in scored]
        timeouts += sum(verdict.timed_out for _, verdict, _ in scored)
        read_by.update(verdict.read_by or "none" for _, verdict, _ in scored)
        results.append(
            ItemResult(
                item_id=item.item_id,
                family=item.family,
                scores=[s.score for s in samples],
                gen_tokens=[int(s.gen_tokens or 0) for s in samples],
                lenient_scores=[lenient for _, _, lenient in scored],
                undecided=undecided_of(samples),
                question=item.question,
                reference_answer=str(item.answer),
                prompt=gen.prompt,
                retrieved=gen.retrieved,
                samples=samples,
            )
        )
    info.timeouts = timeouts
    info.read_by = dict(sorted(read_by.items()))
    pins = dict(gens.pins)
    if suite_sha256 is not None:
        pins["suite"] = f"sha256:{suite_sha256}"
    return EvalLog(
        format_version=FORMAT_VERSION,
        model_name=gens.model,
        suite=suite_name,
        suite_revision=suite_revision,
        n_samples=proto.k,
        temperature=proto.temperature,
        max_tokens=proto.max_tokens,
        driver=str(gens.engine.driver),
        # The pipeline's generations carry no wall-clock time (it would change on every rerun): the time
        # is in their provenance record, and the log says so.
        measured_at=gens.finished_at or NOT_RECORDED,
        items=results,
        arm=gens.arm.name,
        attribution=gens.arm.attribution,
        top_p=proto.top_p,
        seed=proto.seed,
        pins=pins,
        engine=gens.engine,
        protocol=proto,
        retrieval=gens.retrieval,
        scorer=info,
        started_at=gens.started_at,
        finished_at=gens.finished_at,
        tool_calls=gens.tool_calls,
    )
