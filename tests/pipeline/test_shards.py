"""The resume shard trusts no line it did not write, two runs of one arm never share it, and a failing
disk ends a run in one line with its samples kept.

The property test corrupts a real shard every way a disk, a person or another run can (truncation,
duplicated, foreign, retyped and edited lines) and checks that opening it either refuses naming the file
and line or keeps exactly the samples that were written, so a resume ends in the uninterrupted log.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract.engine import GenRequest
from contract.seeds import sample_seed
from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, make_world
from pipeline.config import engine_config
from pipeline.engines import engines_started, release_engine
from pipeline.generate import run
from pipeline.plan import Plan
from pipeline.run_paths import RunPaths
from pipeline.samples import sample_validator
from pipeline.shards import RunLock, Shard, ShardError, fingerprint_sha256, line_check, recorded_meta

FP = {"arm": {"name": "base"}, "protocol": {"k": 2}, "requests_sha256": "r" * 64}
ITEMS = ["q1", "q2", "q3"]


def _plan() -> Plan:
    requests = [
        GenRequest(key=(i, j), prompt=f"prompt {i}", seed=sample_seed(1234, i, j), max_tokens=8)
        for i in ITEMS
        for j in range(2)
    ]
    return Plan([], requests, {}, {}, False, [])


def _sample(item: str, j: int, text: str = "Answer: 4") -> dict:
    return {
        "item_id": item,
        "index": j,
        "seed": sample_seed(1234, item, j),
        "text": text,
        "finish_reason": "stop",
        "prompt_tokens": 5,
        "gen_tokens": 3,
        "rounds": 1,
    }


def _written(path: Path) -> dict:
    """A shard of the six samples of ITEMS, as a run writes it; its records."""
    shard = Shard(path, FP, validate=sample_validator(_plan()))
    shard.set_meta("engine", {"name": "vllm"})
    shard.append(
        [_sample(i, j, f"Answer: {n}") for n, (i, j) in enumerate((i, j) for i in ITEMS for j in (0, 1))]
    )
    shard.close()
    return dict(shard.records)


def _open(path: Path) -> Shard:
    return Shard(path, FP, validate=sample_validator(_plan()))


def _append_raw(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")


def test_a_line_appended_by_hand_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    _written(path)
    _append_raw(path, {**_sample("q1", 0, "Answer: 99"), "score": 1.0})
    with pytest.raises(ShardError, match=r"base.jsonl:9: this line was not written by this run"):
        _open(path)


def test_a_line_of_another_arm_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    _written(path)
    other = {**FP, "arm": {"name": "+rag"}}
    line = _sample("q2", 1, "Answer: 7")
    _append_raw(path, {**line, "check": line_check(fingerprint_sha256(other), line)})
    with pytest.raises(ShardError, match=r"base.jsonl:9: this line was not written by this run"):
        _open(path)


def test_a_duplicated_line_is_refused_not_last_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    _written(path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines) + lines[3])
    with pytest.raises(ShardError, match=r"base.jsonl:9: sample 1 of item 'q1' again \(first on line 4\)"):
        _open(path)


def test_a_wrong_seed_or_type_is_refused_when_the_shard_opens(tmp_path: Path) -> None:
    for bad, message in (
        ({**_sample("q1", 0), "seed": 1}, r"base.jsonl:3: seed: is 1, this sample's seed is"),
        ({**_sample("q1", 0), "gen_tokens": "many"}, r"base.jsonl:3: gen_tokens: Input should be a valid"),
        (_sample("q9", 0), r"base.jsonl:3: sample 0 of item 'q9' is not a request of this run"),
    ):
        path = tmp_path / "base.jsonl"
        path.unlink(missing_ok=True)
        shard = Shard(path, FP)
        shard.set_meta("engine", {"name": "vllm"})
        shard.append([bad])
        shard.close()
        with pytest.raises(ShardError, match=message):
            _open(path)


def test_a_wrong_typed_shard_record_stops_a_run_before_any_engine_starts(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    settings = w.settings("base", engine=engine_config("hf"))
    _shard_with_bad_line(w, settings, RunPaths(w.out_dir, "base").shard)
    started = engines_started()
    with pytest.raises(ShardError, match=r"base.jsonl:3: gen_tokens: Input should be a valid integer"):
        run(settings)
    assert engines_started() == started and not (w.out_dir / "base.json").exists()


def _shard_with_bad_line(w, settings, shard_path: Path) -> None:
    """Write the shard this run would open, with the run's fingerprint and one retyped sample."""
    from pipeline.plan import plan_run
    from pipeline.resolve import resolve
    from pipeline.samples import run_fingerprint

    state = resolve(settings, matched_prompting=False)
    plan = plan_run(state.prompting, [])
    shard = Shard(
        shard_path, run_fingerprint(state.arm, state.params, state.pins, settings.engine, plan, None)
    )
    shard.set_meta("engine", {"name": "hf"})
    first = plan.requests[0]
    shard.append([{**_sample(first.key[0], 0), "seed": first.seed, "gen_tokens": "many"}])
    shard.close()


def _cli(w, out: Path, **popen) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pipeline.run_arm", "arm=base", "engine=hf", "progress=false",
           f"params={w.params}", f"pins={w.pins}", f"out_dir={out}"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)  # fmt: skip


def test_two_runs_of_one_arm_started_together_one_refuses_in_one_line_the_other_finishes(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(12), k=2, max_tokens=16)
    out = tmp_path / "out"
    procs = [_cli(w, out), _cli(w, out)]
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    codes = sorted(rc for rc, _, _ in results)
    if codes == [0, 2]:
        refused = next(err for rc, _, err in results if rc == 2)
        (line,) = _runner_lines(refused)
        assert "is being generated by pid" in line, refused
    else:
        # The later one reached the lock only after the first had finished: it found the arm written.
        assert codes == [0, 0] and any("up to date (another run" in o for _, o, _ in results), results
    reference = run(w.settings("base", engine=engine_config("hf"), out_dir=tmp_path / "ref"))
    release_engine()
    assert (out / "base.json").read_bytes() == reference.read_bytes()
    assert not (RunPaths(out, "base").lock).exists()


def test_a_run_is_refused_while_another_holds_the_lock(tmp_path: Path, untrained_checkpoint: Path) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    out = tmp_path / "out"
    with RunLock(RunPaths(out, "base").lock, "arm 'base'"):
        proc = _cli(w, out)
        rc, _, err = proc.wait(timeout=300), *proc.communicate()
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(
        f"run_arm: {RunPaths(out, 'base').lock}: arm 'base' is being generated by pid {os.getpid()}"
    )
    assert not (out / "base.json").exists()


def _runner_lines(err: str) -> list[str]:
    """The runner's own lines on stderr (transformers prints a weights-loading bar there too)."""
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("run_arm")]


def _limit_file_size(limit: int):
    def apply() -> None:
        # A write past the limit fails with EFBIG, as a full disk fails with ENOSPC (the signal is ignored).
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_ends_the_run_in_one_line_and_the_rerun_resumes_to_the_same_file(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(20), k=2, max_tokens=16)
    out = tmp_path / "out"
    proc = _cli(w, out, preexec_fn=_limit_file_size(6000))
    rc, _, err = proc.wait(timeout=300), *proc.communicate()
    assert rc == 2, err
    (line,) = _runner_lines(err)
    assert "cannot use" in line and "File too large" in line and "rerun the same command" in line, err
    partial = RunPaths(out, "base").shard
    assert partial.is_file(), err
    kept = partial.read_text().count('"item_id"')
    assert kept > 0
    proc = _cli(w, out)
    rc, _, err = proc.wait(timeout=300), *proc.communicate()
    assert rc == 0, err
    reference = run(w.settings("base", engine=engine_config("hf"), out_dir=tmp_path / "ref"))
    release_engine()
    assert (out / "base.json").read_bytes() == reference.read_bytes()


def test_an_out_dir_that_cannot_be_made_is_refused_in_one_line(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    proc = _cli(w, blocker / "out")
    rc, _, err = proc.wait(timeout=300), *proc.communicate()
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("run_arm: out_dir ") and f"{blocker} is a file" in err, err


CORRUPTIONS = st.sampled_from(["truncate", "duplicate", "foreign", "retype", "edit", "swap"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=CORRUPTIONS, where=st.integers(min_value=0, max_value=10_000), cut=st.integers(0, 10_000))
def test_a_corrupted_shard_is_refused_by_line_or_keeps_exactly_what_was_written(
    tmp_path_factory: pytest.TempPathFactory, how: str, where: int, cut: int
) -> None:
    path = tmp_path_factory.mktemp("shard") / "base.jsonl"
    original = _written(path)
    lines = path.read_bytes().split(b"\n")[:-1]
    body = list(range(1, len(lines)))
    n = body[where % len(body)]
    rec = json.loads(lines[n])
    if how == "truncate":
        data = b"\n".join(lines) + b"\n"
        path.write_bytes(data[: cut % (len(data) + 1)])
    elif how == "duplicate":
        lines.insert(n + 1, lines[n])
        path.write_bytes(b"\n".join(lines) + b"\n")
    elif how == "foreign":
        line = _sample(ITEMS[cut % 3], cut % 2, "Answer: foreign")
        other = fingerprint_sha256({**FP, "arm": {"name": "trained"}})
        lines.insert(n, json.dumps({**line, "check": line_check(other, line)}).encode())
        path.write_bytes(b"\n".join(lines) + b"\n")
    elif how in ("retype", "edit"):
        key = sorted(k for k in rec if k != "check")[cut % (len(rec) - 1)]
        rec[key] = "x" if how == "retype" else (rec[key], "edited")
        lines[n] = json.dumps(rec).encode()
        path.write_bytes(b"\n".join(lines) + b"\n")
    else:
        other = body[cut % len(body)]
        lines[n], lines[other] = lines[other], lines[n]
        path.write_bytes(b"\n".join(lines) + b"\n")
    try:
        shard = _open(path)
    except ShardError as e:
        assert str(e).startswith(str(path)), e
        return
    # Opened: every sample it holds is one that was written, unchanged; the rest a resume regenerates.
    assert all(original[k] == v for k, v in shard.records.items()), how
    if how in ("duplicate", "foreign", "retype", "edit"):
        pytest.fail(f"a {how} line was accepted")


def test_recorded_meta_reads_the_meta_lines_checked_against_the_shards_own_header(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shard = Shard(path, FP)
    shard.set_meta("tool_specs", [{"name": "t"}])
    shard.close()
    assert recorded_meta(path) == {"tool_specs": [{"name": "t"}]}
    path.write_text(path.read_text().replace('"t"', '"u"'))  # edited by hand: its check no longer matches
    assert recorded_meta(path) == {}
    assert recorded_meta(tmp_path / "none.jsonl") == {}
