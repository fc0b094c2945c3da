"""``pao history serve`` against a DNS-rebinding web page and another local user (issue 15, finding 3).

The real server on 127.0.0.1 over the eval corpus's transcripts (indexed by ``pao history
index``): a token is required by default (made 0600 under PAO_HOME, never on argv), a
foreign ``Host`` or ``Origin`` gets 403, a body that is not ``application/json`` gets 415,
a silent connection is closed, a slow one is cut off, connections are bounded, and the
answers are redacted.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from history_support import eval_transcripts

from pao_core.cli import main
from pao_testing.homes import isolated_home  # noqa: F401  (fixture: every test in a home of its own)
from pao_testing.loopback_stub import serve_in_thread

PAO = str(Path(sys.executable).with_name("pao"))
QUERY = "delete the rostra-ci IAM access key"
QUICK_IDLE_S = 2.0
QUICK_REQUEST_S = 4.0
"""The timeouts of ``quick_server``: the same cut-offs as the defaults' (15 s, 30 s), without the wait."""


@pytest.fixture
def indexed(isolated_home: Path) -> Path:
    """The eval transcripts indexed (lexically: a quick index) into this test's PAO_HOME; the index's path."""
    Path(os.environ["PAO_CONFIG"]).write_text("[backends.history]\nsemantic = false\n")
    assert main(["history", "index", str(eval_transcripts())]) == 0
    return Path(os.environ["PAO_HOME"]) / "history.sqlite3"


@pytest.fixture
def server(indexed: Path) -> Iterator[tuple[str, int, str]]:
    """``pao history serve`` as its own process: (host, port, token read from its file)."""
    process = subprocess.Popen([PAO, "history", "serve", "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        first = process.stdout.readline() if process.stdout else ""
        assert first.startswith("PAO_HISTORY_URL=http://127.0.0.1:"), process.stderr.read() if process.stderr else ""
        port = int(first.split(":")[-1].split("/")[0])
        token_file = Path(os.environ["PAO_HOME"]) / "history-token"
        yield "127.0.0.1", port, token_file.read_text().strip()
    finally:
        process.terminate()
        process.wait(timeout=10)


def _post(port: int, body: dict | bytes, headers: dict[str, str]) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection.request("POST", "/rpc", body=payload, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, (json.loads(data) if data else {})


SEARCH = {"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"query": QUERY, "limit": 10}}


def test_a_token_is_required_by_default_and_kept_private(server: tuple[str, int, str]) -> None:
    _host, port, token = server
    token_file = Path(os.environ["PAO_HOME"]) / "history-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(token) >= 32
    json_type = {"Content-Type": "application/json"}
    assert _post(port, SEARCH, json_type)[0] == 401
    assert _post(port, SEARCH, {**json_type, "Authorization": "Bearer wrong"})[0] == 401
    status, answer = _post(port, SEARCH, {**json_type, "Authorization": f"Bearer {token}"})
    assert status == 200 and answer["result"]["items"]
    done = subprocess.run([PAO, "history", "serve", f"--token={token}"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--token" in done.stderr  # a token on argv would show in `ps`


def test_answers_are_redacted(server: tuple[str, int, str]) -> None:
    _host, port, token = server
    status, answer = _post(port, SEARCH, {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    texts = json.dumps(answer)
    assert status == 200 and "rostra-ci" in texts
    assert "AKIAQX7M3RZ2FAKE9KDP" not in texts and "[redacted]" in texts


@pytest.mark.parametrize(("header", "value"), [
    ("Host", "evil.example:80"), ("Origin", "http://evil.example"), ("Origin", "null"),
    ("Origin", "http://127.0.0.1.evil.example"),
])
def test_dns_rebinding_and_foreign_origins_are_refused(server: tuple[str, int, str], header: str, value: str) -> None:
    _host, port, token = server
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}", header: value}
    status, answer = _post(port, SEARCH, headers)
    assert status == 403 and "items" not in json.dumps(answer)
    own = {"Content-Type": "application/json", "Authorization": f"Bearer {token}", "Origin": f"http://localhost:{port}"}
    assert _post(port, SEARCH, own)[0] == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_only_json_bodies_are_read(server: tuple[str, int, str], content_type: str | None) -> None:
    _host, port, token = server
    headers = {"Authorization": f"Bearer {token}", **({"Content-Type": content_type} if content_type else {})}
    assert _post(port, json.dumps(SEARCH).encode(), headers)[0] == 415


@pytest.fixture
def quick_server(indexed: Path) -> Iterator[tuple[str, int, str]]:
    """The same server (``make_server``, as ``pao history serve`` makes it) in a thread of this process, with
    ``QUICK_IDLE_S`` and ``QUICK_REQUEST_S`` for its timeouts: (host, port, token)."""
    from pao_historyworker.server import make_server

    token = "quick-server-token"
    made = make_server(indexed, token=token, semantic=False, idle_timeout=QUICK_IDLE_S, request_timeout=QUICK_REQUEST_S)
    serving = serve_in_thread(made)
    try:
        yield "127.0.0.1", made.server_address[1], token
    finally:
        made.shutdown()
        made.server_close()
        serving.join(timeout=10)


def test_the_served_timeouts_are_the_documented_ones(indexed: Path) -> None:
    from pao_historyworker.server import IDLE_TIMEOUT, REQUEST_TIMEOUT, make_server

    assert (IDLE_TIMEOUT, REQUEST_TIMEOUT) == (15.0, 30.0)  # docs/history.md says so
    made = make_server(indexed)  # as `pao history serve` makes it
    try:
        assert (made.idle_timeout, made.request_timeout) == (IDLE_TIMEOUT, REQUEST_TIMEOUT)
    finally:
        made.server_close()


def test_silent_and_slow_connections_cannot_hold_the_server(quick_server: tuple[str, int, str]) -> None:
    from pao_historyworker.server import MAX_CONNECTIONS

    _host, port, token = quick_server
    opened = time.monotonic()
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(MAX_CONNECTIONS + 20)]
    try:
        # beyond the bound, connections are closed at once: the server keeps a bounded number of threads
        closed = 0
        for sock in held[MAX_CONNECTIONS:]:
            sock.settimeout(5)
            try:
                closed += sock.recv(1) == b""
            except (ConnectionResetError, socket.timeout):
                closed += 1
        assert closed >= 15
        started = time.monotonic()
        assert started - opened < QUICK_IDLE_S  # closed by the bound, not by the idle timeout
        sock = held[0]
        sock.settimeout(QUICK_IDLE_S + 15)
        try:
            assert sock.recv(1) == b""  # the silent connection is closed by the server
        except ConnectionResetError:
            pass
        assert time.monotonic() - started <= QUICK_IDLE_S + 10
    finally:
        for sock in held:
            sock.close()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    assert _post(port, SEARCH, headers)[0] == 200  # and serves again once they are gone


def test_a_trickling_request_is_cut_off(quick_server: tuple[str, int, str]) -> None:
    _host, port, _token = quick_server
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    stop = threading.Event()

    def trickle() -> None:
        try:
            sock.sendall(b"POST /rpc HTTP/1.1\r\n")
            while not stop.is_set():
                sock.sendall(b"X-Slow: a\r\n")
                time.sleep(QUICK_IDLE_S / 3)
        except OSError:
            pass

    sender = threading.Thread(target=trickle, daemon=True)
    started = time.monotonic()
    sender.start()
    sock.settimeout(QUICK_REQUEST_S + 20)
    try:
        data = sock.recv(65536)
        while data and not data.endswith(b"}"):
            data += sock.recv(65536)
    except (ConnectionResetError, BrokenPipeError):
        pass
    stop.set()
    sock.close()
    assert QUICK_REQUEST_S - 0.5 <= time.monotonic() - started <= QUICK_REQUEST_S + 15


@pytest.mark.parametrize(("body", "code"), [
    (b'{"jsonrpc": "2.0", "id": 1, "method": "search", "params": {', -32700),  # malformed JSON
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", -32700),
    (b"\xff\xfe not text", -32700),
    (b"[]", -32600),  # an empty batch
    (b"42", -32600),
    (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600),
], ids=["truncated", "nested-deep", "not-utf8", "empty-batch", "number", "old-version", "method-number", "id-object"])
def test_json_rpc_errors_follow_the_spec(server: tuple[str, int, str], body: bytes, code: int) -> None:
    _host, port, token = server
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    status, answer = _post(port, body, headers)
    assert status == 200 and answer["jsonrpc"] == "2.0" and answer["id"] is None and answer["error"]["code"] == code
    assert _post(port, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers)[1] == {"jsonrpc": "2.0", "id": 2,
                                                                                   "result": {}}


def test_a_client_that_hangs_up_leaves_no_traceback_and_other_errors_one_line(tmp_path: Path, capfd) -> None:
    from pao_historyworker.server import HistoryServer

    server = HistoryServer(("127.0.0.1", 0), tmp_path / "index.db", token=None)
    try:
        for error in (BrokenPipeError(32, "Broken pipe"), ValueError("odd request")):
            try:
                raise error
            except Exception:
                server.handle_error(None, ("127.0.0.1", 1))
    finally:
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Broken pipe" not in err
    assert err == "pao: history server: ValueError: odd request\n"
