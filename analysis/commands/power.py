"""Power planning: how many items (and samples per item) a paired comparison needs to detect an effect.

    python -m analysis.commands.power --pilot LOG [--post LOG] --mde 0.02 [--alpha 0.05 --power 0.8]

prints, for k = 1, 2, 4, ... samples per item, the items needed for the given power at two-sided alpha
(the paired z formula n = (z_{1-alpha/2} + z_power)^2 (between + within / k) / mde^2). The variances come
from the pilot log: with --post, those of the measured paired differences (so the pilot pair's
correlation is in them); with the pilot alone, the pilot's variances with an assumed arm correlation
rho = 0.5; with no pilot at all, an assumed score p = 0.5 and rho = 0.5. Every assumption is printed.
Logs without any variance of the difference give no plan: the command says why and exits 2.
"""

from __future__ import annotations

import argparse
import sys

from analysis.estimators.power_planning import PowerPlan, power_plan
from analysis.reports.align import arm_arrays, check_matched, item_order, load_log
from analysis.reports.refusal import EXIT_REFUSED, Refusal


def plan_lines(plan: PowerPlan, pilot_k: int | None) -> list[str]:
    """The plan as printed lines: inputs, assumptions, then items needed per k."""
    rho = "n/a (an arm has no spread)" if plan.rho is None else f"{plan.rho:.3f}"
    lines = [
        f"power {plan.power:.0%} at two-sided alpha {plan.alpha} to detect a paired delta of {plan.mde}",
        f"between-item variance of the differences {plan.between_item_var:.4g}, within-item variance of one "
        f"sample's difference {plan.within_item_var:.4g}, arm correlation rho {rho}",
    ]
    if plan.assumed:
        lines.append(f"assumed (not measured): {plan.assumed}")
    lines.append("samples per item k | items needed | generations per arm (items x k)")
    for k, n in plan.items_by_k.items():
        mark = "  <- the pilot's k" if k == pilot_k else ""
        lines.append(f"{k:>18} | {n:>12,} | {n * k:,}{mark}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command line entry: read the pilot (and post) log, print the power plan."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.power", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--pilot", default=None, help="EvalLog of a pilot run of the reference arm (optional)")
    ap.add_argument("--post", default=None, help="EvalLog of the other arm on the pilot's items (optional)")
    ap.add_argument("--mde", type=float, required=True, help="the smallest delta worth detecting, e.g. 0.02")
    ap.add_argument("--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)")
    ap.add_argument("--power", type=float, default=0.8, help="power to reach (default 0.8)")
    args = ap.parse_args(argv)
    for name in ("alpha", "power"):
        if not 0 < getattr(args, name) < 1:
            print(f"power: --{name} {getattr(args, name)} must lie strictly between 0 and 1", file=sys.stderr)
            return EXIT_REFUSED
    if args.post and not args.pilot:
        print("power: --post needs --pilot (the post arm is paired with the pilot's items)", file=sys.stderr)
        return EXIT_REFUSED
    try:
        pilot = post = None
        k = None
        if args.pilot:
            pilot_log = load_log(args.pilot, samples=False)
            order = item_order(pilot_log)
            pilot, k = arm_arrays(pilot_log, order).scores, pilot_log.n_samples
            if args.post:
                post_log = load_log(args.post, samples=False)
                check_matched(args.pilot, pilot_log, args.post, post_log)
                post = arm_arrays(post_log, order).scores
        plan = power_plan(pilot, post, args.mde, alpha=args.alpha, power=args.power)
    except Refusal as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except ValueError as e:
        where = f"{args.pilot} and {args.post}" if args.post else (args.pilot or "the assumptions")
        print(
            f"power: no plan from {where}: {e}; pass logs of two arms that differ somewhere", file=sys.stderr
        )
        return EXIT_REFUSED
    print("\n".join(plan_lines(plan, k)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
