"""A scripted OpenAI-compatible judge on 127.0.0.1, for the judge stage's tests and bench.

It answers POST /v1/chat/completions with a reply its policy computes from the user message: `labels`
(the verdict a table of shown texts gives, the hand labels: a perfect judge), `equivalent` (always says
equivalent), `parrot` (repeats the prompt back), `garbage` (no verdict line). It counts the calls it answers.

    python -m benchmarks.scripted_judge --policy equivalent     # serve on a free port until Ctrl-C
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARK_OPEN, MARK_CLOSE = "<<<STUDENT\n", "\nSTUDENT>>>"


def shown_text(user_message: str) -> str:
    """The student's text the judge was shown (between the template's markers)."""
    return user_message.split(MARK_OPEN, 1)[-1].split(MARK_CLOSE, 1)[0]


def policy(name: str, labels: Mapping[str, int] | None = None) -> Callable[[str], str]:
    """The reply function of a named policy (`labels` needs the table shown text -> 0/1)."""
    if name == "labels":
        table = dict(labels or {})

        def from_labels(user: str) -> str:
            label = table.get(shown_text(user))
            if label is None:
                return "I cannot tell."
            return "VERDICT: EQUIVALENT" if label else "VERDICT: NOT_EQUIVALENT"

        return from_labels
    replies: dict[str, Callable[[str], str]] = {
        "equivalent": lambda user: "VERDICT: EQUIVALENT",
        "parrot": lambda user: user,
        "garbage": lambda user: "The answer looks fine to me.",
    }
    return replies[name]


class ScriptedJudge:
    """The server: start() binds a free loopback port; `url` is its /v1 base; `calls` counts answers."""

    def __init__(self, reply: Callable[[str], str], fail_first: int = 0) -> None:
        self.reply = reply
        self.calls = 0
        self.fail_first = fail_first
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    if owner.fail_first > 0:
                        owner.fail_first -= 1
                        self.send_response(503)
                        self.end_headers()
                        return
                    owner.calls += 1
                    owner.seen.append(body)
                user = body["messages"][-1]["content"]
                text = owner.reply(user)
                out = {
                    "id": "scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                }
                data = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    """Command line: serve one policy until interrupted."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.scripted_judge")
    ap.add_argument("--policy", choices=["equivalent", "parrot", "garbage"], required=True)
    args = ap.parse_args(argv)
    with ScriptedJudge(policy(args.policy)) as judge:
        print(f"scripted judge ({args.policy}) at {judge.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
