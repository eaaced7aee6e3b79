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

from contract.provenance import load_provenance, provenance_path
from pipeline.generate import KNOWN_ERRORS, RunSettings, run
from pipeline.hydra_cli import hydra_main


def _task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    arm_name = HydraConfig.get().runtime.choices["arm"]
    node = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(node, dict)
    settings = RunSettings(
        arm=str(arm_name),
        engine=dict(node["engine"]),
        params=Path(node["params"]),
        pins=Path(node["pins"]),
        out_dir=Path(node["out_dir"]),
        fresh=bool(node["fresh"]),
        progress=bool(node["progress"]),
        arm_node=dict(node["arm"]),
        tool_server=dict(node["tool_server"]),
    )
    try:
        dest = run(settings)
    except KNOWN_ERRORS as e:
        print(f"run_arm: {e}", file=sys.stderr)
        sys.exit(2)
    print(summary_line(dest))


def summary_line(dest: Path) -> str:
    """One line on what a run did: samples, engine, device, start time, throughput, the file written."""
    record = load_provenance(provenance_path(dest))
    if record is None:
        return f"run_arm: wrote {dest}"
    e = record.engine
    start = f"engine start {record.engine_start_s:.1f} s, " if record.engine_start_s is not None else ""
    resumed = f" ({record.samples_resumed} resumed)" if record.samples_resumed else ""
    return (
        f"run_arm: {record.arm}: {record.samples} samples{resumed} on {e.version or e.name}, {e.device}, "
        f"{e.dtype}; {start}generation {record.generate_s:.1f} s, {record.tokens_per_s:.0f} tok/s; "
        f"wrote {dest}"
    )


def main() -> None:
    """Entry point: the runner's command line."""
    hydra_main("run_arm", "config", _task)


if __name__ == "__main__":
    main()
