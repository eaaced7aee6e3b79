"""The demo world's model family: a character-level tokenizer and a tiny Llama, in Hugging Face format.

Both vLLM and transformers load what `save_checkpoint` writes (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json, generation_config.json). The tool-call tags are single tokens
(not marked special, so decoded text keeps them), which shortens a tool call to what a tiny model can learn.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
TAG_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
CHARS = string.printable.replace("\x0b", "").replace("\x0c", "").replace("\r", "")


def vocabulary() -> dict[str, int]:
    """Token -> id: four specials, every printable ASCII character, then the tool-call tags."""
    tokens = [PAD, BOS, EOS, UNK, *CHARS, *TAG_TOKENS]
    return {t: i for i, t in enumerate(tokens)}


def build_tokenizer() -> Any:
    """A `tokenizers.Tokenizer` that maps each character to one id and decodes by concatenation."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, processors

    vocab = vocabulary()
    tok = Tokenizer(models.BPE(vocab={t: i for t, i in vocab.items() if t not in TAG_TOKENS}, merges=[]))
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in (PAD, BOS, EOS, UNK)])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAG_TOKENS])
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    return tok


def hf_tokenizer() -> Any:
    """The same tokenizer wrapped as a transformers PreTrainedTokenizerFast."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=build_tokenizer(), bos_token=BOS, eos_token=EOS, pad_token=PAD, unk_token=UNK
    )


def llama_config(
    hidden: int = 128,
    layers: int = 4,
    heads: int = 4,
    intermediate: int | None = None,
    max_positions: int = 1024,
) -> Any:
    """A LlamaConfig sized for the demo; vocabulary and special ids come from `vocabulary()`."""
    from transformers import LlamaConfig

    vocab = vocabulary()
    return LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        intermediate_size=intermediate or 4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=vocab[BOS],
        eos_token_id=vocab[EOS],
        pad_token_id=vocab[PAD],
        torch_dtype="float32",
    )


def new_model(seed: int = 0, **config_kwargs: Any) -> Any:
    """A freshly initialised LlamaForCausalLM of the demo family (seeded)."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(llama_config(**config_kwargs))


def save_checkpoint(model: Any, out_dir: str | Path, extra_meta: dict[str, Any] | None = None) -> Path:
    """Write model weights, config and tokenizer in Hugging Face format that vLLM and transformers load."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    hf_tokenizer().save_pretrained(out)
    if extra_meta is not None:
        (out / "training_meta.json").write_text(json.dumps(extra_meta, indent=2, sort_keys=True) + "\n")
    return out


def encode(text: str) -> list[int]:
    """Token ids of text without BOS, for building packed training sequences outside the training loop."""
    return build_tokenizer().encode(text, add_special_tokens=False).ids
