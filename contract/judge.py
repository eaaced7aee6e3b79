"""The model judge's types: its settings (params.yaml `judge`) and what a judged sample records.

A judge is asked only where the rules leave room (docs/judge.md): the rule verdict stands where it is
decided, the judge is asked where the reader was undecided (`ask: undecided`), optionally also where it
said wrong (`wrong`) or everywhere (`all`), and on a random audit sample of rule-decided samples of each arm,
whose verdicts measure the judge against the rules and never change a score.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The judge's three outcomes: an unparseable reply is no verdict, counted, never right or wrong.
Outcome = Literal["equivalent", "not_equivalent", "no_verdict"]
# The rules' verdict of a sample, as EvalLog format 5 records it (SampleRecord.verdict).
RuleVerdict = Literal["right", "wrong", "undecided"]
Ask = Literal["undecided", "wrong", "all"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgeSettings(_Strict):
    """params.yaml `judge`: which judge, how it is asked, and how it is audited."""

    # The model name the endpoint serves, or (no base_url) a local checkpoint folder served with vLLM.
    model: str
    # The judge's pinned revision: a hub commit, an API model's dated snapshot, or a checkpoint's hash.
    revision: str = Field(min_length=1)
    # An OpenAI-compatible endpoint (".../v1"), or several replicas of one judge (calls spread over them);
    # None: serve `model` with vLLM on a loopback port.
    base_url: str | list[str] | None = None
    # The environment variable holding the endpoint's API key (None: no key sent).
    api_key_env: str | None = None
    ask: Ask = "undecided"
    # Rule-decided samples asked per arm for the audit (all of them where the arm has fewer).
    audit_size: int = Field(default=100, ge=0)
    audit_seed: int = 0
    # A judge agreeing with the rules on less than this share of its audit is kept out of the headline.
    agreement_floor: float = Field(default=0.9, ge=0.0, le=1.0)
    seed: int = 0
    max_tokens: int = Field(default=64, ge=1)
    retries: int = Field(default=3, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    # Characters of the response's end shown to the judge (its concluding part).
    concluding_chars: int = Field(default=800, ge=50)
    cache: str = "judge-cache.jsonl"
    # vllm.LLM arguments of the server started for a local checkpoint (conf/engine/vllm.yaml's keys).
    vllm: dict[str, Any] = Field(default_factory=dict)
    start_timeout_s: float = Field(default=600.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str | list[str] | None) -> str | list[str] | None:
        for url in [v] if isinstance(v, str) else v or []:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"is {url!r}; give the endpoint's URL, e.g. http://host:8000/v1")
            if parts.username or parts.password:
                raise ValueError("carries credentials; put the key in the variable api_key_env names")
        if isinstance(v, list) and not v:
            raise ValueError("is an empty list; give a URL, a list of URLs, or null")
        return v

    def urls(self) -> list[str]:
        """The endpoints' URLs (empty: the stage serves the checkpoint itself)."""
        return [self.base_url] if isinstance(self.base_url, str) else list(self.base_url or [])


class JudgeRecord(_Strict):
    """One judged sample (SampleRecord.judge): the rules' verdict, the judge's, the final one, the reply."""

    rule: RuleVerdict
    # Asked by the cascade (the rules left room: its verdict can decide the sample), and/or drawn into the
    # arm's audit sample of rule-decided samples (its verdict is compared with the rules', decides nothing).
    cascade: bool
    audit: bool
    verdict: Outcome
    # The judge's raw reply (None: the stage decided without a call, `note` says why).
    reply: str | None = None
    note: str | None = None
    final: RuleVerdict


def rule_verdict(sample: Any) -> RuleVerdict:
    """A scored sample's rules' verdict: its recorded `verdict` (EvalLog format 5), else right for a score of
    1, undecided where no answer was read, wrong otherwise (a log before format 5)."""
    recorded = getattr(sample, "verdict", None)
    if recorded is not None:
        return recorded  # type: ignore[no-any-return]
    if sample.score >= 1.0:
        return "right"
    return "undecided" if sample.answer is None else "wrong"


def final_verdict(rule: RuleVerdict, cascade: bool, verdict: Outcome) -> RuleVerdict:
    """The sample's final verdict: the rules' where they said right or the cascade did not ask, else the
    judge's (no verdict leaves the rules')."""
    if not cascade or rule == "right" or verdict == "no_verdict":
        return rule
    return "right" if verdict == "equivalent" else "wrong"


def asks(setting: Ask, rule: RuleVerdict) -> bool:
    """Whether the cascade asks the judge about a sample of this rule verdict."""
    return rule == "undecided" or (setting != "undecided" and rule == "wrong") or setting == "all"
