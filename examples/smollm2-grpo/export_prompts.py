"""The GRPO runs' training problems as JSONL, for the contamination audit's overlap check.

    python export_prompts.py [--out train_prompts.jsonl]

grpo.train_problems with grpo.py's defaults (96 problems, the SmolLM2 world's training seed): the questions
both runs were trained on, one `{"item_id", "family", "question", "answer"}` a line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from grpo import HERE, train_problems, world


def main(argv: list[str] | None = None) -> int:
    """Write the training problems."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "train_prompts.jsonl"))
    args = ap.parse_args(argv)
    rows = train_problems(96, world.TRAIN_SEED)
    keep = ("item_id", "family", "question", "answer")
    Path(args.out).write_text("".join(json.dumps({k: r[k] for k in keep if k in r}) + "\n" for r in rows))
    print(f"wrote {len(rows)} training problems -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
