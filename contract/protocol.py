"""The matched protocol: the settings every arm of a comparison shares, and the one list of their keys.

Also the sections of params.yaml it lives among."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

# Where a sample's answer is read (scoring.verifiers): the first `Answer:` line after the prompt, the last
# \boxed{}, or the first "The (final) answer is X". Unset: the built-in reading of the prompt format.
AnswerRule = Literal["first_answer", "last_boxed", "answer_is"]


class FewShot(BaseModel):
    """params.yaml protocol.fewshot: the first n examples of a JSONL file (id, question, answer), pinned."""

    model_config = ConfigDict(extra="forbid", strict=True)
    path: str = Field(min_length=1)
    n: int = Field(ge=1)


class Protocol(BaseModel):
    """params.yaml `protocol`: samples, budget, decoding, seeds, tool calls, chat prompting; one for all arms.

    Chat prompting: the system prompt, the instruction, the chat template and its options (`enable_thinking`).
    """

    # Strict: YAML reads `k: true` as a bool and `k: 8.5` as a float, which lax parsing would run as 1 and 8.
    model_config = ConfigDict(extra="forbid", strict=True)
    k: int = Field(ge=1)
    max_tokens: int = Field(ge=1)
    # allow_inf_nan: vLLM refuses an infinite temperature only once its engine has started.
    temperature: float = Field(ge=0, allow_inf_nan=False)
    top_p: float = Field(gt=0, le=1)
    seed: int
    max_tool_calls: int = Field(default=0, ge=0)
    # Chat models only (pipeline.prompts); None is the built-in: no system message, the built-in instruction,
    # the tokenizer's own template with no options.
    system_prompt: str | None = None
    instruction: str | None = None
    chat_template: str | None = Field(default=None, min_length=1)
    chat_template_kwargs: dict[str, Any] | None = None
    # Every model (pipeline.prompts): a preset of conf/prompt/, a Jinja prompt template (the whole prompt of a
    # plain model, the user message of a chat model), its few-shot examples, extra stop strings, where the
    # answer is read, and whether chat models are prompted through their chat template (auto: when they
    # have one). None everywhere is the built-in format.
    prompt: str | None = Field(default=None, min_length=1)
    prompt_template: str | None = Field(default=None, min_length=1)
    fewshot: FewShot | None = None
    # An empty stop string is refused by vLLM after its engine has started (and would match everywhere).
    stop: list[Annotated[str, Field(min_length=1)]] | None = None
    answer: AnswerRule | None = None
    chat: Literal["auto"] | bool | None = None
    # Record each sample's mean token log-probability (calibration weighs answers by it); None: not recorded.
    logprobs: bool | None = None

    @model_serializer(mode="wrap")
    def _built_in_prompting_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A protocol that prompts as the built-in does serializes as before these keys existed, so the files
        # and fingerprints of earlier runs stay valid (nothing regenerates for a key nobody set).
        data = handler(self)
        for key in OPTIONAL_KEYS:
            # logprobs: false records what an unset key records (nothing), so it dumps as unset too.
            if data.get(key) is None or (key in RECORD_KEYS and data.get(key) is False):
                data.pop(key, None)
        return data


# The protocol keys that shape a chat model's prompt (left out of a dump when unset).
PROMPTING_KEYS: tuple[str, ...] = ("system_prompt", "instruction", "chat_template", "chat_template_kwargs")
# The protocol keys of every model's prompt and its reading (left out of a dump when unset, as the above).
TEMPLATE_KEYS: tuple[str, ...] = ("prompt", "prompt_template", "fewshot", "stop", "answer", "chat")
# What the engine records beside each sample (left out of a dump when unset, as the above).
RECORD_KEYS: tuple[str, ...] = ("logprobs",)
OPTIONAL_KEYS: tuple[str, ...] = PROMPTING_KEYS + TEMPLATE_KEYS + RECORD_KEYS


# The keys of the protocol; an arm (conf/arm/*.yaml or a command-line override) may set none of them.
PROTOCOL_KEYS: tuple[str, ...] = tuple(Protocol.model_fields)
# Other names a protocol key goes by (the EvalLog calls k n_samples); refused in an arm as well.
PROTOCOL_ALIASES = {"n_samples": "k"}
# The EvalLog's top-level fields that carry the protocol, keyed by protocol key: two logs are comparable only
# when these agree (the minimal log form has no protocol block, so they are the common ground).
LOG_FIELDS = {"k": "n_samples", "temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens",
              "seed": "seed"}  # fmt: skip
MATCHED_LOG_FIELDS: tuple[str, ...] = tuple(LOG_FIELDS.values())


# The top-level sections of params.yaml; pipeline.config and analysis.reports.settings refuse any other
# key, so a typo (`analysys:`) is an error instead of a section nobody reads while the defaults run.
PARAMS_SECTIONS: tuple[str, ...] = (
    "suite",
    "models",
    "rag",
    "protocol",
    "analysis",
    "arms",
    "trajectory",
    "sweep",
    "contamination",
    "judge",
)


def is_protocol_key(key: object) -> bool:
    """Whether key names a protocol setting (or an alias of one)."""
    return key in PROTOCOL_KEYS or key in PROTOCOL_ALIASES or key == "protocol"
