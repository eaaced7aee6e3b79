"""The demo world: make_world is reproducible, the suite is disjoint from training, the answers are the
oracle's, and both checkpoints load and generate in transformers and in vLLM."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from augment.tools.orbital import TOOLS, call_tool
from contract.jsonl import read_jsonl
from contract.textformat import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, format_tool_call
from demo import make_world
from demo.charmodel import BOS, EOS, encode, vocabulary
from pipeline.prompts import build_prompt

DEMO = Path(make_world.__file__).resolve().parent
SUITE = DEMO / "suite" / "sda-mini-v1.jsonl"
CORPUS = DEMO / "corpus" / "space-text.jsonl"
TRAIN = DEMO / "train_data" / "train_problems.jsonl"
CATALOG = DEMO / "train_data" / "catalog.json"
MODELS = {"base": DEMO / "models" / "base", "trained": DEMO / "models" / "trained"}


def _jsonl(path: Path) -> list[dict]:
    return [row for _, row in read_jsonl(path)]


@pytest.fixture(scope="module")
def suite() -> list[dict]:
    return _jsonl(SUITE)


@pytest.fixture(scope="module")
def train() -> list[dict]:
    return _jsonl(TRAIN)


@pytest.fixture(scope="module")
def catalog() -> dict[str, dict]:
    return {s["name"]: s for s in json.loads(CATALOG.read_text())}


def _numbers(question: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\d+", question))


def _satellite(question: str, catalog: dict[str, dict]) -> dict | None:
    found = [catalog[n] for n in re.findall(r"\b[A-Z]+-\d+\b", question) if n in catalog]
    assert len(found) <= 1, question
    return found[0] if found else None


def test_make_world_rewrites_the_committed_files_byte_for_byte(tmp_path: Path) -> None:
    paths = make_world.build(tmp_path)
    for p in paths.values():
        committed = DEMO / p.relative_to(tmp_path)
        assert p.read_bytes() == committed.read_bytes(), f"{committed} differs from what make_world writes"


def test_suite_sha256_is_recorded_beside_it() -> None:
    recorded = (DEMO / "suite" / "sda-mini-v1.sha256").read_text().split()
    assert recorded == [hashlib.sha256(SUITE.read_bytes()).hexdigest(), "sda-mini-v1.jsonl"]


def test_suite_shape_and_runner_schema(suite: list[dict]) -> None:
    from contract.suite import load_suite

    items = load_suite(SUITE)
    assert len(items) == len(suite) == sum(make_world.FAMILY_COUNTS.values())
    counts = {f: sum(it["family"] == f for it in suite) for f in make_world.FAMILY_COUNTS}
    assert counts == make_world.FAMILY_COUNTS
    assert len({it["item_id"] for it in suite}) == len(suite)
    core = {"item_id", "family", "question", "answer", "verifier"}
    # The items a tool answers name the tool a tool arm should call (the path evaluation's "right tool").
    for it in suite:
        assert set(it) == (core | {"tool"} if it["family"] in ("compute", "compound") else core), it
    from augment.tools.orbital import TOOLS

    assert {it["tool"] for it in suite if "tool" in it} <= set(TOOLS)


def test_no_training_problem_appears_in_the_suite(
    suite: list[dict], train: list[dict], catalog: dict
) -> None:
    suite_q = {it["question"] for it in suite}
    assert not suite_q & {p["question"] for p in train}
    # The same numbers in the same template would be the same problem even if worded apart.
    suite_problems = {
        (it["family"], _numbers(it["question"])) for it in suite if it["family"] in ("raise", "compute")
    }
    train_problems = {
        (p["family"], _numbers(p["question"])) for p in train if p["family"] in ("raise", "compute")
    }
    assert not suite_problems & train_problems
    # Satellites: suite items name only suite satellites, training problems and passages only train ones.
    by_doc = {s["doc_id"]: s for s in catalog.values()}
    for it in suite:
        sat = _satellite(it["question"], catalog)
        assert (sat is not None) == (it["family"] in ("lookup", "compound")), it["item_id"]
        assert sat is None or sat["split"] == "suite", it["item_id"]
    for p in train:
        sat = _satellite(p["question"], catalog)
        assert sat is None or sat["split"] == "train", p["problem_id"]
        assert all(by_doc[d]["split"] == "train" for d in p["passages"] if d in by_doc), p["problem_id"]
    # No altitude of a suite satellite or suite computation is trained through a one-altitude tool.
    suite_alts = {s["altitude_km"] for s in catalog.values() if s["split"] == "suite"}
    for p in train:
        if p.get("tool") in ("orbital_period", "circular_speed") and p["family"] == "compute":
            assert p["arguments"]["altitude_km"] not in suite_alts, p["problem_id"]


def test_suite_answers_are_the_oracle_physics(suite: list[dict], catalog: dict) -> None:
    for it in suite:
        q, fam = it["question"], it["family"]
        sat = _satellite(q, catalog)
        if fam == "raise":
            a, d = map(int, _numbers(q))
            assert it["answer"] == str(a + d)
        elif fam == "lookup":
            facts = {
                sat["operator"],
                str(sat["altitude_km"]),
                str(sat["launch_year"]),
                f"{sat['inclination_deg']:.1f}",
            }
            assert it["answer"] in facts, it["item_id"]
        elif fam == "compound":
            tool = next(
                k for k, t in make_world.COMPOUND_TEMPLATES.items() if t.format(name=sat["name"]) == q
            )
            value = call_tool(tool, {"altitude_km": sat["altitude_km"]})[TOOLS[tool].result_key]
            assert float(it["answer"]) == value, it["item_id"]
        else:
            nums = list(map(int, _numbers(q)))
            calls = []
            for tool, template in make_world.COMPUTE_TEMPLATES.items():
                props = list(TOOLS[tool].parameters["properties"])
                if len(props) == len(nums) and template.format(**dict(zip(props, nums, strict=True))) == q:
                    calls.append((tool, dict(zip(props, nums, strict=True))))
            assert len(calls) == 1, it["item_id"]
            tool, args = calls[0]
            assert float(it["answer"]) == call_tool(tool, args)[TOOLS[tool].result_key], it["item_id"]


def test_bm25_top3_finds_the_catalog_passage_for_every_named_satellite(
    suite: list[dict], catalog: dict
) -> None:
    docs = _jsonl(CORPUS)
    named = [it for it in suite if it["family"] in ("lookup", "compound")]
    top = make_world.retrieve_ids(docs, [it["question"] for it in named], 3)
    for it, ids in zip(named, top, strict=True):
        assert _satellite(it["question"], catalog)["doc_id"] in ids, it["item_id"]


def test_training_transcripts_use_the_runner_formats(train: list[dict]) -> None:
    from demo.token_stream import TokenStream
    from demo.transcripts import render

    docs = {d["doc_id"]: d["text"] for d in _jsonl(CORPUS)}
    rng = random.Random(0)
    comp = next(p for p in train if p["family"] == "compute")
    prompt, completion = render(comp, "tools", docs, rng)
    assert prompt == build_prompt(comp["question"], (), sorted(TOOLS))
    assert completion.startswith(format_tool_call(comp["tool"], comp["arguments"]))
    assert completion.endswith(f"Answer: {comp['answer']}\n")
    look = next(p for p in train if p["family"] == "lookup")
    prompt, completion = render(look, "rag", docs, rng)
    assert prompt == build_prompt(look["question"], [docs[d] for d in _order(prompt, look, docs)])
    assert completion == f" {look['answer']}\n"
    stream = TokenStream([(prompt, completion), ("Question: x\nAnswer:", " 1\n")])
    v = vocabulary()
    ids, mask = stream.tokens.tolist(), stream.mask.tolist()
    first = [v[BOS], *encode(prompt + completion), v[EOS]]
    assert ids[: len(first)] == first and ids[len(first)] == v[BOS] and ids[-1] == v[EOS]
    # The loss falls on the completion and its </s> only.
    n_prompt = 1 + len(encode(prompt))
    assert mask[: len(first)] == [0.0] * n_prompt + [1.0] * (len(first) - n_prompt)


def _order(prompt: str, problem: dict, docs: dict[str, str]) -> list[str]:
    """The passage ids of problem in the order the prompt shows them."""
    return sorted(problem["passages"], key=lambda d: prompt.index(docs[d]))


# ---------------------------------------------------------------- the checkpoints (slow: real engines)

PROMPTS = [
    build_prompt("A satellite at 612 km altitude is raised by 200 km. What is its new altitude in km?"),
    build_prompt(
        "What is the orbital period in minutes of a circular orbit at 700 km altitude?", (), sorted(TOOLS)
    ),
    build_prompt(
        "Which company operates DOTEL-26?",
        [d["text"] for d in _jsonl(CORPUS) if d["doc_id"] in ("sat-000", "ref-23", "sat-272")],
    ),
]


def _hf_greedy(path: Path, prompt: str, n: int = 80) -> str:
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(path)
    model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    enc = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=n, do_sample=False, pad_token_id=tok.pad_token_id)
    return tok.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_checkpoint_is_small_and_generates_in_transformers(name: str) -> None:
    path = MODELS[name]
    assert (path / "model.safetensors").stat().st_size < 8_000_000
    text = _hf_greedy(path, PROMPTS[0])
    assert re.fullmatch(r" \d+\n", text), text
    call = _hf_greedy(path, PROMPTS[1])
    assert call.startswith(TOOL_CALL_OPEN) and TOOL_CALL_CLOSE in call, call
    body = json.loads(call[len(TOOL_CALL_OPEN) : call.index(TOOL_CALL_CLOSE)])
    assert body["name"] in TOOLS and "error" not in call_tool(body["name"], body["arguments"]), body


@pytest.mark.slow
# The trained checkpoint first: the session's engine (tests/conftest.py vllm_for, as the pipeline starts it
# on a CPU) is then left on the base checkpoint, which tests/pipeline/engines/test_runner_engine.py's parity
# tests use next in the same process: one engine start fewer.
@pytest.mark.parametrize("name", ["trained", "base"])
def test_checkpoint_generates_in_vllm_like_transformers(name: str, vllm_for) -> None:
    from vllm import SamplingParams

    greedy = SamplingParams(
        temperature=0.0, max_tokens=80, stop=["</tool_call>"], include_stop_str_in_output=True
    )
    llm = vllm_for(MODELS[name]).llm
    outs = llm.generate(PROMPTS, greedy, use_tqdm=False)
    for prompt, out in zip(PROMPTS, outs, strict=True):
        hf = _hf_greedy(MODELS[name], prompt)
        assert out.outputs[0].text == hf[: len(out.outputs[0].text)], (out.outputs[0].text, hf)
    seeded = SamplingParams(n=1, temperature=1.0, seed=7, max_tokens=16)
    a = llm.generate(PROMPTS[:1], seeded, use_tqdm=False)[0].outputs[0].text
    b = llm.generate(PROMPTS[:1], seeded, use_tqdm=False)[0].outputs[0].text
    assert a == b


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_checkpoints_read_lookups_from_the_passage_nearest_the_question(name: str, tmp_path: Path) -> None:
    """Greedy, on the 70 suite look-ups: the BM25 passages in rag.order best_last (the default) make the
    answer copyable; without passages, or with the best passage farthest from the question, it is a guess."""
    import torch
    from transformers import LlamaForCausalLM

    from augment.retrieval import Index, build_index
    from demo.reading import suite_lookups

    build_index(CORPUS, tmp_path / "index")
    model = LlamaForCausalLM.from_pretrained(MODELS[name], dtype=torch.float32).eval()
    correct = suite_lookups(model, Index.load(tmp_path / "index"))
    assert correct["plain"] <= 5 and correct["best_first"] <= 5, correct
    assert correct["best_last"] >= 20, correct
