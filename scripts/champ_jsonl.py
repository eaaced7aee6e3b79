"""CHAMP's 270 problems as JSONL, for `python -m pipeline.freeze` (CHAMP ships one nested JSON file).

    .venv/bin/python scripts/champ_jsonl.py --out champ.jsonl          # from the installed champ-dataset
    .venv/bin/python -m pipeline.freeze champ.jsonl --out suites/champ.jsonl --name champ \\
        --field item_id=identifier --field family=category --field question=text \\
        --fallback-verifier exact

The `champ-dataset` package (pip install champ-dataset; Mao et al. 2024, "CHAMP: A Competition-level Dataset
for Fine-Grained Analyses of LLMs' Mathematical Reasoning Capabilities", MIT licence) keeps the problems,
concepts, hints and model responses in one file, dataset_files/v0.json, under `problems` keyed by id. Each
line written here is one problem with CHAMP's own names: identifier, category, text (the problem) and answer,
the text and answer as the package gives them (its `@@` math markers removed), in the package's order.
Nothing is rewritten: about one answer in three is text ("No such values") or several answers ("376 and
625") that math-verify cannot read whole, which freeze judges by the exact verifier with
--fallback-verifier exact.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write

FIELDS = ("identifier", "category", "text", "answer")


def problems(path: Path | None = None) -> list[dict[str, Any]]:
    """CHAMP's problems (identifier, category, text, answer) from the package's v0 file, or from path."""
    import champ_dataset

    dataset = champ_dataset.load(str(path) if path is not None else "v0")
    return [{name: getattr(p, name) for name in FIELDS} for p in dataset.problems.values()]


def main(argv: list[str] | None = None) -> int:
    """Command line: write CHAMP's problems as JSONL."""
    ap = argparse.ArgumentParser(
        prog="scripts/champ_jsonl.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    ap.add_argument(
        "--src", type=Path, default=None, help="CHAMP's JSON file (default: the installed package's v0.json)"
    )
    args = ap.parse_args(argv)
    try:
        rows = problems(args.src)
    except ModuleNotFoundError:
        print(
            "champ_jsonl: the champ-dataset package is not installed: pip install champ-dataset",
            file=sys.stderr,
        )
        return 2
    except (OSError, json.JSONDecodeError, KeyError, AssertionError) as e:
        print(f"champ_jsonl: {args.src}: not CHAMP's dataset file ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    atomic_write(args.out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    version = importlib.metadata.version("champ-dataset")
    print(f"{args.out}: {len(rows)} CHAMP problems (champ-dataset {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
