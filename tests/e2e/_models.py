"""Scripted stand-ins for the model APIs the real agent CLIs talk to, on 127.0.0.1.

- `AnthropicModel`: the Messages API (`POST /v1/messages`, SSE streaming) that Claude Code calls through
  `ANTHROPIC_BASE_URL`.
- `ResponsesModel`: the Responses API (`POST /v1/responses`, SSE streaming) that Codex calls through a
  `[model_providers.<id>]` entry with `base_url = "http://127.0.0.1:<port>/v1"` and `wire_api = "responses"`.

Each logs every request it receives (method, path, headers, parsed JSON body) in `requests` and, when given a
`log` path, as one JSON line per request, so a test can assert what reached the model. Each answers from a script:
a list of steps, `Say(text)` or `Call(tool, args)`. The step a request gets is the number of model turns already in
its conversation (assistant messages for the Messages API; assistant messages and function calls for the Responses
API), so a script reads top to bottom whatever retries or extra prompts happen, and a conversation past the end of
the script gets `Say("done")`. A request that offers no tools (a side request such as a title) is answered
`Say("ok")` and is not a "turn" request (`turns()` leaves it out).
"""

from __future__ import annotations

import http.server
import itertools
import json
import pathlib
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Say:
    """The model answers with this text and ends its turn."""

    text: str


@dataclass(frozen=True)
class Call:
    """The model calls the tool `tool` with `args` (its name as the CLI announced it)."""

    tool: str
    args: dict[str, Any]


Step = Say | Call


@dataclass
class Request:
    """One request the stand-in received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def text(self) -> str:
        """The whole body as JSON text (what a substring assertion searches)."""
        return json.dumps(self.body, ensure_ascii=False)

    def strings(self) -> list[str]:
        """Every string value in the body, depth first (text as the model reads it, with real line breaks)."""
        out: list[str] = []

        def walk(v: Any) -> None:
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, dict):
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        walk(self.body)
        return out


@dataclass
class _Model:
    script: list[Step]
    log: pathlib.Path | None = None
    requests: list[Request] = field(default_factory=list)
    port: int = 0
    _server: http.server.ThreadingHTTPServer | None = None
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- subclass interface
    def step_index(self, body: dict[str, Any]) -> int:
        raise NotImplementedError

    def has_tools(self, body: dict[str, Any]) -> bool:
        return bool(body.get("tools"))

    def render(self, body: dict[str, Any], step: Step) -> bytes:
        raise NotImplementedError

    def route(self, path: str) -> bool:
        raise NotImplementedError

    # -- server
    def __enter__(self) -> "_Model":
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: the request log is the record
                pass

            def do_HEAD(self) -> None:
                self._answer()

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                req = Request(self.command, self.path, dict(self.headers), body)
                model._record(req)
                if self.command == "POST" and model.route(self.path) and isinstance(body, dict):
                    if model.has_tools(body):
                        index = model.step_index(body)
                        step = model.script[index] if index < len(model.script) else Say("done")
                    else:
                        step = Say("ok")
                    data = model.render(body, step)
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                else:
                    data = b"{}"
                    self.send_response(200 if self.command != "POST" else 404)
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)
            if self.log is not None:
                with self.log.open("a") as f:
                    f.write(json.dumps(req.__dict__, ensure_ascii=False) + "\n")

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def turns(self) -> list[Request]:
        """The model requests that offered tools: the agent's own turns, oldest first."""
        with self._lock:
            return [
                r for r in self.requests if self.route(r.path) and isinstance(r.body, dict) and self.has_tools(r.body)
            ]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class AnthropicModel(_Model):
    """The Anthropic Messages API with SSE streaming (`message_start` ... `message_stop`)."""

    def route(self, path: str) -> bool:
        return path.split("?")[0] == "/v1/messages"

    def step_index(self, body: dict[str, Any]) -> int:
        return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")

    def render(self, body: dict[str, Any], step: Step) -> bytes:
        n = self.next_id()
        if isinstance(step, Say):
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": step.text}
            stop = "end_turn"
        else:
            block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": step.tool, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(step.args)}
            stop = "tool_use"
        message = {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stand-in"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return _sse(
            [
                ("message_start", {"type": "message_start", "message": message}),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 1},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )

    def tool_results(self, request: Request) -> list[str]:
        """The text of every tool result in a request's conversation, oldest first."""
        out = []
        for m in request.body.get("messages", []):
            if m.get("role") != "user" or not isinstance(m.get("content"), list):
                continue
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    if isinstance(content, list):
                        content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
                    out.append(content or "")
        return out


class ResponsesModel(_Model):
    """The OpenAI Responses API with SSE streaming (`response.created` ... `response.completed`), as Codex uses it."""

    def route(self, path: str) -> bool:
        return path.split("?")[0] == "/v1/responses"

    def step_index(self, body: dict[str, Any]) -> int:
        def is_turn(item: dict[str, Any]) -> bool:
            kind = item.get("type")
            return kind == "function_call" or (kind == "message" and item.get("role") == "assistant")

        return sum(1 for item in body.get("input", []) if is_turn(item))

    def render(self, body: dict[str, Any], step: Step) -> bytes:
        n = self.next_id()
        if isinstance(step, Say):
            item = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{n:04d}",
                "content": [{"type": "output_text", "text": step.text}],
            }
        else:
            namespace, _, name = step.tool.rpartition("/")
            item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": name,
                    "arguments": json.dumps(step.args)}
            if namespace:
                item["namespace"] = namespace
        usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1, "output_tokens_details": None,
                 "total_tokens": 2}
        return _sse(
            [
                ("response.created", {"type": "response.created", "response": {"id": f"resp_{n:04d}"}}),
                ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
                ("response.completed", {"type": "response.completed",
                                        "response": {"id": f"resp_{n:04d}", "usage": usage}}),
            ]
        )

    def tool_results(self, request: Request) -> list[str]:
        """The output of every function call in a request's conversation, oldest first."""
        out = []
        for item in request.body.get("input", []):
            if item.get("type") == "function_call_output":
                output = item.get("output")
                if isinstance(output, list):
                    output = "".join(c.get("text", "") for c in output if isinstance(c, dict))
                elif isinstance(output, dict):
                    output = output.get("content", "")
                out.append(output or "")
        return out
