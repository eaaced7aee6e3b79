"""The constructed format pair end to end: generations, the real scorer, the real delta report: FORMAT.

The demo suite (80 items) x k = 4: trained gives exactly base's answers (each item's reference on some
samples, a wrong number on the others, the same for both arms), base writing "The answer is N." and
trained "\\boxed{N}", under the prompt's `last_boxed` rule. The report's reader reads only trained's
answers, so alone it claims a capability gain (EXPANSION, about +0.5); the lenient reader reads both
arms' answers alike, and the claim is FORMAT.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from contract.arm import ArmSpec
from contract.engine import EngineInfo
from contract.evallog import load
from contract.generations import Generations, GenItem, GenSample, dump_generations, prompt_sha256
from contract.protocol import Protocol
from demo.worlds import ROOT
from tests.helpers.commands import run_cli
from tests.helpers.params import write_params

SUITE = ROOT / "demo" / "suite" / "sda-mini-v1.jsonl"
K = 4


def wrong(reference: str) -> str:
    """Another answer than the reference: the next number, or another name."""
    try:
        return str(int(float(reference)) + 1)
    except ValueError:
        return "Nobody Relay"


def generations(arm: str, write: str, right: np.ndarray, suite: list[dict]) -> Generations:
    """One arm's generations: sample j of item i states the reference where right[i, j], else a wrong one."""
    protocol = Protocol(k=K, max_tokens=64, temperature=1.0, top_p=1.0, seed=1234, answer="last_boxed")
    items = []
    for i, item in enumerate(suite):
        prompt = f"Question: {item['question']}\nAnswer:"
        samples = []
        for j in range(K):
            answer = item["answer"] if right[i, j] else wrong(item["answer"])
            text = f"We work it out. {write.format(answer)}"
            samples.append(GenSample(index=j, seed=1000 * i + j, text=text, finish_reason="stop",
                                     prompt_tokens=12, gen_tokens=9))  # fmt: skip
        items.append(GenItem(item_id=item["item_id"], prompt=prompt, prompt_sha256=prompt_sha256(prompt),
                             samples=samples))  # fmt: skip
    spec = ArmSpec(name=arm, model=f"demo/{arm}", retrieval=False, tools=False, attribution="parametric")
    return Generations(arm=spec, model=f"demo/{arm}", chat=False, protocol=protocol,
                       engine=EngineInfo(name="constructed"), items=items)  # fmt: skip


def test_the_same_answers_boxed_are_format_not_a_capability_gain(tmp_path: Path) -> None:
    every = [json.loads(line) for line in SUITE.read_text().splitlines() if line.strip()]
    # 80 items: the first 20 of each family.
    families = sorted({it["family"] for it in every})
    suite = [it for f in families for it in [x for x in every if x["family"] == f][:20]]
    assert len(suite) == 80
    # The scorer scores a whole suite: these 80 items are the suite here.
    suite_file = tmp_path / "sda-mini-80.jsonl"
    suite_file.write_text("".join(json.dumps(it, sort_keys=True) + "\n" for it in suite), encoding="utf-8")
    right = np.random.default_rng(3).random((len(suite), K)) < 0.45
    for arm, write in (("base", "The answer is {}."), ("trained", "\\boxed{{{}}}")):
        gens = tmp_path / f"{arm}.gen.json"
        gens.write_text(dump_generations(generations(arm, write, right, suite)), encoding="utf-8")
        done = run_cli("pipeline.score", "--generations", str(gens), "--suite", str(suite_file),
                       "--out", str(tmp_path / f"{arm}.json"))  # fmt: skip
        assert done.returncode == 0, done.stderr
    base, trained = load(tmp_path / "base.json"), load(tmp_path / "trained.json")
    # The scorer read the two arms' answers alike under the lenient reader, only trained's under the rule.
    assert all(it.lenient_scores is not None for it in base.items)
    assert [it.lenient_scores for it in base.items] == [it.lenient_scores for it in trained.items]
    assert not any(s.answer for it in base.items for s in it.samples or [])

    params = write_params(tmp_path / "params.yaml", n_boot=1000, n_perm=1000)
    pre, post = str(tmp_path / "base.json"), str(tmp_path / "trained.json")
    done = run_cli("analysis.commands.delta", "--pre", pre, "--post", post, "--out", str(tmp_path / "delta"),
                   "--params", str(params))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FORMAT: delta +"), done.stdout
    report = json.loads((tmp_path / "delta" / "delta_report.json").read_text())
    # Under the rule base scores 0 and trained its accuracy: the whole delta is the format.
    assert report["mean_pre"] == 0.0 and report["delta_mean"] == report["mean_post"] > 0.3
    assert report["claim"] == "FORMAT" and "EXPANSION under it alone" in report["claim_detail"]
    lenient = report["format"]["contrast"]["lenient"]
    assert lenient["delta"] == 0.0 and not lenient["significant"]
    assert [a["answered_share"] for a in report["format"]["arms"]] == [0.0, 1.0]
