"""Build the GRPO world's checkpoints: `python build.py` (from examples/smollm2-grpo/).

    models/base/      SmolLM2-135M-Instruct as a float32 checkpoint, built as the SmolLM2 world builds it
    models/<arm>/     base with one committed LoRA adapter (adapters/, made by grpo.py) merged in: the
                      rewarded run's checkpoints in training order and the placebo's last (CHECKPOINTS)
    checkpoints/verifier/global_step_<n>/actor/huggingface/
                      the rewarded run's checkpoints laid out as verl saves them (hard links to models/<arm>,
                      no second copy), which params.yaml `sweep` finds by a glob (RUN_STEPS)

None of them is committed (about 540 MB each); the SmolLM2 world's build (examples/smollm2/build.py, imported,
not copied) converts the GGUF file and merges each adapter, byte for byte the same on every run. `--sha256`
prints each checkpoint's model.safetensors digest, the figures README.md records.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

from contract.digest import file_sha256

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("smollm2_build", HERE.parent / "smollm2" / "build.py")
assert _spec is not None and _spec.loader is not None
smollm2_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smollm2_build)

# Each merged checkpoint's arm and its adapter, in training order; the placebo's (random reward) last.
CHECKPOINTS = {
    "step-12": "adapters/verifier/step-12",
    "step-24": "adapters/verifier/step-24",
    "trained": "adapters/verifier/step-48",
    "placebo": "adapters/random/step-48",
}


def build_all(
    models: Path,
    adapters_root: Path,
    only: str | None = None,
    checkpoints: dict[str, str] | None = None,
    keep_base: bool = False,
) -> dict[str, Path]:
    """Build base (unless only names a checkpoint, or keep_base) and every checkpoint (or only)."""
    built: dict[str, Path] = {}
    if only in (None, "base") and not keep_base:
        t0 = time.perf_counter()
        built["base"] = smollm2_build.build_base(models / "base")
        print(f"build: {models / 'base'} in {time.perf_counter() - t0:.1f} s", flush=True)
    if only == "base":
        return built
    if not (models / "base" / "config.json").is_file():
        raise smollm2_build.BuildError(
            f"{models / 'base'}: not built; run `python build.py --only base` first"
        )
    for arm, adapter in (checkpoints or CHECKPOINTS).items():
        if only not in (None, arm):
            continue
        t0 = time.perf_counter()
        built[arm] = smollm2_build.build_trained(models / "base", adapters_root / adapter, models / arm)
        print(f"build: {models / arm} in {time.perf_counter() - t0:.1f} s", flush=True)
    return built


# The rewarded run's checkpoints and their training steps, laid out as verl saves a run's checkpoints.
RUN_STEPS = {"step-12": 12, "step-24": 24, "trained": 48}


def lay_out_run(models: Path, root: Path) -> list[Path]:
    """Hard-link each built checkpoint of RUN_STEPS to <root>/global_step_<n>/actor/huggingface."""
    laid = []
    for arm, step in RUN_STEPS.items():
        src = models / arm
        if not (src / "config.json").is_file():
            continue
        dest = root / f"global_step_{step}" / "actor" / "huggingface"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for f in sorted(src.iterdir()):
            if f.is_file():
                os.link(f, dest / f.name)
        laid.append(dest)
        print(f"build: {dest} (hard links to {src})", flush=True)
    return laid


def main(argv: list[str] | None = None) -> int:
    """Command line: build base and the checkpoints; exit 2 with one line on bad input."""
    ap = argparse.ArgumentParser(prog="python build.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=str(HERE / "models"), help="where the checkpoints go (models/)")
    ap.add_argument("--adapters", default=str(HERE), help="the folder adapter paths start from (this one)")
    ap.add_argument("--only", help="build this one checkpoint: base or an arm (the arms need base)")
    ap.add_argument(
        "--checkpoint",
        action="append",
        metavar="ARM=ADAPTER",
        help="build these checkpoints instead of CHECKPOINTS (repeatable; a short run's adapters)",
    )
    ap.add_argument(
        "--keep-base", action="store_true", help="merge into the models/base already there (no conversion)"
    )
    ap.add_argument("--sha256", action="store_true", help="print each built model.safetensors' sha256")
    ap.add_argument(
        "--run-layout",
        default=str(HERE / "checkpoints" / "verifier"),
        help="where the rewarded run's checkpoints are laid out as verl's global_step_<n>/actor/huggingface",
    )
    args = ap.parse_args(argv)
    try:
        checkpoints = dict(CHECKPOINTS)
        if args.checkpoint:
            if not all("=" in c for c in args.checkpoint):
                raise smollm2_build.BuildError(f"--checkpoint {args.checkpoint}: each must be ARM=ADAPTER")
            checkpoints = dict(c.split("=", 1) for c in args.checkpoint)
        if args.only not in (None, "base", *checkpoints):
            raise smollm2_build.BuildError(
                f"--only {args.only}: not a checkpoint; one of base, {', '.join(checkpoints)}"
            )
        if args.keep_base and args.only == "base":
            raise smollm2_build.BuildError("--keep-base with --only base: nothing to build")
        built = build_all(Path(args.models), Path(args.adapters), args.only, checkpoints, args.keep_base)
        lay_out_run(Path(args.models), Path(args.run_layout))
    except smollm2_build.BuildError as e:
        print(f"build: {e}", file=sys.stderr)
        return 2
    if args.sha256:
        for arm, folder in built.items():
            print(f"{arm}  {file_sha256(folder / 'model.safetensors')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
