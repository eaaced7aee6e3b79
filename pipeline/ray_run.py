"""Generate one arm sharded over a Ray cluster: `python -m pipeline.ray_run --arm base --workers 4`.

The arm's requests are cut into N parts by a fixed rule (items at suite positions i with i % N == s, all k
samples of an item in one part); each part runs as a Ray task with its own engine replica (its own GPU with
`--gpus-per-worker 1`) and writes its finished samples to <out_dir>.work/parts/; the driver then merges them
into <out_dir>/<arm>.json. Every (item, sample) carries its own seed, so the merged file equals a
one-worker run wherever the engine's outputs do not depend on the batch (checked on the CPU engine by
tests/test_ray_run.py; on a GPU set VLLM_BATCH_INVARIANT=1 to make vLLM batch-invariant).

The same parts run without Ray as independent processes (a SLURM array, a DVC queue):
`python -m pipeline.run_arm arm=<arm> part=<s>/<N>` for each s, then `... merge=<N>`.
A part that was killed resumes from its own shard; a finished part is not generated again.

The workers read the repository and write <out_dir> at the same paths as the driver: on a multi-node
cluster both must be on a shared filesystem. vLLM's own tensor parallelism (`engine.tensor_parallel_size`)
stays available inside each replica for a model that needs several GPUs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.config import known_arms, unknown_arm
from pipeline.generate import KNOWN_ERRORS, run
from pipeline.parts import merge_parts
from pipeline.settings import compose_settings
from pipeline.swept import params_arg

EPILOG = """\
examples:
  ray start --head                                      (on a real cluster; here a local one is started)
  python -m pipeline.ray_run --arm base --workers 2
  python -m pipeline.ray_run --arm trained+rag --workers 8 --gpus-per-worker 1 --address auto
  python -m pipeline.ray_run --arm base --workers 2 engine=hf out_dir=/tmp/gens

Overrides (key=value) are those of python -m pipeline.run_arm, applied to every part and the merge.
"""


def _part_task(root: str, arm: str, overrides: list[str], part: str) -> str:
    """One worker: generate one part (in the repository root, as the driver would), return its file."""
    os.chdir(root)
    settings = compose_settings(arm, overrides, part)
    settings.progress = False
    return str(run(settings))


def run_sharded(
    arm: str,
    workers: int,
    overrides: Sequence[str] = (),
    address: str | None = None,
    gpus_per_worker: float = 0,
    cpus_per_worker: float = 1,
) -> Path:
    """Generate arm in `workers` parts as Ray tasks, then merge them; the arm's generations file."""
    import ray

    settings = compose_settings(arm, overrides)
    if not ray.is_initialized():
        # The workers inherit this process's environment: the engine runs in-process there too.
        env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "PYTHONPATH": os.getcwd()}
        ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=True)
    # max_calls=1: a fresh worker process per part, so its engine (and GPU memory) goes with it.
    task = ray.remote(num_cpus=cpus_per_worker, num_gpus=gpus_per_worker, max_calls=1)(_part_task)
    t0 = time.perf_counter()
    futures = [task.remote(os.getcwd(), arm, list(overrides), f"{s}/{workers}") for s in range(workers)]
    done = ray.get(futures)
    print(f"ray_run: {arm}: {workers} parts in {time.perf_counter() - t0:.1f} s: {', '.join(done)}")
    return merge_parts(settings, workers)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: one arm, sharded over Ray workers, merged; exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.ray_run",
        description="Generate one arm in N parts on Ray workers (one engine replica each), then merge them "
        "into <out_dir>/<arm>.json.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--arm", required=True, help="the arm (conf/arm/<arm>.yaml)")
    parser.add_argument("--workers", type=int, default=2, help="parts, one Ray task each (default 2)")
    parser.add_argument("--address", default=None, help="Ray cluster address ('auto': `ray start`'s)")
    parser.add_argument("--gpus-per-worker", type=float, default=0, help="GPUs per task (default 0)")
    parser.add_argument("--cpus-per-worker", type=float, default=1, help="CPUs per task (default 1)")
    parser.add_argument("overrides", nargs="*", help="key=value settings of conf/config.yaml")
    args = parser.parse_args(argv)
    params = params_arg(args.overrides)
    if args.arm not in known_arms(params=params):
        _fail(unknown_arm(args.arm, params=params))
    if args.workers < 1:
        _fail(f"--workers {args.workers}: needs at least 1")
    try:
        run_sharded(
            args.arm, args.workers, args.overrides, args.address, args.gpus_per_worker, args.cpus_per_worker
        )
    except KNOWN_ERRORS as e:
        _fail(f"{e}; finished parts are kept in <out_dir>.work/parts/: rerun the same command to resume")
    except Exception as e:
        cause: Any = getattr(e, "cause", None)
        if isinstance(cause, KNOWN_ERRORS):
            _fail(f"a worker: {cause}")
        raise


def _fail(message: str) -> None:
    print(f"ray_run: {message}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
