"""Rebuild the tiny checkpoints the tests use into tests/checkpoints/ (about 2 + 8 minutes on 2 CPU cores).

    python scripts/build_test_checkpoints.py [--force]

The tests load the committed checkpoints so that a clean clone trains nothing; run this after changing a
recipe (demo/tiny_models.py: build_tiny_checkpoint, TINY), then commit the new folder and
delete the old one. Each folder's name carries its recipe, so an old checkpoint is never used for a new one.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo.tiny_models import (  # noqa: E402
    COMMITTED_CHECKPOINTS,
    TINY_RECIPE,
    TOOL_MODEL_NAME,
    build_tiny_checkpoint,
    train_tiny_tool_model,
)


def main() -> None:
    """Train each missing (or, with --force, every) test checkpoint into tests/checkpoints/<name>."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="retrain checkpoints that are already there")
    args = parser.parse_args()
    for name, build in ((TINY_RECIPE, build_tiny_checkpoint), (TOOL_MODEL_NAME, train_tiny_tool_model)):
        dest = COMMITTED_CHECKPOINTS / name
        if dest.is_dir() and not args.force:
            print(f"{dest}: there (--force retrains it)")
            continue
        work = dest.with_name(f".{name}.building")
        shutil.rmtree(work, ignore_errors=True)
        t0 = time.perf_counter()
        build(work)
        shutil.rmtree(dest, ignore_errors=True)
        work.rename(dest)
        print(f"{dest}: trained in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
