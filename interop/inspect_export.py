"""Export EvalLogs as Inspect AI logs, so that `inspect view` browses every arm's transcripts.

    python -m interop.inspect_export evallogs/*.json --out DIR

writes DIR/<arm>.eval per log (arm: the log's `arm`, else its file stem) through inspect-ai's own types
(EvalLog, EvalSample, Score) and writer (write_eval_log). Each of our k samples of an item is one Inspect
sample at epoch 1..k: input the item's prompt (the item id when the log has none), output the sample's text,
the score under the scorer named by the log's scorer, its answer, and the sample's metadata (family, seed,
finish reason, tokens, passages, tool calls, path verdict). `inspect view --log-dir DIR` then opens them.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.evallog import EvalLog, EvalLogError, ItemResult, SampleRecord, load
from contract.files import PathCheckError, output_dir

# The exit status of a refusal, as every command of the project's.
EXIT_REFUSED = 2


def _created(log: EvalLog) -> str:
    """The log's measured_at when it is a time (pipeline logs keep the time elsewhere), else now."""
    for value in (log.started_at, log.measured_at):
        try:
            return datetime.fromisoformat(value or "").isoformat()
        except ValueError:
            continue
    return datetime.now(UTC).isoformat()


def _messages(prompt: str, s: SampleRecord | None, model: str) -> list[Any]:
    """The sample as a conversation: the prompt, the answer with its tool calls, and the tools' results."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    messages: list[Any] = [ChatMessageUser(content=prompt)]
    if s is None:
        return messages
    calls = [
        ToolCall(
            id=f"call-{n}",
            function=c.name or "(unparsed)",
            arguments=c.arguments if isinstance(c.arguments, dict) else {"raw": c.raw or c.arguments},
        )
        for n, c in enumerate(s.tool_calls or [])
    ]
    messages.append(ChatMessageAssistant(content=s.text or "", tool_calls=calls or None, model=model))
    for call, record in zip(calls, s.tool_calls or [], strict=True):
        result = record.error if record.error is not None else record.result
        messages.append(
            ChatMessageTool(
                content="" if result is None else str(result), tool_call_id=call.id, function=call.function
            )
        )
    return messages


def _sample(log: EvalLog, it: ItemResult, j: int, scorer: str) -> Any:
    """Sample j of an item as an Inspect EvalSample (epoch j + 1)."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    s = it.samples[j] if it.samples is not None else None
    prompt = it.prompt if it.prompt is not None else it.item_id
    # vLLM's "length" is Inspect's "max_tokens"; every other finish is a stop.
    stop = "max_tokens" if s is not None and s.finish_reason == "length" else "stop"
    output = ModelOutput.from_content(
        model=log.model_name, content=(s.text if s else None) or "", stop_reason=stop
    )
    if s is not None and s.gen_tokens is not None:
        inp = s.prompt_tokens or 0
        output.usage = ModelUsage(
            input_tokens=inp, output_tokens=s.gen_tokens, total_tokens=inp + s.gen_tokens
        )
    metadata: dict[str, Any] = {"family": it.family}
    if it.retrieved is not None:
        metadata["passages"] = [d.model_dump(exclude_none=True) for d in it.retrieved]
    if s is not None:
        metadata.update(
            s.model_dump(
                include={
                    "seed",
                    "finish_reason",
                    "prompt_tokens",
                    "gen_tokens",
                    "rounds",
                    "path",
                    "no_answer_reason",
                },
                exclude_none=True,
            )
        )
        if s.tool_calls is not None:
            metadata["tool_calls"] = [c.model_dump(exclude_none=True) for c in s.tool_calls]
    score = Score(
        value=it.scores[j],
        answer=s.answer if s else None,
        explanation=s.no_answer_reason if s else None,
        metadata={"path": s.path} if s is not None and s.path is not None else None,
    )
    return EvalSample(
        id=it.item_id,
        epoch=j + 1,
        input=prompt,
        target="",
        messages=_messages(prompt, s, log.model_name),
        output=output,
        scores={scorer: score},
        metadata={k: v for k, v in metadata.items() if v is not None},
    )


def to_inspect(log: EvalLog, arm: str) -> Any:
    """One EvalLog as an Inspect EvalLog (inspect-ai's own types), every sample at its epoch."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalMetric, EvalResults, EvalScore, EvalSpec
    from inspect_ai.log import EvalLog as InspectLog
    from inspect_ai.model import GenerateConfig

    scorer = log.scorer.name if log.scorer is not None else "score"
    samples = [_sample(log, it, j, scorer) for it in log.items for j in range(log.n_samples)]
    mean = sum(sum(it.scores) for it in log.items) / max(1, len(log.items) * log.n_samples)
    spec = EvalSpec(
        created=_created(log),
        task=log.suite,
        task_version=log.suite_revision,
        dataset=EvalDataset(
            name=log.suite, samples=len(log.items), sample_ids=[it.item_id for it in log.items]
        ),
        model=log.model_name,
        model_generate_config=GenerateConfig(
            temperature=log.temperature, max_tokens=log.max_tokens, top_p=log.top_p, seed=log.seed
        ),
        config=EvalConfig(epochs=log.n_samples),
        metadata={
            "arm": arm,
            "attribution": log.attribution,
            "driver": log.driver,
            "scorer": log.scorer.model_dump() if log.scorer is not None else None,
            "pins": log.pins,
            "exported_by": "reasoning-delta interop.inspect_export",
        },
    )
    results = EvalResults(
        total_samples=len(samples),
        completed_samples=len(samples),
        scores=[
            EvalScore(
                name=scorer, scorer=scorer, metrics={"accuracy": EvalMetric(name="accuracy", value=mean)}
            )
        ],
    )
    return InspectLog(eval=spec, status="success", results=results, samples=samples)


def _export(log: EvalLog, arm: str, target: Path) -> str | None:
    """Write one Inspect log under a temporary name, renamed when whole; why it failed (None: written)."""
    from inspect_ai.log import write_eval_log

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write_eval_log(to_inspect(log, arm), str(tmp), format="eval")
        os.replace(tmp, target)
        return None
    except OSError as e:
        why = str(e.strerror or e)
    # Out of the except block, so that the traceback no longer holds inspect_ai's zip writer: finalized
    # now, it fails again on the same full disk, a second report of the one failure, silenced here.
    hook = sys.unraisablehook
    sys.unraisablehook = lambda _unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook
    tmp.unlink(missing_ok=True)
    return why


def main(argv: list[str] | None = None) -> int:
    """Command line: one Inspect log per EvalLog given."""
    ap = argparse.ArgumentParser(
        prog="python -m interop.inspect_export",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument("logs", nargs="+", metavar="LOG", help="EvalLog JSON files, one per arm")
    ap.add_argument("--out", required=True, help="folder for <arm>.eval")
    args = ap.parse_args(argv)
    try:
        output_dir(args.out, "--out")
        logs = [(Path(p), load(p)) for p in args.logs]
    except (PathCheckError, EvalLogError) as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    names: dict[str, Path] = {}
    for path, log in logs:
        arm = log.arm or path.stem
        if arm in names:
            print(
                f"refused: {names[arm]} and {path}: both are arm {arm!r}; export one log per arm",
                file=sys.stderr,
            )
            return EXIT_REFUSED
        names[arm] = path
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path, log in logs:
        arm = log.arm or path.stem
        target = out / f"{arm}.eval"
        # Under a temporary name, renamed when whole: a full disk or a kill never leaves half an .eval file.
        why = _export(log, arm, target)
        if why is not None:
            print(
                f"refused: {target}: cannot write ({why}); free space or fix the folder, then rerun",
                file=sys.stderr,
            )
            return EXIT_REFUSED
        print(f"{path} -> {target} ({len(log.items)} items x {log.n_samples} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
