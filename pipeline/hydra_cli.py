"""The Hydra front of the stage commands (run_arm, score): arm names checked before Hydra sees them.

Arm names contain '+' (`arm=+rag`, `arm=trained+rag`): the '+' belongs to the value. Hydra would answer an
unknown arm with a long composition error, so the requested names are read first, with Hydra's own
override parser, and an unknown one is refused in one line that lists the known arms.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
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


def hydra_main(prog: str, config_name: str, task: Callable[[Any], None]) -> None:
    """Refuse unknown arm names and protocol overrides in one line, then hand the command line to Hydra."""
    import hydra
    from hydra.errors import HydraException

    refusal = protocol_override(sys.argv[1:])
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
