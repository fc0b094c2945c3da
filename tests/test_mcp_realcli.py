"""pao's MCP server inside real sessions: `pao spawn` wires `pao mcp` into Claude Code (both pinned
versions), Codex CLI and Gemini CLI; the CLI starts the server itself, the loopback stub answers
the first request with a call of pao's tool, and the next request carries the tool's result.

Each ``pao`` runs as its own process with pao-tmux (a private socket), pao-postgres (the
embedded longterm store) and pao-mcp. As root these tests fail (never skip) outside a
loopback-only network namespace: scripts/test provides one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pao_agents.agentdir import EVENTS, read_events
from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_testing.host_cases import CASES
from pao_testing.hostrun import fail_unless_loopback_only, until
from pao_testing.private import root_private_dir

pytestmark = pytest.mark.realcli
PLUGINS = "pao-agents,pao-tmux,pao-hosts,pao-postgres,pao-mcp"
TOOLS = ("mcp__pao__search_memory", "mcp__pao__remember", "mcp__pao__memory_status")


@pytest.fixture
def pao_home() -> Iterator[Path]:
    """PAO_HOME on a path no other user can write to, up to the root: Gemini CLI ignores a
    settings file below a group- or world-writable folder such as /tmp (where a checkout may be)."""
    with root_private_dir("mcp-test-") as root:
        yield root


def _pao(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pao_core", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"pao {' '.join(args)}: {done.stderr}"
    return done


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def _tool_result(request) -> str:  # noqa: ANN001 - a MessagesRequest
    """The text of the tool results in a Messages request."""
    texts = []
    for message in request.body.get("messages") or []:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                texts.append(json.dumps(content) if not isinstance(content, str) else content)
    return "\n".join(texts)


def _function_responses(body: dict) -> str:
    """The tool results in a Gemini request (``functionResponse`` parts) or a Codex one (``function_call_output``
    items), as JSON text: not the briefing around them, which holds the memory too."""
    parts = [part for content in body.get("contents") or [] for part in content.get("parts") or []
             if isinstance(part, dict) and "functionResponse" in part]
    items = [item for item in body.get("input") or [] if isinstance(item, dict) and item.get("type") == "function_call_output"]
    return json.dumps(parts + items)


@pytest.fixture
def claude_run(claude_cli: Path, claude_home: Path, claude_env: dict[str, str], private_tmux: PrivateTmux,
               pao_home: Path) -> dict[str, str]:
    """The environment of `pao` for Claude Code: its CLI and HOME, the stub, permission mode `default`."""
    config = pao_home / "config.toml"
    # outside bypass mode: the tools must be allowed for the session, not by a prompt
    config.write_text('[hosts.claude-code]\npermission_mode = "default"\n')
    return {**os.environ, **claude_env, "PAO_CLAUDE_COMMAND": str(claude_cli), "PAO_TMUX_SOCKET": private_tmux.socket,
            "PAO_LOAD_PLUGINS": PLUGINS, "PAO_HOME": str(pao_home / "pao"), "PAO_CONFIG": str(config)}


def test_claude_code_remembers_then_a_second_agent_finds_it_with_provenance(
    claude_run: dict[str, str], anthropic_stub: AnthropicStub, claude_home: Path, pao_home: Path
) -> None:
    env = claude_run
    marker = f"ACETONE-{uuid.uuid4().hex[:6]}"
    fact = f"Gus smells of acetone ({marker}) when his feeding is late"
    settings_before = {p: p.read_bytes() for p in claude_home.rglob("*.json") if p.is_file()}

    anthropic_stub.tool_trigger = "REMEMBER-IT"
    anthropic_stub.tool_call = ("mcp__pao__remember", {"entity": "Gus", "observation": fact})
    first = json.loads(_pao(env, "spawn", "REMEMBER-IT about Gus the cat", "--folder", str(_folder(pao_home, "cat")),
                            "--name", "scribe", "--json").stdout)
    assert first["extra"]["mcp"] == ["pao"]
    # the result as text or as structured content (Claude Code 2.1 passes the latter to the model)
    answered = anthropic_stub.wait_for_message(marker, 180, where=lambda r: marker in _tool_result(r))
    assert answered is not None, "no request carried the remember tool's result"
    assert "scribe" in _tool_result(answered) and first["session_id"] in _tool_result(answered)

    agent_dir = Path(first["extra"]["agent_dir"])
    config = agent_dir / "mcp.json"
    assert config.stat().st_mode & 0o777 == 0o600 and agent_dir.stat().st_mode & 0o777 == 0o700
    server = json.loads(config.read_text())["mcpServers"]["pao"]
    assert server["command"] == sys.executable and "--agent" in server["args"] and "scribe" in server["args"]
    assert server["env"]["PAO_HOME"] == env["PAO_HOME"]

    briefing = _pao(env, "brief", "why does Gus smell of acetone").stdout
    line = next(line for line in briefing.splitlines() if marker in line)
    assert f"remembered by agent scribe, session {first['session_id'][:8]}" in line

    anthropic_stub.tool_trigger = "LOOK-IT-UP"
    anthropic_stub.tool_call = ("mcp__pao__search_memory", {"query": "Gus acetone feeding"})
    _pao(env, "spawn", "LOOK-IT-UP on Gus the cat", "--folder", str(_folder(pao_home, "vet")), "--name", "vet")
    found = anthropic_stub.wait_for_message(marker, 180, where=lambda r: marker in _tool_result(r) and "LOOK-IT-UP" in r.text())
    assert found is not None, "no request carried the search tool's result"
    assert "scribe" in _tool_result(found), "the fact comes with its provenance"

    for name in ("scribe", "vet"):
        _pao(env, "kill", name, timeout=60)
    settings_after = {p: p.read_bytes() for p in claude_home.rglob("*.json") if p in settings_before}
    for path, data in settings_after.items():
        assert b"mcp__pao__" not in data and b'"pao"' not in data, f"{path} names pao's server"


def _offers_pao_s_tools(request) -> bool:  # noqa: ANN001 - a MessagesRequest
    """Claude Code 2.0 offers an MCP server's tools in ``tools``; 2.1 defers them, naming each on a line of its own in
    the list for its ToolSearch (pao's briefing names two of them inside sentences: that offers nothing)."""
    offered = {tool.get("name") for tool in request.body.get("tools") or []}
    lines = {line.strip() for text in _texts(request.body) for line in text.splitlines()}
    return set(TOOLS) <= offered or set(TOOLS) <= lines


def _names_pao_connecting(request) -> bool:  # noqa: ANN001 - a MessagesRequest
    """Claude Code 2.1's own notice that a server it started has not finished connecting (``The following MCP
    servers are still connecting ... will appear shortly:`` then a line per server), with its ToolSearch offered:
    the model reaches that server's tools within the turn once they are in."""
    offered = {tool.get("name") for tool in request.body.get("tools") or []}
    notices = [text for text in _texts(request.body) if "MCP servers are still connecting" in text]
    return "ToolSearch" in offered and any("pao" in {line.strip() for line in text.splitlines()} for text in notices)


def _texts(value: object) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in _texts(item)]


@pytest.mark.every_claude_pin("2.1.x sends its first request before its MCP servers connect; 2.0.x waits")
def test_the_first_turn_already_has_pao_s_tools_with_every_plugin_installed(
    claude_run: dict[str, str], anthropic_stub: AnthropicStub, pao_home: Path, claude_version: str, claude_home: Path
) -> None:
    """The first turn (the first request carrying the task and offering tools; a side call such as a title comes
    without any) comes after pao's server answered ``tools/list`` and lists its tools, with the whole plugin set a
    user installs (no PAO_LOAD_PLUGINS) loading behind the handshake. Claude Code 2.1.332 takes a server as connected
    a moment after that answer, and shows nothing of when: in 2 of 25 runs here its first turn still named pao among
    the servers "still connecting" (its ToolSearch brings their tools in within the turn). That is what pao cannot
    wait for; a turn that names pao neither way, or comes before the answer, fails."""
    env = {key: value for key, value in claude_run.items() if key not in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS")}
    task = f"tally the gauges {uuid.uuid4().hex[:8]}"
    spawned = json.loads(_pao(env, "spawn", task, "--folder", str(_folder(pao_home, "g")), "--name", "gauges",
                              "--json").stdout)
    assert spawned["extra"]["mcp"] == ["pao"]
    first = anthropic_stub.wait_for_message(task, 120, where=lambda r: r.is_conversation)
    assert first is not None, "the task never reached the model"
    assert _offers_pao_s_tools(first) or _names_pao_connecting(first), (
        f"Claude Code {claude_version}'s first turn went out without pao's tools: "
        f"{sorted(tool.get('name') for tool in first.body.get('tools') or [])}")
    events = read_events(Path(spawned["extra"]["agent_dir"]) / EVENTS)
    listed = next(event["at"] for event in events if event["name"] == "McpToolsListed")  # the server's record of it
    assert listed <= first.received_at + 0.01  # (the log keeps milliseconds)
    _pao(env, "kill", "gauges", timeout=60)


def test_no_mcp_spawns_without_the_server(claude_run: dict[str, str], anthropic_stub: AnthropicStub,
                                           pao_home: Path) -> None:
    spawned = json.loads(_pao(claude_run, "spawn", "count the widgets", "--folder", str(_folder(pao_home, "w")),
                              "--name", "plain", "--no-mcp", "--json").stdout)
    assert spawned["extra"]["mcp"] == []
    request = anthropic_stub.wait_for_message("count the widgets", 120, where=lambda r: r.is_conversation)
    assert request is not None
    assert not any(name in json.dumps(request.body.get("tools")) for name in TOOLS)
    assert not (Path(spawned["extra"]["agent_dir"]) / "mcp.json").exists()
    _pao(claude_run, "kill", "plain", timeout=60)


@pytest.mark.parametrize("host", sorted(CASES))
def test_codex_and_gemini_call_pao_s_tool(host: str, pao_home: Path) -> None:
    fail_unless_loopback_only()
    case = CASES[host]
    assert case.binary is not None and case.binary.exists(), f"{case.binary} is missing: run scripts/setup --test"
    home = pao_home / "user"
    home.mkdir()
    marker = f"LEDGER-{uuid.uuid4().hex[:6]}"
    socket = f"pao-test-{os.getpid()}-mcp-{host}"
    (pao_home / "config.toml").write_text("")
    with case.make_stub() as stub:
        stub.tool_trigger = "LOOK-IT-UP"
        stub.tool_call = ("search_memory", {"query": "billing exporter retry ledger"})
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PAO_", "CODEX_", "GEMINI_"))},
               "HOME": str(home), **case.user_setup(home, stub), "PAO_LOAD_PLUGINS": PLUGINS,
               "PAO_TMUX_SOCKET": socket, case.command_variable: str(case.binary), "TERM": "xterm-256color",
               "PAO_HOME": str(pao_home / "pao"), "PAO_CONFIG": str(pao_home / "config.toml")}
        _pao(env, "memory", "add", "billing exporter", f"the retry ledger is {marker}.csv")
        record: dict = {}
        try:
            record = json.loads(_pao(env, "spawn", "LOOK-IT-UP for the billing exporter", "--folder",
                                     str(_folder(pao_home, "billing")), "--host", host, "--json").stdout)
            assert record["extra"]["mcp"] == ["pao"]
            sent = stub.wait_for(lambda r: marker in _function_responses(r.body), 240)
            assert sent is not None, f"no request carried pao's tool result: {[_function_responses(r.body) for r in stub.requests]}"
        finally:
            if record.get("pid"):
                try:
                    os.killpg(os.getpgid(record["pid"]), signal.SIGKILL)  # Gemini CLI outlives the hang-up
                except ProcessLookupError:
                    pass
            subprocess.run([sys.executable, "-m", "pao_core", "kill", record.get("name", "look-up-billing-exporter")], env=env,
                           capture_output=True, timeout=60)
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.every_claude_pin("2.0.x offers a server's tools once connected; 2.1.x searches for them")
def test_resume_wires_the_session_mcp_server_again(claude_run: dict[str, str], anthropic_stub: AnthropicStub,
                                                   claude_home: Path, claude_version: str, pao_home: Path) -> None:
    """``pao resume`` starts the CLI with the same ``--mcp-config`` and session channel as the spawn did."""
    env = claude_run
    spawned = json.loads(_pao(env, "spawn", "count the widgets", "--folder", str(_folder(pao_home, "w")),
                              "--name", "again", "--json").stdout)
    assert spawned["extra"]["mcp"] == ["pao"]
    assert anthropic_stub.wait_for_message("count the widgets", 120, where=lambda r: r.is_conversation) is not None
    _pao(env, "pause", "again")
    assert json.loads(_pao(env, "status", "again", "--json").stdout)["state"] == "paused"
    _pao(env, "resume", "again")

    def connections() -> int:  # Claude Code logs each connection to an MCP server, per session start
        logs = claude_home.glob(".cache/claude-cli-nodejs/*/mcp-logs-pao/*.jsonl")
        return sum(path.read_text().count("Successfully connected") for path in logs)

    if claude_version.startswith("2.0."):  # offers a server's tools only once connected; 2.1 searches for them (ToolSearch)
        until(connections, lambda count: count >= 2, timeout=90)  # the spawn's, then the resumed session's
    anthropic_stub.tool_trigger = "LOOK-IT-UP"
    anthropic_stub.tool_call = ("mcp__pao__memory_status", {})
    _pao(env, "send", "again", "LOOK-IT-UP: how is the memory?")
    # the status as text or as structured content (Claude Code 2.1 passes the latter to the model)
    status = re.compile(r'agent again;|"agent": ?"again"')
    answered = anthropic_stub.wait_for_message("LOOK-IT-UP", 120, where=lambda r: status.search(_tool_result(r)) is not None)
    assert answered is not None, "the resumed session had no pao MCP tool: " + " | ".join(
        _tool_result(r)[:200] for r in anthropic_stub.messages() if _tool_result(r))
    events = [json.loads(line)["event"] for line in Path(spawned["extra"]["agent_dir"], "events.jsonl").read_text().splitlines()]
    starts = [event for event in events if event.get("hook_event_name") == "SessionStart"]
    assert [event.get("source") for event in starts][-1] == "resume", "the resumed session reported through pao's hooks"
    assert {event["session_id"] for event in starts} == {spawned["session_id"]}, "the same session, resumed"
    _pao(env, "kill", "again", timeout=60)


def _register_pao_mcp(settings_file: Path, python: str) -> None:
    """The user registers pao mcp once in Gemini CLI's settings, as docs/mcp.md shows."""
    settings = json.loads(settings_file.read_text())
    settings["mcpServers"] = {"pao": {"command": python, "args": ["-m", "pao_core", "mcp", "--agent", "me"], "trust": True}}
    settings_file.write_text(json.dumps(settings))


def test_gemini_for_an_unprivileged_user_says_it_has_no_session_server_and_takes_the_user_s_own(tmp_path: Path) -> None:
    """Gemini CLI run by an account that is not root (the sshd recipe's account, its own HOME, the default
    PAO_HOME): Gemini skips a system-defaults file that root does not own, so pao writes none, says so and
    records no server; the server the user registered once in ~/.gemini/settings.json (docs/mcp.md) answers."""
    from pao_testing.sshd import loopback_sshd
    from pao_testing.two_machines import remote_runtime

    fail_unless_loopback_only()
    case = CASES["gemini"]
    assert case.binary is not None and case.binary.exists(), f"{case.binary} is missing: run scripts/setup --test"
    marker = f"LEDGER-{uuid.uuid4().hex[:6]}"
    socket = f"pao-test-{os.getpid()}-mcp-user"
    with loopback_sshd() as account, case.make_stub() as stub:
        runtime = remote_runtime(account, None)
        stub.tool_trigger = "LOOK-IT-UP"
        stub.tool_call = ("search_memory", {"query": "billing exporter retry ledger"})
        env = {**case.user_setup(account.home, stub), "PAO_LOAD_PLUGINS": PLUGINS, "PAO_TMUX_SOCKET": socket,
               case.command_variable: str(case.binary), "TERM": "xterm-256color"}
        (account.home / "billing").mkdir()
        account.give(account.home)

        def pao(*args: str) -> subprocess.CompletedProcess[str]:
            done = account.run_remote([*runtime.pao, *args], env=env, timeout=240)
            assert done.returncode == 0, f"pao {' '.join(args)}: {done.stderr}"
            return done

        def tool_result_with(text: str, folder: Path) -> None:
            """The tool result of the agent in ``folder`` (its requests name it) holds ``text``, or this fails."""
            workspace = json.dumps(os.path.realpath(folder))[1:-1]  # as its requests spell it (Workspace Directories)
            answered = stub.wait_for(lambda r: workspace in json.dumps(r.body) and _function_responses(r.body) != "[]",
                                     240)
            if answered is None or text not in _function_responses(answered.body):
                screens = account.run_remote(["sh", "-c", f"for p in $(tmux -L {socket} list-panes -a -F '#{{pane_id}}');"
                                                         f" do tmux -L {socket} capture-pane -p -t $p; done"], env=env)
                got = "none (its screen shows whether its task was submitted)" if answered is None else \
                    _function_responses(answered.body)
                raise AssertionError(f"the agent in {folder.name} got no tool result with {text}: {got}; "
                                     f"the agents' screens:\n{screens.stdout}")

        assert account.run_remote(["id", "-u"]).stdout.strip() != "0"
        pao("memory", "add", "billing exporter", f"the retry ledger is {marker}.csv")
        # the user's registration is in place before the spawn, so one session shows both: pao claims and writes
        # no session server, and the one the user registered answers (pao's pre-seed keeps it)
        _register_pao_mcp(account.home / ".gemini" / "settings.json", runtime.python)
        record: dict = {}
        try:
            spawned = pao("spawn", "LOOK-IT-UP for the billing exporter", "--folder", str(account.home / "billing"),
                          "--host", "gemini", "--json")
            record = json.loads(spawned.stdout)
            assert record["extra"]["mcp"] == [], "no server is claimed that Gemini CLI would not start"
            assert "pao: this Gemini CLI session has no pao MCP tools: Gemini CLI reads a system settings file only " \
                   "when root owns it" in spawned.stderr
            assert not list((account.home / ".local" / "share" / "pao").rglob("gemini-system-defaults.json"))
            tool_result_with(marker, account.home / "billing")  # the user's own registration of pao mcp answered
        finally:
            if record.get("pid"):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(os.getpgid(record["pid"]), signal.SIGKILL)  # Gemini CLI outlives the hang-up
            account.run_remote([*runtime.pao, "kill", "billing"], env=env)
            account.run_remote(["tmux", "-L", socket, "kill-server"], env=env)
