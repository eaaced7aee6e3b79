"""The pre/post delta report: did training move the score, by how much, and what does it claim?

    python -m analysis.delta --pre evallogs/base.json --post evallogs/trained.json --out reports/delta \\
        [--params params.yaml]

writes delta_report.json (the numbers), delta_report.md and passk_curve.png (renderings of it). The two
logs must share the matched protocol and item set, or the command prints one line and exits 2 without
writing. Every statistic comes from analysis.evalstats; this module aligns, calls and assembles.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis import evalstats as es
from analysis import render, truncation
from analysis.align import (
    EXIT_REFUSED,
    ArmData,
    Refusal,
    Settings,
    arm_arrays,
    check_matched,
    dump_json,
    item_order,
    load_logs,
    measured_line,
    out_folder,
    read_settings,
    settings_dict,
    write_outputs,
)
from analysis.drawing import Drawing, draw_here
from analysis.mdtext import p_text
from contract.evallog import EvalLog, collector_paused

NO_FAMILY = "(none)"


def mean_contrast(ref: np.ndarray, arm: np.ndarray, settings: Settings, key: str = "") -> dict[str, Any]:
    """Paired delta of per-item scores: estimate, BCa item-level CI, sign-flip p (shared by both reports)."""
    d = arm - ref
    ci = es.paired_bootstrap_ci(
        ref, arm, settings.n_boot, es.rng_for(settings.seed, f"item{key}"), alpha=settings.alpha
    )
    flip = es.sign_flip_test(d, settings.n_perm, es.rng_for(settings.seed, f"perm{key}"))
    return {
        "n_items": int(d.size),
        "mean_ref": float(ref.mean()),
        "mean_arm": float(arm.mean()),
        "delta": float(d.mean()),
        "ci95": ci.as_list(),
        "ci95_method": ci.method,
        "p_value": float(flip.p[0]),
        "perm_exact": flip.exact,
        "perm_n": flip.n_perm,
    }


def family_groups(families: list[str | None]) -> dict[str, np.ndarray]:
    """Item indices per family (sorted by name); empty when no item carries a family."""
    if all(f is None for f in families):
        return {}
    labels = np.array([NO_FAMILY if f is None else f for f in families], dtype=object)
    return {name: np.flatnonzero(labels == name) for name in sorted(set(labels))}


def family_rows(ref: ArmData, arm: ArmData, settings: Settings) -> list[dict[str, Any]]:
    """Delta, CI and p per item family (before multiplicity correction)."""
    rows = []
    for name, idx in family_groups(ref.families).items():
        row = mean_contrast(ref.item_mean[idx], arm.item_mean[idx], settings, key=f"/family/{name}")
        row["mean_pre"], row["mean_post"] = row.pop("mean_ref"), row.pop("mean_arm")
        rows.append({"family": name, **row})
    return rows


def sample_tokens(log: EvalLog, order: list[str]) -> np.ndarray | None:
    """(n_items, k) generated tokens of each sample in the given item order; None when an item lacks them."""
    by_id = {it.item_id: it for it in log.items}
    if any(by_id[i].gen_tokens is None for i in order):
        return None
    return np.array([by_id[i].gen_tokens for i in order], dtype=np.float64).reshape(len(order), -1)


def too_few_items(n_items: int, settings: Settings) -> str | None:
    """Why no claim may be made from this many items (no sign-flip p can reach alpha), or None."""
    floor = es.sign_flip_min_p(n_items, settings.n_perm)
    if floor <= settings.alpha:
        return None
    return (
        f"too few items: {n_items} paired items cannot reach p < {settings.alpha} with a sign-flip test "
        f"(its smallest p is {floor:.3g}); no claim is made, whatever the intervals show."
    )


def claim(passk: es.PassAtK, n_items: int, settings: Settings) -> tuple[str, str]:
    """EXPANSION / SHARPENING / REGRESSION / no material shift, decided by the pass@k intervals.

    With one sample per item pass@1 is the only evidence, which cannot separate sharpening from
    expansion: a shift beyond its interval is then UNDETERMINED rather than either. With too few items
    to reach alpha the bootstrap intervals shrink to points and prove nothing: TOO FEW ITEMS.
    """
    if (why := too_few_items(n_items, settings)) is not None:
        return "TOO FEW ITEMS", why
    k_max = passk.ks[-1]
    top, one = passk.delta_ci[-1], passk.delta_ci[0]
    d_top, d_one = passk.delta[-1], passk.delta[0]
    if k_max == 1:
        if one.excludes_zero():
            return "UNDETERMINED", (
                f"pass@1 moved by {d_one:+.4f} (CI [{one.lo:+.4f}, {one.hi:+.4f}]), but with one sample per "
                "item sharpening and expansion cannot be told apart; rerun with more samples per item."
            )
        return (
            "no material shift",
            f"no shift detected: pass@1 delta {d_one:+.4f}, CI [{one.lo:+.4f}, {one.hi:+.4f}] includes 0.",
        )
    if top.lo > 0:
        return "EXPANSION", (
            f"pass@{k_max} rose by {d_top:+.4f} with CI [{top.lo:+.4f}, {top.hi:+.4f}] above zero: the "
            "trained model solves items that were out of reach at this sampling budget before."
        )
    if one.lo > 0:
        return "SHARPENING", (
            f"pass@1 rose by {d_one:+.4f} (CI [{one.lo:+.4f}, {one.hi:+.4f}]) while no change of "
            f"pass@{k_max} was detected ({d_top:+.4f}, CI [{top.lo:+.4f}, {top.hi:+.4f}] includes 0): more "
            "reliable on items it could already solve; capability expansion not detected at this suite size."
        )
    if one.hi < 0:
        return "REGRESSION", (
            f"pass@1 fell by {d_one:+.4f} (CI [{one.lo:+.4f}, {one.hi:+.4f}] below zero) and pass@{k_max} "
            "did not rise."
        )
    return "no material shift", (
        f"no shift detected: neither pass@1 ({d_one:+.4f}, CI [{one.lo:+.4f}, {one.hi:+.4f}]) nor "
        f"pass@{k_max} ({d_top:+.4f}, CI [{top.lo:+.4f}, {top.hi:+.4f}]) moved beyond its interval."
    )


def _interval(ci: es.Interval) -> list[float]:
    return ci.as_list()


def build(
    pre_path: str,
    pre: EvalLog,
    post_path: str,
    post: EvalLog,
    settings: Settings,
    on_pass_at_k: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The delta report as a JSON-ready dict (a pure function of the two logs and the settings).

    on_pass_at_k, when given, is called once the pass@k rows and the claim are known with the part of
    the report the pass@k figure draws (so that it can be drawn while the rest is computed).
    """
    matched = check_matched(pre_path, pre, post_path, post, distinct_models=True)
    order = item_order(pre)
    a, b = arm_arrays(pre, order), arm_arrays(post, order)
    d = b.item_mean - a.item_mean
    seed, alpha = settings.seed, settings.alpha

    # The headline's draw is the arm comparison's for the same contrast (same interval in both reports);
    # the cluster bootstrap's mean difference is the same statistic, so it reuses the draw.
    theta_b = es.bootstrap_distribution(d, es.weighted_means, settings.n_boot, es.rng_for(seed, "item"))
    bca_lo, bca_hi, bca_method = es.bca_interval_means(d, theta_b, alpha)
    pct_lo, pct_hi = es.percentile_interval(theta_b, alpha)
    flip = es.sign_flip_test(d, settings.n_perm, es.rng_for(seed, "perm"))
    dz = es.cohens_dz(d, alpha)
    mde = es.mde_paired(a.scores, b.scores, alpha)
    flips = es.mcnemar_from_verdicts(es.majority_verdicts(a.item_mean), es.majority_verdicts(b.item_mean))

    ks = es.k_grid(pre.n_samples)
    passk = es.pass_at_k_bootstrap(
        a.scores, b.scores, settings.n_boot, es.rng_for(seed, "cluster"), alpha=alpha, ks=ks,
        mean_draws=theta_b,
    )  # fmt: skip
    headline = es.Interval(float(bca_lo[0]), float(bca_hi[0]), bca_method[0])
    delta_methods = ["percentile (cluster)"] * len(ks)
    if np.isin(a.scores, (0.0, 1.0)).all() and np.isin(b.scores, (0.0, 1.0)).all():
        # With 0/1 scores pass@1 of an item is its mean score: one number, so it carries one interval,
        # the headline's, and the claim line quotes that same interval.
        passk = dataclasses.replace(passk, delta_ci=[headline, *passk.delta_ci[1:]])
        delta_methods[0] = f"{headline.method}, item-level (the headline interval)"
    verdict, detail = claim(passk, len(order), settings)
    passk_rows = [
        {
            "k": k,
            "pre": float(passk.pre[i]),
            "post": float(passk.post[i]),
            "delta": float(passk.delta[i]),
            "pre_ci95": _interval(passk.pre_ci[i]),
            "post_ci95": _interval(passk.post_ci[i]),
            "delta_ci95": _interval(passk.delta_ci[i]),
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
    noise = es.aa_noise_floor(a.scores, settings.n_boot, es.rng_for(seed, "noise"), alpha=alpha)
    tokens_a, tokens_b = sample_tokens(pre, order), sample_tokens(post, order)
    curve = []
    if tokens_a is not None and tokens_b is not None:
        points = es.budget_curve(
            a.scores, b.scores, tokens_a, tokens_b, es.budget_grid(pre.max_tokens), settings.n_boot,
            es.rng_for(seed, "budget-curve"), alpha=alpha,
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

    families = family_rows(a, b, settings)
    for row, q in zip(families, es.bh_qvalues([r["p_value"] for r in families]), strict=True):
        row["q_value"] = float(q)
        row["significant"] = bool(q <= settings.fdr and (row["ci95"][0] > 0 or row["ci95"][1] < 0))
    notes = []
    if any(f is not None for f in a.families) and a.families != b.families:
        notes.append("family labels differ between the logs; families are taken from the pre log")
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
        "mean_pre": float(a.item_mean.mean()),
        "mean_post": float(b.item_mean.mean()),
        "delta_mean": float(d.mean()),
        "delta_ci95": [float(bca_lo[0]), float(bca_hi[0])],
        "delta_ci95_method": bca_method[0],
        "delta_ci95_percentile": [float(pct_lo[0]), float(pct_hi[0])],
        "delta_ci95_cluster": passk.mean_delta_ci.as_list(),
        "delta_ci95_cluster_method": "percentile, cluster bootstrap (items resampled with their k samples; "
        "the headline's draw)",
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
        "perm_p": float(flip.p[0]),
        "perm_exact": flip.exact,
        "perm_n": flip.n_perm,
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
        "truncation": truncation.section({"pre": pre, "post": post}, pre.max_tokens),
        "families": families,
        "settings": settings_dict(settings),
        "notes": notes,
    }


def outputs(report: dict[str, Any], figure: Callable[[], bytes] | None = None) -> dict[str, bytes]:
    """The files of a delta report: delta_report.json and its renderings (markdown, pass@k figure).

    figure: the pass@k figure already under way (Drawing.submit), else it is drawn here.
    """
    figure = figure or (lambda: draw_here("passk_figure", report))
    return {
        "delta_report.json": dump_json(report),
        "delta_report.md": render.delta_markdown(report).encode(),
        "passk_curve.png": figure(),
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
        write_outputs(Path(args.out), outputs(report, figure[0]))
    print(
        f"{report['claim']}: delta {report['delta_mean']:+.4f} CI {report['delta_ci95']} "
        f"perm p {p_text(report['perm_p'], report['perm_n'], report['perm_exact'])} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
