"""Other tools' log files made for the import tests: Inspect's (by inspect-ai itself) and lm-eval's."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from interop.imports.__main__ import main as imports_main

N_ITEMS, EPOCHS = 8, 3


def inspect_log(
    folder: Path, model: str, right: set[tuple[int, int]], epochs: int = EPOCHS, logprobs: bool = False
) -> Path:
    """An Inspect log made by inspect-ai's eval() with the offline mockllm model over N_ITEMS items.

    The answer to item i in epoch e is right when (i, e) is in `right`. mockllm counts the tokens of an
    output that has no usage with tiktoken, whose encoding file it downloads; every output here carries its
    own ModelUsage, so mockllm never counts (and the test runs offline). logprobs: every output records its
    tokens' log-probabilities (item i, epoch e: each word of the text at log(1 / (1 + e))).
    """
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    seen: dict[str, itertools.count[int]] = defaultdict(itertools.count)

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        question = messages[-1].text
        i, e = int(question.split()[1]), next(seen[question]) + 1
        text = f"Item {i}: the answer is {i + 1 if (i, e) in right else i + 2}"
        out = ModelOutput.from_content(model=model, content=text)
        out.usage = ModelUsage(input_tokens=5, output_tokens=10 + e, total_tokens=15 + e)
        if logprobs:
            from inspect_ai.model import Logprob, Logprobs

            lp = -math.log(1 + e)
            out.choices[0].logprobs = Logprobs(content=[Logprob(token=w, logprob=lp) for w in text.split()])
        return out

    dataset = MemoryDataset(
        [
            Sample(
                id=f"q{i}",
                input=f"Item {i} question",
                target=str(i + 1),
                metadata={"family": "fam" + str(i % 2)},
            )
            for i in range(N_ITEMS)
        ]
    )
    [log] = eval(
        Task(dataset=dataset, solver=generate(), scorer=match(location="end"), name="arith"),
        model=model,
        model_args={"custom_outputs": answer},
        epochs=epochs,
        log_dir=str(folder),
        display="none",
        temperature=0.8,
        max_tokens=64,
        max_samples=1,
    )
    return Path(log.location)


DATE = "2026-01-02T03-04-05.678901"


GREEDY = {"until": ["\nQuestion:"], "do_sample": False, "max_gen_toks": 32}


N_DOCS = 5


def doc_hash(doc: dict[str, Any]) -> str:
    """lm-eval's doc_hash: sha256 of json.dumps(doc, indent=2, ensure_ascii=False)."""
    return hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False).encode()).hexdigest()


def document(i: int, ids: str = "item_id") -> dict[str, Any]:
    """Document i of the dataset; its own id under `ids` (none for "position")."""
    doc: dict[str, Any] = {"question": f"What is {i} + 1?", "answer": str(i + 1)}
    if ids != "position":
        doc[ids] = f"q{i}"
    return doc


def text(i: int, run: int) -> str:
    """What the model wrote for document i in run `run` (right in about half the cells)."""
    return f" {i + 1 if (i + run) % 2 == 0 else i + 7}"


def sample_line(doc_id: int, doc: dict[str, Any], texts: list[str], **extra: Any) -> dict[str, Any]:
    """One --log_samples line of a generate_until task with the exact_match metric."""
    target = doc["answer"]
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": target,
        "arguments": {"gen_args_0": {"arg_0": f"Question: {doc['question']}\nAnswer:", "arg_1": GREEDY}},
        "resps": [texts],
        "filtered_resps": [texts[0]],
        "filter": "none",
        "metrics": ["exact_match"],
        "doc_hash": doc_hash(doc),
        "prompt_hash": "p",
        "target_hash": "t",
        "exact_match": float(texts[0].strip() == target),
        **extra,
    }


def write_run(
    folder: Path,
    order: list[int],
    run: int,
    ids: str = "item_id",
    k: int = 1,
    model: str | None = "org/m",
    seed: int = 0,
) -> Path:
    """samples_arith_<date>.jsonl of one run over the documents in `order` (doc_id = position in it)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        sample_line(pos, document(i, ids), [text(i, run + j) for j in range(k)])
        for pos, i in enumerate(order)
    ]
    path = folder / f"samples_arith_{DATE}.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    if model is not None:
        results = {"versions": {"arith": 1}, "config": {"random_seed": seed}, "lm_eval_version": "0.4.13",
                   "model_name": model}  # fmt: skip
        (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    return path


def imports(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """(exit status, stderr) of python -m interop.imports ARGS, in this process."""
    rc = imports_main([str(a) for a in args])
    return rc, capsys.readouterr().err
