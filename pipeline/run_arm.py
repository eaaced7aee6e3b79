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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.config import CONF_DIR, arms_of, load_arm, load_params
from pipeline.generate import KNOWN_ERRORS, RunSettings, merge_parts, run
from pipeline.hydra_cli import hydra_main
from pipeline.plan import check_matched_prompting


def settings_from(cfg: Any, arm_name: str) -> RunSettings:
    """RunSettings from a composed conf/config.yaml (the Hydra command line or hydra.compose)."""
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(node, dict)
    return RunSettings(
        arm=arm_name,
        engine=dict(node["engine"]),
        params=Path(node["params"]),
        pins=Path(node["pins"]),
        out_dir=Path(node["out_dir"]),
        fresh=bool(node["fresh"]),
        force=bool(node["force"]),
        part=None if node.get("part") is None else str(node["part"]),
        progress=bool(node["progress"]),
        arm_node=dict(node["arm"]),
        tool_server=dict(node["tool_server"]),
    )


def compose_settings(arm: str, overrides: Sequence[str] = (), part: str | None = None) -> RunSettings:
    """RunSettings of conf/config.yaml for arm with overrides (and a part), as the command line composes."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        settings = settings_from(compose("config", overrides=[f"arm={arm}", *overrides]), arm)
    if part is not None:
        settings.part = part
    return settings


def _task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig

    settings = settings_from(cfg, str(HydraConfig.get().runtime.choices["arm"]))
    try:
        # The arm first (its own refusals come before the params file's), then, before any engine starts:
        # this arm's model must be prompted in the format of the others'.
        load_arm(settings.arm, settings.conf_dir, settings.arm_node)
        params = load_params(settings.params)
        check_matched_prompting(params, list(dict.fromkeys([settings.arm, *arms_of(params)])))
        if cfg.get("merge") is not None:
            merge_parts(settings, int(cfg.merge))
        else:
            run(settings)
    except KNOWN_ERRORS as e:
        print(f"run_arm: {e}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        print(f"run_arm: {settings.arm}: {os_error_line(e, settings.out_dir)}", file=sys.stderr)
        sys.exit(2)


def os_error_line(e: OSError, out_dir: Path) -> str:
    """One line for a file that could not be written or read: which, why, and how to go on."""
    where = e.filename or out_dir
    partial = out_dir / ".partial"
    kept = (
        f"; the samples already saved in {partial} are kept"
        if partial.is_dir() and any(partial.glob("*.jsonl"))
        else ""
    )
    return (
        f"cannot use {where}: {e.strerror or e}; free space or fix the folder (or pass out_dir=), then "
        f"rerun the same command{kept}"
    )


def main() -> None:
    """Entry point: the runner's command line."""
    hydra_main("run_arm", "config", _task)


if __name__ == "__main__":
    main()
