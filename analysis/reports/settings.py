"""The analysis settings (params.yaml `analysis`) and the other params.yaml sections the analyses read."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import OmegaConf
from pydantic import BaseModel, ValidationError

from analysis.reports.refusal import Refusal
from contract.log_folder import SWEEP_FOLDER
from contract.params import ARM_LIST, AnalysisParams, problem
from contract.protocol import PARAMS_SECTIONS
from contract.sweep import SweepError, check_section

# The defaults of params.yaml `analysis` (contract.params.AnalysisParams), which AnalysisSettings keeps.
_DEFAULTS = AnalysisParams()


@dataclass(frozen=True)
class AnalysisSettings:
    """Analysis settings (params.yaml `analysis`, seed falling back to `protocol.seed`)."""

    n_boot: int = _DEFAULTS.n_boot
    n_perm: int = _DEFAULTS.n_perm
    alpha: float = _DEFAULTS.alpha
    fdr: float = _DEFAULTS.fdr
    min_effect: float = _DEFAULTS.min_effect
    max_failed_tool_calls: float = _DEFAULTS.max_failed_tool_calls
    seed: int = 0


M = TypeVar("M", bound=BaseModel)


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


def read_settings(path: str | Path | None) -> AnalysisSettings:
    """Settings from params.yaml's `analysis` section; path None means params.yaml if it exists."""
    if path is None:
        if not Path("params.yaml").is_file():
            return AnalysisSettings()
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
    if not isinstance(section, dict):
        raise Refusal(f"{p}: analysis: must be a mapping of settings, e.g. {{n_boot: 10000, alpha: 0.05}}")
    a = checked(AnalysisParams, section, p, "analysis")
    if not a.seed_given():
        # The seed falls back to protocol.seed, checked as the section's own seed would be.
        protocol_seed = {"seed": (params.get("protocol") or {}).get("seed", 0)}
        a = a.model_copy(update={"seed": checked(AnalysisParams, protocol_seed, p, "protocol").seed})
    return AnalysisSettings(**{name: getattr(a, name) for name in AnalysisSettings.__dataclass_fields__})


def checked(model: type[M], section: Any, p: Path, where: str) -> M:
    """A params file's section validated by its contract.params model; a Refusal naming file and field."""
    try:
        return model.model_validate(section)
    except ValidationError as e:
        raise Refusal(problem(p, e, model, (where,))) from None


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
    try:
        return ARM_LIST.validate_python(arms)
    except ValidationError as e:
        raise Refusal(problem(p, e, None, ("arms",))) from None


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
    pattern = re.compile(rf"^{re.escape(s.name)}-step-(\d+)$")
    found = [(p.stem, pattern.match(p.stem)) for p in (Path(logs_dir) / SWEEP_FOLDER).glob("*.json")]
    arms = sorted(((a, int(m.group(1))) for a, m in found if m), key=lambda x: x[1])
    return s.base, arms


def settings_dict(s: AnalysisSettings) -> dict[str, Any]:
    """Settings as a JSON-ready dict."""
    return asdict(s)
