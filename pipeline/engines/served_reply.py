"""What a served engine reads from a server's answers: a completion checked, other JSON, Retry-After.

From an OpenAI-compatible server's answers: a completion reply made into a GenResult, the JSON of its other
endpoints, and how long a busy server asks to be left alone.

A reply that is not a completion (no choices, an empty list, a null text, a text that is not Unicode, no way
to count its tokens) is refused (ReplyError) instead of saved: a sample with an empty text or 0 tokens would
be scored and timed as if the model had written it. The reply's shape is checked by pydantic; the choice of a
hand-written HTTP layer over the openai client is explained in pipeline.engines.openai_engine.
"""

from __future__ import annotations

import json
import math
from email.utils import parsedate_to_datetime
from time import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError

from contract.engine import GenRequest, GenResult
from pipeline.engines import EngineStartError

SETTINGS = "conf/engine/openai.yaml"

# What a finished completion says of why it ended (vLLM's values); anything else is not a finished sample.
FINISHES = ("stop", "length")


class ReplyError(ValueError):
    """A server's answer that is not what its endpoint returns; the message says what is wrong with it."""


class NotJSONError(ReplyError):
    """An answer whose body is not JSON (an HTML page, or a body cut short by a closed connection)."""


class _Logprobs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    token_logprobs: list[StrictFloat | StrictInt | None] | None = None


class _Usage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    prompt_tokens: StrictInt | None = Field(default=None, ge=0)
    completion_tokens: StrictInt | None = Field(default=None, ge=0)


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: StrictStr
    finish_reason: StrictStr
    stop_reason: StrictStr | StrictInt | None = None
    token_ids: list[StrictInt] | None = None
    logprobs: _Logprobs | None = None


class _Completion(BaseModel):
    model_config = ConfigDict(extra="ignore")
    # One request asks for one sample (n = 1): a reply with another number of choices is not its answer.
    choices: list[_Choice] = Field(min_length=1, max_length=1)
    usage: _Usage | None = None


def json_body(payload: bytes) -> Any:
    """The JSON value of an answer's body; NotJSONError quoting its start otherwise."""
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        start = " ".join(payload[:60].decode(errors="replace").split())
        raise NotJSONError(f"a body that is not JSON ({len(payload)} bytes: {start!r})") from None


def error_message(payload: bytes) -> str:
    """The error message of a server's non-200 answer (OpenAI's {"error": {"message": ...}} or its text)."""
    try:
        body = json.loads(payload)
        err = body.get("error", body) if isinstance(body, dict) else body
        message = err.get("message", err) if isinstance(err, dict) else err
    except ValueError:
        message = payload.decode(errors="replace")
    return " ".join(str(message).split())[:300]


def json_of(answer: Any, host: str, path: str, shape: type) -> Any:
    """The JSON body of an answer from path, refused in one line when it is not JSON or not of shape."""
    try:
        body = json_body(answer.content)
    except ReplyError as e:
        raise EngineStartError(
            f"the server at {host} answered {path} with {e}; is it an OpenAI-compatible server (vLLM's)? "
            f"({SETTINGS} base_url)"
        ) from None
    if not isinstance(body, shape):
        raise EngineStartError(
            f"the server at {host} answered {path} with a JSON {type(body).__name__}, not the "
            f"{shape.__name__} an OpenAI-compatible server (vLLM's) returns ({SETTINGS} base_url)"
        )
    return body


def _first_problem(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "the reply"
    return f"{where}: {err['msg']}"


def completion(request: GenRequest, ids: list[int], body: Any) -> GenResult:
    """The GenResult of one completion reply to request (its prompt's token ids: ids); else ReplyError."""
    try:
        reply = _Completion.model_validate(body)
    except ValidationError as e:
        raise ReplyError(f"a reply that is not a completion ({_first_problem(e)})") from None
    choice = reply.choices[0]
    if choice.finish_reason not in FINISHES:
        raise ReplyError(
            f"a reply that is not a finished completion (choices.0.finish_reason: {choice.finish_reason!r}, "
            f"not {' or '.join(FINISHES)})"
        )
    text = choice.text
    # The contract's text includes a matched stop string; a server that ignored include_stop_str_in_output
    # names it in stop_reason.
    if choice.finish_reason == "stop" and isinstance(choice.stop_reason, str):
        text += "" if text.endswith(choice.stop_reason) else choice.stop_reason
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ReplyError("a reply whose text is not valid Unicode (a lone surrogate)") from None
    usage = reply.usage or _Usage()
    token_ids = list(choice.token_ids or [])
    if any(t < 0 for t in token_ids):
        raise ReplyError("a reply whose choices.0.token_ids holds a negative id")
    if usage.completion_tokens is None and choice.token_ids is None:
        raise ReplyError(
            "a reply that counts no tokens (no usage.completion_tokens, no token_ids): its tokens per "
            "second and token budgets would read 0"
        )
    gen_tokens = usage.completion_tokens if usage.completion_tokens is not None else len(token_ids)
    if gen_tokens == 0 and text:
        raise ReplyError(f"a reply that counts 0 tokens for a text of {len(text)} characters")
    values = (
        [float(x) for x in (choice.logprobs.token_logprobs or []) if x is not None] if choice.logprobs else []
    )
    values = [x for x in values if math.isfinite(x)]
    return GenResult(
        key=request.key,
        text=text,
        finish_reason=choice.finish_reason,
        prompt_tokens=usage.prompt_tokens if usage.prompt_tokens is not None else len(ids),
        gen_tokens=gen_tokens,
        token_ids=token_ids,
        mean_logprob=min(0.0, sum(values) / len(values)) if values else None,
    )


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks to wait (a number or an HTTP date); None: absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None
