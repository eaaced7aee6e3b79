"""EvalLogs by arm: a log's arm is its `arm` field, else its file stem; two logs of one arm are refused."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from contract.evallog import EvalLog, load
from contract.logreader import read_log, read_logs

ArmLogs = dict[str, tuple[Path, EvalLog]]
SWEEP_FOLDER = "sweep"  # <logs>/sweep/<arm>.json: the swept checkpoints' logs (pipeline.score_sweep)


class LogFolderError(ValueError):
    """Logs that do not give one log per arm, or no folder of logs; str() is the one line to print."""


def arm_of(path: str | Path, log: EvalLog) -> str:
    """The arm a log stands for: its `arm` field, else its file's stem (a log imported without one)."""
    return log.arm or Path(path).stem


def by_arm(logs: Iterable[tuple[str | Path, EvalLog]]) -> ArmLogs:
    """The logs by arm, in the order given; two logs of one arm are a LogFolderError naming both."""
    found: ArmLogs = {}
    for path, log in logs:
        arm = arm_of(path, log)
        if arm in found:
            # Whichever were kept, the other arm's numbers would be silently dropped from every report.
            raise LogFolderError(
                f"{found[arm][0]} and {path}: both hold arm {arm!r}; keep one log per arm: move one out of "
                "the folder, or give it its own arm (python -m interop.imports ... --arm NAME)"
            )
        found[arm] = (Path(path), log)
    return found


def read_all(paths: Sequence[Path], samples: bool) -> list[EvalLog]:
    """The logs of paths, validated in full; samples=False drops the samples (contract.logreader)."""
    if not paths:
        return []
    if samples:
        return [load(p) for p in paths]
    return read_logs(paths) if len(paths) > 1 else [read_log(paths[0])]


def log_path(folder: str | Path, arm: str) -> Path:
    """An arm's log: <folder>/<arm>.json, or a swept checkpoint's <folder>/sweep/<arm>.json."""
    direct = Path(folder) / f"{arm}.json"
    swept = Path(folder) / SWEEP_FOLDER / f"{arm}.json"
    return swept if not direct.is_file() and swept.is_file() else direct


def paths_to_read(folder: Path, arms: Sequence[str] | None) -> list[Path]:
    """Every *.json of the folder; with arms, each one's log_path, and every other *.json if one is missing.

    A log whose file is not named after its arm (an imported one) is found by its `arm` field; the other
    logs are read only then, so a folder of <arm>.json files costs one read per arm asked.
    """
    every = sorted(folder.glob("*.json"))
    if arms is None:
        return every
    named = [path for a in arms if (path := log_path(folder, a)).is_file()]
    if len(named) == len(arms):
        return named
    return named + [p for p in every if p not in named]


def read_arm_logs(folder: str | Path, arms: Sequence[str] | None = None, samples: bool = False) -> ArmLogs:
    """The EvalLogs of a folder by arm: every arm's, or those of arms (in that order) that are there.

    An arm asked for but absent is left out: the caller words what is missing and why it is needed.
    Raises LogFolderError for a path that is no folder, for two logs of one arm and for a log named after
    an arm asked for that holds another, EvalLogError for a log that does not validate.
    """
    where = Path(folder)
    if not where.is_dir():
        raise LogFolderError(f"{where}: no such folder of EvalLogs; give the folder that holds the logs")
    paths = paths_to_read(where, arms)
    logs = list(zip(paths, read_all(paths, samples), strict=True))
    if arms is None:
        return by_arm(logs)
    for path, log in logs:
        if path.stem in arms and arm_of(path, log) != path.stem:
            # Read as its field says, the arm its name promises would be missing or doubled.
            raise LogFolderError(
                f"{path}: holds arm {log.arm!r}, not the {path.stem!r} its name says; rename the file "
                "after its arm, or set its arm (python -m interop.imports ... --arm NAME)"
            )
    found = by_arm((p, log) for p, log in logs if arm_of(p, log) in arms)
    return {a: found[a] for a in arms if a in found}
