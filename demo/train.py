"""Train the demo world's two checkpoints on two CPU cores.

    python -m demo.train --stage base      # M0: SFT from scratch on transcripts of every prompt format
    python -m demo.train --stage trained   # M1: M0 plus rejection-sampling fine-tuning, the oracle as reward
    python -m demo.train --stage trained --reward random --out demo/models/placebo \
        --log demo/models/train_log_placebo.txt    # the placebo: the same trainer, a seeded random reward

base: transcripts of the training problems (demo/train_data/train_problems.jsonl, disjoint from the suite) in
the four formats the arms use (plain, rag, tools, rag+tools; pipeline.prompts builds them), tokenized once,
joined into one token stream with <s> ... </s> around each transcript, and trained on packed windows that
start at a transcript boundary (no padding, no tokenizer in the loop). A share of the orbit-raise answers
carries a one-digit slip (RAISE_SLIP_RATE), so the base model is deliberately imperfect in its head.

trained: expert iteration on PLAIN raise and compute training problems only: sample k completions at
temperature 1 from the current model, keep those the oracle verifies, fine-tune on them mixed with replayed
base transcripts; repeated for --rft-iterations.

Both stages are seeded, log to demo/models/train_log_<stage>.txt and save a resumable state every
--save-every steps under --work-dir; rerunning the same command resumes a killed run.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arms.tools.orbital import TOOLS
from contract.atomic import atomic_write
from contract.jsonl import read_jsonl
from contract.suite import SuiteItem
from contract.textformat import ANSWER_TAG, format_tool_call, format_tool_response
from pipeline.prompts import build_prompt
from scoring import verifiers
from scoring.verifiers import Verdict

DEMO = Path(__file__).resolve().parent
FORMATS = ("plain", "rag", "tools", "rag_tools")
TOOL_NAMES = tuple(sorted(TOOLS))
# Share of transcripts per (family, format). Every combination the suite meets in some arm is present.
MIXTURE: dict[tuple[str, str], float] = {
    ("raise", "plain"): 0.26,
    ("raise", "rag"): 0.03,
    ("raise", "tools"): 0.03,
    ("raise", "rag_tools"): 0.02,
    ("compute", "plain"): 0.16,
    ("compute", "rag"): 0.02,
    ("compute", "tools"): 0.12,
    ("compute", "rag_tools"): 0.03,
    ("lookup", "plain"): 0.02,
    ("lookup", "rag"): 0.12,
    ("lookup", "tools"): 0.01,
    ("lookup", "rag_tools"): 0.03,
    ("compound", "plain"): 0.01,
    ("compound", "rag"): 0.03,
    ("compound", "tools"): 0.02,
    ("compound", "rag_tools"): 0.09,
}
RAISE_SLIP_RATE = 0.1
# The base stage is a curriculum of two phases; a mixture maps a kind to its share of transcripts. A kind is
# "family/format" (MIXTURE's transcripts) or one of the dense copy drills: "repeat" (Question: Repeat 1198.
# Answer: 1198), "lookup1" / "compound1" (a look-up / compound question with only its gold passage).
# A first recipe (MIXTURE alone, 3,000 steps) learned every format but copied almost no number from its
# context, because answer tokens are a small share of a stream dominated by passages and questions.
SKILLS_MIXTURE: dict[str, float] = {
    "repeat": 0.35,
    "raise/plain": 0.30,
    "lookup1": 0.15,
    "compute/tools": 0.10,
    "compute/plain": 0.10,
}
FORMATS_MIXTURE: dict[str, float] = {
    "repeat": 0.10,
    "lookup1": 0.08,
    "compound1": 0.05,
    **{f"{fam}/{fmt}": 0.77 * w for (fam, fmt), w in MIXTURE.items()},
}
# Phase 3 (--phase3-steps): passages about satellites the model has never seen ("new:" kinds: a fresh
# fictional satellite replaces the gold passage, question and answer), so that reading the passage is the
# only way to the answer. Up to phase 2 the look-up transcripts named the 150 TRAIN satellites, whose facts
# the model memorized instead of reading them (3-passage suite look-ups: 1/24 right after phase 2).
TOOLS_MIXTURE: dict[str, float] = {f"{fam}/{fmt}": 0.35 * w for (fam, fmt), w in MIXTURE.items()}
for _kind, _extra in (
    ("compute/tools", 0.15),
    ("new:lookup/rag", 0.25),
    ("new:compound/rag_tools", 0.12),
    ("new:lookup/rag_tools", 0.05),
    ("new:compound/rag", 0.03),
    ("repeat", 0.05),
):
    TOOLS_MIXTURE[_kind] = TOOLS_MIXTURE.get(_kind, 0.0) + _extra


@dataclass
class TrainConfig:
    """Everything that determines a stage's result (written into training_meta.json)."""

    stage: str
    seed: int = 1234
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    intermediate: int = 384
    seq_len: int = 576
    batch: int = 8
    steps: int = 800
    lr: float = 3e-3
    warmup: int = 200
    weight_decay: float = 0.01
    n_transcripts: int = 30000
    # One thread: while other processes share the two cores, two threads ran 3.4x slower (0.94 vs 3.2 s/step).
    threads: int = 1
    # trained stage
    rft_iterations: int = 2
    rft_problems: int = 2000
    rft_k: int = 4
    rft_keep_per_problem: int = 2
    rft_steps: int = 200
    rft_lr: float = 1e-3
    rft_replay: float = 0.5
    # "oracle" keeps the completions the oracle verifies; "random" is the placebo: the same trainer keeping
    # each distinct completion by a seeded coin of probability random_accept, whatever it says (near the
    # oracle's acceptance in the committed run, 0.149 and 0.172; the placebo still keeps more, because
    # right answers repeat and are kept once, wrong ones rarely repeat). Steps, and so compute, are equal.
    reward: str = "oracle"
    random_accept: float = 0.16
    # base phase 2 (FORMATS_MIXTURE); phase 1 (SKILLS_MIXTURE) uses steps, lr and n_transcripts
    phase2_steps: int = 1800
    phase2_lr: float = 2e-3
    phase2_transcripts: int = 40000
    phase3_steps: int = 0
    phase3_lr: float = 1e-3
    phase3_transcripts: int = 20000


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file."""
    return [row for _, row in read_jsonl(path)]


def slip(answer: str, rng: random.Random) -> str:
    """A plausible head-arithmetic slip: one digit place off by one."""
    value = int(answer) + rng.choice((-100, -10, -1, 1, 10, 100))
    return str(value)


def completion(problem: dict[str, Any], fmt: str, answer: str) -> str:
    """What the model writes after the prompt (tool response included where the runner would append it)."""
    if fmt in ("plain", "rag"):
        return f" {answer}\n"
    tool = problem.get("tool")
    if tool is None:
        return f"{ANSWER_TAG} {answer}\n"
    call = format_tool_call(tool, problem["arguments"])
    response = format_tool_response({TOOLS[tool].result_key: float(problem["answer"])})
    return f"{call}{response}{ANSWER_TAG} {answer}\n"


def render(problem: dict[str, Any], fmt: str, docs: dict[str, str], rng: random.Random) -> tuple[str, str]:
    """(prompt, completion) of one problem in one format; passages in a random order, raise slips drawn."""
    passages: list[str] = []
    if fmt in ("rag", "rag_tools"):
        ids = list(problem["passages"])
        rng.shuffle(ids)
        texts = {**docs, **problem.get("extra_docs", {})}
        passages = [texts[i] for i in ids]
    tools = TOOL_NAMES if fmt in ("tools", "rag_tools") else ()
    answer = problem["answer"]
    if problem["family"] == "raise" and rng.random() < RAISE_SLIP_RATE:
        answer = slip(answer, rng)
    return build_prompt(problem["question"], passages, tools), completion(problem, fmt, answer)


def sft_transcripts(
    problems: list[dict[str, Any]],
    docs: dict[str, str],
    n: int,
    rng: random.Random,
    mixture: dict[str, float] | None = None,
) -> list[tuple[str, str]]:
    """n (prompt, completion) pairs drawn by a mixture (default MIXTURE); each family's problems cycle."""
    mix = mixture or {f"{fam}/{fmt}": w for (fam, fmt), w in MIXTURE.items()}
    by_family: dict[str, list[dict[str, Any]]] = {}
    for p in problems:
        by_family.setdefault(p["family"], []).append(p)
    pools = {f: rng.sample(ps, len(ps)) for f, ps in by_family.items()}
    cursor = dict.fromkeys(pools, 0)
    # Drills quote only passages of TRAIN satellites: those the training problems were given.
    train_sats = sorted({d for p in problems for d in p["passages"] if d.startswith("sat-")})
    keys = list(mix)
    weights = [mix[k] for k in keys]
    out = []
    for _ in range(n):
        kind = rng.choices(keys, weights)[0]
        if kind == "repeat":
            out.append(repeat_drill(rng, [docs[d] for d in train_sats]))
            continue
        fresh = kind.startswith("new:")
        fam, fmt = kind.removeprefix("new:").split("/") if "/" in kind else (_DRILLS[kind], "")
        pool = pools[fam]
        p = pool[cursor[fam] % len(pool)]
        cursor[fam] += 1
        if fresh:
            p = fresh_satellite_problem(p, docs, rng)
        if kind in _DRILLS:
            p, fmt = {**p, "passages": [_gold(p, docs)]}, ("rag" if fam == "lookup" else "rag_tools")
        out.append(render(p, fmt, docs, rng))
    return out


_DRILLS = {"lookup1": "lookup", "compound1": "compound"}


def fresh_satellite_problem(
    problem: dict[str, Any], docs: dict[str, str], rng: random.Random
) -> dict[str, Any]:
    """The same question about a new fictional satellite (in no catalog); its passage replaces the gold."""
    from demo import make_world as mw

    taken = {t.split(":", 1)[0] for d, t in docs.items() if d.startswith("sat-")}
    name = next(
        n
        for n in (
            "".join(rng.choice(x) for x in (mw.ONSETS, mw.VOWELS, mw.ONSETS, mw.VOWELS, mw.CODAS))
            + f"-{rng.randint(10, 99)}"
            for _ in range(1000)
        )
        if n not in taken
    )
    sat = {
        "doc_id": "new",
        "name": name,
        "operator": rng.choice(mw.OPERATORS),
        "altitude_km": rng.randint(mw.ALT_MIN, mw.ALT_MAX),
        "inclination_deg": round(rng.uniform(0.0, 105.0), 1),
        "launch_year": rng.randint(1998, 2025),
    }
    if problem["family"] == "lookup":
        attr = next(
            a
            for a, t in mw.LOOKUP_TEMPLATES.items()
            if t.format(name=problem["satellite"]) == problem["question"]
        )
        new = mw.lookup_problem(sat, attr)
    else:
        new = mw.compound_problem(sat, problem["tool"])
    new["passages"] = [d for d in problem["passages"] if d != problem["gold_doc"]][:2] + ["new"]
    new["extra_docs"] = {"new": mw.satellite_text(sat)}
    return new


def repeat_drill(rng: random.Random, passages: list[str]) -> tuple[str, str]:
    """A copy drill: a number, decimal or catalog phrase (from one of passages) to repeat verbatim."""
    r = rng.random()
    if r < 0.4:
        x = str(rng.randint(10, 99999))
    elif r < 0.7:
        x = f"{rng.uniform(0, 200):.{rng.randint(1, 2)}f}"
    else:
        words = rng.choice(passages).rstrip(".").split(", ")
        x = rng.choice(words).split(": ")[-1]
    return build_prompt(f"Repeat {x}."), f" {x}\n"


_RESPONSE = re.compile(r"(\n<tool_response>.*?</tool_response>\n)", re.S)


def _offsets(segs: list[list[tuple[str, float]]]) -> list[tuple[int, list[tuple[str, float]]]]:
    """(index of the transcript's first segment in the flattened list, its segments) per transcript."""
    out, k = [], 0
    for sg in segs:
        out.append((k, sg))
        k += len(sg)
    return out


def _gold(problem: dict[str, Any], docs: dict[str, str]) -> str:
    """The doc id of the passage that names the problem's satellite."""
    name = problem["satellite"]
    return next(d for d in problem["passages"] if docs[d].startswith(name + ":"))


class TokenStream:
    """Transcripts tokenized once and joined as <s> t </s> <s> t </s> ...; windows start at a <s>.

    The loss mask is 1 on what the model writes (completion tokens and their </s>) and 0 on the prompt and on
    the tool responses the runner appends: with the loss on every token the rare answer tokens were swamped
    by passage and question text.
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], mask_responses: bool = True) -> None:
        import numpy as np
        import torch

        from demo.charmodel import BOS, EOS, build_tokenizer, vocabulary

        vocab = vocabulary()
        tok = build_tokenizer()
        # One tokenizer, one batch call: the same ids as demo.charmodel.encode gives text by text.
        # A transcript's segments (text, trained?): the prompt and the runner's tool responses are context.
        segs = [
            [(p, 0.0)]
            + [(t, float(i % 2 == 0 or not mask_responses)) for i, t in enumerate(_RESPONSE.split(c))]
            for p, c in pairs
        ]
        flat_texts = [t for sg in segs for t, _ in sg]
        seg_ids = [e.ids for e in tok.encode_batch(flat_texts, add_special_tokens=False)]
        lengths = np.array(
            [sum(len(seg_ids[j]) for j in range(k, k + len(sg))) + 2 for k, sg in _offsets(segs)]
        )
        self.starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        flat = np.empty(int(lengths.sum()), dtype=np.int64)
        mask = np.zeros(int(lengths.sum()), dtype=np.float32)
        for s, (k, sg) in zip(self.starts, _offsets(segs), strict=True):
            flat[s] = vocab[BOS]
            pos = s + 1
            for j, (_, trained) in enumerate(sg):
                ids = seg_ids[k + j]
                flat[pos : pos + len(ids)] = ids
                mask[pos : pos + len(ids)] = trained
                pos += len(ids)
            flat[pos] = vocab[EOS]
            mask[pos] = 1.0
        self.tokens = torch.from_numpy(flat)
        self.mask = torch.from_numpy(mask)
        self.max_len = int(lengths.max())

    def __len__(self) -> int:
        return int(self.tokens.numel())

    def batch(self, gen: Any, batch: int, seq_len: int) -> tuple[Any, Any]:
        """(tokens, loss mask), each (batch, seq_len + 1), of windows starting at random transcript starts."""
        import torch

        usable = self.starts[self.starts + seq_len + 1 <= len(self)]
        pick = [int(usable[i]) for i in torch.randint(len(usable), (batch,), generator=gen).tolist()]
        x = torch.stack([self.tokens[s : s + seq_len + 1] for s in pick])
        m = torch.stack([self.mask[s : s + seq_len + 1] for s in pick])
        return x, m


def lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


class Log:
    """Appends timestamped lines to the stage's log file and echoes them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.t0 = time.time()

    def __call__(self, msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')} +{time.time() - self.t0:7.1f}s] {msg}"
        print(line, flush=True)
        with self.path.open("a") as f:
            f.write(line + "\n")


def train_loop(
    model: Any,
    stream: TokenStream,
    cfg: TrainConfig,
    steps: int,
    peak_lr: float,
    state_path: Path,
    log: Log,
    tag: str,
    probe: Any = None,
) -> None:
    """AdamW on packed windows for `steps` steps; resumes from state_path and saves to it periodically."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed + hash_tag(tag))
    step = 0
    if state_path.exists():
        st = torch.load(state_path, weights_only=False)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        gen.set_state(st["gen"])
        step = st["step"]
        log(f"{tag}: resumed at step {step} from {state_path}")
    model.train()
    t_last, loss_acc, n_acc = time.time(), 0.0, 0
    save_every = max(50, steps // 10)
    while step < steps:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, min(cfg.warmup, steps // 5), peak_lr)
        x, m = stream.batch(gen, cfg.batch, cfg.seq_len)
        out = model(input_ids=x[:, :-1])
        per_token = torch.nn.functional.cross_entropy(
            out.logits.reshape(-1, out.logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none"
        )
        w = m[:, 1:].reshape(-1)
        loss = (per_token * w).sum() / w.sum().clamp(min=1.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        loss_acc += loss.item()
        n_acc += 1
        if step % 50 == 0 or step == steps:
            dt = (time.time() - t_last) / n_acc
            lr = opt.param_groups[0]["lr"]
            log(f"{tag}: step {step}/{steps} loss {loss_acc / n_acc:.4f} lr {lr:.2e} {dt:.3f}s/step")
            t_last, loss_acc, n_acc = time.time(), 0.0, 0
        if probe is not None and (step % max(250, steps // 8) == 0 or step == steps):
            model.eval()
            log(f"{tag}: step {step} probe {probe(model)}")
            model.train()
        if step % save_every == 0 or step == steps:
            buf = io.BytesIO()
            torch.save(
                {"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(), "step": step},
                buf,
            )
            atomic_write(state_path, buf.getvalue())
    model.eval()


def hash_tag(tag: str) -> int:
    """A stable small integer from a string (Python's hash() is salted per process)."""
    return sum((i + 1) * ord(c) for i, c in enumerate(tag)) % 100003


# ---------------------------------------------------------------- sampling and the oracle


def judge(problem: dict[str, Any], prompt: str, completion: str) -> Verdict:
    """The project's oracle (scoring.verifiers) on a completion: the reward of RFT.

    The problem's own verifier when it has one (suite items, new-satellite look-ups), else its family's.
    """
    item = SuiteItem(
        item_id=str(problem.get("problem_id", "train")),
        family=problem["family"],
        question=problem["question"],
        answer=problem["answer"],
        verifier=problem["verifier"] if "verifier" in problem else train_verifier(problem),
    )
    return verifiers.score(item, verifiers.scored_text(prompt, completion))


def train_verifier(problem: dict[str, Any]) -> dict[str, Any]:
    """Verifier of a training problem, the same rule make_world gives the suite family."""
    from demo.make_world import EXACT_NUMBER, PHYSICS_NUMBER

    return EXACT_NUMBER if problem["family"] == "raise" else PHYSICS_NUMBER


def sample(
    model: Any, prompts: Sequence[str], k: int, max_new: int, seed: int, temperature: float = 1.0
) -> list[list[str]]:
    """k completions per prompt (temperature sampling, or greedy at 0), batched with left padding."""
    import torch

    from demo.charmodel import hf_tokenizer

    tok = hf_tokenizer()
    tok.padding_side = "left"
    outs: list[list[str]] = [[] for _ in prompts]
    flat = [(i, p) for i, p in enumerate(prompts) for _ in range(k)]
    torch.manual_seed(seed)
    bs = 256
    with torch.no_grad():
        for b in range(0, len(flat), bs):
            chunk = flat[b : b + bs]
            enc = tok([p for _, p in chunk], return_tensors="pt", padding=True)
            kw: dict[str, Any] = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0}
            if temperature == 0:
                kw = {"do_sample": False}
            gen = model.generate(**enc, max_new_tokens=max_new, pad_token_id=tok.pad_token_id, **kw)
            texts = tok.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            for (i, _), t in zip(chunk, texts, strict=True):
                outs[i].append(t)
    return outs


def make_probe(problems: list[dict[str, Any]], rng: random.Random) -> Any:
    """Greedy accuracy on 64 plain raise and 64 plain compute training problems (a progress signal only)."""
    raise_p = rng.sample([p for p in problems if p["family"] == "raise"], 64)
    comp_p = rng.sample([p for p in problems if p["family"] == "compute"], 64)

    def probe(model: Any) -> str:
        res = []
        for name, ps in (("raise", raise_p), ("compute", comp_p)):
            prompts = [build_prompt(p["question"]) for p in ps]
            outs = sample(model, prompts, 1, 12, 0, temperature=0)
            ok = sum(judge(p, q, o[0]).score == 1.0 for o, p, q in zip(outs, ps, prompts, strict=True))
            res.append(f"{name} {ok}/{len(ps)}")
        return ", ".join(res)

    return probe


# ---------------------------------------------------------------- stages


def load_world() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Training problems and the corpus text by doc id."""
    problems = load_jsonl(DEMO / "train_data" / "train_problems.jsonl")
    docs = {d["doc_id"]: d["text"] for d in load_jsonl(DEMO / "corpus" / "space-text.jsonl")}
    return problems, docs


def stage_base(cfg: TrainConfig, work: Path, out: Path, log: Log) -> None:
    """SFT from scratch on the mixture of formats."""
    import torch

    from demo.charmodel import new_model, save_checkpoint

    problems, docs = load_world()
    rng = random.Random(cfg.seed)
    t0 = time.time()
    texts = sft_transcripts(problems, docs, cfg.n_transcripts, rng, SKILLS_MIXTURE)
    stream = TokenStream(texts)
    log(
        f"base phase 1 (skills): {len(texts)} transcripts, {len(stream)} tokens, longest {stream.max_len}, "
        f"built in {time.time() - t0:.1f}s"
    )
    model = new_model(
        seed=cfg.seed, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads, intermediate=cfg.intermediate
    )
    log(f"base: {sum(p.numel() for p in model.parameters())} parameters, config {asdict(cfg)}")
    probe = make_probe(problems, random.Random(cfg.seed + 7))
    t1 = time.time()
    train_loop(model, stream, cfg, cfg.steps, cfg.lr, work / "base_state.pt", log, "base", probe)
    pairs = sft_transcripts(
        problems, docs, cfg.phase2_transcripts, random.Random(cfg.seed + 3), FORMATS_MIXTURE
    )
    stream2 = TokenStream(pairs)
    log(f"base phase 2 (formats): {len(pairs)} transcripts, {len(stream2)} tokens")
    train_loop(
        model, stream2, cfg, cfg.phase2_steps, cfg.phase2_lr, work / "base2_state.pt", log, "base2", probe
    )
    if cfg.phase3_steps > 0:
        pairs = sft_transcripts(
            problems, docs, cfg.phase3_transcripts, random.Random(cfg.seed + 4), TOOLS_MIXTURE
        )
        stream3 = TokenStream(pairs)
        log(f"base phase 3 (tool calls): {len(pairs)} transcripts, {len(stream3)} tokens")
        train_loop(
            model, stream3, cfg, cfg.phase3_steps, cfg.phase3_lr, work / "base3_state.pt", log, "base3", probe
        )
    wall = time.time() - t1
    log(f"base: training loop took {wall:.0f}s this session")
    save_checkpoint(
        model, out, {"stage": "base", "config": asdict(cfg), "loop_seconds_last_session": round(wall)}
    )
    torch.save(model.state_dict(), work / "base_final.pt")
    log(f"base: saved {out}")


def stage_trained(
    cfg: TrainConfig, work: Path, base_dir: Path, out: Path, log: Log, iteration_out: str | None = None
) -> None:
    """Expert iteration from the base checkpoint on plain raise and compute problems.

    iteration_out: a path template with {step}; the model after every iteration but the last is saved there
    as a checkpoint of its own (a point of the training trajectory).
    """
    from transformers import LlamaForCausalLM

    from demo.charmodel import save_checkpoint

    def save_iteration(it: int) -> None:
        if iteration_out is None or it == cfg.rft_iterations - 1:
            return
        step = (it + 1) * cfg.rft_steps
        where = Path(iteration_out.format(step=step))
        meta = {"stage": "trained", "config": asdict(cfg), "base": str(base_dir), "step": step}
        save_checkpoint(model, where, meta)
        log(f"trained: iteration {it} (step {step}) saved {where}")

    problems, docs = load_world()
    rng = random.Random(cfg.seed + 1)
    model = LlamaForCausalLM.from_pretrained(base_dir, dtype="float32")
    model.eval()
    replay = sft_transcripts(problems, docs, 10000, random.Random(cfg.seed + 2), FORMATS_MIXTURE)
    plain = [p for p in problems if p["family"] in ("raise", "compute")]
    rng.shuffle(plain)
    probe = make_probe(problems, random.Random(cfg.seed + 7))
    log(f"trained: from {base_dir}; probe {probe(model)}")
    t_all = time.time()
    for it in range(cfg.rft_iterations):
        state_path = work / f"rft{it}_state.pt"
        kept_path = work / f"rft{it}_kept.json"
        done_path = work / f"rft{it}_done.pt"
        if done_path.exists():
            import torch

            model.load_state_dict(torch.load(done_path))
            log(f"trained: iteration {it} already done, loaded {done_path}")
            save_iteration(it)
            continue
        if kept_path.exists():
            kept = json.loads(kept_path.read_text())
        else:
            batch = plain[it * cfg.rft_problems : (it + 1) * cfg.rft_problems]
            t0 = time.time()
            prompts = [build_prompt(p["question"]) for p in batch]
            outs = sample(model, prompts, cfg.rft_k, 12, cfg.seed + 100 + it)
            kept, n_ok, by_fam = [], 0, {}
            coin = random.Random(cfg.seed + 200 + it)
            for p, prompt, comps in zip(batch, prompts, outs, strict=True):
                verdicts = {c: judge(p, prompt, c) for c in comps}
                if cfg.reward == "oracle":
                    good = sorted(c for c, v in verdicts.items() if v.score == 1.0)
                else:
                    # The placebo ignores correctness; a completion must still have an answer to be kept.
                    drawn = [c for c in sorted(verdicts) if coin.random() < cfg.random_accept]
                    good = [c for c in drawn if verdicts[c].answer is not None]
                n_right = sum(verdicts[c].score == 1.0 for c in comps)
                n_ok += n_right
                f = by_fam.setdefault(p["family"], [0, 0])
                f[0] += n_right
                f[1] += len(comps)
                # The kept completion is re-ended with exactly one newline; EOS comes from the stream.
                kept += [[prompt, f" {verdicts[c].answer}\n"] for c in good[: cfg.rft_keep_per_problem]]
            kept_path.write_text(json.dumps(kept))
            log(
                f"trained: iteration {it}: sampled {len(batch)}x{cfg.rft_k} in {time.time() - t0:.0f}s, "
                f"accuracy at T=1 {n_ok / (len(batch) * cfg.rft_k):.3f} "
                + " ".join(f"{f} {a}/{b}" for f, (a, b) in sorted(by_fam.items()))
                + f", kept {len(kept)} ({cfg.reward} reward)"
            )
        import torch

        if not kept:
            log(f"trained: iteration {it} kept nothing; no update this iteration")
            torch.save(model.state_dict(), done_path)
            continue
        n_replay = int(len(kept) * cfg.rft_replay / (1 - cfg.rft_replay))
        replayed = random.Random(cfg.seed + 10 + it).sample(replay, min(n_replay, len(replay)))
        mix = [(k[0], k[1]) for k in kept] + replayed
        random.Random(cfg.seed + 20 + it).shuffle(mix)
        stream = TokenStream(mix)
        train_loop(model, stream, cfg, cfg.rft_steps, cfg.rft_lr, state_path, log, f"rft{it}", probe)
        torch.save(model.state_dict(), done_path)
        save_iteration(it)
    wall = time.time() - t_all
    log(f"trained: RFT took {wall:.0f}s this session")
    save_checkpoint(model, out, {"stage": "trained", "config": asdict(cfg), "base": str(base_dir)})
    log(f"trained: saved {out}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; every TrainConfig field is an option."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=("base", "trained"), required=True, help="which checkpoint to train")
    ap.add_argument("--out", default=None, help="checkpoint directory (default demo/models/<stage>)")
    ap.add_argument(
        "--base", default=str(DEMO / "models" / "base"), help="base checkpoint for --stage trained"
    )
    ap.add_argument(
        "--work-dir", default=str(DEMO / "models" / ".work"), help="resumable state (not committed)"
    )
    ap.add_argument("--log", default=None, help="log file (default demo/models/train_log_<stage>.txt)")
    ap.add_argument("--fresh", action="store_true", help="ignore saved state in --work-dir and start over")
    ap.add_argument(
        "--iteration-out",
        default=None,
        help="--stage trained: save the model after every RFT iteration but the last to this path, {step} "
        "replaced by the steps so far (demo/models/step-{step}: a mid-training checkpoint)",
    )
    for name, default in asdict(TrainConfig(stage="base")).items():
        if name != "stage":
            ap.add_argument(
                f"--{name.replace('_', '-')}", type=type(default), default=default, help=f"default {default}"
            )
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    import torch

    args = parse_args(argv)
    cfg = TrainConfig(
        **{k: getattr(args, k) for k in asdict(TrainConfig(stage="base")) if k != "stage"}, stage=args.stage
    )
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    if cfg.reward not in ("oracle", "random"):
        print(f"demo.train: --reward {cfg.reward!r}: use oracle or random (the placebo)", file=sys.stderr)
        return 2
    out = Path(args.out or DEMO / "models" / args.stage)
    # Per output, not per stage: a placebo run (--out demo/models/placebo) must not resume the trained run.
    work = Path(args.work_dir) / out.name
    if args.fresh and work.exists():
        for f in work.iterdir():
            f.unlink()
    work.mkdir(parents=True, exist_ok=True)
    log = Log(Path(args.log or DEMO / "models" / f"train_log_{args.stage}.txt"))
    log(f"start {args.stage}: torch {torch.__version__}, threads {cfg.threads}, seed {cfg.seed}")
    if args.stage == "base":
        stage_base(cfg, work, out, log)
    else:
        base = Path(args.base)
        if not (base / "config.json").exists():
            print(
                f"demo.train: no base checkpoint at {base}/config.json; run --stage base first",
                file=sys.stderr,
            )
            return 2
        stage_trained(cfg, work, base, out, log, args.iteration_out)
    log(f"done {args.stage} in {time.time() - log.t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
