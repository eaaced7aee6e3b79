"""The openai engine: the Engine protocol over an OpenAI-compatible server (vLLM's), its own or attached.

    engine=openai                                    start vLLM's server for the arm's model (vllm_server)
    engine=openai engine.base_url=http://gpu1:8000   attach to a server someone else runs
    engine=openai 'engine.base_url=[http://gpu1:8000,http://gpu2:8000]'    replicas share the requests

Each request is one sample (n = 1) with its own seed, max_tokens and stop strings, sent to /v1/completions
with the prompt as token ids, tokenized here by the model's own tokenizer exactly as the offline engine
tokenizes it (a chat prompt already rendered by the project's chat template, pipeline.prompts, and holding
its own BOS token). Completions, not chat completions: the server would render a chat request with its own
template and tokenize the text itself, so the prompt could differ from the offline engine's by a BOS, a
system prompt or a template revision; token ids make the prompt the same tokens on every engine, for plain
and chat models, for every prompt format and for a tool arm's later rounds (prompt + transcript so far).
Every sampling field the server could fill from the model's generation_config (top_k, min_p, penalties) is
sent explicitly with vLLM's neutral value, as the offline engine's SamplingParams has them.

Up to `concurrency` requests are in flight per server; an item's samples go to one server (a stable hash of
the item id), so they share its prefix cache. A request that fails to connect, times out, gets a 5xx or 429
answer or a 200 whose body is not JSON (cut short by a closed connection) is sent again, the same seed and
all, after 1, 2, 4 ... s or the Retry-After the server asks for (up to timeout_s), `retries` times; then the
run stops in one line (ServerGoneError, exit 2), every finished sample already handed to the caller, which
saves it as it arrives (pipeline.generate), so a kill or a dead server loses only the requests in flight. A
JSON reply that is not a completion is refused at once (pipeline.engines.served_reply), never saved.

The HTTP layer is written here rather than taken from the openai client (or tenacity for its retries): the
client rides on httpx, whose connection pool cost 58 s of CPU for the demo's 2,400 samples at 256
connections (aiohttp: none to speak of); it builds replies without validating them by default (a reply
with `choices: []` still fails as an IndexError); it gives up at once on a Retry-After above 2 minutes;
and the retries must check between tries whether the runner's own server died, to say why. What is
hand-written is the retry loop (a dozen lines); the reply's shape is checked by pydantic.

The server is checked before any request: its /v1/models must list the arm's checkpoint (its path as given
or absolute, or its hub repository id; `served_model` names it when it is served under another name), and
its /tokenize must tokenize a probe as this tokenizer does. Credentials come from the environment variable
`api_key_env` names, sent as a bearer token, never written anywhere; a URL with credentials in it is
refused. What is recorded (contract.engine.EngineInfo) is the server's host and port, its vLLM version and
the served model id.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from pipeline.engines import EngineStartError
from pipeline.engines.served_reply import (
    NotJSONError,
    ReplyError,
    completion,
    error_message,
    json_body,
    json_of,
    retry_after_s,
)
from pipeline.engines.served_urls import api_key, checkpoint_names, host_of, parse_urls
from pipeline.engines.settings import OpenAISettings
from pipeline.heavy_imports import collector_paused
from pipeline.prompts import is_chat_model
from pipeline.settings import RunnerError

SETTINGS = "conf/engine/openai.yaml"
# The sampling fields a server may default from the model's generation_config.json when a request leaves
# them out (vLLM does): sent with the values vllm.SamplingParams defaults to, as the offline engine runs.
NEUTRAL_SAMPLING = {
    "top_k": 0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
PROBE = 'Question: What is 12 + 30?\nAnswer: 42\n<tool_call>{"name": "x"}</tool_call> Ünïcödé'
# The owner where the runner starts the server itself: recorded instead of its port, which changes per run.
OWN_SERVER = "loopback (started by the runner)"
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Seconds before the first retry; each further retry waits twice as long (at most 30 s), plus up to a quarter
# at random so that many requests failing together do not come back together.
BACKOFF_S = 1.0


# Why a server that answered the checks may refuse connections later: it died. A vLLM server on a CPU with
# vLLM's default flags dies on the first seeded request whose prompt it prefills in two steps.
STOPPED = (
    "it accepted the checks and now refuses connections, so it stopped: see its log; a vLLM server on a CPU "
    "started with vLLM's default flags dies on its first split prefill: start it with `python -m "
    "pipeline.engines.serve <model>` (docs/gpu.md)"
)


class ServerGoneError(RunnerError):
    """A server that stopped answering mid-run; one line, the finished samples are kept for the resume."""


@dataclass
class Endpoint:
    """One server the engine sends requests to."""

    url: str
    host: str
    model_id: str
    root: str | None
    version: str | None
    max_model_len: int | None


def attach(
    url: str, model: str, served_model: str | None, headers: dict[str, str], tokenizer: Any
) -> Endpoint:
    """Check the server at url serves model (its /v1/models, its tokenizer); refuse in one line if not."""
    import httpx

    host = host_of(url)
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            models = client.get("/v1/models")
            if models.status_code != 200:
                hint = "; set api_key_env to the variable holding its key" * (models.status_code == 401)
                raise EngineStartError(
                    f"the server at {host} answered /v1/models with HTTP {models.status_code} "
                    f"({error_message(models.content)}){hint} ({SETTINGS} base_url)"
                )
            version = client.get("/version")
            data = json_of(models, host, "/v1/models", dict).get("data")
            entries = (
                [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
                if isinstance(data, list)
                else []
            )
            wanted = {served_model} if served_model else checkpoint_names(model)
            match = next((m for m in entries if m.get("id") in wanted or m.get("root") in wanted), None)
            if match is None:
                served = ", ".join(f"{m.get('id')} (root {m.get('root')})" for m in entries) or "no model"
                fix = (
                    f"no model with id {served_model!r}: set served_model to one it lists"
                    if served_model
                    else "attach to a server of this checkpoint, or, if it is this checkpoint under another "
                    "name, set engine.served_model=<its id>"
                )
                raise EngineStartError(
                    f"the server at {host} serves {served}, not the arm's model {model}; {fix} ({SETTINGS})"
                )
            tokenized = client.post("/tokenize", json={"model": match["id"], "prompt": PROBE})
    except httpx.HTTPError as e:
        raise EngineStartError(
            f"cannot reach the server at {host} ({type(e).__name__}: {e}); start it, or fix {SETTINGS} "
            "base_url"
        ) from None
    # A server without /tokenize (not vLLM) is checked by its model list alone.
    if tokenized.status_code == 200:
        theirs = json_of(tokenized, host, "/tokenize", dict).get("tokens")
        ours = tokenizer(PROBE, add_special_tokens=True)["input_ids"]
        if theirs != list(ours):
            got = len(theirs) if isinstance(theirs, list) else "no list of"
            raise EngineStartError(
                f"the server at {host} serves {match['id']} with another tokenizer than {model}'s (a probe "
                f"gives {got} tokens there, {len(ours)} here); attach to a server of this checkpoint"
            )
    server_version = (
        json_of(version, host, "/version", dict).get("version") if version.status_code == 200 else None
    )
    length = match.get("max_model_len")
    return Endpoint(
        url=url,
        host=host,
        model_id=str(match["id"]),
        root=match.get("root"),
        version=str(server_version) if server_version else None,
        max_model_len=length if isinstance(length, int) else None,
    )


class OpenAIEngine:
    """Engine protocol over one or more OpenAI-compatible servers: its own vLLM server or attached ones."""

    # A server batches a request with whatever else it runs, so regenerating a chunk's finished samples
    # would not reproduce their batch: a resumed run sends only the samples not saved yet (pipeline.generate).
    resumes_per_sample = True

    def __init__(
        self, model: str, settings: OpenAISettings | None = None, *, revision: str | None = None
    ) -> None:
        settings = settings or OpenAISettings()
        self.concurrency = settings.concurrency
        self.timeout_s = float(settings.timeout_s)
        self.retries = settings.retries
        self.server: Any = None
        with collector_paused():
            from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision)
        self.chat = is_chat_model(self.tokenizer)
        device = driver = dtype = None
        batch_invariant = None
        if settings.base_url is None:
            from pipeline.engines.hardware import distribution, platform_info
            from pipeline.engines.vllm_server import VllmServer, launch_settings

            llm_args, env = launch_settings(model, revision, settings)
            batch_invariant = settings.batch_invariant
            self.server = VllmServer(model, llm_args, env, float(settings.start_timeout_s))
            urls, key = [self.server.url], self.server.api_key
            device, driver = platform_info()
            dtype = llm_args["dtype"]
            local_version: str | None = distribution("vllm")
        else:
            urls, key, local_version = parse_urls(settings.base_url), api_key(settings.api_key_env), None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            self.endpoints = [
                attach(u, model, settings.served_model, self._headers, self.tokenizer) for u in urls
            ]
        except BaseException:
            self.close()
            raise
        versions = {e.version for e in self.endpoints}
        if len(versions) > 1:
            self.close()
            raise EngineStartError(
                "the servers run different vLLM versions ("
                + ", ".join(f"{e.host}: {e.version}" for e in self.endpoints)
                + "), which may generate different texts; attach to servers of one version"
            )
        ids = {e.model_id for e in self.endpoints}
        lengths = [e.max_model_len for e in self.endpoints if e.max_model_len]
        self.max_model_len = min(lengths) if lengths else None
        server_version = self.endpoints[0].version
        self.info = EngineInfo(
            name="openai",
            version=local_version or (f"vllm {server_version}" if server_version else None),
            device=device,
            driver=driver,
            dtype=dtype,
            batch_invariant=batch_invariant,
            server=OWN_SERVER if self.server is not None else ", ".join(e.host for e in self.endpoints),
            served_model=", ".join(sorted(ids)),
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of text under the model's tokenizer, no special tokens."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        """Generate every request, concurrency at a time per server; on_result gets each as it arrives."""
        if not requests:
            return []
        # A chat template already holds the BOS token; adding special tokens again would double it.
        ids = self.tokenizer([r.prompt for r in requests], add_special_tokens=not self.chat)["input_ids"]
        return asyncio.run(self._generate(requests, [list(x) for x in ids], decoding, on_result))

    def _server_of(self, request: GenRequest) -> int:
        """The server an item's samples go to: a stable hash of the item id (they share its prefix cache)."""
        digest = hashlib.sha256(str(request.key[0]).encode()).digest()
        return int.from_bytes(digest[:8], "big") % len(self.endpoints)

    async def _generate(
        self,
        requests: Sequence[GenRequest],
        ids: list[list[int]],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None,
    ) -> list[GenResult]:
        # aiohttp, not httpx, for the requests: httpcore's pool scans every connection for each request it
        # places, which at 256 connections cost the client 58 s of CPU for the demo's 2400 samples.
        import aiohttp

        connector = aiohttp.TCPConnector(limit=0, limit_per_host=self.concurrency)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s, sock_connect=30)
        gates = [asyncio.Semaphore(self.concurrency) for _ in self.endpoints]
        results: list[GenResult | None] = [None] * len(requests)
        session = aiohttp.ClientSession(headers=self._headers, connector=connector, timeout=timeout)
        async with session as client:

            async def one(i: int) -> int:
                server = self._server_of(requests[i])
                async with gates[server]:
                    endpoint = self.endpoints[server]
                    results[i] = await self._send(client, endpoint, requests[i], ids[i], decoding)
                return i

            tasks = [asyncio.create_task(one(i)) for i in range(len(requests))]
            handed: set[int] = set()
            try:
                for done in asyncio.as_completed(tasks):
                    i = await done
                    handed.add(i)
                    if on_result is not None:
                        on_result(results[i])  # type: ignore[arg-type]
            finally:
                # The first failure (or Ctrl-C) ends the call: the requests still in flight are dropped,
                # the ones that finished meanwhile are still handed over (the caller saves them).
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                if on_result is not None:
                    for i, r in enumerate(results):
                        if r is not None and i not in handed:
                            on_result(r)
        return [r for r in results if r is not None]

    async def _send(
        self, client: Any, ep: Endpoint, request: GenRequest, ids: list[int], decoding: Decoding
    ) -> GenResult:
        """One request, sent again (same seed) on a connection error, a timeout or a 5xx, with backoff."""
        import aiohttp

        body = {
            "model": ep.model_id,
            "prompt": ids,
            "n": 1,
            "seed": request.seed,
            "max_tokens": request.max_tokens,
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "stop": list(request.stop),
            "include_stop_str_in_output": True,
            "return_token_ids": True,
            **NEUTRAL_SAMPLING,
        }
        if decoding.logprobs:
            body["logprobs"] = 0  # the sampled token's own log-probability only
        why, wait_s, refused = "", 0.0, False
        for attempt in range(self.retries + 1):
            if attempt:
                backoff = min(BACKOFF_S * 2.0 ** (attempt - 1), 30.0) * (1 + random.random() / 4)
                await asyncio.sleep(max(backoff, wait_s))
            if self.server is not None and (gone := self.server.died()):
                raise ServerGoneError(self._gone(gone))
            try:
                async with client.post(f"{ep.url}/v1/completions", json=body) as answer:
                    status = answer.status
                    payload = await answer.read()
                    asked = retry_after_s(answer.headers.get("Retry-After"))
            except (aiohttp.ClientError, TimeoutError) as e:
                why, wait_s = (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), 0.0
                refused = isinstance(e, aiohttp.ClientConnectorError)
                continue
            refused = False
            if status == 200:
                try:
                    return completion(request, ids, json_body(payload))
                except NotJSONError as e:  # a body cut short by a closed connection, or a proxy's page
                    why, wait_s = f"HTTP 200 with {e}", 0.0
                    continue
                except ReplyError as e:
                    raise RunnerError(self._refused(ep, request, "answered", f"with {e}")) from None
            why, wait_s = f"HTTP {status}: {error_message(payload)}", asked or 0.0
            if status not in RETRY_STATUS:
                raise RunnerError(self._refused(ep, request, "refused", f"({why})"))
            if wait_s > self.timeout_s:
                raise ServerGoneError(
                    self._gone(
                        f"the server at {ep.host} asks to retry after {wait_s:.0f} s ({why}), longer than "
                        f"timeout_s ({self.timeout_s:.0f} s)"
                    )
                )
        if self.server is not None and (gone := self.server.died()):
            why = gone
        elif refused:
            why += f"; {STOPPED}"
        raise ServerGoneError(
            self._gone(f"the server at {ep.host} did not answer after {self.retries} retries ({why})")
        )

    @staticmethod
    def _refused(ep: Endpoint, request: GenRequest, verb: str, what: str) -> str:
        return (
            f"the server at {ep.host} {verb} sample {request.key[1]} of item {request.key[0]!r} {what}; fix "
            "that and rerun the same command (the finished samples are kept)"
        )

    @staticmethod
    def _gone(why: str) -> str:
        return (
            f"{why}; the finished samples are kept: rerun the same command to resume (with a server of the "
            f"same model; {SETTINGS} retries and timeout_s set the patience)"
        )

    def close(self) -> None:
        """Stop the server this engine started (attached servers are left running)."""
        if self.server is not None:
            self.server.close()
            self.server = None
