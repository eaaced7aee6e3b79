"""Make the import example's Inspect logs: Inspect's offline mock model replays the texts of the lm-eval run.

    python examples/import/make_inspect.py      # from the repository root, after the lm-eval runs (make.sh)

For each demo checkpoint, inspect-ai's own eval() runs the same 24 items with mockllm, whose answer to each
question is the text that checkpoint wrote under lm-eval (examples/import/lm-eval/<model>/), scored by
Inspect's numeric match: real Inspect logs of the same texts, made without a network or a GPU (every output
carries its token counts, so mockllm never downloads a tokenizer to count them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage
from inspect_ai.scorer import match
from inspect_ai.solver import generate

HERE = Path(__file__).parent


def texts_of(model: str) -> dict[str, str]:
    """The text lm-eval recorded for each question, from that model's --log_samples file."""
    [samples] = sorted((HERE / "lm-eval" / model).glob("*/samples_sda_mini_*.jsonl"))
    rows = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    return {row["doc"]["question"]: row["resps"][0][0] for row in rows}


def make(model: str) -> Path:
    """One Inspect log of the model's lm-eval texts, written under examples/import/inspect/<model>/."""
    texts = texts_of(model)

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        text = texts[messages[-1].text]
        out = ModelOutput.from_content(model=f"demo-{model}", content=text)
        words = len(text.split())
        out.usage = ModelUsage(input_tokens=0, output_tokens=words, total_tokens=words)
        return out

    items = [json.loads(line) for line in (HERE / "suite.jsonl").read_text().splitlines()]
    dataset = MemoryDataset(
        [
            Sample(id=it["item_id"], input=it["question"], target=it["answer"], metadata={"family": fam})
            for it in items
            for fam in [it["family"]]
        ]
    )
    [log] = eval(
        Task(dataset=dataset, solver=generate(), scorer=match(numeric=True), name="sda-mini"),
        model=f"mockllm/demo-{model}",
        model_args={"custom_outputs": answer},
        log_dir=str(HERE / "inspect" / model),
        display="none",
        temperature=0.0,
        max_tokens=128,
        max_samples=1,
    )
    return Path(log.location)


if __name__ == "__main__":
    for name in ("base", "trained"):
        print(make(name))
