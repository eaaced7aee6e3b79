"""The judge stage: ask a model judge where the rules left room, and audit it on samples they decided.

    python -m pipeline.judge                   params.yaml `judge`: evallogs/<arm>.json -> judged/<arm>.json
    python -m pipeline.judge --logs L --out O --arms a b [--params P]

For each arm of params.yaml `arms`: the cascade asks the judge about every sample the rules did not settle
(`judge.ask`: undecided, the default; wrong adds the samples they call wrong; all asks every sample, for an
audit of everything), and the audit asks it about a random draw of `audit_size` rule-decided samples (all
where fewer). The judged log is the arm's EvalLog with each sample's final verdict as its score (the rules'
where they said right or were not overruled, the judge's where the cascade asked and it gave a verdict) and,
on each asked sample, the rules' verdict, the judge's, its raw reply and the final one (SampleRecord.judge).
The judge's settings, template hash and counts go into the log's scorer settings; judged/judge.json sums
them up. Without a `judge` in params.yaml the stage writes judged/judge.json saying so and nothing else.
A sample with no text, or an empty concluding part, is not equivalent without a call.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write, atomic_write_set
from contract.evallog import EvalLog, EvalLogError, ItemResult, undecided_of
from contract.judge import JudgeRecord, JudgeSettings, asks, final_verdict, rule_verdict
from contract.log_folder import LogFolderError, read_arm_logs
from contract.params import problem
from pipeline.config import ConfigError, load_params
from pipeline.engines import EngineStartError
from pipeline.judge_client import Call, JudgeCallError, ReplyCache, ask_all
from scoring import judge_prompt as jp

SUMMARY = "judge.json"


def audit_draw(log: EvalLog, arm: str, settings: JudgeSettings) -> set[tuple[int, int]]:
    """The arm's audit sample: (item, sample) positions of rule-decided samples, drawn by the audit seed."""
    decided = [
        (i, j)
        for i, it in enumerate(log.items)
        for j, s in enumerate(it.samples or [])
        if rule_verdict(s) != "undecided"
    ]
    rng = random.Random(f"{settings.audit_seed}|{arm}")
    return set(rng.sample(decided, min(settings.audit_size, len(decided))))


def _judgeable(it: ItemResult, j: int, where: Path) -> None:
    """Refuse a sample the judge cannot be shown: its item lacks the question or reference, or its text was
    not kept (an empty text is an empty response, which is judged)."""
    for name in ("question", "reference_answer"):
        if getattr(it, name) is None:
            raise ConfigError(
                f"{where}: item {it.item_id!r}: {name}: absent; the judge is shown it (rescore)"
            )
    if (it.samples or [])[j].text is None:
        raise ConfigError(
            f"{where}: item {it.item_id!r}: samples[{j}].text: absent; the judge reads each sample's text"
        )


def _plan(log: EvalLog, arm: str, settings: JudgeSettings, where: Path) -> dict[tuple[int, int], Any]:
    """Every asked sample's (rule verdict, cascade, audit, shown text, call or None)."""
    audit = audit_draw(log, arm, settings)
    plan: dict[tuple[int, int], Any] = {}
    for i, it in enumerate(log.items):
        if it.samples is None:
            raise ConfigError(
                f"{where}: item {it.item_id!r}: samples: absent; the judge reads each sample's text"
            )
        for j, s in enumerate(it.samples):
            rule = rule_verdict(s)
            cascade, audited = asks(settings.ask, rule), (i, j) in audit
            if not (cascade or audited):
                continue
            _judgeable(it, j, where)
            shown = jp.concluding_part(s.text or "", settings.concluding_chars)
            call = None
            if shown:
                q, ref = it.question or "", it.reference_answer or ""
                asking = f"max_tokens={settings.max_tokens} seed={settings.seed}"
                key = jp.cache_key(settings.model, settings.revision, q, ref, shown, asking)
                call = Call(key, jp.messages(q, ref, shown), jp.call_seed(settings.seed, key))
            plan[(i, j)] = (rule, cascade, audited, call)
    return plan


def _judged(
    log: EvalLog, plan: dict[tuple[int, int], Any], cache: ReplyCache, settings: JudgeSettings
) -> EvalLog:
    """The judged log: final verdicts as scores, a JudgeRecord on every asked sample."""
    items: list[ItemResult] = []
    for i, it in enumerate(log.items):
        samples = list(it.samples or [])
        for j, s in enumerate(samples):
            if (i, j) not in plan:
                continue
            rule, cascade, audited, call = plan[(i, j)]
            reply = None if call is None else cache.replies[call.key]
            verdict = "not_equivalent" if call is None else jp.parse_reply(reply)
            note = "empty response: not equivalent without a call" if call is None else None
            final = final_verdict(rule, cascade, verdict)
            record = JudgeRecord(
                rule=rule,
                cascade=cascade,
                audit=audited,
                verdict=verdict,
                reply=reply,
                note=note,
                final=final,
            )
            update: dict[str, Any] = {"score": 1.0 if final == "right" else 0.0, "judge": record}
            if s.verdict is not None:
                update["verdict"] = final
            samples[j] = s.model_copy(update=update)
        fields: dict[str, Any] = {"samples": samples, "scores": [s.score for s in samples]}
        if any(s.verdict is not None for s in samples):
            fields["undecided"] = undecided_of(samples)
        items.append(it.model_copy(update=fields))
    return log.model_copy(update={"items": items})


def judge_settings_record(settings: JudgeSettings) -> dict[str, Any]:
    """What pins a judge's verdicts: the judge, its revision, the template and how it was asked."""
    # Not the endpoint's URL: replicas or a moved server answer as the same pinned judge.
    keep = ("model", "revision", "ask", "audit_size", "audit_seed", "seed", "max_tokens")
    return {k: getattr(settings, k) for k in keep} | {
        "concluding_chars": settings.concluding_chars,
        "agreement_floor": settings.agreement_floor,
        "template": jp.TEMPLATE_VERSION,
        "template_sha256": jp.TEMPLATE_SHA256,
    }


def _counts(log: EvalLog) -> dict[str, int]:
    records = [s.judge for it in log.items for s in it.samples or [] if s.judge is not None]
    return {
        "samples": sum(len(it.scores) for it in log.items),
        "cascade": sum(r.cascade for r in records),
        "audit": sum(r.audit for r in records),
        "no_verdict": sum(r.verdict == "no_verdict" for r in records),
        "overruled": sum(r.cascade and r.final != r.rule for r in records),
    }


def run(logs: Path, out: Path, arms: list[str], settings: JudgeSettings | None) -> dict[str, Any]:
    """Judge every arm's log into out/; return the summary written to out/judge.json."""
    out.mkdir(parents=True, exist_ok=True)
    if settings is None:
        summary: dict[str, Any] = {"judge": None, "why": "params.yaml names no judge"}
        atomic_write(out / SUMMARY, json.dumps(summary, indent=1) + "\n")
        return summary
    found = read_arm_logs(logs, arms, samples=True)
    if missing := [a for a in arms if a not in found]:
        raise ConfigError(
            f"{logs / (missing[0] + '.json')}: no EvalLog of arm {missing[0]!r}, which the judge's arms "
            "list; run its stages (dvc repro) or leave it out of --arms / params.yaml `arms`"
        )
    read = {arm: log for arm, (_, log) in found.items()}
    plans = {arm: _plan(log, arm, settings, found[arm][0]) for arm, log in read.items()}
    cache = ReplyCache(Path(settings.cache))
    calls = [c for plan in plans.values() for (_, _, _, c) in plan.values() if c is not None]
    made = ask_all(calls, settings, cache)
    record = judge_settings_record(settings)
    summary = {"judge": record, "calls": made, "cached": len({c.key for c in calls}) - made, "arms": {}}
    files: dict[Path, str] = {}
    for arm, log in read.items():
        judged = _judged(log, plans[arm], cache, settings)
        if judged.scorer is not None:
            settings_now = {**judged.scorer.settings, "judge": record}
            judged = judged.model_copy(
                update={"scorer": judged.scorer.model_copy(update={"settings": settings_now})}
            )
        summary["arms"][arm] = _counts(judged)
        files[out / f"{arm}.json"] = judged.model_dump_json(indent=1, exclude_none=True) + "\n"
    # One set: a stage stopped while writing leaves the previous logs and summary, never a mix.
    atomic_write_set({**files, out / SUMMARY: json.dumps(summary, indent=1) + "\n"})
    return summary


def _settings(args: argparse.Namespace) -> tuple[JudgeSettings | None, list[str]]:
    """The judge's settings and the arms, from --judge and --arms or from the params file."""
    if args.judge is None:
        params = load_params(args.params)
        return params.judge, args.arms or list(params.arms or [])
    if not args.arms:
        raise ConfigError("--judge: give the arms to judge with --arms")
    import yaml
    from pydantic import ValidationError

    try:
        return JudgeSettings.model_validate(yaml.safe_load(args.judge.read_text()) or {}), args.arms
    except OSError as e:
        raise ConfigError(f"{args.judge}: cannot read ({e.strerror or e})") from None
    except ValidationError as e:
        raise ConfigError(problem(args.judge, e, JudgeSettings)) from None


def main(argv: list[str] | None = None) -> int:
    """Command line: judge the arms of params.yaml (or --arms) from --logs into --out."""
    ap = argparse.ArgumentParser(prog="python -m pipeline.judge", description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--logs", type=Path, default=Path("evallogs"), help="the rules' EvalLogs, <arm>.json")
    ap.add_argument("--out", type=Path, default=Path("judged"), help="folder of the judged logs")
    ap.add_argument("--arms", nargs="+", help="arms to judge (default: params.yaml `arms`)")
    ap.add_argument(
        "--judge", type=Path, help="a YAML file of the judge's settings (instead of params.yaml `judge`)"
    )
    args = ap.parse_args(argv)
    try:
        settings, arms = _settings(args)
        summary = run(args.logs, args.out, arms, settings)
    except (ConfigError, EvalLogError, LogFolderError, JudgeCallError, EngineStartError) as e:
        print(f"judge: {e}", file=sys.stderr)
        return 2
    if summary["judge"] is None:
        print(f"judge: {args.params} names no judge; wrote {args.out / SUMMARY} only")
        return 0
    print(
        f"judge: {summary['calls']} calls to {summary['judge']['model']}, {summary['cached']} replies from "
        f"the cache; wrote {len(arms)} judged logs to {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
