"""Resumable shard writing: finished samples of a run, appended and flushed to disk as they come.

    generations.work/partial/<arm>.jsonl
        {"fingerprint": {...}, "fingerprint_sha256": "...", "started_at": "..."}     line 1
        {"item_id": "...", "index": 0, "seed": ..., "text": ..., "check": "..."}  one line per sample
        {"meta": {"engine": {...}}, "check": "..."}                              what the run learned

Every line after the header carries `check`, a sha256 over the run's fingerprint and the line's own
content: a line written by another run (another arm, other settings) or edited by hand does not match and
the shard is refused naming the file and line, never silently merged. A sample that appears twice is
refused too (a run never writes one twice), and the caller's `validate` (types, the plan's ids and seeds)
runs on every line when the shard is opened, before any generation.

Every append is written and flushed at once, so a killed process loses nothing it finished (the data is in
the operating system's hands); it is forced to disk (fsync) at most once a second and at the end of each
chunk, which bounds what an operating-system crash could lose without paying an fsync per sample.

A run opens the shard of its arm: a missing shard is created; a shard with the same fingerprint (pins,
protocol, arm, engine, requests) is continued, its samples count as done; a shard with another fingerprint
is refused unless the run is fresh, which starts the shard over; one that holds no samples (a run that
stopped before its engine generated anything) is started over with the new settings, since nothing is
lost. A last line cut short by a kill (no newline, not JSON) is dropped and regenerated; a broken line
anywhere else is refused, never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write

SampleKey = tuple[str, int]
SYNC_EVERY_S = 1.0
Validator = Callable[[Mapping[str, Any]], "str | None"]


class ShardError(RuntimeError):
    """A shard that cannot be continued; the message names the file and the fix."""


def fingerprint_sha256(fingerprint: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a fingerprint."""
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def first_difference(old: Any, new: Any, where: str = "") -> str | None:
    """Dotted path and values of the first difference between two JSON-like values, or None if equal."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{where}.{key}" if where else str(key)
            if key not in old or key not in new:
                return f"{sub}: {old.get(key, '(absent)')!r} -> {new.get(key, '(absent)')!r}"
            diff = first_difference(old[key], new[key], sub)
            if diff:
                return diff
        return None
    if old != new:
        shown = [v if len(repr(v)) < 80 else f"{repr(v)[:77]}..." for v in (old, new)]
        return f"{where or '(value)'}: {shown[0]!r} -> {shown[1]!r}"
    return None


def line_check(run_sha: str, record: Mapping[str, Any]) -> str:
    """The check of one shard line: sha256 over the run's fingerprint hash and the line's canonical JSON."""
    body = json.dumps({k: v for k, v in record.items() if k != "check"}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(f"{run_sha}\n{body}".encode()).hexdigest()[:32]


def now_iso() -> str:
    """Current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class Shard:
    """The partial results of one arm's run: a header line, then one JSON line per finished sample."""

    def __init__(
        self,
        path: str | Path,
        fingerprint: Mapping[str, Any],
        fresh: bool = False,
        validate: Validator | None = None,
    ) -> None:
        self.path = Path(path)
        self.validate = validate
        self.fingerprint = dict(fingerprint)
        self.sha = fingerprint_sha256(self.fingerprint)
        self.records: dict[SampleKey, dict[str, Any]] = {}
        self.meta: dict[str, Any] = {}
        self._synced = time.monotonic()
        self._fh: Any = None
        self.resumed = False
        if self.path.exists() and not fresh:
            self._load()
        else:
            self.started_at = now_iso()
            self._start()

    def _start(self) -> None:
        """Write a new shard holding only the header (a temporary file renamed over any old one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = {
            "fingerprint": self.fingerprint,
            "fingerprint_sha256": self.sha,
            "started_at": self.started_at,
        }
        atomic_write(self.path, json.dumps(header, sort_keys=True) + "\n")

    def _load(self) -> None:
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        # Everything after the last newline is a write cut short by a kill: drop it, it will be regenerated.
        torn = lines.pop()
        if not lines:
            raise ShardError(f"{self.path}: no complete header line; delete the file or pass fresh=true")
        try:
            header = json.loads(lines[0])
        except json.JSONDecodeError:
            raise ShardError(
                f"{self.path}: line 1 is not a shard header; delete the file or pass fresh=true"
            ) from None
        if header.get("fingerprint_sha256") != self.sha:
            diff = first_difference(header.get("fingerprint", {}), self.fingerprint) or "fingerprint hash"
            if not any(b'"item_id"' in line for line in lines[1:]):
                # Nothing generated under the other settings (an engine that never started): nothing to lose.
                print(
                    f"{self.path}: held no samples of a run with other settings ({diff}); started over",
                    file=sys.stderr,
                )
                self.started_at = now_iso()
                self._start()
                return
            raise ShardError(
                f"{self.path}: holds {len(lines) - 1} samples of a run with other settings ({diff}); "
                "rerun with the settings it was started with to finish it, or pass fresh=true to discard it"
            )
        self.started_at = str(header.get("started_at") or now_iso())
        first_line: dict[SampleKey, int] = {}
        meta_line: dict[str, int] = {}
        for n, line in enumerate(lines[1:], 2):
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise TypeError
                if rec.get("check") != line_check(self.sha, rec):
                    raise ShardError(
                        f"{self.path}:{n}: this line was not written by this run (its check does not "
                        "match: another arm's or run's line, or edited by hand); fresh=true starts over"
                    )
                rec.pop("check")
                if "meta" in rec:
                    again = [k for k in rec["meta"] if k in meta_line]
                    if again:
                        raise ShardError(
                            f"{self.path}:{n}: meta {again[0]!r} again (first on line "
                            f"{meta_line[again[0]]}); a run records it once: pass fresh=true to start over"
                        )
                    meta_line.update(dict.fromkeys(rec["meta"], n))
                    self.meta.update(rec["meta"])
                    continue
                key = (str(rec["item_id"]), int(rec["index"]))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise ShardError(
                    f"{self.path}:{n}: not a sample record (damaged shard); pass fresh=true to start over"
                ) from None
            if key in first_line:
                raise ShardError(
                    f"{self.path}:{n}: sample {key[1]} of item {key[0]!r} again (first on line "
                    f"{first_line[key]}); a run writes each sample once: pass fresh=true to start over"
                )
            problem = self.validate(rec) if self.validate is not None else None
            if problem:
                raise ShardError(f"{self.path}:{n}: {problem}; pass fresh=true to start over")
            first_line[key] = n
            self.records[key] = rec
        if torn:
            with open(self.path, "r+b") as f:
                f.truncate(len(data) - len(torn))
            print(f"{self.path}: dropped an incomplete last line (an interrupted write)", file=sys.stderr)
        self.resumed = True

    def _write(self, lines: Iterable[Mapping[str, Any]], sync: bool = True) -> None:
        payload = "".join(
            json.dumps({**r, "check": line_check(self.sha, r)}, sort_keys=True, ensure_ascii=False) + "\n"
            for r in lines
        )
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open for the whole run
        self._fh.write(payload)
        self._fh.flush()
        if sync or time.monotonic() - self._synced >= SYNC_EVERY_S:
            self.sync()

    def sync(self) -> None:
        """Force everything appended so far to disk."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        """Force the shard to disk and close it."""
        if self._fh is not None:
            self.sync()
            self._fh.close()
            self._fh = None

    def set_meta(self, key: str, value: Any) -> None:
        """Record something the run learned (e.g. the engine's provenance) so that a resume knows it too."""
        self._write([{"meta": {key: value}}])
        self.meta[key] = value

    def append(self, records: Iterable[Mapping[str, Any]], sync: bool = False) -> None:
        """Append finished samples (with item_id and index): written and flushed now, fsynced per policy."""
        new = [dict(r) for r in records]
        if not new:
            return
        self._write(new, sync=sync)
        for r in new:
            self.records[(str(r["item_id"]), int(r["index"]))] = r

    def remove(self) -> None:
        """Delete the shard once its EvalLog is safely written."""
        self.close()
        self.path.unlink(missing_ok=True)


def recorded_meta(path: str | Path) -> dict[str, Any]:
    """What a shard's meta lines record, read before the run's fingerprint is known: each line checked
    against the shard's own header only ({} for a file that is not a shard). Opening the shard (Shard)
    checks it against the run."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        sha = str(json.loads(lines[0]).get("fingerprint_sha256"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return {}
    meta: dict[str, Any] = {}
    for line in lines[1:]:
        if '"meta"' not in line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (
            isinstance(rec, dict)
            and isinstance(rec.get("meta"), dict)
            and rec.get("check") == line_check(sha, rec)
        ):
            meta.update(rec["meta"])
    return meta


class RunLock:
    """An exclusive lock on one arm's run in one folder, so two runs never write one shard or file.

    A second run of the same arm into the same folder is refused at once, in one line that names the
    holder; the lock is an flock on <shard>.lock, released by the kernel when its holder dies, so a killed
    run never leaves a stale lock behind.
    """

    def __init__(self, path: str | Path, what: str) -> None:
        self.path = Path(path)
        self.what = what
        self._fh: Any = None

    def __enter__(self) -> RunLock:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until __exit__
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                fh.close()
                raise ShardError(
                    f"{self.path}: {self.what} is being generated by {holder}; wait for it to finish, then "
                    "rerun (it resumes or finds the arm up to date)"
                ) from None
            # The holder before us may have removed the file after we opened it: lock the file that is there.
            try:
                same = os.fstat(fh.fileno()).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {os.uname().nodename} since {now_iso()}\n")
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self.path.unlink(missing_ok=True)
            self._fh.close()
            self._fh = None
