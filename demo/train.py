"""Train the demo world's two checkpoints on two CPU cores.

    python -m demo.train --stage base      # M0: SFT from scratch on transcripts of every prompt format
    python -m demo.train --stage trained   # M1: M0 plus rejection-sampling fine-tuning, the oracle as reward
    python -m demo.train --stage trained --reward random --out demo/models/placebo \
        --log demo/models/train_log_placebo.txt    # the placebo: the same trainer, a seeded random reward

base: transcripts of the training problems (demo/train_data/train_problems.jsonl, disjoint from the suite) in
the four formats the arms use (plain, rag, tools, rag+tools; pipeline.prompts builds them), tokenized once,
joined into one token stream with <s> ... </s> around each transcript, and trained on packed windows that
start at a transcript boundary (no padding, no tokenizer in the loop). A share of the orbit-raise answers
carries a one-digit slip (RAISE_SLIP_RATE), so the base model is deliberately imperfect in its head.

trained: expert iteration on PLAIN raise and compute training problems only: sample k completions at
temperature 1 from the current model, keep those the oracle verifies, fine-tune on them mixed with replayed
base transcripts; repeated for --rft-iterations.

Both stages are seeded, log to demo/models/train_log_<stage>.txt and save a resumable state every
--save-every steps under --work-dir; rerunning the same command resumes a killed run.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

from demo.stages import stage_base, stage_trained
from demo.train_loop import Log, TrainConfig
from demo.transcripts import DEMO


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; every TrainConfig field is an option."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=("base", "trained"), required=True, help="which checkpoint to train")
    ap.add_argument("--out", default=None, help="checkpoint directory (default demo/models/<stage>)")
    ap.add_argument(
        "--base", default=str(DEMO / "models" / "base"), help="base checkpoint for --stage trained"
    )
    ap.add_argument(
        "--work-dir", default=str(DEMO / "models" / ".work"), help="resumable state (not committed)"
    )
    ap.add_argument("--log", default=None, help="log file (default demo/models/train_log_<stage>.txt)")
    ap.add_argument("--fresh", action="store_true", help="ignore saved state in --work-dir and start over")
    ap.add_argument(
        "--iteration-out",
        default=None,
        help="--stage trained: save the model after every RFT iteration but the last to this path, {step} "
        "replaced by the steps so far (demo/models/step-{step}: a mid-training checkpoint)",
    )
    for name, default in asdict(TrainConfig(stage="base")).items():
        if name != "stage":
            ap.add_argument(
                f"--{name.replace('_', '-')}", type=type(default), default=default, help=f"default {default}"
            )
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    import torch

    args = parse_args(argv)
    cfg = TrainConfig(
        **{k: getattr(args, k) for k in asdict(TrainConfig(stage="base")) if k != "stage"}, stage=args.stage
    )
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    if cfg.reward not in ("oracle", "random"):
        print(f"demo.train: --reward {cfg.reward!r}: use oracle or random (the placebo)", file=sys.stderr)
        return 2
    out = Path(args.out or DEMO / "models" / args.stage)
    # Per output, not per stage: a placebo run (--out demo/models/placebo) must not resume the trained run.
    work = Path(args.work_dir) / out.name
    if args.fresh and work.exists():
        for f in work.iterdir():
            f.unlink()
    work.mkdir(parents=True, exist_ok=True)
    log = Log(Path(args.log or DEMO / "models" / f"train_log_{args.stage}.txt"))
    log(f"start {args.stage}: torch {torch.__version__}, threads {cfg.threads}, seed {cfg.seed}")
    if args.stage == "base":
        stage_base(cfg, work, out, log)
    else:
        base = Path(args.base)
        if not (base / "config.json").exists():
            print(
                f"demo.train: no base checkpoint at {base}/config.json; run --stage base first",
                file=sys.stderr,
            )
            return 2
        stage_trained(cfg, work, base, out, log, args.iteration_out)
    log(f"done {args.stage} in {time.time() - log.t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
