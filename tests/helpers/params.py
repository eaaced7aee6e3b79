"""params.yaml files for the analyses: the analysis section, and a trajectory section."""

from __future__ import annotations

from pathlib import Path


def write_params(path: Path, **analysis) -> Path:
    """A params.yaml with the protocol and an analysis section (these keys over the defaults)."""
    body = {"n_boot": 2000, "n_perm": 2000, "alpha": 0.05, "fdr": 0.05, "min_effect": 0.01, **analysis}
    lines = ["protocol: {k: 8, max_tokens: 64, temperature: 1.0, top_p: 1.0, seed: 1234}", "analysis:"]
    lines += [f"  {k}: {v}" for k, v in body.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_trajectory_params(path: Path, arms: list[str], section: str | None) -> Path:
    """A params.yaml naming the arms, with a trajectory section when one is given."""
    body = [
        "protocol: {k: 4, max_tokens: 64, temperature: 1.0, top_p: 1.0, seed: 1234}",
        "analysis: {n_boot: 400, n_perm: 400}",
        f"arms: [{', '.join(arms)}]",
    ]
    path.write_text("\n".join([*body, *([section] if section else [])]) + "\n")
    return path
