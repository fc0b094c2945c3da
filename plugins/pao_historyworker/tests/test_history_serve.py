"""``pao history serve`` for real on loopback: both protocol modes, auth, bad requests, and the done-when path."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import requests

from history_support import pao, pao_json

from pao_historyworker.backend import HistoryBackend
from pao_historyworker.options import HistoryOptions

TOPIC = "speed up Rust CI on GitHub Actions with sccache and rust-cache"


def remote(url: str, protocol: str, **options) -> HistoryBackend:
    """A client of ``url``; by default it sends the token ``pao history serve`` made under PAO_HOME."""
    import os
    from pathlib import Path

    options.setdefault("token_file", Path(os.environ["PAO_HOME"]) / "history-token")
    return HistoryBackend(HistoryOptions(url=url, protocol=protocol, **options), home=None)  # type: ignore[arg-type]


def served_token() -> str:
    import os
    from pathlib import Path

    return (Path(os.environ["PAO_HOME"]) / "history-token").read_text().strip()


def local(env) -> HistoryBackend:
    from pathlib import Path

    return HistoryBackend(HistoryOptions(), home=Path(env["PAO_HOME"]))


def test_both_modes_return_the_local_items(env, served):
    assert served.startswith("http://127.0.0.1:") and served.endswith("/rpc")
    expected = local(env).search(TOPIC, 10, time.monotonic() + 5)
    assert expected
    for protocol in ("jsonrpc", "mcp"):
        got = remote(served, protocol).search(TOPIC, 10, time.monotonic() + 5)
        assert got == expected, protocol
    assert "exchanges" in remote(served, "jsonrpc").health(time.monotonic() + 5)
    assert "tool search_history" in remote(served, "mcp").health(time.monotonic() + 5)


def test_brief_over_http_equals_the_local_brief(env, served):
    """The issue's done-when: the same query gives the same items locally and through serve."""
    local_brief = pao_json(env, "brief", TOPIC)
    remote_brief = pao_json({**env, "PAO_HISTORY_URL": served}, "brief", TOPIC)
    assert local_brief["backends"]["history"]["status"] == "ok"
    assert remote_brief["backends"]["history"]["status"] == "ok"
    assert local_brief["items"] and local_brief["items"] == remote_brief["items"]
    first = local_brief["items"][0]
    assert first["id"].startswith("msg:") and first["meta"]["session_id"] and first["meta"]["project"]
    assert first["timestamp"]


def test_token_is_required_when_set(env, serve_with_token):
    denied = remote(serve_with_token, "jsonrpc", token_file=None)
    try:
        denied.search(TOPIC, 5, time.monotonic() + 5)
    except Exception as exc:
        assert "HTTP 401" in str(exc)
    else:
        raise AssertionError("a request without the token must fail")
    allowed = remote(serve_with_token, "mcp", token="s3cret-token")
    assert allowed.search(TOPIC, 5, time.monotonic() + 5)
    from_env = HistoryBackend(HistoryOptions(url=serve_with_token), home=None)  # type: ignore[arg-type]
    env_result = pao_json({**env, "PAO_HISTORY_URL": serve_with_token, "PAO_HISTORY_TOKEN": "s3cret-token"}, "brief", TOPIC)
    assert env_result["backends"]["history"]["status"] == "ok" and env_result["items"]
    assert from_env.options.auth_headers({"PAO_HISTORY_TOKEN": "x"}) == {"Authorization": "Bearer x"}


def _post(url: str, payload: bytes, headers: dict | None = None) -> requests.Response:
    auth = {"Authorization": f"Bearer {served_token()}"}
    return requests.post(url, data=payload, headers={"Content-Type": "application/json", **auth, **(headers or {})},
                         timeout=5)


def test_bad_requests_get_json_rpc_errors_and_the_server_keeps_serving(env, served):
    def error_code(response: requests.Response) -> int:
        return response.json()["error"]["code"]

    assert error_code(_post(served, b"{not json")) == -32700
    assert error_code(_post(served, b"[1, 2]")) == -32600
    assert error_code(_post(served, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "nope"}).encode())) == -32601
    bad_limit = {"jsonrpc": "2.0", "id": 2, "method": "search", "params": {"query": "x", "limit": 10**6}}
    assert error_code(_post(served, json.dumps(bad_limit).encode())) == -32602
    no_query = {"jsonrpc": "2.0", "id": 3, "method": "search", "params": {"limit": 3}}
    assert error_code(_post(served, json.dumps(no_query).encode())) == -32602
    no_session = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search_history"}}
    response = _post(served, json.dumps(no_session).encode())
    assert response.status_code == 404 and error_code(response) == -32002
    huge = _post(served, b'{"jsonrpc": "2.0", "id": 5, "method": "search", "params": {"query": "' + b"a" * 200_000 + b'"}}')
    assert huge.status_code == 413 and error_code(huge) == -32600
    wrong_path = _post(served.replace("/rpc", "/other"), b"{}")
    assert wrong_path.status_code == 404 and error_code(wrong_path) == -32600

    parts = urlsplit(served)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as raw:
        raw.sendall(b"POST /rpc HTTP/1.1 extra words\r\n\r\n")  # refused before any header is read
        reply = b""
        while chunk := raw.recv(4096):  # the server closes the connection after the error
            reply += chunk
    assert reply.startswith(b"HTTP/1.") and b'"code": -32600' in reply

    good = {"jsonrpc": "2.0", "id": 6, "method": "search", "params": {"query": TOPIC, "limit": 3}}
    answer = _post(served, json.dumps(good).encode()).json()
    assert answer["id"] == 6 and 1 <= len(answer["result"]["items"]) <= 3


def test_serve_refuses_without_an_index(env):
    done = pao(env, "history", "serve", "--port", "0", check=False, timeout=20)
    assert done.returncode != 0 and "pao history index" in done.stderr and done.stdout == ""


def test_plugins_lists_the_history_plugin(env):
    report = pao_json(env, "plugins")
    row = next(row for row in report["plugins"] if row["name"] == "historyworker")
    assert row["distribution"] == "pao-historyworker"
    assert set(row["hooks"]) >= {"pao_memory_backends", "pao_add_commands"}
    assert report["failures"] == []


def test_hooks_import_nothing_heavy(env):
    import subprocess
    import sys

    code = "import sys, pao_historyworker.hooks; print(sorted(m for m in ('requests', 'urllib3', 'sqlite3') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
