"""The files of one arm's run, named in one place (`RunPaths`).

Its generations file and provenance record are in out_dir; its own files are beside out_dir, never inside
it, in <out_dir>.work/ (the partial shard and its lock, a finished part waiting for the merge, the kept
links of the finished files).

DVC owns out_dir as one output: a `dvc checkout --force` that cannot restore it from the cache deletes the
whole folder, so what a resume needs must live where DVC never deletes (pipeline.keep).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contract.provenance import provenance_path


@dataclass(frozen=True)
class RunPaths:
    """The files of the run of arm (and part s of N) into out_dir."""

    out_dir: Path
    arm: str
    part: tuple[int, int] | None = None

    @property
    def dest(self) -> Path:
        """The arm's generations file: <out_dir>/<arm>.json."""
        return self.out_dir / f"{self.arm}.json"

    @property
    def provenance(self) -> Path:
        """The provenance record beside the generations file (contract.provenance)."""
        return provenance_path(self.dest)

    @property
    def work(self) -> Path:
        """The run's own files: <out_dir>.work/ (partial shards, finished parts, kept links)."""
        return self.out_dir.parent / f"{self.out_dir.name}.work"

    @property
    def partial(self) -> Path:
        """Where runs append their finished samples and keep their locks: <out_dir>.work/partial/."""
        return self.work / "partial"

    @property
    def suffix(self) -> str:
        """'.part-0-of-2' for a part, '' for a whole arm: in the names of a part's shard, lock and file."""
        return "" if self.part is None else f".part-{self.part[0]}-of-{self.part[1]}"

    @property
    def shard(self) -> Path:
        """Where the run appends its finished samples: <out_dir>.work/partial/<arm>[.part-s-of-N].jsonl."""
        return self.partial / f"{self.arm}{self.suffix}.jsonl"

    @property
    def lock(self) -> Path:
        """The lock that keeps a second run of the same arm (and part) out of the same folder."""
        return self.partial / f"{self.arm}{self.suffix}.lock"

    @property
    def part_file(self) -> Path:
        """Where a finished part waits for the merge: <out_dir>.work/parts/<arm>.part-s-of-N.jsonl."""
        if self.part is None:
            raise ValueError(f"arm {self.arm!r}: a whole-arm run has no part file")
        return self.work / "parts" / f"{self.arm}{self.suffix}.jsonl"

    @property
    def kept_dest(self) -> Path:
        """The kept link of the arm's generations file."""
        return self.kept(self.dest)

    def kept(self, path: Path) -> Path:
        """Where the kept link of a file of the generations folder lives: <out_dir>.work/kept/<name>."""
        return self.work / "kept" / path.name
