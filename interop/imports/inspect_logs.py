"""Inspect AI logs (.eval or .json) into a ToolFile, read with inspect-ai's own read_eval_log.

Each sample of an Inspect log is one (sample id, epoch): epochs become the item's samples in epoch order.
The score is the chosen scorer's value turned into a number by inspect-ai's value_to_float (C = 1, I = 0,
P = 0.5, booleans, numbers), or with --verifier this project's verdict against the sample's target (the
scorer's value kept beside it); the text is the model's completion, the answer the scorer's, the tokens the
output's usage; the messages (with tool calls and results) are kept as the sample's transcript, and its tool
calls as records (a call no tool message answered is marked failed), which the log counts; where the run
recorded token log-probabilities (logprobs on), their mean per sample is kept (the calibration reads it).
Items are named by the sample id; the hash of the input checks that two logs use one id for one sample.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from interop.imports.tool_file import ImportRefusal, ItemDraft, ToolFile, plain_text, text_hash, unit_score

TOOL = "inspect-ai"


def _text(content: Any) -> str:
    """The text of a message's content (a string, or content parts of which the text ones are kept)."""
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def _transcript(messages: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages as plain dicts, and the tool calls with their results (ToolCallRecord fields)."""
    turns, calls = [], []
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    for m in messages:
        turn: dict[str, Any] = {"role": m.role, "content": _text(m.content)}
        for call in getattr(m, "tool_calls", None) or []:
            turn.setdefault("tool_calls", []).append(
                {"id": call.id, "name": call.function, "arguments": call.arguments}
            )
            answer = results.get(call.id)
            error = getattr(answer, "error", None)
            calls.append({
                "name": call.function,
                "arguments": call.arguments,
                "result": _text(answer.content) if answer is not None else None,
                "error": error.message if error is not None else None,
                # No tool message for the call: the harness never answered it.
                "failed": True if answer is None else None,
            })  # fmt: skip
        turns.append(turn)
    return turns, calls


def _mean_logprob(output: Any) -> float | None:
    """The mean token log-probability of the output's first choice, when the run recorded logprobs."""
    if output is None or not output.choices or output.choices[0].logprobs is None:
        return None
    values = [t.logprob for t in output.choices[0].logprobs.content]
    # A log-probability above 0 is a rounding artefact of the provider's (a token of probability 1).
    return min(0.0, sum(values) / len(values)) if values else None


def _prompt(sample: Any) -> str:
    """The sample's input as the model got it: the string, or the messages as 'role: text' lines."""
    if isinstance(sample.input, str):
        return sample.input
    return "\n".join(f"{m.role}: {_text(m.content)}" for m in sample.input)


class _Unreadable(logging.Handler):
    """Catches value_to_float's warning for a value it cannot read (it returns 0.0 for it, a wrong score)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        """Count one value that could not be converted."""
        self.count += 1


def _log(path: Path) -> Any:
    """The Inspect log of a finished run with its samples, read by inspect-ai's read_eval_log."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path))
    except FileNotFoundError:
        raise ImportRefusal(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ImportRefusal(f"{path}: is a folder; give the log file (.eval or .json)") from None
    except Exception as e:  # inspect-ai raises several types for a file that is not one of its logs
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise ImportRefusal(
            f"{path}: not an Inspect log readable by inspect-ai's read_eval_log: {first}"
        ) from e
    if log.status != "success":
        raise ImportRefusal(
            f"{path}: status: is {log.status!r}; import only a log whose run finished (success)"
        )
    if not log.samples:
        raise ImportRefusal(f"{path}: samples: the log holds no samples (written with --no-log-samples?)")
    return log


def _tool_file(path: Path, log: Any, scorer: str) -> ToolFile:
    """The log's run settings (its eval spec), no documents yet."""
    config = log.eval.model_generate_config
    version = log.eval.packages.get("inspect_ai", "(version not recorded)")
    return ToolFile(
        path=path,
        tool=TOOL,
        version=version,
        model_name=log.eval.model,
        suite=log.eval.task,
        suite_revision=str(log.eval.task_version),
        measured_at=log.eval.created,
        metric=scorer,
        metric_settings={"scorer": scorer},
        decoding={"temperature": config.temperature, "top_p": config.top_p, "max_tokens": config.max_tokens},
        seed=config.seed,
        named_by="sample id",
        model_from="the log's eval.model",
        k_is_setting=False,
    )


def _score(path: Path, where: str, s: Any, scorer: str) -> tuple[Any, float]:
    """The sample's Score under the scorer and its value as a number (value_to_float), unchecked."""
    from inspect_ai.scorer import value_to_float

    if s.error is not None:
        raise ImportRefusal(f"{path}: {where}: error: {s.error.message}; rerun the sample or drop it")
    score = (s.scores or {}).get(scorer)
    if score is None:
        raise ImportRefusal(f"{path}: {where}: scores.{scorer}: missing; rescore the log (inspect score)")
    if isinstance(score.value, dict | list):
        raise ImportRefusal(
            f"{path}: {where}: scores.{scorer}.value: {score.value!r} holds several values, not one score"
        )
    unreadable = _Unreadable()
    metric_log = logging.getLogger(value_to_float.__module__)
    metric_log.addHandler(unreadable)
    try:
        value = value_to_float()(score.value)
    finally:
        metric_log.removeHandler(unreadable)
    if unreadable.count:
        raise ImportRefusal(
            f"{path}: {where}: scores.{scorer}.value: {score.value!r} is not a score inspect-ai's "
            "value_to_float reads (C, I, P, N, yes/no, a number)"
        )
    return score, value


def read(path: Path, scorer: str | None = None) -> ToolFile:
    """One Inspect log file, read; refuse an incomplete log, an errored sample or an unknown scorer."""
    log = _log(path)
    samples = log.samples
    names = sorted({name for s in samples for name in (s.scores or {})})
    if scorer is None:
        if len(names) != 1:
            raise ImportRefusal(
                f"{path}: scores: the log has scorers {names}; choose the one to import with --scorer NAME"
            )
        scorer = names[0]
    read_file = _tool_file(path, log, scorer)
    for s in sorted(samples, key=lambda s: (str(s.id), s.epoch)):
        where = f"sample {s.id!r} epoch {s.epoch}"
        score, value = _score(path, where, s, scorer)
        usage = s.output.usage if s.output is not None else None
        turns, calls = _transcript(s.messages)
        family = (s.metadata or {}).get("family")
        prompt = plain_text(path, f"{where}: input", _prompt(s))
        draft = read_file.items.setdefault(
            str(s.id),
            ItemDraft(
                prompt=prompt,
                family=family if isinstance(family, str) else None,
                reference=s.target if isinstance(s.target, str) else "\n".join(s.target),
                content=text_hash(prompt),
                texts=(s.input,) if isinstance(s.input, str) else tuple(_text(m.content) for m in s.input),
                where=f"sample {s.id!r}",
            ),
        )
        text = s.output.completion if s.output is not None else None
        draft.samples.append({
            "tool_score": unit_score(path, f"{where}: scores.{scorer}.value", value),
            "text": plain_text(path, f"{where}: output.completion", text) if text is not None else None,
            "answer": score.answer,
            "finish_reason": s.output.stop_reason if s.output is not None else None,
            "prompt_tokens": usage.input_tokens if usage is not None else None,
            "gen_tokens": usage.output_tokens if usage is not None else None,
            "transcript": turns,
            "tool_calls": calls or None,
            "mean_logprob": _mean_logprob(s.output),
        })  # fmt: skip
    return read_file
