"""The analysis settings (params.yaml `analysis`) and the other params.yaml sections the analyses read."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from analysis.reports.refusal import Refusal
from contract.arm import arm_list_problem
from contract.protocol import PARAMS_SECTIONS
from contract.sweep import SweepError, check_section

# A percentile interval's tails and a permutation p-value need resamples beyond each cut: fewer than this
# many in a tail and the interval is a few order statistics (n_boot: 1 gives an interval of one point).
TAIL_RESAMPLES = 5


def min_resamples(alpha: float) -> int:
    """The fewest resamples (n_boot, n_perm) that put TAIL_RESAMPLES in each alpha/2 tail: 200 at 0.05."""
    return math.ceil(2 * TAIL_RESAMPLES / alpha)


@dataclass(frozen=True)
class Settings:
    """Analysis settings (params.yaml `analysis`, seed falling back to `protocol.seed`)."""

    n_boot: int = 10_000
    n_perm: int = 10_000
    alpha: float = 0.05
    fdr: float = 0.05
    min_effect: float = 0.01
    max_failed_tool_calls: float = 0.0
    seed: int = 0


def _read_params(p: Path) -> dict[str, Any]:
    """A params file as a dict; a file that does not parse is a Refusal naming it."""
    try:
        return OmegaConf.to_container(OmegaConf.load(p), resolve=True) or {}  # type: ignore[return-value]
    except Exception as e:  # omegaconf raises several unrelated types for bad YAML
        raise Refusal(f"{p}: cannot read params: {e}".replace("\n", " ")) from e


def _fix(key: str, known: Sequence[str]) -> str:
    """How to fix an unknown key: the known one it was likely meant as, else remove it."""
    close = difflib.get_close_matches(key, list(known), 1, 0.6)
    return f"did you mean {close[0]!r}? rename it" if close else "remove or rename it"


def read_settings(path: str | Path | None) -> Settings:
    """Settings from params.yaml's `analysis` section; path None means params.yaml if it exists."""
    if path is None:
        if not Path("params.yaml").is_file():
            return Settings()
        path = "params.yaml"
    p = Path(path)
    if not p.is_file():
        raise Refusal(f"{p}: params file not found; pass --params PATH or create it")
    params = _read_params(p)
    stray = sorted(set(params) - set(PARAMS_SECTIONS))
    if stray:
        fix = _fix(stray[0], PARAMS_SECTIONS)
        raise Refusal(
            f"{p}: {stray[0]}: unknown key (a typo?); {fix}; known keys here: {', '.join(PARAMS_SECTIONS)}"
        )
    section = params.get("analysis") or {}
    allowed = set(Settings.__dataclass_fields__)
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise Refusal(
            f"{p}: analysis.{unknown[0]}: unknown setting; {_fix(unknown[0], sorted(allowed))}; allowed: "
            f"{', '.join(sorted(allowed))}"
        )
    values = {**asdict(Settings()), "seed": (params.get("protocol") or {}).get("seed", 0), **section}
    for name, value in values.items():
        # bool is an int to Python: `n_boot: true` would run one resample.
        want = int if name in ("n_boot", "n_perm", "seed") else (int, float)
        if isinstance(value, bool) or not isinstance(value, want):
            where = "protocol.seed" if name == "seed" and "seed" not in section else f"analysis.{name}"
            kind = "an integer" if want is int else "a number"
            raise Refusal(f"{p}: {where}: must be {kind}, got {value!r}")
    s = Settings(**values)
    for name in ("alpha", "fdr"):
        if not 0 < getattr(s, name) < 1:
            raise Refusal(f"{p}: analysis.{name} = {getattr(s, name)} must lie strictly between 0 and 1")
    least = min_resamples(s.alpha)
    for name in ("n_boot", "n_perm"):
        if getattr(s, name) < least:
            raise Refusal(
                f"{p}: analysis.{name} = {getattr(s, name)} is too few for alpha = {s.alpha}: each tail of a "
                f"{1 - s.alpha:.0%} interval and the smallest p-value must rest on at least "
                f"{TAIL_RESAMPLES} resamples; set analysis.{name}: {least} or more (10000 is the default)"
            )
    # NaN passes every comparison (a NaN min_effect would switch the negligible rule off); a difference of
    # two means of scores in [0, 1] is never 1 or more, so such a min_effect calls every delta negligible.
    if not (math.isfinite(s.min_effect) and 0 <= s.min_effect < 1):
        raise Refusal(
            f"{p}: analysis.min_effect = {s.min_effect} must be a number in [0, 1) (the smallest delta worth "
            "a claim, e.g. 0.01)"
        )
    if not 0 <= s.max_failed_tool_calls <= 1:
        raise Refusal(
            f"{p}: analysis.max_failed_tool_calls = {s.max_failed_tool_calls} must be a share between 0 and 1"
        )
    return s


def read_section(path: str | Path | None, name: str) -> Any:
    """One top-level section of a params file (default params.yaml); None when file or section is absent."""
    p = Path(path) if path is not None else Path("params.yaml")
    return _read_params(p).get(name) if p.is_file() else None


def read_arm_list(path: str | Path | None) -> list[str] | None:
    """params.yaml `arms` (the arms the pipeline runs), or None when the file or the key is absent."""
    p = Path(path) if path is not None else Path("params.yaml")
    if not p.is_file():
        return None
    params = _read_params(p)
    arms = params.get("arms")
    if arms is None:
        return None
    if not isinstance(arms, list) or not all(isinstance(a, str) for a in arms):
        raise Refusal(f"{p}: arms: must be a list of arm names, e.g. [base, trained, +rag]")
    problem = arm_list_problem(arms)
    if problem:
        raise Refusal(f"{p}: arms: {problem}")
    return list(arms)


SWEEP_FOLDER = "sweep"  # <logs>/sweep/<arm>.json: the swept checkpoints' logs (pipeline.score_sweep)


def log_path(folder: str | Path, arm: str) -> Path:
    """An arm's log: <folder>/<arm>.json, or a swept checkpoint's <folder>/sweep/<arm>.json."""
    direct = Path(folder) / f"{arm}.json"
    swept = Path(folder) / SWEEP_FOLDER / f"{arm}.json"
    return swept if not direct.is_file() and swept.is_file() else direct


def read_swept(path: str | Path | None, logs_dir: str | Path) -> tuple[str, list[tuple[str, int]]] | None:
    """params.yaml `sweep`: its base arm and the swept arms whose logs are in <logs>/sweep, with their steps,
    in step order; None without a sweep. The logs, not the glob, say which checkpoints ran, so an analysis
    needs no checkpoint folder."""
    section = read_section(path, "sweep")
    if section is None:
        return None
    try:
        s = check_section(section, str(path or "params.yaml"))
    except SweepError as e:
        raise Refusal(str(e)) from None
    pattern = re.compile(rf"^{re.escape(s['name'])}-step-(\d+)$")
    found = [(p.stem, pattern.match(p.stem)) for p in (Path(logs_dir) / SWEEP_FOLDER).glob("*.json")]
    arms = sorted(((a, int(m.group(1))) for a, m in found if m), key=lambda x: x[1])
    return s["base"], arms


def settings_dict(s: Settings) -> dict[str, Any]:
    """Settings as a JSON-ready dict."""
    return asdict(s)
