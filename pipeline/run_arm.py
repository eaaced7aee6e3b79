"""Generate one arm: `python -m pipeline.run_arm arm=<arm>` (Hydra; `-m arm=base,trained` sweeps).

The arm (conf/arm/<arm>.yaml) chooses the model and the augmentations; suite, models, rag and the matched
protocol come from params.yaml, so every arm has the same items, budget, decoding and per-sample seeds.
Before generating, the runner checks the arm's pins (pins/arms/<arm>.json) and refuses on drift. It
writes generations/<arm>.json (pipeline.generate); `python -m pipeline.score arm=<arm>` scores it.

Arm names contain '+': `arm=+rag` and `arm=trained+rag` work as written (the '+' belongs to the value).
Do not write `+arm=rag`: a leading '+' on the key is Hydra's "append a new key".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pipeline.engines import quiet_torch_warnings
from pipeline.generate import KNOWN_ERRORS, generate
from pipeline.hydra_cli import hydra_main
from pipeline.keep import run_kept
from pipeline.parts import merge
from pipeline.resolve import resolve
from pipeline.settings import os_error_line, settings_from


def _task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig

    arm = str(HydraConfig.get().runtime.choices["arm"])
    run = None
    try:
        # The configuration read once, into one object every step takes (the engine's settings typed first).
        settings = settings_from(cfg, arm)
        run = resolve(settings, matched_prompting=True)
        run_kept(generate if settings.merge is None else merge, run)
    except KeyboardInterrupt:
        # Ctrl-C is how a user stops a run: every finished sample is already in the shard, so one line on
        # how to go on, not a traceback; 130 is a shell's code for a command ended by SIGINT.
        kept = "" if run is None else f"; its finished samples are kept in {run.paths.shard}"
        again = "the same command" if run is None else f"`{run.command}`"
        print(f"run_arm: {arm}: interrupted{kept}; rerun {again} to resume", file=sys.stderr)
        sys.exit(130)
    except KNOWN_ERRORS as e:
        print(f"run_arm: {e}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        print(f"run_arm: {arm}: {os_error_line(e, Path(str(cfg.out_dir)))}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Entry point: the runner's command line."""
    quiet_torch_warnings()
    hydra_main("run_arm", "config", _task)


if __name__ == "__main__":
    main()
