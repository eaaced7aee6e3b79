"""Shared plumbing of the analyses: settings, loading and aligning logs, the protocol refusal, writing.

A comparison is meaningful only at a matched protocol on the same items, scored the same way, so two logs
that differ in n_samples, temperature, top_p, max_tokens, seed, the suite, the `protocol` block, the
suite's sha256 pins or the per-sample seeds (these three when both logs record them), their item sets, or
their scorer (name and version, the tool metric of an imported log) or the version of a verifier both use
are refused, and so are the two logs of a pre/post delta when both are of one model: the CLI prints one
line naming both files and the field, exits 2 and writes nothing. A comparison of one model with itself
(analysis.commands.compare_logs) may differ in what it compares (`allow`: the seed, the prompt). Of the rest
of the
project only the contract (contract.evallog, contract.protocol) is imported.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from contract.arm import arm_list_problem
from contract.atomic import atomic_write_set
from contract.evallog import EvalLog, EvalLogError, load
from contract.files import PathCheckError, output_dir
from contract.logreader import read_log, read_logs
from contract.protocol import MATCHED_LOG_FIELDS, PARAMS_SECTIONS, PROMPTING_KEYS
from contract.provenance import NOT_RECORDED
from contract.sweep import SweepError, check_section

EXIT_REFUSED = 2
PROTOCOL_FIELDS = MATCHED_LOG_FIELDS
SUITE_FIELDS = ("suite", "suite_revision")
# The pins (sha256) of the suite file and of its questions, compared when both logs record them.
SUITE_PINS = ("suite", "questions")
# The protocol keys that say how a model is prompted: a prompt ablation of one model differs in them.
PROMPT_KEYS = frozenset(PROMPTING_KEYS) | {"prompt_template", "fewshot", "stop", "chat"}


# A percentile interval's tails and a permutation p-value need resamples beyond each cut: fewer than this
# many in a tail and the interval is a few order statistics (n_boot: 1 gives an interval of one point).
TAIL_RESAMPLES = 5


def min_resamples(alpha: float) -> int:
    """The fewest resamples (n_boot, n_perm) that put TAIL_RESAMPLES in each alpha/2 tail: 200 at 0.05."""
    return math.ceil(2 * TAIL_RESAMPLES / alpha)


class Refusal(Exception):
    """Input the analysis will not compare; str() is the one line the CLI prints before exiting 2."""


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
        raise Refusal(
            f"{p}: {stray[0]}: unknown key (a typo?); known keys here: {', '.join(PARAMS_SECTIONS)}"
        )
    section = params.get("analysis") or {}
    allowed = set(Settings.__dataclass_fields__)
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise Refusal(f"{p}: analysis.{unknown[0]}: unknown setting; allowed: {', '.join(sorted(allowed))}")
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


def generated_by(log: EvalLog) -> str:
    """Where a log's samples were generated, as the log records it: engine, device, dtype, driver."""
    e = log.engine
    if e is None:
        return f"driver {log.driver}"
    return f"{e.version or e.name} on {e.device or 'an unrecorded device'} ({e.dtype}), driver {e.driver}"


def measured_line(pre: EvalLog, post: EvalLog) -> str:
    """The report's sentence on where (and, when the logs record it, when) the samples were generated."""
    where = (
        generated_by(post)
        if generated_by(pre) == generated_by(post)
        else (f"pre {generated_by(pre)}; post {generated_by(post)}")
    )
    times = [t for t in (pre.measured_at, post.measured_at) if t != NOT_RECORDED]
    when = (
        f", measured {post.measured_at}"
        if times
        else (
            "; the times are in the provenance records beside the generations (python -m pipeline.provenance)"
        )
    )
    return f"Generated by {where}{when}."


def settings_dict(s: Settings) -> dict[str, Any]:
    """Settings as a JSON-ready dict."""
    return asdict(s)


def load_log(path: str | Path, samples: bool = True) -> EvalLog:
    """Load and validate one EvalLog (samples=False: checked, then dropped); a bad file is a Refusal."""
    return load_logs([path], samples)[0]


def load_logs(paths: list[str | Path], samples: bool = True) -> list[EvalLog]:
    """load_log of several logs; without samples they are read side by side on the spare CPUs."""
    try:
        if not samples:
            return read_logs(paths) if len(paths) > 1 else [read_log(paths[0])]
        return [load(p) for p in paths]
    except EvalLogError as e:
        raise Refusal(str(e)) from e


def scorer_identity(log: EvalLog) -> str | None:
    """Who scored a log, which two comparable logs share: name and version (an imported log's metric)."""
    if log.scorer is None:
        return None
    s = log.scorer
    metric = s.settings.get("metric") or s.settings.get("scorer")
    return f"{s.name} {s.version}" + (
        f" ({metric})" if isinstance(metric, str) and s.verifiers is None else ""
    )


def check_scorers(ref_path: str | Path, ref: EvalLog, other_path: str | Path, other: EvalLog) -> list[str]:
    """Refuse two logs scored by different scorers or by different versions of a verifier both use."""
    a, b = scorer_identity(ref), scorer_identity(other)
    if a is None or b is None:
        return []
    if a != b:
        raise Refusal(
            f"{ref_path} vs {other_path}: scorer differs ({a!r} vs {b!r}); logs scored differently are not "
            "one measurement: rescore both with one scorer (dvc repro, or pipeline.imports --verifier)"
        )
    mine = {v.type: v for v in ref.scorer.verifiers or []}  # type: ignore[union-attr]
    for v in other.scorer.verifiers or []:  # type: ignore[union-attr]
        w = mine.get(v.type)
        if w is not None and (w.name, w.version) != (v.name, v.version):
            raise Refusal(
                f"{ref_path} vs {other_path}: scorer.verifiers[{v.type}] differs ({w.name} {w.version} vs "
                f"{v.name} {v.version}); rescore both logs with the same verifier version"
            )
    return ["scorer"]


def check_matched(
    ref_path: str | Path,
    ref: EvalLog,
    other_path: str | Path,
    other: EvalLog,
    distinct_models: bool = False,
    allow: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Refuse unless both logs share protocol, suite (and its pins), item set, per-sample seeds and scorer.

    distinct_models: also refuse two logs of one model (a pre/post delta of a model with itself is 0 by
    construction). allow: what two logs of one model may differ in ("seed": the run seed and per-sample
    seeds; "prompt": the protocol's prompting keys; "scorer": the scorer, its verifiers and the suite file
    they read, which a drift report compares on purpose). Returns the matched protocol and the fields checked.
    """

    def refuse(field: str, a: Any, b: Any, fix: str = "rerun one arm under the matched protocol") -> Refusal:
        return Refusal(f"{ref_path} vs {other_path}: {field} differs ({a!r} vs {b!r}); {fix}")

    # Greedy decoding (temperature 0 in both logs) reads neither the seed nor top_p: they cannot change a
    # token, so they may differ or be recorded in one log only (an lm-eval log records no sampling seed).
    moot = {"seed", "top_p"} if ref.temperature == 0 and other.temperature == 0 else set()
    for name in (*PROTOCOL_FIELDS, *SUITE_FIELDS):
        if (name == "seed" and "seed" in allow) or name in moot:
            continue
        a, b = getattr(ref, name), getattr(other, name)
        if a != b:
            if a is None or b is None:
                raise refuse(name, a, b, "it is recorded in only one log; record it in both")
            raise refuse(name, a, b)
    checked = [n for n in (*PROTOCOL_FIELDS, *SUITE_FIELDS) if n not in moot]
    if ref.protocol is not None and other.protocol is not None:
        pa, pb = ref.protocol.model_dump(), other.protocol.model_dump()
        # A key left out of a dump holds its built-in value (contract.protocol): absent equals absent.
        names = [*pa, *(n for n in pb if n not in pa)]
        for name in names:
            if (name == "seed" and "seed" in allow) or (name in PROMPT_KEYS and "prompt" in allow):
                continue
            if name in moot:
                continue
            if pa.get(name) != pb.get(name):
                raise refuse(f"protocol.{name}", pa.get(name), pb.get(name))
        checked += [f"protocol.{name}" for name in names]
    ids_a = {it.item_id for it in ref.items}
    ids_b = {it.item_id for it in other.items}
    if not ids_a or not ids_b:
        empty = ref_path if not ids_a else other_path
        raise Refusal(f"{empty}: items: the log has no items; nothing to compare")
    if ids_a != ids_b:
        only_a, only_b = sorted(ids_a - ids_b), sorted(ids_b - ids_a)
        example = (
            f"e.g. {only_a[0]!r} only in the first" if only_a else f"e.g. {only_b[0]!r} only in the second"
        )
        raise Refusal(
            f"{ref_path} vs {other_path}: items differ ({len(only_a)} only in the first, {len(only_b)} only "
            f"in the second, {example}); evaluate both arms on the same frozen suite"
        )
    checked.append("items")
    # Logs scored against different suite files (an answer or verifier fixed in one) or generated from other
    # questions share name and revision but do not measure the same thing.
    for name in SUITE_PINS:
        if name == "suite" and "scorer" in allow:
            continue
        a, b = (ref.pins or {}).get(name), (other.pins or {}).get(name)
        if a is not None and b is not None:
            if a != b:
                raise refuse(f"pins.{name}", a, b, "score and generate both arms from the same suite file")
            checked.append(f"pins.{name}")
    # From the samples, or the seeds the fast reader kept when it dropped them.
    seeds = {it.item_id: mine for it in ref.items if (mine := it.sample_seeds()) is not None}
    both = [
        (it.item_id, theirs) for it in other.items if (theirs := it.sample_seeds()) and it.item_id in seeds
    ]
    if both and "seed" not in allow and "seed" not in moot:
        for item_id, theirs in both:
            mine = seeds[item_id]
            if theirs[: len(mine)] == mine[: len(theirs)]:  # the common case, compared in C
                continue
            for j, seed in enumerate(theirs):
                if j < len(mine) and seed != mine[j]:
                    raise refuse(
                        f"item {item_id!r}: samples[{j}].seed",
                        mine[j],
                        seed,
                        "generate both arms with the same protocol.seed and the same seed derivation",
                    )
        checked.append("samples.seed")
    if "scorer" not in allow:
        checked += check_scorers(ref_path, ref, other_path, other)
    if distinct_models:
        # The pinned model (content hash or hub commit) says which weights ran; the name is the fallback.
        pinned = all(log.pins is not None and "model" in log.pins for log in (ref, other))
        field = "pins.model" if pinned else "model_name"
        a, b = (log.pins["model"] if pinned and log.pins else log.model_name for log in (ref, other))
        if a == b:
            raise Refusal(
                f"{ref_path} vs {other_path}: {field} is {a!r} in both logs; a pre/post delta compares two "
                "models: pass the trained model's log as the post log"
            )
        checked.append(field)
    return {
        "fields_checked": checked,
        "n_items": len(ids_a),
        **{name: getattr(ref, name) for name in (*PROTOCOL_FIELDS, *SUITE_FIELDS)},
        "protocol": ref.protocol.model_dump() if ref.protocol is not None else None,
    }


@dataclass(frozen=True)
class ArmData:
    """One log's per-item arrays in a shared item order (sorted item ids)."""

    scores: np.ndarray  # (n_items, n_samples)
    item_mean: np.ndarray  # (n_items,)
    budget: np.ndarray | None  # per-item mean generated tokens, None when any item lacks gen_tokens
    families: list[str | None]


def item_order(log: EvalLog) -> list[str]:
    """The canonical item order: sorted ids, so the input order of items never changes a result."""
    return sorted(it.item_id for it in log.items)


def arm_arrays(log: EvalLog, order: list[str]) -> ArmData:
    """Per-item arrays of a log in the given item order."""
    by_id = {it.item_id: it for it in log.items}
    items = [by_id[i] for i in order]
    scores = np.array([it.scores for it in items], dtype=np.float64).reshape(len(items), log.n_samples)
    budget = None
    if items and all(it.gen_tokens is not None for it in items):
        budget = np.array([it.gen_tokens for it in items], dtype=np.float64).mean(axis=1)
    return ArmData(scores, scores.mean(axis=1), budget, [it.family for it in items])


def clean(x: Any) -> Any:
    """JSON-ready copy: floats to 10 significant digits (stable across reruns), NaN/inf to None."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        f = float(x)
        if not math.isfinite(f):
            return None
        return float(f"{f:.10g}") + 0.0  # + 0.0 turns -0.0 into 0.0
    return x


def dump_json(report: dict[str, Any]) -> bytes:
    """The report's canonical bytes."""
    return (json.dumps(clean(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def out_folder(path: str | Path, what: str = "--out") -> Path:
    """path as a folder a report can be written to; a Refusal in one line otherwise (contract.files)."""
    try:
        return output_dir(path, what)
    except PathCheckError as e:
        raise Refusal(str(e)) from None


def write_outputs(out_dir: str | Path, files: dict[str, bytes]) -> None:
    """Write a report's files as one set (contract.atomic): a failure or a kill leaves the old set whole,
    never half a file or a mix of old and new; a file that cannot be written is a Refusal naming it."""
    out = Path(out_dir)
    write_set({out / name: data for name, data in files.items()})


def write_set(files: dict[Path, str | bytes]) -> None:
    """atomic_write_set, with an OSError (a full disk, a read-only folder) as a one-line Refusal."""
    try:
        atomic_write_set(files)
    except OSError as e:
        where = e.filename or next(iter(files), "")
        raise Refusal(
            f"{where}: cannot write ({e.strerror or e}); free space or fix the folder and rerun (the "
            "previous files are left as they were)"
        ) from None


def same_model(ref: EvalLog, other: EvalLog) -> bool:
    """Whether two logs are of one model: the same pinned weights, else (unpinned) the same model name."""
    if all(log.pins is not None and "model" in log.pins for log in (ref, other)):
        return ref.pins["model"] == other.pins["model"]  # type: ignore[index]
    return ref.model_name == other.model_name


def one_model_differences(ref_arm: str, ref: EvalLog, other_arm: str, other: EvalLog) -> list[str]:
    """What two logs of one model differ in, of arm, prompt, seed and driver (empty: one run twice)."""
    found = []
    if ref_arm != other_arm:
        found.append("arm")
    pa = ref.protocol.model_dump() if ref.protocol is not None else {}
    pb = other.protocol.model_dump() if other.protocol is not None else {}
    prompts_a = {it.item_id: it.prompt for it in ref.items if it.prompt is not None}
    prompts_b = {it.item_id: it.prompt for it in other.items if it.prompt is not None}
    if any(pa.get(k) != pb.get(k) for k in PROMPT_KEYS) or any(
        prompts_b.get(i, p) != p for i, p in prompts_a.items()
    ):
        found.append("prompt")
    seeds_a = {it.item_id: it.sample_seeds() for it in ref.items}
    if ref.seed != other.seed or any(
        (s := it.sample_seeds()) is not None and seeds_a.get(it.item_id) not in (None, s)
        for it in other.items
    ):
        found.append("seed")
    if ref.driver != other.driver:
        found.append("driver")
    return found
