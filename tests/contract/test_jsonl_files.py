"""The one JSONL reader (split on "\\n" only) and the one path check of the commands, on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contract.files import PathCheckError, input_dir, input_file, output_dir, output_file
from contract.jsonl import JsonlError, read_jsonl


def test_raw_line_separators_inside_strings_stay_in_their_record(tmp_path: Path) -> None:
    texts = ["a\u2028b", "c\u0085d", "e\u2029f\x1cg"]
    p = tmp_path / "x.jsonl"
    p.write_text("\n".join(json.dumps({"t": t}, ensure_ascii=False) for t in texts) + "\n", encoding="utf-8")
    assert [r["t"] for _, r in read_jsonl(p)] == texts


def test_crlf_and_blank_lines_are_read_with_their_line_numbers(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\r\n\r\n  \n{"a": 2}\r\n')
    assert read_jsonl(p) == [(1, {"a": 1}), (4, {"a": 2})]


@pytest.mark.parametrize(
    ("body", "needle"),
    [(b'{"a": 1}\n{"a": \n', "x.jsonl:2: not JSON"), (b'{"a": 1}\n\xff\n', "x.jsonl:2: not UTF-8")],
)
def test_a_bad_line_is_named_by_file_and_line(tmp_path: Path, body: bytes, needle: str) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(body)
    with pytest.raises(JsonlError, match=needle):
        read_jsonl(p)


def test_a_folder_or_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(JsonlError, match="is a folder"):
        read_jsonl(tmp_path)
    with pytest.raises(JsonlError, match="not found"):
        read_jsonl(tmp_path / "none.jsonl")


def test_input_checks_name_the_option_and_the_fault(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "gone", dangling)
    (tmp_path / "f").write_text("x")
    cases = {tmp_path: "is a folder", loop: "loop", dangling: "dangling", tmp_path / "none": "not found"}
    for path, needle in cases.items():
        with pytest.raises(PathCheckError, match=f"--suite {path}: .*{needle}"):
            input_file(path, "--suite")
    assert input_file(tmp_path / "f", "--suite") == tmp_path / "f"
    with pytest.raises(PathCheckError, match="is a file"):
        input_dir(tmp_path / "f", "--logs")
    assert input_dir(tmp_path, "--logs") == tmp_path


def test_output_checks_refuse_folders_files_and_system_trees(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathCheckError, match="--out .*is a folder"):
        output_file(tmp_path, "--out")
    with pytest.raises(PathCheckError, match="under /proc"):
        output_file("/proc/self/x.json", "--out")
    with pytest.raises(PathCheckError, match="is a file, so nothing"):
        output_file(tmp_path / "f" / "x.json", "--out")
    with pytest.raises(PathCheckError, match="is a file; give a folder"):
        output_dir(tmp_path / "f", "--out")
    assert output_file(tmp_path / "new" / "x.json", "--out") == tmp_path / "new" / "x.json"
    assert output_dir(tmp_path / "new2", "--out") == tmp_path / "new2"
