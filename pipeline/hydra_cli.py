"""The Hydra front of the stage commands (run_arm, score): arm names checked before Hydra sees them.

Arm names contain '+' (`arm=+rag`, `arm=trained+rag`): the '+' belongs to the value. Hydra would answer an
unknown arm with a long composition error, so the requested names are read first, with Hydra's own
override parser, and an unknown one is refused in one line that lists the known arms. So is a mistyped key
(`enigne=hf`, `engine.chunk_sise=8`) or group choice (`engine=hff`): one line naming the known ones, exit 2,
instead of Hydra's advice to add the key with `+`.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from contract.protocol import PROTOCOL_ALIASES, is_protocol_key
from pipeline.config import CONF_DIR, known_arms, register_swept_arms, unknown_arm
from pipeline.swept import params_arg


def arm_values(args: Sequence[str]) -> list[str]:
    """Arm names requested by command-line overrides (`arm=x`, or a sweep `arm=x,y`), parsed as Hydra does."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    wanted = [a for a in args if not a.startswith("-") and a.split("=", 1)[0].lstrip("~+") == "arm"]
    if not wanted:
        return []
    names: list[str] = []
    for ov in OverridesParser.create().parse_overrides(wanted):
        if ov.is_sweep_override():
            names.extend(str(v) for v in ov.sweep_string_iterator())
        else:
            names.append(str(ov.value()))
    return names


def _key(arg: str) -> str:
    """The config key an override names (`+protocol.k=1` -> `protocol.k`)."""
    return arg.split("=", 1)[0].lstrip("~+")


def protocol_override(args: Sequence[str]) -> str | None:
    """The one-line refusal of a command-line override that sets a protocol key, or None when there is none.

    Hydra would add `+protocol.k=1` to a config nobody reads and the run would go on at params.yaml's k.
    """
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        key = _key(arg)
        head = key.split(".", 1)[0]
        if is_protocol_key(head):
            params = next((a.split("=", 1)[1] for a in args if _key(a) == "params"), "params.yaml")
            setting = key if head == "protocol" else f"protocol.{PROTOCOL_ALIASES.get(head, head)}"
            return (
                f"{arg}: the protocol is not set on the command line; it is matched across arms and lives "
                f"only in {params} ({setting}): edit it there, or `dvc exp run -S {setting}=VALUE`"
            )
    return None


def _groups(top: dict[str, Any]) -> dict[str, Any]:
    """The config groups a stage config's defaults list chooses from, with their default choices."""
    pairs = [next(iter(d.items())) for d in top.get("defaults", []) if isinstance(d, dict)]
    return {str(k): v for k, v in pairs if not str(k).startswith(("override", "hydra"))}


def _refusal(arg: str, what: str, key: str, known: Sequence[str]) -> str:
    known = sorted(k for k in known if k != "hydra")
    close = difflib.get_close_matches(key, known, 1, 0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    return f"{arg}: {what}{hint} known: {', '.join(known)} (--help lists them)"


def unknown_override(config_name: str, args: Sequence[str], conf_dir: Path = CONF_DIR) -> str | None:
    """The one-line refusal of an override that names no key of the stage's config (`enigne=hf`,
    `engine.chunk_sise=8`) or no file of a group (`engine=hff`), or None. Hydra's own text for these
    suggests `+enigne=hf`, which would add a key nothing reads."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    # An explicit `+key=` (add) or `~key` (delete) is deliberate; the arm is checked by arm_values.
    plain = [a for a in args if not a.startswith(("-", "+", "~")) and "=" in a]
    try:
        overrides = OverridesParser.create().parse_overrides(plain)
    except HydraException:
        return None  # Hydra reports a malformed override itself, with its grammar error
    top = OmegaConf.to_container(OmegaConf.load(conf_dir / f"{config_name}.yaml"))
    assert isinstance(top, dict)
    groups = _groups(top)
    chosen = {g: [str(v)] for g, v in groups.items()}
    for ov in overrides:
        if ov.key_or_group in groups:
            chosen[ov.key_or_group] = [str(v) for v in ov.sweep_string_iterator()] if ov.is_sweep_override() \
                else [str(ov.value())]  # fmt: skip
    for arg, ov in zip(plain, overrides, strict=True):
        path = ov.key_or_group.split(".")
        if path[0] in ("hydra", "arm"):
            continue
        if path[0] in groups:
            options = [f.stem for f in (conf_dir / path[0]).glob("*.yaml")]
            for choice in chosen[path[0]]:
                if choice not in options:
                    return _refusal(arg, f"no {path[0]} {choice!r} (no conf/{path[0]}/{choice}.yaml)", choice,
                                    options)  # fmt: skip
                node: Any = OmegaConf.to_container(OmegaConf.load(conf_dir / path[0] / f"{choice}.yaml"))
                missing = _missing(node, path[1:])
                if missing:
                    return _refusal(
                        arg, f"{path[0]} {choice!r} has no key {missing[0]!r}", missing[0], missing[1]
                    )
            continue
        missing = _missing({k: v for k, v in top.items() if k != "defaults"} | dict.fromkeys(groups), path)
        if missing:
            return _refusal(arg, f"unknown key {missing[0]!r}", missing[0], missing[1])
    return None


def _missing(node: Any, path: Sequence[str]) -> tuple[str, list[str]] | None:
    """The first part of path that node does not have, with the keys it has there; None when it has all."""
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return part, list(node) if isinstance(node, dict) else []
        node = node[part]
    return None


def hydra_main(prog: str, config_name: str, task: Callable[[Any], None]) -> None:
    """Refuse unknown arm names and protocol overrides in one line, then hand the command line to Hydra."""
    import hydra
    from hydra.errors import HydraException

    refusal = protocol_override(sys.argv[1:]) or unknown_override(config_name, sys.argv[1:])
    if refusal:
        print(f"{prog}: {refusal}", file=sys.stderr)
        sys.exit(2)
    params = params_arg(sys.argv[1:])
    try:
        unknown = [a for a in arm_values(sys.argv[1:]) if a not in known_arms(params=params)]
    except HydraException:
        unknown = []  # Hydra reports a malformed override itself, with its grammar error
    if unknown:
        print(f"{prog}: {unknown_arm(unknown[0], params=params)}", file=sys.stderr)
        sys.exit(2)
    register_swept_arms(params)  # the swept checkpoints' arms, which have no conf/arm file
    hydra.main(config_path=str(CONF_DIR), config_name=config_name, version_base="1.3")(task)()
