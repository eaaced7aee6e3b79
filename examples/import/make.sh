#!/usr/bin/env bash
# How the shipped files were made (offline, on the CPU, from the repository root): lm-eval on the demo's two
# checkpoints, then Inspect replaying their texts through its offline mock model. A rerun writes new files
# (their names carry the date): delete lm-eval/ and inspect/ first.
set -euo pipefail
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
for model in base trained; do
  lm_eval --model hf --model_args "pretrained=demo/models/$model,dtype=float32" --tasks sda_mini \
    --include_path examples/import/tasks --log_samples --output_path "examples/import/lm-eval/$model" \
    --device cpu --batch_size 1
done
python examples/import/make_inspect.py
