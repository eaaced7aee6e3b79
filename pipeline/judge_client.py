"""The judge's calls: an OpenAI-compatible endpoint or a local vLLM server, a reply cache, in parallel.

An OpenAI-compatible endpoint (or a vLLM server started for a local checkpoint), a cache of every reply, and
the calls made in parallel.

A call is chat completion at temperature 0 with its own seed and the judge's max_tokens; a transport error
or a 5xx/429 is retried by the openai client (`max_retries`); a call that still fails stops the stage with
the endpoint and the error in one line, keeping every reply already cached. The cache is a JSONL file
({key, reply} a line, appended as replies arrive), keyed by contract.judge's judge, revision, template hash,
question, reference and the shown text: a rerun, or a rescore that changes no asked sample, makes no call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.jsonl import iter_jsonl
from contract.judge import JudgeSettings


class JudgeCallError(RuntimeError):
    """A judge call that failed after its retries, or an endpoint that could not be reached or started."""


@dataclass(frozen=True)
class Call:
    """One judge call: its cache key, its chat messages and its seed."""

    key: str
    messages: list[dict[str, str]]
    seed: int


class ReplyCache:
    """The judge's replies by cache key, read from and appended to one JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.replies: dict[str, str] = {}
        if path.is_file():
            for _, row in iter_jsonl(path):
                self.replies[row["key"]] = row["reply"]

    def add(self, key: str, reply: str) -> None:
        """Keep a reply and append it to the file at once (a stopped run keeps what it was answered)."""
        self.replies[key] = reply
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")


def api_key(settings: JudgeSettings) -> str:
    """The endpoint's API key from the environment variable the settings name ('EMPTY' when none)."""
    if settings.api_key_env is None:
        return "EMPTY"
    key = os.environ.get(settings.api_key_env)
    if not key:
        raise JudgeCallError(
            f"params.yaml: judge.api_key_env: the variable {settings.api_key_env} is not set; export it"
        )
    return key


@contextmanager
def endpoint(settings: JudgeSettings) -> Iterator[tuple[list[str], str, str]]:
    """(base URLs, api key, served model name): the settings' endpoints, or a vLLM server started for the
    local checkpoint `model` (as the runner starts its own, pipeline.engines.vllm_server), stopped after."""
    if settings.urls():
        yield settings.urls(), api_key(settings), settings.model
        return
    from pipeline.config import engine_config
    from pipeline.engines.settings import engine_settings
    from pipeline.engines.vllm_server import VllmServer, launch_settings

    # conf/engine/vllm.yaml's settings with the judge's own (params.yaml judge.vllm), checked as one; auto
    # (fitted to a run's prompts) has no run here: the model's own context.
    node = engine_config("vllm") | settings.vllm
    if node["max_model_len"] == "auto":
        node["max_model_len"] = None
    args = engine_settings(node, "conf/engine/vllm.yaml with params.yaml judge.vllm")
    llm_args, env = launch_settings(settings.model, None, args)
    server = VllmServer(settings.model, llm_args, env, settings.start_timeout_s)
    try:
        yield [server.url + "/v1"], server.api_key, settings.model
    finally:
        server.close()


def ask_all(
    calls: Iterable[Call],
    settings: JudgeSettings,
    cache: ReplyCache,
    workers: int = 8,
    progress: Callable[[int], Any] | None = None,
) -> int:
    """Ask every call whose key the cache lacks (each key once); return how many calls were made."""
    todo = {c.key: c for c in calls if c.key not in cache.replies}
    if not todo:
        return 0
    from openai import OpenAI, OpenAIError

    with endpoint(settings) as (urls, key, model):
        clients = [
            OpenAI(base_url=u, api_key=key, max_retries=settings.retries, timeout=settings.timeout_s)
            for u in urls
        ]

        def one(n: int, call: Call) -> str:
            # Replicas in turn: each serves the same pinned judge, so which one answers changes no reply.
            done = clients[n % len(clients)].chat.completions.create(
                model=model,
                messages=call.messages,  # type: ignore[arg-type]
                temperature=0.0,
                seed=call.seed,
                max_tokens=settings.max_tokens,
            )
            return done.choices[0].message.content or ""

        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(one, i, c): c.key for i, c in enumerate(todo.values())}
            for n, fut in enumerate(as_completed(futures), 1):
                try:
                    cache.add(futures[fut], fut.result())
                except OpenAIError as e:
                    for other in futures:
                        other.cancel()
                    raise JudgeCallError(
                        f"the judge at {', '.join(urls)} ({model}) failed after {settings.retries} retries: "
                        f"{type(e).__name__}: {str(e)[:200]}; {n - 1} replies so far are cached in "
                        f"{cache.path}, a rerun asks only the rest"
                    ) from None
                if progress is not None:
                    progress(n)
    return len(todo)
