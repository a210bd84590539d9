"""A web page in a real browser (Debian's chromium, driven by Playwright) against
`conductor serve` and `conductor mcp --http`: a page from another origin (another port
of 127.0.0.1) can neither start a run nor read a reply, by a "simple" request, a
beacon, or a CORS request carrying the key itself; the same page, once the operator
allows its origin, can. Skips without chromium or Playwright; fails instead under
CONDUCTOR_REQUIRE_BROWSER=1."""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conductor.config import load_settings
from conductor.serve.app import ServeOptions, create_app
from conductor.serve.guard import Access
from conductor.serve.runs import default_factory
from equipment.serve_server import running_app
from transcripts.index import RunIndex

pytestmark = pytest.mark.slow

# Read before the autouse fixture clears CONDUCTOR_* variables.
CHROMIUM = os.environ.get("CONDUCTOR_CHROMIUM") or shutil.which("chromium") or ""
REQUIRED = os.environ.get("CONDUCTOR_REQUIRE_BROWSER") == "1"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
KEY = "browser-test-key"
QUESTION = "Use 4 7 8 8 to make 24"
QUIET = {"recall": False, "learn": False, "model": "demo"}

# What the page tries against `conductor serve`: each way a page may send a request.
SERVE_ATTEMPTS = """async ({url, key, question}) => {
  const body = JSON.stringify({model: "conductor:meta-no-python@demo",
                               messages: [{role: "user", content: question}]});
  const out = {beacon: navigator.sendBeacon(url + "/chat/completions", body)};
  const tries = {
    simple: () => fetch(url + "/chat/completions", {method: "POST", mode: "no-cors", body}),
    cors: () => fetch(url + "/chat/completions", {method: "POST", body,
      headers: {"content-type": "application/json", authorization: "Bearer " + key}}),
    models: () => fetch(url + "/models", {headers: {authorization: "Bearer " + key}}),
    keyless: () => fetch(url + "/models"),
  };
  for (const [name, attempt] of Object.entries(tries)) {
    try {
      const reply = await attempt();
      out[name] = {type: reply.type, status: reply.status, text: await reply.text()};
    } catch (error) { out[name] = {error: String(error)}; }
  }
  return out;
}"""

# What the page tries against `conductor mcp --http`: open a session, then call `solve`.
MCP_ATTEMPTS = """async ({url, key, question}) => {
  const version = "2025-06-18";
  const init = {jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: version, capabilities: {}, clientInfo: {name: "page", version: "0"}}};
  const headers = {"content-type": "application/json", authorization: "Bearer " + key,
                   accept: "application/json, text/event-stream"};
  const out = {beacon: navigator.sendBeacon(url, JSON.stringify(init))};
  try {
    const reply = await fetch(url, {method: "POST", mode: "no-cors", body: JSON.stringify(init)});
    out.simple = {type: reply.type, status: reply.status, text: await reply.text()};
  } catch (error) { out.simple = {error: String(error)}; }
  try {
    const opened = await fetch(url, {method: "POST", headers, body: JSON.stringify(init)});
    out.init = {status: opened.status, text: await opened.text()};
    const session = {...headers, "mcp-session-id": opened.headers.get("mcp-session-id"),
                     "mcp-protocol-version": version};
    await fetch(url, {method: "POST", headers: session,
                      body: JSON.stringify({jsonrpc: "2.0", method: "notifications/initialized"})});
    const call = {jsonrpc: "2.0", id: 2, method: "tools/call", params: {name: "solve",
                  arguments: {question, method: "meta-no-python"}}};
    const solved = await fetch(url, {method: "POST", headers: session, body: JSON.stringify(call)});
    out.solve = {status: solved.status, text: await solved.text()};
  } catch (error) { out.init = out.init || {error: String(error)}; }
  return out;
}"""


def no_browser(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (required because CONDUCTOR_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture
def page() -> Iterator[Any]:
    """A fresh chromium page on an origin of its own: another port of 127.0.0.1."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        no_browser("no chromium (apt-get install chromium)")
    if importlib.util.find_spec("playwright") is None:
        no_browser("Playwright for Python is not installed (pip install playwright)")
    from playwright.sync_api import sync_playwright

    with elsewhere() as origin, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            opened = browser.new_page()
            opened.set_default_timeout(60_000)
            opened.goto(f"{origin}/", wait_until="load")
            yield opened
        finally:
            browser.close()


@contextlib.contextmanager
def elsewhere() -> Iterator[str]:
    """A site that is not the server's: a blank page from another port."""

    class Blank(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>another site</title>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Blank)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}"
    finally:
        site.shutdown()
        site.server_close()


def page_origin(page: Any) -> str:
    return str(page.evaluate("location.origin"))


def access(page: Any, allowed: bool) -> Access:
    return Access(api_key=KEY, origins=frozenset({page_origin(page)} if allowed else ()))


def refusals_reach(caplog: pytest.LogCaptureFixture, count: int) -> None:
    """Until the guard has logged `count` refusals (a beacon arrives when it will)."""
    for _ in range(1200):
        if sum(r.getMessage().startswith("refused") for r in caplog.records) >= count:
            return
        time.sleep(0.05)
    raise AssertionError("the page's requests were not all refused (or never arrived)")


def counted(asked: list[str]) -> Callable[..., Any]:
    def factory(settings: Any, method: str) -> Any:
        asked.append(method)
        return default_factory(settings, method)

    return factory


@pytest.mark.parametrize("allowed", [False, True], ids=["foreign", "allowed"])
def test_a_page_reaches_conductor_serve_only_from_an_allowed_origin(
    page: Any, allowed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="conductor.serve")
    asked: list[str] = []
    options = ServeOptions(
        settings=load_settings(QUIET),
        models=("demo",),
        access=access(page, allowed),
        factory=counted(asked),
    )
    with running_app(create_app(options)) as origin:
        out = page.evaluate(
            SERVE_ATTEMPTS, {"url": f"{origin}/v1", "key": KEY, "question": QUESTION}
        )
        # Refused: the beacon and the simple request (text/plain) always; from a
        # foreign page, the CORS request, the model list and the keyless one too.
        refusals_reach(caplog, 2 if allowed else 5)
    assert out["simple"]["type"] == "opaque" and out["simple"]["text"] == ""  # unreadable
    if not allowed:
        assert asked == []  # no run was started
        for name in ("cors", "models", "keyless"):  # each refused, and unreadable
            assert "Failed to fetch" in out[name].get("error", ""), out[name]
        return
    assert asked == ["meta-no-python"]  # the CORS request's run, and no other
    assert out["cors"]["status"] == 200, out["cors"]
    reply = json.loads(out["cors"]["text"])
    assert reply["choices"][0]["message"]["content"]  # the run's answer, read by the page
    assert out["models"]["status"] == 200 and "conductor:meta@demo" in out["models"]["text"]
    assert out["keyless"]["status"] == 401  # readable: the page learns it needs the key


@pytest.mark.parametrize("allowed", [False, True], ids=["foreign", "allowed"])
def test_a_page_reaches_conductor_mcp_only_from_an_allowed_origin(
    page: Any, allowed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from conductor.mcp_server.http import PATH, http_app
    from conductor.mcp_server.server import create_server

    caplog.set_level(logging.WARNING, logger="conductor.serve")
    app = http_app(create_server(load_settings(QUIET)), access(page, allowed))
    with running_app(app) as origin:
        out = page.evaluate(
            MCP_ATTEMPTS, {"url": f"{origin}{PATH}", "key": KEY, "question": QUESTION}
        )
        refusals_reach(caplog, 2 if allowed else 3)  # the beacon, the simple one, [init]
    assert out["simple"]["type"] == "opaque" and out["simple"]["text"] == ""
    runs = RunIndex().list()
    if not allowed:
        assert "Failed to fetch" in out["init"].get("error", ""), out
        assert "solve" not in out and runs == []
        return
    assert out["init"]["status"] == 200 and "conductor" in out["init"]["text"]
    (run,) = runs
    assert out["solve"]["status"] == 200 and run["run_id"] in out["solve"]["text"]
