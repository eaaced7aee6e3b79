"""Generate every arm of params.yaml, one engine per model: `python -m pipeline.run_arms` (the DVC stage).

Starting an engine costs more than generating a demo arm (about 25 s against 6 s on a 2-core CPU, about a
minute for a 7B model on a GPU), so the arms are taken model by model, in the order of params.yaml `arms`,
and the arms of one model share one started engine. Each arm is still its own run (pipeline.generate.run):
its own pins check, shard, resume and file. An arm whose generations file already has the same inputs (its
pin file, arm, protocol and engine settings; the file's `inputs_sha256`) is up to date and skipped, and a
model whose arms are all up to date starts no engine: an edit to conf/arm/+rag.yaml regenerates +rag alone.
An arm file missing from the folder (a `dvc checkout --force` that could not restore it deletes all of them)
is put back from its kept link in <out_dir>.work/kept/ first (pipeline.keep).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.config import (
    CONF_DIR,
    ConfigError,
    arms_of,
    known_arms,
    load_arm,
    load_params,
    unknown_arm,
)
from pipeline.engines import engines_started, quiet_torch_warnings, release_engine
from pipeline.generate import KNOWN_ERRORS, generate
from pipeline.keep import run_kept
from pipeline.plan import check_matched_prompting
from pipeline.resolve import ResolvedRun, resolve
from pipeline.settings import compose_settings, os_error_line
from pipeline.staleness import up_to_date, why_stale
from pipeline.swept import params_arg

EPILOG = """\
examples:
  python -m pipeline.run_arms                              every arm of params.yaml
  python -m pipeline.run_arms --arms base,+rag             two arms (one engine: both use the base model)
  python -m pipeline.run_arms engine.chunk_size=256        a setting of conf/config.yaml for every arm
  python -m pipeline.run_arms force=true                   regenerate even the arms that are up to date

The overrides are those of python -m pipeline.run_arm (see its --help), applied to every arm; the arms
come from --arms or params.yaml `arms`, never from arm=.
"""


def by_model(arms: Sequence[str], models: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The arms grouped by the model they run, models in order of first appearance, arms in given order."""
    groups: dict[str, list[str]] = {}
    for arm in arms:
        groups.setdefault(models[arm], []).append(arm)
    return list(groups.items())


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.run_arms",
        description="Generate every arm of params.yaml into generations/<arm>.json, one engine per model; "
        "arms already up to date are skipped.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--arms", help="comma-separated arms (default: params.yaml arms)")
    parser.add_argument(
        "--status",
        action="store_true",
        help="generate nothing: print each arm, up to date or why it would be generated",
    )
    parser.add_argument(
        "overrides", nargs="*", help="key=value settings of conf/config.yaml, e.g. force=true"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: generate the arms, model by model; exit 2 with one line on bad input."""
    quiet_torch_warnings()
    args = _parse(argv)
    if any(o.split("=", 1)[0].lstrip("~+") == "arm" for o in args.overrides):
        _fail("the arms come from --arms or params.yaml arms; drop the arm= override")
    params_file = params_arg(args.overrides)
    unknown = [a for a in (args.arms or "").split(",") if a and a not in known_arms(params=params_file)]
    if unknown:
        _fail(unknown_arm(unknown[0], params=params_file))
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    out_dir = Path("generations")
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            top = compose("config", overrides=list(args.overrides))
        out_dir = Path(str(top.out_dir))
        try:  # nothing ran yet: no resume to offer
            params = load_params(str(top.params))
            arms = args.arms.split(",") if args.arms else arms_of(params)
            # Before any engine starts: arms prompted in different formats are no matched comparison.
            specs = {a: load_arm(a, params=str(top.params)) for a in dict.fromkeys([*arms, *arms_of(params)])}
            check_matched_prompting(params, list(specs.values()))
        except ConfigError as e:
            _fail(str(e))
        groups = by_model(arms, {a: specs[a].model for a in arms})
        plan = "; ".join(f"{model}: {', '.join(names)}" for model, names in groups)
        print(f"run_arms: {len(arms)} arms on {len(groups)} models ({plan})", flush=True)
        for _model, names in groups:
            for arm in names:
                run = resolve(compose_settings(arm, args.overrides), matched_prompting=False)
                if args.status:
                    print(f"  {arm:<20} {_status(run)}")
                else:
                    run_kept(generate, run)
            # The next model needs the memory; an engine is never shared across models.
            release_engine()
    except KeyboardInterrupt:
        # As run_arm: one line, not a traceback; the arms done and each arm's finished samples are kept.
        print(
            "run_arms: interrupted; the arms finished so far and the finished samples of the arm it was on "
            "are kept: rerun the same command to resume",
            file=sys.stderr,
        )
        sys.exit(130)
    except HydraException as e:
        _fail(f"bad override: {str(e).splitlines()[0]}")
    except (*KNOWN_ERRORS, ConfigError) as e:
        # --status generates nothing: there is nothing to resume.
        _fail(
            str(e)
            if args.status
            else f"{e}; the arms finished so far are kept: rerun the same command to resume"
        )
    except OSError as e:
        _fail(os_error_line(e, out_dir))
    if not args.status:
        n = engines_started()
        print(f"run_arms: done; {n} engine{'' if n == 1 else 's'} started", flush=True)


def _status(run: ResolvedRun) -> str:
    """Up to date, or why the arm would be generated; a file the run would put back counts as present."""
    stale = why_stale(run)
    kept = run.paths.kept_dest
    restorable = stale is not None and not run.settings.force and not run.paths.dest.exists()
    if restorable and kept.is_file() and up_to_date(kept, run.inputs) is None:
        return f"up to date (put back from {kept} when run)"
    return "up to date" if stale is None else f"to generate: {stale}"


def _fail(message: str) -> None:
    print(f"run_arms: {message}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
