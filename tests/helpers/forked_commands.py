"""Many `python -m MODULE ARGS` commands at the cost of one interpreter start: each in a fork of a process
that has imported the libraries they share.

A command started as `python -m MODULE` spends most of a short run (`--help`) importing numpy, scipy,
pydantic, Hydra and the like, the same in every one; thirty-eight of them took 25 s of CPU one after
another. Here one launcher imports those once, then forks a child per command that runs MODULE as
`__main__` (runpy, as `python -m` does, with sys.argv and sys.path[0] as `python -m` sets them) with its
stdout and stderr on a pipe: each command still runs in a process of its own, from its own entry point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Run by the launcher (`python -c`): argv[1] is a JSON list of [module, [args...]]; prints one JSON line
# [module, exit code, output] per command.
_LAUNCHER = r"""
import json, os, runpy, sys
import hydra, matplotlib, numpy, omegaconf, pydantic, scipy.stats, yaml  # shared by most commands
for module, args in json.loads(sys.argv[1]):
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        sys.argv = [module, *args]
        sys.path[0] = os.getcwd()
        code = 0
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if not isinstance(stop.code, int) and stop.code is not None:
                print(stop.code, file=sys.stderr)  # as the interpreter does with sys.exit("message")
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        output = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    print(json.dumps([module, os.waitstatus_to_exitcode(status), output]), flush=True)
"""


def run_modules(
    commands: list[tuple[str, list[str]]], cwd: Path, timeout: float = 600
) -> list[tuple[str, int, str]]:
    """Run each (module, args) as `python -m module args` would, in cwd; (module, exit code, output) each."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, json.dumps(commands)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = [tuple(json.loads(line)) for line in done.stdout.splitlines() if line.startswith("[")]
    assert [r[0] for r in results] == [m for m, _ in commands], done.stdout[-3000:] + done.stderr[-3000:]
    return [(str(m), int(rc), str(out)) for m, rc, out in results]
