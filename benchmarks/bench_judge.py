"""The judge stage on CHAMP's hand-labelled responses: a perfect judge, one that always says equivalent, and
(--vllm CHECKPOINT) a real checkpoint served by vLLM, each audited, each run twice (the rerun must make no
call), each read against the people's labels.

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

from benchmarks.judge_champ import ARMS, champ_rows, shown_labels, write_champ_world
from benchmarks.scripted_judge import ScriptedJudge, policy
from contract.judge import JudgeSettings


def _one(name: str, cfg: JudgeSettings, world: dict[str, Path], out: Path, labels: Path) -> dict[str, Any]:
    from analysis.commands import judge_labels, judge_report
    from pipeline import judge as stage

    arms = list(ARMS.values())
    logs, judged, report = world[arms[0]].parent, out / f"judged-{name}", out / f"report-{name}"
    runs = []
    for _ in range(2):
        t = time.perf_counter()
        summary = stage.run(logs, judged, arms, cfg)
        runs.append((summary["calls"], time.perf_counter() - t))
    common = ["--logs", str(logs), "--judged", str(judged), "--arms", *arms]
    judge_report.main(
        [
            "--logs",
            str(logs),
            "--judged",
            str(judged),
            "--out",
            str(report),
            "--arms",
            *arms,
            "--params",
            "none",
        ]
    )
    judge_labels.main(["read", *common, "--labels", str(labels), "--out", str(report)])
    return {
        "runs": runs,
        "report": json.loads((report / "judge_report.json").read_text()),
        "labels": json.loads((report / "labels_report.json").read_text()),
    }


def _rate(x: dict[str, Any]) -> str:
    return "-" if x["value"] is None else f"{x['value']:.3f} [{x['ci'][0]:.3f}, {x['ci'][1]:.3f}]"


def _print(name: str, res: dict[str, Any]) -> None:
    (c1, t1), (c2, t2) = res["runs"]
    print(f"\n== {name}: first run {c1} calls, {t1:.1f} s; rerun {c2} calls, {t2:.2f} s")
    for arm, a in res["report"]["arms"].items():
        au = a["audit"]
        r = {k: _rate(au[k]) for k in ("agreement", "sensitivity", "specificity", "no_verdict")}
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
            f"[{lab['ppi']['ci'][0]:.3f}, {lab['ppi']['ci'][1]:.3f}]"
        )
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
    ap.add_argument("--ask", default="wrong", choices=["undecided", "wrong", "all"])
    ap.add_argument("--labelled", type=int, default=40, help="items whose hand labels the people give")
    args = ap.parse_args(argv)
    world = write_champ_world(args.out)
    rows = champ_rows()
    items = sorted({r["problem_id"] for r in rows})[: args.labelled]
    lines = world["labels"].read_text().splitlines()
    labels = args.out / "people.csv"
    labels.write_text("\n".join([lines[0], *(x for x in lines[1:] if x.split(",")[1] in items)]) + "\n")
    common = {"ask": args.ask, "audit_size": 200, "revision": "bench"}
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
            _print(name, _one(slug, cfg, world, args.out, labels))
    if args.vllm:
        cfg = JudgeSettings(
            model=args.vllm, max_tokens=32, cache=str(args.out / "cache-vllm.jsonl"),
            vllm={"max_model_len": 2048},
            **(common | {"revision": args.vllm_revision or Path(args.vllm).name}),
        )  # fmt: skip
        _print(f"vLLM {args.vllm}", _one("vllm", cfg, world, args.out, labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
