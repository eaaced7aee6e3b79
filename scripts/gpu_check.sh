#!/usr/bin/env bash
# The GPU check: run the pipeline with vLLM on a GPU machine and compare it with the committed CPU run.
#
#   REASONING_DELTA_EXTRA=gpu bash scripts/setup.sh
#   bash scripts/gpu_check.sh [OUT_DIR]          # default: gpu_check/ (not tracked)
#
# For each world (the demo; the SmolLM2 world when examples/smollm2/ exists) it works in a fresh clone of
# this checkout (the workspace is left alone), takes the committed CPU generations as the reference
# (`dvc checkout` from this checkout's DVC cache, else `dvc pull` from its remote), deletes them, runs the
# world's pipeline on the GPU, and writes OUT_DIR/gpu_check.json with, per arm: tokens/s (from
# generations/<arm>.provenance.json), engine, device, driver, dtype and the share of samples whose text
# equals the CPU run's (benchmarks/gpu_compare.py, which the tests exercise on the CPU). It prints the table.
# Settings (environment):
#   GPU_CHECK_DTYPE=float32   run the engine in this dtype (default: conf/engine/vllm.yaml `auto`, which is
#                             bfloat16 on a GPU for the float32 demo checkpoints; float32 is the fair test
#                             of "same texts as the CPU run", bfloat16 the production setting)
#   SMOLLM2_CMD="..."         the command that builds and runs the SmolLM2 world inside examples/smollm2/
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${1:-gpu_check}"
py="$root/.venv/bin/python"
# The DVC stages call `python`: this venv's, as an activated venv would.
export PATH="$root/.venv/bin:$PATH"

if ! smi="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)"; then
  echo "gpu_check: no NVIDIA GPU here (nvidia-smi failed); run it on a GPU machine after REASONING_DELTA_EXTRA=gpu bash scripts/setup.sh" >&2
  exit 2
fi
if ! "$py" -c "from vllm.platforms import current_platform as p; raise SystemExit(p.is_cpu())" 2>/dev/null; then
  echo "gpu_check: this vLLM is the CPU build (or missing); install the GPU one: REASONING_DELTA_EXTRA=gpu bash scripts/setup.sh" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out/gpu_check.json"
echo "gpu_check: $smi"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
git clone -q "$root" "$work/repo"
# The clone reads this checkout's DVC cache and remotes (the CPU generations are there, or on the remote).
cache="$("$py" -m dvc cache dir)"
( cd "$work/repo" && "$py" -m dvc cache dir --local "$cache" )
[ -f "$root/.dvc/config.local" ] && cp "$root/.dvc/config.local" "$work/repo/.dvc/config.local"
if [ -n "${GPU_CHECK_DTYPE:-}" ]; then
  sed -i "s/^dtype: [a-z0-9]*/dtype: $GPU_CHECK_DTYPE/" "$work/repo/conf/engine/vllm.yaml"
  # The SmolLM2 world runs the repository's conf/, so the same setting applies to it.
fi

# run_world NAME DIR CMD: reference from DVC, fresh GPU generations with CMD in DIR, comparison into the JSON.
run_world() {
  local name="$1" dir="$2" cmd="$3" ref="$out/$1-cpu-generations" t0 t1
  rm -rf "$ref" "$out/$name-gpu-generations"
  ( cd "$dir" && { "$py" -m dvc checkout generations >/dev/null 2>&1 || "$py" -m dvc pull generations >/dev/null 2>&1 || true; } )
  if compgen -G "$dir/generations/*.json" >/dev/null; then
    cp -r "$dir/generations" "$ref"
  else
    echo "gpu_check: $name: no CPU generations in the DVC cache or remote; the run is described but not compared" >&2
    ref=""
  fi
  rm -rf "$dir/generations" "$dir/generations.work"  # the kept links would put the CPU files back
  t0=$(date +%s)
  ( cd "$dir" && eval "$cmd" ) 2>&1 | tee "$out/$name-pipeline.log"
  t1=$(date +%s)
  cp -r "$dir/generations" "$out/$name-gpu-generations"
  "$py" -m benchmarks.gpu_compare --world "$name" --run "$dir/generations" ${ref:+--reference "$ref"} \
    --pipeline-s "$((t1 - t0))" --device-line "$smi" --out "$out/gpu_check.json"
}

# ---- World 1: the demo (the README's first command) -------------------------------------------------------
run_world demo "$work/repo" "dvc repro"

# ---- World 2: the SmolLM2 world ------------------------------------------------------------------------------
# The world is a DVC project of its own (examples/smollm2/.dvc): the clone reads this checkout's cache of it.
# SMOLLM2_CMD is the command its README documents: build the checkpoints, then `dvc repro` in the folder.
if [ -d "$work/repo/examples/smollm2" ]; then
  ( cd "$work/repo/examples/smollm2" && "$py" -m dvc cache dir --local "$root/examples/smollm2/.dvc/cache" )
  run_world smollm2 "$work/repo/examples/smollm2" "${SMOLLM2_CMD:-python build.py && dvc repro}"
else
  echo "gpu_check: examples/smollm2/ is not in this checkout; only the demo world was checked"
fi

rm -rf "$work"
echo "gpu_check: wrote $out/gpu_check.json"
