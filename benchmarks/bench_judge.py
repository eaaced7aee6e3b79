"""The judge stage on CHAMP's hand-labelled responses: three judges, each audited and read against people.

The judges: a perfect one, one that always says equivalent, and (--vllm CHECKPOINT) a real checkpoint served
by vLLM, each audited, each run twice (the rerun must make no call), each read against the people's labels.

    python -m benchmarks.bench_judge --out /tmp/judge-bench [--vllm examples/smollm2/models/base]
        [--ask wrong] [--labelled 40]

The arms are GPT-4 and GPT-4 Turbo on CHAMP's 79 numeric problems (benchmarks/judge_champ.py), scored by
this project's rules. The perfect judge is a scripted OpenAI-compatible server answering from the hand
labels; the lenient one always answers `VERDICT: EQUIVALENT`. People's labels: the hand labels of
--labelled items (both arms), the rest left to the predictions (PPI). Printed per judge: calls and wall
time of the first run and of the rerun, each arm's audit, the contrast's headline and why, and the PPI
delta.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.judge_champ import (
    ARMS,
    CHAMP_TEXT_LABELS,
    TEXT_ARM,
    champ_rows,
    shown_labels,
    write_champ_text_world,
    write_champ_world,
)
from benchmarks.scripted_judge import ScriptedJudge, policy
from contract.judge import JudgeSettings


def _one(
    name: str, cfg: JudgeSettings, world: dict[str, Path], out: Path, labels: Path, arms: list[str]
) -> dict[str, Any]:
    from analysis.commands import judge_labels, judge_report
    from pipeline import judge as stage

    logs, judged, report = world[arms[0]].parent, out / f"judged-{name}", out / f"report-{name}"
    runs = []
    for _ in range(2):
        t = time.perf_counter()
        summary = stage.run(logs, judged, arms, cfg)
        runs.append((summary["calls"], time.perf_counter() - t))
    common = ["--logs", str(logs), "--judged", str(judged), "--arms", *arms]
    argv = ["--logs", str(logs), "--judged", str(judged), "--out", str(report), "--arms", *arms]
    judge_report.main([*argv, "--params", "none", "--labels", str(labels)])
    judge_labels.main(["read", *common, "--labels", str(labels), "--out", str(report)])
    return {
        "runs": runs,
        "report": json.loads((report / "judge_report.json").read_text()),
        "labels": json.loads((report / "labels_report.json").read_text()),
    }


def _with_undecided(res: dict[str, Any], world: dict[str, Path], out: Path, name: str) -> dict[str, Any]:
    """The judge's agreement with the people on the samples the rules left undecided, per arm (all labels)."""
    from analysis.commands.judge_labels import read_labels
    from contract.evallog import load

    labels = read_labels(world["labels"])
    res["undecided"] = {}
    for arm in res["report"]["arms"]:
        pairs = [
            (s.judge.verdict, labels[(arm, it.item_id, s.index)])
            for it in load(out / f"judged-{name}" / f"{arm}.json").items
            for s in it.samples or []
            if s.judge is not None and s.judge.rule == "undecided" and (arm, it.item_id, s.index) in labels
        ]
        agree = sum((v == "equivalent") == bool(lab) and v != "no_verdict" for v, lab in pairs)
        nv = sum(v == "no_verdict" for v, _ in pairs)
        res["undecided"][arm] = f"judge agrees with people on {agree}/{len(pairs)} ({nv} no verdict)"
    return res


def prose_reading(reply: str | None) -> int:
    """A lenient reading of a reply in prose, for the bench's diagnosis only (the stage never reads
    prose): 1 for "... is equal/equivalent ...", 0 for "not equal/equivalent", -1 otherwise."""
    import re

    text = (reply or "").lower()
    if re.search(r"\b(not|n't)\s+(equal|equivalent)", text):
        return 0
    return 1 if re.search(r"\b(is|are)\s+(equal|equivalent)", text) else -1


def prose_agreement(world: dict[str, Path], out: Path, name: str) -> str:
    """How the judge's replies, read leniently, agree with the people on the labelled samples it was asked."""
    from analysis.commands.judge_labels import read_labels
    from contract.evallog import load

    labels = read_labels(world["labels"])
    pairs = [
        (prose_reading(s.judge.reply), labels[(arm.stem, it.item_id, s.index)])
        for arm in sorted((out / f"judged-{name}").glob("*.json"))
        if arm.name != "judge.json"
        for it in load(arm).items
        for s in it.samples or []
        if s.judge is not None and (arm.stem, it.item_id, s.index) in labels
    ]
    read = [(v, lab) for v, lab in pairs if v >= 0]
    agree = sum(v == lab for v, lab in read)
    said = sum(v for v, _ in read)
    return (
        f"replies read leniently as prose (the stage does not): {len(read)}/{len(pairs)} readable, "
        f"{said} say equal; agreement with people {agree}/{len(read)}"
    )


def _rate(x: dict[str, Any]) -> str:
    return "-" if x["value"] is None else f"{x['value']:.3f} [{x['ci'][0]:.3f}, {x['ci'][1]:.3f}]"


def _print(name: str, res: dict[str, Any]) -> None:
    (c1, t1), (c2, t2) = res["runs"]
    print(f"\n== {name}: first run {c1} calls, {t1:.1f} s; rerun {c2} calls, {t2:.2f} s")
    for arm, a in res["report"]["arms"].items():
        au = a["audit"]
        r = {k: _rate(au[k]) for k in ("agreement", "sensitivity", "specificity", "no_verdict")}
        if a["people"] is not None:
            pe = a["people"]
            print(
                f"  {arm:<12} against people on {pe['audited']} labelled asked samples: agreement "
                f"{_rate(pe['agreement'])}, sensitivity {_rate(pe['sensitivity'])}, specificity "
                f"{_rate(pe['specificity'])}; fitness decided by: {a['reference']}"
            )
        kappa = "-" if au["kappa"] is None else f"{au['kappa']:.3f}"
        print(
            f"  {arm:<12} audited {au['audited']}: agreement {r['agreement']}, sensitivity "
            f"{r['sensitivity']}, specificity {r['specificity']}, kappa {kappa}, no verdict "
            f"{r['no_verdict']}, judge decided "
            f"{a['judge_decided']}/{a['samples']}, fit: {'no' if a['reasons'] else 'yes'}"
        )
        lab = res["labels"]["arms"][arm]
        print(
            f"  {'':<12} against {lab['labelled']} people's labels: rules {lab['rules']['agree']}/"
            f"{lab['rules']['n']}, judge {lab['judge']['agree']}/{lab['judge']['n']}, final "
            f"{lab['final']['agree']}/{lab['final']['n']}; PPI accuracy {lab['ppi']['estimate']:.3f} "
            f"[{lab['ppi']['ci'][0]:.3f}, {lab['ppi']['ci'][1]:.3f}] (labels alone "
            f"{lab['ppi']['classical']:.3f})"
        )
        if "undecided" in res:
            print(f"  {'':<12} on the samples the rules left undecided: {res['undecided'][arm]}")
    for c in res["report"]["contrasts"]:
        ways = "; ".join(
            f"{w} {c[w]['delta']:+.3f}" if c[w]["delta"] is not None else f"{w} -"
            for w in ("rule_decided", "with_judge", "corrected")
        )
        print(f"  {c['post']} - {c['pre']}: {ways}; headline {c['headline']}")
        for reason in c["reasons"]:
            print(f"    kept out: {reason}")
    for d, v in res["labels"]["deltas"].items():
        alone = f"{v['classical']:+.3f} [{v['classical_ci'][0]:+.3f}, {v['classical_ci'][1]:+.3f}]"
        print(
            f"  PPI {d}: {v['estimate']:+.3f} [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}] (labels alone {alone})"
        )


def main(argv: list[str] | None = None) -> int:
    """Run every judge and print the figures."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_judge", description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--vllm", help="a local checkpoint to serve with vLLM as a third judge")
    ap.add_argument("--vllm-revision", help="the checkpoint's pinned revision (default: its folder's name)")
    ap.add_argument(
        "--world", default="numeric", choices=["numeric", "text"],
        help="numeric: CHAMP's numeric answers, two paired arms; text: its non-numeric ones, one arm",
    )  # fmt: skip
    ap.add_argument(
        "--ask", default=None, choices=["undecided", "wrong", "all"], help="numeric: wrong; text: undecided"
    )
    ap.add_argument("--labelled", type=int, default=40, help="items whose hand labels the people give")
    args = ap.parse_args(argv)
    text = args.world == "text"
    world = write_champ_text_world(args.out) if text else write_champ_world(args.out)
    arms = [TEXT_ARM] if text else list(ARMS.values())
    rows = champ_rows(CHAMP_TEXT_LABELS) if text else champ_rows()
    lines = world["labels"].read_text().splitlines()
    items = sorted({x.rsplit(",", 2)[0].split(",", 1)[1] for x in lines[1:]})[: args.labelled]
    labels = args.out / "people.csv"
    keep = [x for x in lines[1:] if x.rsplit(",", 2)[0].split(",", 1)[1] in items]
    labels.write_text("\n".join([lines[0], *keep]) + "\n")
    ask = args.ask or ("undecided" if text else "wrong")
    common = {"ask": ask, "audit_size": 100 if text else 200, "revision": "bench"}
    judges: list[tuple[str, Any]] = [
        ("perfect (hand labels)", policy("labels", shown_labels(rows, 800))),
        ("always equivalent", policy("equivalent")),
    ]
    for name, reply in judges:
        with ScriptedJudge(reply) as server:
            slug = name.split()[0]
            cfg = JudgeSettings(
                model=slug, base_url=server.url, cache=str(args.out / f"cache-{slug}.jsonl"), **common
            )
            _print(
                name, _with_undecided(_one(slug, cfg, world, args.out, labels, arms), world, args.out, slug)
            )
    if args.vllm:
        cfg = JudgeSettings(
            model=args.vllm, max_tokens=32, cache=str(args.out / "cache-vllm.jsonl"),
            vllm={"max_model_len": 2048},
            **(common | {"revision": args.vllm_revision or Path(args.vllm).name}),
        )  # fmt: skip
        res = _one("vllm", cfg, world, args.out, labels, arms)
        _print(f"vLLM {args.vllm}", _with_undecided(res, world, args.out, "vllm"))
        print("  " + prose_agreement(world, args.out, "vllm"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
