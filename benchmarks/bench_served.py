"""The served runner (engine=openai) against the offline vLLM engine, and how it fails and resumes.

    python -m benchmarks.bench_served [--arms base,trained,...] [--out DIR] [--only compare,attach,...]

Prints, on the demo world (params.yaml, pins/), each figure with the command that made it and the load:
- compare: every arm through `python -m pipeline.run_arms` with the offline engine, then with engine=openai
  (the runner's own vLLM server): samples with the same text, per arm and in all, and the wall time ratio;
- attach: the base arm against a server started by hand (base_url), its texts against the offline ones;
- two: the base arm against two servers (a list of base_url), its texts against the offline ones;
- refuse: the trained arm against the base model's server: refused in one line, exit 2;
- kill: the runner SIGKILLed mid-arm, then resumed: saved samples kept, regenerated, differing;
- server: the server SIGKILLed mid-run: the runner's one line and exit code, then a resume on a new server.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PARTS = ("compare", "attach", "two", "refuse", "kill", "server")


def load() -> str:
    """The load average, as `uptime` prints it."""
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def texts(path: Path) -> dict[tuple[str, int], str]:
    """(item, sample) -> text of a generations file."""
    data = json.loads(path.read_text())
    return {(it["item_id"], s["index"]): s["text"] for it in data["items"] for s in it["samples"]}


def same(a: Path, b: Path) -> tuple[int, int]:
    """(samples with the same text, samples) of two generations files of one arm."""
    ta, tb = texts(a), texts(b)
    return sum(ta[k] == tb.get(k) for k in ta), len(ta)


def share(a: Path, b: Path) -> str:
    """'same/all' samples of a with b's text, or '-' when b was not generated."""
    return "{}/{}".format(*same(a, b)) if b.is_file() else "-"


def cli(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run a pipeline command in the repository root, its output captured."""
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, **kw)


def timed(args: list[str]) -> float:
    """Wall time of a command that must succeed."""
    t0 = time.perf_counter()
    done = cli(args)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0


def start_server(model: str) -> tuple[subprocess.Popen[bytes], str]:
    """vLLM's server on model, started as a user would (the offline engine's flags), and its URL."""
    from pipeline.config import engine_config
    from pipeline.engines.settings import engine_settings
    from pipeline.engines.vllm_engine import llm_settings
    from pipeline.engines.vllm_server import free_port, server_flags

    settings = engine_settings(engine_config("vllm", max_model_len=1024))
    port = free_port()
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
        "--host", "127.0.0.1", "--port", str(port),
        *server_flags(llm_settings(model, settings, None)),
    ]  # fmt: skip
    print(f"  server: {' '.join(cmd[1:])}", flush=True)
    log = open(tempfile.mktemp(prefix="bench-server-", suffix=".log"), "wb")  # noqa: SIM115
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "ERROR"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    import httpx

    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({log.name})")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.5)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started by start_server (its process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(30)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def samples_in(shard: Path) -> int:
    """Samples saved in a shard."""
    if not shard.exists():
        return 0
    return sum(1 for line in shard.read_bytes().split(b"\n")[1:] if b'"item_id"' in line)


def saved_texts(shard: Path) -> dict[tuple[str, int], str]:
    """(item, sample) -> text of every sample a shard holds."""
    out = {}
    for line in shard.read_text().splitlines()[1:]:
        rec = json.loads(line)
        if "item_id" in rec:
            out[(rec["item_id"], rec["index"])] = rec["text"]
    return out


def kill_at(cmd: list[str], shard: Path, at: int, victim: Any = None) -> subprocess.CompletedProcess[str]:
    """Run cmd; once shard holds `at` samples, SIGKILL victim (a server) or else the command itself."""
    proc = subprocess.Popen(
        [sys.executable, "-m", *cmd], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    while samples_in(shard) < at and proc.poll() is None:
        time.sleep(0.01)
    if victim is None:
        proc.send_signal(signal.SIGKILL)
    else:
        os.killpg(victim.pid, signal.SIGKILL)
    out, err = proc.communicate()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


QUIET = ["progress=false"]
BASE_MODEL = "demo/models/base"


def served_cmd(url: str, out_dir: Path, arm: str = "base") -> list[str]:
    """The run_arm command of arm on the server(s) at url, into out_dir."""
    return [
        "pipeline.run_arm",
        f"arm={arm}",
        "engine=openai",
        f"engine.base_url={url}",
        f"out_dir={out_dir}",
        *QUIET,
    ]


def compare(out: Path, arms: list[str]) -> None:
    """Every arm offline, then served by the runner's own server: same texts, and the time ratio."""
    offline, served = out / "offline", out / "served"
    # force=true: every arm is generated, none found up to date from an earlier run into the folder.
    t_off = timed(["pipeline.run_arms", *arms, f"out_dir={offline}", "force=true", *QUIET])
    l_off = load()
    t_srv = timed(["pipeline.run_arms", *arms, "engine=openai", f"out_dir={served}", "force=true", *QUIET])
    print(
        "compare: python -m pipeline.run_arms [engine=openai] out_dir=... force=true: "
        f"offline {t_off:.1f} s ({l_off}), "
        f"served {t_srv:.1f} s ({load()}); ratio served/offline {t_srv / t_off:.2f}"
    )
    total = [0, 0]
    for f in sorted(offline.glob("*.json")):
        if f.name.endswith(".provenance.json"):
            continue
        n_same, n = same(served / f.name, f)
        total[0] += n_same
        total[1] += n
        prov_o = json.loads(f.with_name(f"{f.stem}.provenance.json").read_text())
        prov_s = json.loads((served / f"{f.stem}.provenance.json").read_text())
        print(
            f"  {f.stem:<20} {n_same}/{n} same text; generation {prov_o['generate_s']:.1f} s offline, "
            f"{prov_s['generate_s']:.1f} s served"
        )
    print(f"  all arms: {total[0]}/{total[1]} samples with the offline engine's text")


def attach(out: Path, url: str, reference: Path) -> None:
    """The base arm on a server started by hand: its texts against the offline ones."""
    d = out / "attach"
    t = timed(served_cmd(url, d))
    print(
        f"attach: python -m pipeline.run_arm arm=base engine=openai engine.base_url={url}: {t:.1f} s "
        f"({load()}); {share(d / 'base.json', reference)} samples with the offline text"
    )


def refuse(out: Path, url: str) -> None:
    """The trained arm on the base model's server: refused in one line."""
    done = cli(served_cmd(url, out / "refuse", arm="trained"))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    print(
        f"refuse: arm=trained on the base model's server: exit {done.returncode}, "
        f"{len(lines)} line(s):\n  {lines[-1] if lines else ''}"
    )


def two(out: Path, url: str, reference: Path) -> None:
    """The base arm on two servers: its texts against the offline ones and one server's."""
    proc2, url2 = start_server(BASE_MODEL)
    try:
        d = out / "two"
        t = timed(served_cmd(f"[{url},{url2}]", d))
        print(
            f"two: engine.base_url=[{url},{url2}]: {t:.1f} s ({load()}); "
            f"{share(d / 'base.json', reference)} samples with the offline text, "
            f"{share(d / 'base.json', out / 'attach' / 'base.json')} with one server's"
        )
    finally:
        stop(proc2)


def kill(out: Path, url: str, reference: Path) -> None:
    """The runner SIGKILLed mid-arm, then resumed: saved samples kept, regenerated, differing."""
    from pipeline.run_paths import RunPaths

    d = out / "kill"
    shard = RunPaths(d, "base").shard
    cmd = served_cmd(url, d)
    done = kill_at(cmd, shard, 800)
    kept = saved_texts(shard)
    t = timed(cmd)
    final = texts(d / "base.json")
    attached = out / "attach" / "base.json"
    ref = texts(attached) if attached.is_file() else texts(reference)
    regenerated = [k for k in final if k not in kept]
    print(
        f"kill: runner SIGKILLed (exit {done.returncode}) with {len(kept)} of {len(final)} "
        f"samples saved; resume {t:.1f} s: {sum(final[k] == v for k, v in kept.items())}/"
        f"{len(kept)} saved samples kept, {len(regenerated)} regenerated, "
        f"{sum(final[k] != ref[k] for k in regenerated)} of them differ from the uninterrupted "
        f"run; all: {sum(final[k] == ref[k] for k in final)}/{len(final)} same"
    )


def server_killed(out: Path, reference: Path) -> None:
    """The server SIGKILLed mid-run: the runner's one line and exit code, then a resume on a new server."""
    from pipeline.run_paths import RunPaths

    proc, url = start_server(BASE_MODEL)
    d = out / "server"
    shard = RunPaths(d, "base").shard
    try:
        done = kill_at(served_cmd(url, d), shard, 800, victim=proc)
    finally:
        stop(proc)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    kept = samples_in(shard)
    print(
        f"server: server SIGKILLed mid-run: runner exit {done.returncode}, {len(lines)} line(s) on "
        "stderr, "
        f"{kept} samples kept:\n  {lines[-1] if lines else ''}"
    )
    proc, url = start_server(BASE_MODEL)
    try:
        t = timed(served_cmd(url, d))
    finally:
        stop(proc)
    prov = json.loads((d / "base.provenance.json").read_text())
    print(
        f"  resume on a new server ({url}): {t:.1f} s, {prov['samples_resumed']} resumed, "
        f"{share(d / 'base.json', reference)} samples with the offline text"
    )


def main(argv: list[str] | None = None) -> int:
    """Measure and print."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_served", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--arms", default=None, help="comma-separated arms (default: params.yaml arms)")
    ap.add_argument("--out", default=None, help="folder for the generations (default: a temporary one)")
    ap.add_argument("--only", default=",".join(PARTS), help=f"parts to run, of {','.join(PARTS)}")
    args = ap.parse_args(argv)
    parts = args.only.split(",")
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-served-"))
    print(f"bench_served: {out}; {os.cpu_count()} CPUs; {load()}", flush=True)
    if "compare" in parts or not (out / "offline" / "base.json").is_file():
        compare(out, ["--arms", args.arms] if args.arms else [])
    reference = out / "offline" / "base.json"
    if {"attach", "two", "refuse", "kill", "server"} & set(parts):
        proc, url = start_server(BASE_MODEL)
        try:
            if "attach" in parts:
                attach(out, url, reference)
            if "refuse" in parts:
                refuse(out, url)
            if "two" in parts:
                two(out, url, reference)
            if "kill" in parts:
                kill(out, url, reference)
        finally:
            stop(proc)
    if "server" in parts:
        server_killed(out, reference)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
