"""The item browser: for any two arms, the items whose verdict flipped, with what a reader checks them by.

    python -m analysis.commands.index_page --delta reports/delta --arms reports/arms --logs evallogs \\
        --out reports

writes reports/items.html (with the report stage's other files) from the EvalLogs of the arms the arm
comparison found. One static page that opens offline from the file system: inline CSS and JavaScript, no
server, no network, its data one JSON block inside the page. Two arms are chosen on the page (or by the
address: items.html#a=base&b=trained&family=lookup, as the reports' contrast rows link to it); it lists the
items whose majority verdict (mcnemar.majority_verdicts, the verdict of both reports' McNemar flips)
differs between them, wrong -> right and right -> wrong, filterable by family. Each item shows its question
and reference answer and, for both arms side by side, the prompt as the model saw it, the retrieved
passages with their text, and every sample: score, answer read, path verdict, and its transcript
(contract.textformat.transcript: the model's turns, each tool call with its arguments and the response the
model was shown).

Size: only items whose verdict differs between some two arms carry their samples; a string repeated across
arms or items (prompts, passages) is stored once; a text longer than MAX_TEXT characters keeps its head
and its tail (where the answer stands), saying how much was left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from analysis.estimators.mcnemar import majority_verdicts
from analysis.reports.align import arm_arrays, item_order, matched_arm_logs
from contract.evallog import EvalLog, ItemResult, SampleRecord
from contract.textformat import transcript

TEMPLATES = Path(__file__).parents[1] / "templates"
# Characters of one text (a model turn, a prompt, a passage) kept in the page; a longer one keeps its head
# and tail. Chat models' reasoning can run to thousands of tokens per sample, times k samples, times arms.
MAX_TEXT = 6000
# Turn kinds in the page's data: a model turn, a tool call with the response shown to the model, and a
# message of another role (an imported transcript's user or system turns).
MODEL_TURN, TOOL_TURN, OTHER_TURN = 0, 1, 2


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """text, or its head and tail with the number of characters left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    left_out = len(text) - 2 * half
    return (
        f"{text[:half]}\n[... {left_out} characters left out here; the EvalLog has them ...]\n{text[-half:]}"
    )


def clip_or_none(text: str | None) -> str | None:
    """clip(text), None kept."""
    return None if text is None else clip(text)


class _Strings:
    """A table of distinct strings; the page refers to each by its index."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def ref(self, text: str | None) -> int | None:
        if text is None:
            return None
        return self.index.setdefault(clip(text), len(self.index))

    def table(self) -> list[str]:
        return list(self.index)


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _tool_turn(response: str, name: Any, arguments: Any, error: Any = None, failed: Any = False) -> list[Any]:
    return [TOOL_TURN, clip(response), name, clip(_json_text(arguments) or ""), error, bool(failed)]


def _source_turns(messages: list[dict[str, Any]]) -> list[list[Any]]:
    """An imported sample's own messages as page turns; each tool message answers the oldest open call."""
    turns: list[list[Any]] = []
    open_calls: list[dict[str, Any]] = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        text = content if isinstance(content, str) else _json_text(content) or ""
        if role == "assistant":
            turns.append([MODEL_TURN, clip(text)])
            open_calls += [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        elif role == "tool" and open_calls:
            call = open_calls.pop(0)
            turns.append(_tool_turn(text, call.get("name"), call.get("arguments"), m.get("error")))
        else:
            turns.append([OTHER_TURN, str(role), clip(text)])
    return turns + [_tool_turn("", c.get("name"), c.get("arguments")) for c in open_calls]


def _sample(s: SampleRecord) -> list[Any]:
    """[score, answer, path, finish reason, generated tokens, no-answer reason, turns, own].

    own: 1 when the turns are the source's own transcript (it holds its prompt), 0 when they are the turns
    after the prompt read from the text (the page puts the item's prompt first).
    """
    info = [
        s.score,
        clip_or_none(s.answer),
        s.path,
        s.finish_reason,
        s.gen_tokens,
        clip_or_none(s.no_answer_reason),
    ]
    if s.transcript:
        return [*info, _source_turns(s.transcript), 1]
    turns: list[list[Any]] = []
    for t in transcript(None, s.text or "", s.tool_calls):
        if t.role == "model":
            turns.append([MODEL_TURN, clip(t.text)])
            continue
        c = t.call
        turns.append(
            _tool_turn(t.text, c.name, c.arguments, c.error, c.failed)
            if c
            else _tool_turn(t.text, None, None)
        )
    return [*info, turns, 0]


def _arm_item(it: ItemResult, strings: _Strings) -> list[Any]:
    """One arm's side of an item: [prompt, passages, samples]."""
    passages = [
        [d.doc_id, d.score, d.rank, strings.ref(d.title), strings.ref(d.text)] for d in it.retrieved or []
    ]
    return [strings.ref(it.prompt), passages, [_sample(s) for s in it.samples or []]]


def page_data(
    logs: dict[str, EvalLog],
    default_pair: tuple[str, str] | None = None,
    evidence: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """What the page shows, compactly: arms, families, a string table, and per flipping item both sides
    (evidence: each item's contamination evidence in words, shown when given)."""
    arms = list(logs)
    first = logs[arms[0]]
    order = item_order(first)
    means = {a: arm_arrays(log, order).item_mean for a, log in logs.items()}
    verdicts = {a: majority_verdicts(m) for a, m in means.items()}
    by_id = {a: {it.item_id: it for it in log.items} for a, log in logs.items()}
    families = sorted({it.family or "" for it in first.items})
    strings = _Strings()
    items = []
    for i, item_id in enumerate(order):
        flags = "".join("1" if verdicts[a][i] else "0" for a in arms)
        if len(set(flags)) == 1:
            continue  # the same verdict in every arm: no pair of arms flips it
        head = by_id[arms[0]][item_id]
        items.append(
            {
                "id": item_id,
                "f": families.index(head.family or ""),
                "q": clip_or_none(
                    next((by_id[a][item_id].question for a in arms if by_id[a][item_id].question), None)
                ),
                "r": clip_or_none(
                    next(
                        (
                            by_id[a][item_id].reference_answer
                            for a in arms
                            if by_id[a][item_id].reference_answer
                        ),
                        None,
                    )
                ),
                "v": flags,
                "m": [round(float(means[a][i]), 4) for a in arms],
                "a": [_arm_item(by_id[a][item_id], strings) for a in arms],
            }
        )
        if evidence is not None:
            items[-1]["e"] = evidence.get(item_id, [])
    pair = default_pair if default_pair and all(a in arms for a in default_pair) else tuple(arms[:2])
    data = {
        "suite": first.suite,
        "revision": first.suite_revision,
        "k": first.n_samples,
        "n_items": len(order),
        "arms": arms,
        "families": families,
        "default": list(pair),
        "strings": strings.table(),
        "items": items,
    }
    if evidence is not None:
        data["evidence"] = True
    return data


def script_json(data: dict[str, Any]) -> str:
    """data as JSON that can stand inside a <script> element: no '<', '>' or '&' left to end or open a tag."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: dict[str, Any]) -> str:
    """The item browser's HTML (analysis/templates/items.html.j2) with the data inside it."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, autoescape=True)
    return env.get_template("items.html.j2").render(
        suite=data["suite"],
        revision=data["revision"],
        data_json=script_json(data),
        evidence=bool(data.get("evidence")),
    )


def items_page(
    logs_dir: str | Path,
    arms: list[str],
    default_pair: tuple[str, str] | None = None,
    evidence: dict[str, list[str]] | None = None,
) -> str:
    """The item browser's HTML for these arms' logs in logs_dir (evidence: see page_data)."""
    logs = {a: log for a, (_, log) in matched_arm_logs(logs_dir, arms).items()}
    return render_page(page_data(logs, default_pair, evidence))
