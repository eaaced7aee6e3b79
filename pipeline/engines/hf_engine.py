"""The hf engine: transformers `generate`, the reference for machines without vLLM and for parity checks.

Same request semantics as the vllm engine: one request per (item, sample), seeded on its own (the torch
generator is reseeded with the request's seed before it runs, so a result depends on nothing but the
request), its own budget and stop strings (the matched stop string is kept in the text, the EOS token is
not). Requests run one at a time: no padding, so greedy outputs are exactly what the model computes for
that prompt alone, which is what the parity check compares vLLM against.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from typing import Any

from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from pipeline.engines.settings import HfSettings
from pipeline.heavy_imports import collector_paused
from pipeline.prompts import is_chat_model


class HfEngine:
    """Engine protocol over a transformers AutoModelForCausalLM."""

    # Its batches are reproducible: a resumed chunk is generated whole, as it was.
    resumes_per_sample = False

    def __init__(
        self, model: str, settings: HfSettings | None = None, *, revision: str | None = None
    ) -> None:
        settings = settings or HfSettings()
        dtype, device = settings.dtype, settings.device
        with collector_paused():
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype == "auto":
            dtype = "float32" if device == "cpu" else "bfloat16"
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision)
        self.model = AutoModelForCausalLM.from_pretrained(
            model, revision=revision, dtype=getattr(torch, dtype)
        ).to(device)
        self.model.eval()
        self.chat = is_chat_model(self.tokenizer)
        self.max_model_len = getattr(self.model.config, "max_position_embeddings", None)
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids: list[int] = [eos] if isinstance(eos, int) else list(eos)
        self.pad_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_ids[0]
        )
        self.info = EngineInfo(
            name="hf",
            version=f"transformers {importlib.metadata.version('transformers')}",
            device="cpu" if device == "cpu" else torch.cuda.get_device_name(),
            driver="cpu" if device == "cpu" else f"cuda {torch.version.cuda}",
            dtype=dtype,
            batch_invariant=True,
        )

    def _generation_config(self, r: GenRequest, decoding: Decoding) -> Any:
        from transformers import GenerationConfig

        sampling = decoding.temperature > 0
        return GenerationConfig(
            max_new_tokens=r.max_tokens,
            do_sample=sampling,
            temperature=decoding.temperature if sampling else None,
            top_p=decoding.top_p if sampling else None,
            # transformers samples from the top 50 by default; vLLM (and the protocol) do not filter by rank.
            top_k=0 if sampling else None,
            eos_token_id=self.eos_ids,
            pad_token_id=self.pad_id,
            stop_strings=list(r.stop) or None,
        )

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        """Generate each request alone, the RNG reseeded with its seed; on_result gets each as it ends."""
        import torch

        results = []
        for r in requests:
            ids = self.tokenizer(r.prompt, add_special_tokens=not self.chat, return_tensors="pt")["input_ids"]
            ids = ids.to(self.device)
            torch.manual_seed(r.seed)
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    generation_config=self._generation_config(r, decoding),
                    tokenizer=self.tokenizer,
                )
            new = out[0, ids.shape[1] :].tolist()
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            finish = "stop" if new and new[-1] in self.eos_ids else "length"
            cuts = [text.find(s) + len(s) for s in r.stop if s in text]
            if cuts:
                text, finish = text[: min(cuts)], "stop"
            result = GenResult(
                key=r.key,
                text=text,
                finish_reason=finish,
                prompt_tokens=int(ids.shape[1]),
                gen_tokens=len(new),
                token_ids=new,
                mean_logprob=self._mean_logprob(out[0], ids.shape[1]) if decoding.logprobs and new else None,
            )
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    def _mean_logprob(self, sequence: Any, n_prompt: int) -> float:
        """The mean log-probability of the tokens after n_prompt under the model's own distribution (raw
        logits, before temperature and top-p: what vLLM reports by default)."""
        import torch

        with torch.no_grad():
            logits = self.model(input_ids=sequence[None, :-1]).logits[0, n_prompt - 1 :]
        logp = torch.log_softmax(logits.float(), dim=-1)
        chosen = logp.gather(1, sequence[n_prompt:, None]).squeeze(1)
        return min(0.0, float(chosen.mean()))

    def count_tokens(self, text: str) -> int:
        """Tokens of text under the model's tokenizer, no special tokens."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def close(self) -> None:
        """Drop the model."""
        self.model = None
