"""A small OpenAI-compatible HTTP server on loopback, scripted per test, and the openai engine on it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contract.engine import Decoding, GenRequest
from pipeline.engines import openai_engine as oe
from pipeline.engines.settings import OpenAISettings

SAMPLED = Decoding(temperature=1.0, top_p=1.0)


class Stub:
    """An OpenAI-compatible server in a thread: /v1/models lists `served`, completions answer from the seed.

    fail[seed] answers with that many 503s before the real answer; refuse answers 400; dead_after answers
    that many requests, then 503 to every one.
    """

    def __init__(self, served: dict[str, Any]) -> None:
        self.served = served
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail: dict[int, int] = {}
        self.refuse = False
        self.dead_after: int | None = None
        self.answered = 0
        self.url = ""

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        self.headers.append(dict(request.headers))
        return web.json_response({"object": "list", "data": [self.served]})

    async def _version(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"version": "0.0.stub"})

    async def _complete(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        seed = body["seed"]
        if self.refuse:
            return web.json_response({"error": {"message": "This model's maximum context is 8"}}, status=400)
        if self.fail.get(seed, 0) > 0:
            self.fail[seed] -= 1
            return web.json_response({"error": {"message": "busy"}}, status=503)
        if self.dead_after is not None and self.answered >= self.dead_after:
            return web.json_response({"error": {"message": "engine dead"}}, status=503)
        self.answered += 1
        stop = (body["stop"] or [None])[0]
        choice = {"text": f"seed {seed}", "finish_reason": "stop", "stop_reason": stop, "token_ids": [5, 6]}
        return web.json_response({
            "choices": [choice],
            "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": 2},
        })  # fmt: skip

    def _routes(self, app: Any) -> None:
        """More routes a subclass serves."""

    def serve(self) -> Iterator[Stub]:
        """Run the server on a free loopback port while the caller holds it."""
        from aiohttp import web

        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/version", self._version)
        app.router.add_post("/v1/completions", self._complete)
        self._routes(app)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            loop.run_until_complete(runner.cleanup())
            loop.close()


def stub_requests(n: int) -> list[GenRequest]:
    """n greedy requests of four tokens, one per item, stopping at a newline."""
    return [
        GenRequest(key=(f"q{i}", 0), prompt=f"Question: {i}\n", seed=100 + i, max_tokens=4, stop=("\n",))
        for i in range(n)
    ]


def stub_engine(checkpoint: Path, base_url: Any, **kw: Any) -> oe.OpenAIEngine:
    """The openai engine on checkpoint's tokenizer, talking to base_url."""
    return oe.OpenAIEngine(str(checkpoint), OpenAISettings(base_url=base_url, **kw))
