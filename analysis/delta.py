"""The pre/post delta report: did training move the score, by how much, and what does it claim?

    python -m analysis.delta --pre evallogs/base.json --post evallogs/trained.json --out reports/delta \\
        [--params params.yaml]

writes delta_report.json (the numbers), delta_report.md and passk_curve.png (renderings of it). The two
logs must share the matched protocol and item set, or the command prints one line and exits 2 without
writing. Every statistic comes from analysis.contrasts and the estimator modules it shares with the other
reports; this module aligns, calls and assembles.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis import answering, calibration, contrasts, crossover, render, truncation
from analysis.align import (
    EXIT_REFUSED,
    Refusal,
    Settings,
    arm_arrays,
    check_matched,
    item_order,
    load_logs,
    measured_line,
    out_folder,
    read_settings,
    settings_dict,
    write_outputs,
)
from analysis.budget import budget_curve, budget_grid
from analysis.drawing import Drawing, draw_here
from analysis.effect_size import cohens_dz
from analysis.mcnemar import majority_verdicts, mcnemar_from_verdicts
from analysis.mdtext import p_text
from analysis.noise_floor import aa_noise_floor
from analysis.power_planning import mde_paired
from analysis.prompting import prompt_line
from analysis.report_models import DeltaReport, report_json
from analysis.resampling import Interval, rng_for
from contract.evallog import EvalLog, collector_paused


def sample_tokens(log: EvalLog, order: list[str]) -> np.ndarray | None:
    """(n_items, k) generated tokens of each sample in the given item order; None when an item lacks them."""
    by_id = {it.item_id: it for it in log.items}
    if any(by_id[i].gen_tokens is None for i in order):
        return None
    return np.array([by_id[i].gen_tokens for i in order], dtype=np.float64).reshape(len(order), -1)


def build(
    pre_path: str,
    pre: EvalLog,
    post_path: str,
    post: EvalLog,
    settings: Settings,
    on_pass_at_k: Callable[[dict[str, Any]], None] | None = None,
    distinct_models: bool = True,
    allow: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The delta report as a JSON-ready dict (a pure function of the two logs and the settings).

    on_pass_at_k, when given, is called once the pass@k rows and the claim are known with the part of
    the report the pass@k figure draws (so that it can be drawn while the rest is computed).
    distinct_models=False, allow: two logs of one model (analysis.compare labels that comparison).
    """
    matched = check_matched(pre_path, pre, post_path, post, distinct_models=distinct_models, allow=allow)
    order = item_order(pre)
    a, b = arm_arrays(pre, order), arm_arrays(post, order)
    d = b.item_mean - a.item_mean
    seed, alpha = settings.seed, settings.alpha

    # The primary contrast, decided once (analysis.contrasts): the arm comparison and the trajectory
    # compute the same draws for trained vs base, so every report prints the same interval and verdict.
    primary = contrasts.primary_contrast(a.scores, b.scores, settings)
    head = primary.mean
    passk = primary.passk
    dz = cohens_dz(d, alpha)
    mde = mde_paired(a.scores, b.scores, alpha)
    flips = mcnemar_from_verdicts(majority_verdicts(a.item_mean), majority_verdicts(b.item_mean))
    ks = passk.ks
    headline = Interval(head["ci95"][0], head["ci95"][1], head["ci95_method"])
    delta_methods = ["percentile (cluster)"] * len(ks)
    if passk.delta_ci[0].method != "percentile (cluster)":
        delta_methods[0] = f"{headline.method}, item-level (the headline interval)"
    verdict, detail = contrasts.claim(primary, settings)
    # The same generations under the lenient reader: a shift it does not find is the answer's format.
    pre_name, post_name = pre.arm or Path(pre_path).stem, post.arm or Path(post_path).stem
    if pre_name == post_name:
        pre_name, post_name = "pre", "post"
    readers = {pre_name: answering.reader_arrays(pre, order), post_name: answering.reader_arrays(post, order)}
    lenient = answering.primary_part(primary, verdict, readers[pre_name], readers[post_name], settings)
    if lenient is not None and lenient["call"] is not None:
        verdict, detail = lenient["call"], f"{lenient['detail']} Under the report's reader alone: {detail}"
    format_section = {
        "arms": [
            answering.arm_row(pre_name, a.scores, readers[pre_name], settings),
            answering.arm_row(post_name, b.scores, readers[post_name], settings),
        ],
        "contrast": lenient,
        "lenient_missing": answering.missing_lenient(readers),
    }
    passk_rows = [
        {
            "k": k,
            "pre": float(passk.pre[i]),
            "post": float(passk.post[i]),
            "delta": float(passk.delta[i]),
            "pre_ci95": passk.pre_ci[i].as_list(),
            "post_ci95": passk.post_ci[i].as_list(),
            "delta_ci95": passk.delta_ci[i].as_list(),
            "delta_ci95_method": delta_methods[i],
        }
        for i, k in enumerate(ks)
    ]
    if on_pass_at_k is not None:
        on_pass_at_k(
            {
                "pre_model": pre.model_name,
                "post_model": post.model_name,
                "claim": verdict,
                "pass_at_k": passk_rows,
                "settings": settings_dict(settings),
            }
        )
    method = contrasts.interval_method(len(order))
    noise = aa_noise_floor(a.scores, settings.n_boot, rng_for(seed, "noise"), alpha=alpha, method=method)
    tokens_a, tokens_b = sample_tokens(pre, order), sample_tokens(post, order)
    curve = []
    if tokens_a is not None and tokens_b is not None:
        points = budget_curve(
            a.scores, b.scores, tokens_a, tokens_b, budget_grid(pre.max_tokens), settings.n_boot,
            rng_for(seed, "budget-curve"), alpha=alpha, method=contrasts.budget_method(len(order)),
        )  # fmt: skip
        longest = max(tokens_a.max(), tokens_b.max())
        # Once every sample finishes within B the row is the headline delta: it carries the headline interval.
        for p in points:
            ci = headline if p.budget >= longest else p.ci
            method = f"{ci.method} (the headline interval)" if ci is headline else ci.method
            curve.append({"budget": p.budget, "pre": p.ref, "post": p.arm, "delta": p.delta,
                          "ci95": ci.as_list(), "ci95_method": method})  # fmt: skip
    rho = None
    if a.item_mean.std() > 0 and b.item_mean.std() > 0:
        rho = float(np.corrcoef(a.item_mean, b.item_mean)[0, 1])

    families = contrasts.family_rows(a, b, settings, a.families)
    for row in families:
        row["mean_pre"], row["mean_post"] = row.pop("mean_ref"), row.pop("mean_arm")
    pre_arm, post_arm = pre.arm or Path(pre_path).stem, post.arm or Path(post_path).stem
    if pre_arm == post_arm:
        pre_arm, post_arm = "pre", "post"
    calib = calibration.section({pre_arm: pre, post_arm: post}, order, pre_arm, settings)
    notes = [n for n in [contrasts.small_suite_note(len(order))] if n]
    notes += [n for n in [contrasts.greedy_note(pre.temperature, pre.n_samples)] if n]
    if any(f is not None for f in a.families) and a.families != b.families:
        notes.append("family labels differ between the logs; families are taken from the pre log")
    if format_section["lenient_missing"]:
        notes.append(answering.not_recorded(format_section["lenient_missing"], 2))
    return {
        "report": "delta",
        "suite": pre.suite,
        "suite_revision": pre.suite_revision,
        "n_items": len(order),
        "n_samples": pre.n_samples,
        "pre_model": pre.model_name,
        "post_model": post.model_name,
        "pre_log": str(pre_path),
        "post_log": str(post_path),
        # The arm names (the log's own, else the file's stem, as the arm comparison names them), which the
        # item browser's links use.
        "pre_arm": pre.arm or Path(pre_path).stem,
        "post_arm": post.arm or Path(post_path).stem,
        "driver": post.driver,
        "measured_at": post.measured_at,
        "pre_measured_at": pre.measured_at,
        "generated": measured_line(pre, post),
        "mde": {
            "mde": mde.mde,
            "power": mde.power,
            "alpha": mde.alpha,
            "n_items": mde.n_items,
            "k": mde.k,
            "between_item_var": mde.between_item_var,
            "within_item_var": mde.within_item_var,
            "by_k": {str(k): v for k, v in mde.by_k.items()},
            "reason": mde.reason,
        },
        "claim": verdict,
        "claim_detail": detail,
        "matched_protocol": matched,
        "prompting": {"pre": prompt_line(pre), "post": prompt_line(post)},
        "mean_pre": float(a.item_mean.mean()),
        "mean_post": float(b.item_mean.mean()),
        "delta_mean": float(d.mean()),
        "delta_ci95": head["ci95"],
        "delta_ci95_method": head["ci95_method"],
        "delta_ci95_percentile": primary.percentile,
        "delta_ci95_cluster": passk.mean_delta_ci.as_list(),
        "delta_ci95_cluster_method": (
            "percentile, cluster bootstrap (items resampled with their k samples; the headline's draw)"
            if passk.mean_delta_ci.method.startswith("percentile")
            else passk.mean_delta_ci.method
        ),
        "noise_floor": None
        if noise is None
        else {
            "arm": "pre",
            "delta": noise.delta,
            "ci95": noise.ci.as_list(),
            "ci95_method": noise.ci.method,
            "half": noise.half,
            "flip_share": noise.flip_share,
            "false_positive_rate": noise.false_positive_rate,
            "n_splits": noise.n_splits,
            "fpr_n_boot": noise.fpr_n_boot,
        },
        "perm_p": head["p_value"],
        "perm_exact": head["perm_exact"],
        "perm_n": head["perm_n"],
        # The verdict on the mean delta (pass@1): the claim's Holm family, the one rule of analysis.contrasts;
        # the arm comparison's trained row and the trajectory's carry this same verdict.
        "verdict": {
            "significant": head["significant"],
            "negligible": head["negligible"],
            "p_holm": head["q_value"],
            "decided_by": head["decided_by"],
            "top_k": primary.top_k,
            "top_k_perm_p": primary.top_p,
            "top_k_p_holm": primary.top_p_holm,
            "top_k_significant": primary.top_significant,
            "n_tests": primary.n_tests,
        },
        # Each arm's answered share and accuracy among answered; trained vs base under the lenient reader.
        "format": format_section,
        "cohens_dz": dz.dz if dz else None,
        "cohens_dz_ci95": [dz.lo, dz.hi] if dz else None,
        "pair_correlation_rho": rho,
        "flips_wrong_to_right": flips.b,
        "flips_right_to_wrong": flips.c,
        "mcnemar_chi2": flips.chi2,
        "mcnemar_chi2_p": flips.chi2_p,
        "mcnemar_p": flips.exact_p,
        "pass_at_k_pre": {str(k): float(v) for k, v in zip(ks, passk.pre, strict=True)},
        "pass_at_k_post": {str(k): float(v) for k, v in zip(ks, passk.post, strict=True)},
        "pass_at_k": passk_rows,
        "budget_curve": curve,
        "crossover": {
            k: v for k, v in crossover.crossover(primary.all_k, a.scores, b.scores).items() if k != "rows"
        },
        "truncation": truncation.section({"pre": pre, "post": post}, pre.max_tokens),
        "families": families,
        "calibration": calib,
        "settings": settings_dict(settings),
        "notes": notes,
    }


def outputs(
    report: dict[str, Any],
    figure: Callable[[], bytes] | None = None,
    reliability: Callable[[], bytes] | None = None,
) -> dict[str, bytes]:
    """The files of a delta report: delta_report.json and its renderings (markdown, pass@k figure, diagram).

    figure, reliability: the pass@k figure and the reliability diagram already under way (Drawing.submit),
    else each is drawn here.
    """
    figure = figure or (lambda: draw_here("passk_figure", report))
    diagram = reliability or (lambda: draw_here("reliability_figure", report))
    typed = DeltaReport.model_validate(report)
    return {
        "delta_report.json": report_json(typed),
        "delta_report.md": render.delta_markdown(typed).encode(),
        "passk_curve.png": figure(),
        "reliability.png": diagram(),
    }


# The logs live until the report is written and the run makes little cyclic garbage: no collection.
@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: build, render and write the delta report."""
    ap = argparse.ArgumentParser(prog="python -m analysis.delta", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pre", required=True, help="EvalLog of the baseline (M0)")
    ap.add_argument("--post", required=True, help="EvalLog of the trained model (M1)")
    ap.add_argument("--out", required=True, help="folder for delta_report.{json,md} and passk_curve.png")
    ap.add_argument(
        "--params", default=None, help="params.yaml with an `analysis` section (default: ./params.yaml)"
    )
    args = ap.parse_args(argv)
    # The figure's process loads matplotlib while the logs are read, and draws while the rest is computed.
    with Drawing() as drawing:
        figure: list[Callable[[], bytes]] = []

        def draw(part: dict[str, Any]) -> None:
            figure.append(drawing.submit("passk_figure", part))

        try:
            out_folder(args.out)
            settings = read_settings(args.params)
            # The report reads scores, budgets and families: the samples are validated, then dropped.
            pre, post = load_logs([args.pre, args.post], samples=False)
            report = build(args.pre, pre, args.post, post, settings, on_pass_at_k=draw)
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
        diagram = drawing.submit("reliability_figure", report)
        try:
            write_outputs(Path(args.out), outputs(report, figure[0], diagram))
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
    print(
        f"{report['claim']}: delta {report['delta_mean']:+.4f} CI {report['delta_ci95']} "
        f"perm p {p_text(report['perm_p'], report['perm_n'], report['perm_exact'])} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
