"""The engine interface: a batch of seeded requests in, one result per request out.

The engines (pipeline/engines: vllm, hf, openai) implement it with the same semantics, so the runner and
the tool loop (augment/loop.py) never know which one they drive. Each request is one sample of one item (n=1)
with its own seed; all requests of a round are submitted in one call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict


class EngineInfo(BaseModel):
    """Provenance of the engine that generated a set of samples."""

    model_config = ConfigDict(extra="forbid")
    name: str
    version: str | None = None
    device: str | None = None
    driver: str | None = None
    dtype: str | None = None
    batch_invariant: bool | None = None
    # A served engine (engine=openai): the server's host:port, never credentials (or that the runner started
    # it on loopback), and the model id it serves under.
    server: str | None = None
    served_model: str | None = None


@dataclass(frozen=True)
class Decoding:
    """The decoding half of the matched protocol (identical for every arm)."""

    temperature: float
    top_p: float
    # Record each sample's mean token log-probability (the model's own, before temperature and top-p).
    logprobs: bool = False


@dataclass(frozen=True)
class GenRequest:
    """One generation: prompt text, its own seed, its own token budget and stop strings."""

    key: tuple[str, int]
    prompt: str
    seed: int
    max_tokens: int
    stop: tuple[str, ...] = ()


@dataclass
class GenResult:
    """What one request produced; text includes a matched stop string, never the EOS token."""

    key: tuple[str, int]
    text: str
    finish_reason: str
    prompt_tokens: int
    gen_tokens: int
    token_ids: list[int] = field(default_factory=list)
    # The mean log-probability of the generated tokens, when Decoding.logprobs asked for it.
    mean_logprob: float | None = None


class Engine(Protocol):
    """A text generator with provenance, and what the runner asks of it besides generating."""

    info: EngineInfo
    # Whether the prompts are chat-rendered (they hold their own BOS token, so none is added): the runner
    # sets it from its plan before generating.
    chat: bool
    # The model's context in tokens, as the engine runs it (None: unknown, the runner checks nothing).
    max_model_len: int | None
    # True for an engine whose batches are not reproducible (a server's): a resumed chunk regenerates only
    # its missing samples, not the whole chunk.
    resumes_per_sample: bool

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        """Generate every request (in one batch where the engine can) and return results in order.

        on_result, if given, receives each result as soon as its request finishes, so a caller can save it.
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens the engine's tokenizer makes of text (no special tokens added)."""
        ...

    def close(self) -> None:
        """Free what the engine holds (its model, its server); it is not used again."""
        ...
