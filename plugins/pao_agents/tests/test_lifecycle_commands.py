"""End to end: ``pao spawn`` and the lifecycle commands, a real fake agent in real tmux."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

from pao_testing.lifecycle.fake_host import received
from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_agents.registry import JsonRegistry


def _registry(pao: Pao) -> JsonRegistry:
    return JsonRegistry(pao.home)


@pytest.mark.hook("pao_host_agents")
@pytest.mark.hook("pao_readiness_detectors")
@pytest.mark.hook("pao_agent_spawned")
@pytest.mark.hook("pao_briefing_written")
def test_spawn_runs_every_step_and_nudges(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = pao.folder("code/api")
    monkeypatch.setenv("FAKE_AGENT_ECHO_ENV", "PAO_TEST_MARKER")
    monkeypatch.setenv("PAO_TEST_MARKER", "from-the-spawning-process-71")
    code, out, err = pao("spawn", "fix the login bug in ./code/api", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["name"] == "fix-login-bug"  # from the topic's words, not the folder's name
    assert record["folder"] == str(folder.resolve())
    assert record["topic"] == "fix the login bug"
    assert record["host"] == "fake" and record["state"] == "busy"
    assert record["target"].startswith(pao.socket + ":%")
    assert record["pid"] and record["briefing_hash"]
    assert [s["step"] for s in record["steps"]] == [
        "1 validate", "1 window", "2-3 gather+compose", "4 deliver", "5 pre-seed", "6 spawn", "7 ready", "7 nudge",
    ]
    for label in ("1 validate", "4 deliver", "6 spawn", "7 ready", "7 nudge"):
        assert f"pao: {label}" in err
    assert (folder / "CONTEXT_BRIEFING.md").read_text().startswith("# Context briefing: fix the login bug")
    assert "CONTEXT_BRIEFING.md" in (folder / "AGENTS.md").read_text()
    assert pao.plugin.host.preseeded == [str(folder.resolve())]
    assert pao.plugin.written == [(str(folder.resolve()), str(folder.resolve() / "CONTEXT_BRIEFING.md"))]
    assert [r.name for r in pao.plugin.spawned] == ["fix-login-bug"] and pao.plugin.spawned[0].state == "busy"
    messages = received(folder)
    assert [m["text"] for m in messages] == ["Task: fix the login bug. Read CONTEXT_BRIEFING.md first."]
    assert record["session_id"] == messages[0]["session"]
    # the window is named after the agent, runs in the folder, with the spawning environment
    panes = pao.tmux("list-panes", "-a", "-F", "#{window_name} #{pane_current_path}").stdout.split()
    assert panes == ["fix-login-bug", str(folder.resolve())]
    screen = pao.tmux("capture-pane", "-p", "-t", record["target"].split(":")[1]).stdout
    assert "PAO_TEST_MARKER=from-the-spawning-process-71" in screen


def test_no_nudge_and_derived_names_are_unique(pao: Pao) -> None:
    pao.folder("svc")
    first = pao("spawn", "look around", "--folder", "svc", "--no-nudge", "--json")
    second = pao("spawn", "Look around!", "--folder", "svc", "--no-nudge", "--json")
    third = pao("spawn", "!!!", "--folder", "svc", "--no-nudge", "--json")  # no word to name it by: the folder's name
    assert first[0] == 0 and second[0] == 0 and third[0] == 0, first[2] + second[2] + third[2]
    assert [json.loads(out)["name"] for _, out, _ in (first, second, third)] == ["look-around", "look-around-2", "svc"]
    assert json.loads(first[1])["state"] == "ready"
    assert "7 nudge" not in first[2]
    assert received(pao.workdir / "svc") == []


def test_send_list_status_broadcast_kill(pao: Pao) -> None:
    for name in ("one", "two"):
        assert pao("spawn", "wait", "--folder", str(pao.folder(name)), "--name", name, "--no-nudge")[0] == 0
    hostile = "a; kill-server ; Enter C-c $(rm -rf /) `id` 'quoted' \"dq\""
    code, _, err = pao("send", "one", hostile)
    assert code == 0, err
    assert [m["text"] for m in received(pao.workdir / "one")] == [hostile]
    assert pao.tmux("list-sessions").returncode == 0  # the server is still up

    code, out, _ = pao("list", "--json")
    listed = json.loads(out)["agents"]
    assert [(a["name"], a["host"], a["observed"]["state"]) for a in listed] == [
        ("one", "fake", "ready"), ("two", "fake", "ready")
    ]
    code, out, _ = pao("list")
    assert out.splitlines()[0].split() == ["NAME", "STATE", "HOST", "TERMINAL", "AGE", "TOPIC", "FOLDER"]

    code, _, err = pao("broadcast", "status please")
    assert code == 0, err
    for name in ("one", "two"):
        assert received(pao.workdir / name)[-1]["text"] == "status please"
    code, out, err = pao("broadcast", "only two", "--only", "two", "--json")
    assert code == 0, err
    assert json.loads(out) == {"action": "broadcast", "results": {"two": {"sent": True, "error": None}}, "failed": []}
    assert received(pao.workdir / "two")[-1]["text"] == "only two"
    assert received(pao.workdir / "one")[-1]["text"] == "status please"

    code, out, _ = pao("status", "two", "--json", "--screen")
    status = json.loads(out)
    assert status["observed"]["state"] in ("ready", "busy")
    assert "only two" in status["screen"]

    code, out, err = pao("kill", "one", "--json")
    assert (code, json.loads(out)["action"], json.loads(out)["agent"]["name"]) == (0, "kill", "one"), err
    assert [r.name for r in _registry(pao).list()] == ["two"]
    windows = pao.tmux("list-windows", "-a", "-F", "#{window_name}").stdout.split()
    assert windows == ["two"]


def test_long_and_multiline_text_goes_through_a_placeholder(pao: Pao) -> None:
    assert pao("spawn", "wait", "--folder", str(pao.folder("big")), "--name", "big", "--no-nudge")[0] == 0
    text = "\n".join(f"line {i}: " + "x" * 60 for i in range(40))
    code, _, err = pao("send", "big", text)
    assert code == 0, err
    assert received(pao.workdir / "big")[-1]["text"] == text


def test_a_swallowed_enter_is_pressed_once_more(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AGENT_SWALLOW_ENTER", "1")
    code, _, err = pao("spawn", "do it", "--folder", str(pao.folder("deaf")), "--name", "deaf")
    assert code == 0, err
    assert [m["text"] for m in received(pao.workdir / "deaf")] == ["Task: do it. Read CONTEXT_BRIEFING.md first."]


def test_enter_never_taken_is_one_clear_error(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AGENT_SWALLOW_ENTER", "5")
    assert pao("spawn", "x", "--folder", str(pao.folder("stuck")), "--name", "stuck", "--no-nudge")[0] == 0
    started = time.monotonic()
    code, _, err = pao("send", "stuck", "hello there")
    assert code != 0
    assert err.strip() == "pao: stuck did not take the text: Enter was pressed twice and the input still holds it"
    assert time.monotonic() - started < 10


def test_trust_dialog_bails_at_once_and_cleans_up(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AGENT_DIALOG", "1")
    started = time.monotonic()
    code, _, err = pao("spawn", "x", "--folder", str(pao.folder("wary")), "--name", "wary")
    assert code != 0
    assert time.monotonic() - started < 5  # far below the 15 s ready timeout
    assert err.strip().splitlines()[-1] == (
        "pao: wary is waiting: the agent asks whether to trust the folder; answer it in the window"
    )
    assert _registry(pao).list() == []
    assert "Do you trust the files" in (pao.home / "failed" / "wary.screen.txt").read_text()
    assert pao.tmux("list-windows", "-a").stdout == ""


def test_agent_exiting_at_start_is_reported(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AGENT_EXIT", "fatal: cannot reach the model service")
    code, _, err = pao("spawn", "x", "--folder", str(pao.folder("crash")), "--name", "crash")
    assert code != 0
    assert err.strip().splitlines()[-1] == "pao: crash exited before it was ready: fatal: cannot reach the model service"
    assert _registry(pao).list() == []


def test_checkpoint_pause_resume_and_resume_after_death(pao: Pao) -> None:
    folder = pao.folder("keep")
    assert pao("spawn", "remember", "--folder", str(folder), "--name", "keep")[0] == 0
    assert pao("send", "keep", "second message")[0] == 0
    session = received(folder)[0]["session"]

    code, out, _ = pao("checkpoint", "keep")
    saved = json.loads(open(out.strip()).read())
    code, out, _ = pao("checkpoint", "keep", "--json")
    result = json.loads(out)
    assert (result["action"], result["agent"]["name"]) == ("checkpoint", "keep")
    assert json.loads(open(result["checkpoint"]).read())["session_id"] == session
    assert saved["session_id"] == session
    assert saved["briefing_hash"] == _registry(pao).get("keep").briefing_hash
    assert "second message" in saved["screen"]
    assert saved["briefing"].startswith("# Context briefing: remember")

    code, out, _ = pao("pause", "keep", "--json")
    paused = json.loads(out)
    assert (code, paused["action"], paused["agent"]["state"]) == (0, "pause", "paused") and paused["checkpoint"]
    assert _registry(pao).get("keep").state == "paused"
    assert pao.tmux("list-windows", "-a").stdout == ""
    code, _, err = pao("send", "keep", "hello")
    assert code != 0 and "is paused" in err

    (folder / "CONTEXT_BRIEFING.md").unlink()  # resume restores it from the checkpoint
    code, out, err = pao("resume", "keep", "--json")
    assert code == 0, err
    resumed = json.loads(out)
    assert (resumed["action"], resumed["agent"]["state"]) == ("resume", "ready") and resumed["elapsed_ms"] > 0
    record = _registry(pao).get("keep")
    assert record.state == "ready" and record.session_id == session
    assert (folder / "CONTEXT_BRIEFING.md").read_text() == saved["briefing"]
    code, out, err = pao("send", "keep", "after resume", "--json")
    assert (code, json.loads(out)["action"], json.loads(out)["agent"]["name"]) == (0, "send", "keep"), err
    assert {m["session"] for m in received(folder)} == {session}

    # the process dies behind pao's back: status says dead, resume relaunches it
    pao.tmux("kill-server")
    code, out, _ = pao("status", "keep", "--json")
    assert json.loads(out)["observed"]["state"] == "dead"
    code, _, err = pao("resume", "keep")
    assert code == 0, err
    assert pao("send", "keep", "after death")[0] == 0
    assert [m["text"] for m in received(folder)][-1] == "after death"
    assert {m["session"] for m in received(folder)} == {session}
    code, _, err = pao("resume", "keep")
    assert code != 0 and err.strip() == "pao: agent 'keep' is running; nothing to resume"


def test_monitor_shows_states(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    assert pao("spawn", "x", "--folder", str(pao.folder("calm")), "--name", "calm", "--no-nudge")[0] == 0
    monkeypatch.setenv("FAKE_AGENT_BUSY", "30")
    assert pao("spawn", "x", "--folder", str(pao.folder("toiling")), "--name", "toiling")[0] == 0
    assert pao("spawn", "x", "--folder", str(pao.folder("gone")), "--name", "gone", "--no-nudge")[0] == 0
    pao.tmux("kill-window", "-t", _registry(pao).get("gone").target.split(":")[1])
    code, out, _ = pao("monitor", "--json")
    states = {a["name"]: a["observed"]["state"] for a in json.loads(out)["agents"]}
    assert states == {"calm": "ready", "toiling": "busy", "gone": "dead"}
    code, out, _ = pao("monitor", "--once")
    assert out.split()[:7] == ["NAME", "MACHINE", "HOST", "STATE", "AGE", "LAST", "EVENT"]
    rows = {line.split()[0]: line.split()[3] for line in out.splitlines()[1:]}
    assert rows == {"calm": "ready", "toiling": "busy", "gone": "dead"}
    assert _registry(pao).get("gone").state == "dead"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["spawn", "x", "--name", "../evil"], "agent name '../evil' is not allowed"),
        (["spawn", "x", "--name=-rf"], "agent name '-rf' is not allowed"),
        (["spawn", "x", "--name", "a" * 65], "is not allowed"),
        (["spawn", "x", "--name", "ok\x1b[2J"], "the agent name holds a control character"),
        (["spawn", "fix\x1b]0;pwned\x07 it"], "the topic holds a control character (U+001B at position 3)"),
        (["spawn", "fix\nit"], "the topic holds a control character (U+000A"),
        (["spawn", "x", "--folder", "/nonexistent/folder"], "folder /nonexistent/folder does not exist"),
        (["spawn", "x", "--folder", "bad\x00dir"], "the folder holds a control character"),
        (["spawn", "work in ./missing/dir"], "folder ./missing/dir (named in the topic) does not exist"),
        (["spawn", "   "], "the topic is empty"),
        (["spawn", "x", "--host", "nosuch"], "unknown host agent 'nosuch' (known: claude-code, codex, fake, gemini)"),
        (["spawn", "x", "--terminal", "nosuch"], "unknown terminal 'nosuch' (known: tmux)"),
        (["send", "ghost", "hi"], "no agent named 'ghost' (see 'pao list')"),
        (["kill", "ghost"], "no agent named 'ghost'"),
        (["status", "ghost"], "no agent named 'ghost'"),
        (["resume", "ghost"], "no agent named 'ghost'"),
        (["broadcast", "hi", "--only", "ghost"], "no agent named 'ghost'"),
    ],
)
def test_bad_input_is_one_line_and_starts_nothing(pao: Pao, args: list[str], message: str) -> None:
    code, out, err = pao(*args)
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not pao.home.joinpath("agents.json").exists() or _registry(pao).list() == []
    assert not list(pao.workdir.rglob("CONTEXT_BRIEFING.md"))
    assert pao.tmux("list-sessions").returncode != 0  # no tmux server was ever started


def test_duplicate_name_and_dead_server(pao: Pao) -> None:
    assert pao("spawn", "x", "--folder", str(pao.folder("dup")), "--name", "dup", "--no-nudge")[0] == 0
    code, _, err = pao("spawn", "y", "--folder", str(pao.folder("other")), "--name", "dup")
    assert code != 0 and err.strip() == "pao: an agent named 'dup' already exists (pick another --name)"
    assert not (pao.workdir / "other" / "CONTEXT_BRIEFING.md").exists()
    pao.tmux("kill-server")
    code, _, err = pao("send", "dup", "hi")
    assert code != 0
    assert err.strip() == "pao: agent 'dup' is not running (its terminal is gone); 'pao resume dup' restarts it"
    code, out, _ = pao("list", "--json")
    assert json.loads(out)["agents"][0]["observed"]["state"] == "dead"
    assert pao("kill", "dup")[0] == 0  # a dead server is no obstacle to forgetting the agent
    assert _registry(pao).list() == []


def test_concurrent_pao_processes_never_lose_an_agent(pao: Pao) -> None:
    """Five ``pao spawn`` processes on one folder at once, and kills racing spawns."""
    pao.folder("shared")
    procs = [pao.subprocess("spawn", "together", "--folder", "shared", "--no-nudge") for _ in range(5)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in procs]
    assert all(code == 0 for code, _ in results), results
    names = sorted(r.name for r in _registry(pao).list())
    assert names == ["together", "together-2", "together-3", "together-4", "together-5"]
    windows = sorted(pao.tmux("list-windows", "-a", "-F", "#{window_name}").stdout.split())
    assert windows == names

    killers = [pao.subprocess("kill", name) for name in names[:3]]
    spawners = [pao.subprocess("spawn", "more", "--folder", "shared", "--name", f"late-{i}", "--no-nudge") for i in range(2)]
    for proc in killers + spawners:
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert sorted(r.name for r in _registry(pao).list()) == ["late-0", "late-1", "together-4", "together-5"]


def test_an_agent_that_never_gets_ready_costs_its_timeout(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    (pao.home.parent / "config.toml").write_text('[spawn]\nhost = "fake"\nready_timeout = 1.0\n')
    monkeypatch.setenv("FAKE_AGENT_START_DELAY", "30")
    started = time.monotonic()
    code, _, err = pao("spawn", "x", "--folder", str(pao.folder("slow")), "--name", "slow")
    assert code != 0
    assert time.monotonic() - started < 1.0 + 10  # the deadline, plus start-up and clean-up on a loaded machine
    assert err.strip().splitlines()[-1] == (
        "pao: slow was not ready after 1 s (screen: unknown; last line: starting fake agent…)"
    )
    assert _registry(pao).list() == [] and pao.tmux("list-windows", "-a").stdout == ""


def test_send_to_a_busy_agent_waits_for_the_text_to_leave_the_input(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    """Activity on a screen that was already busy proves nothing: the first Enter is lost here."""
    monkeypatch.setenv("FAKE_AGENT_BUSY", "30")
    monkeypatch.setenv("FAKE_AGENT_SWALLOW_BUSY_ENTER", "1")
    assert pao("spawn", "x", "--folder", str(pao.folder("toil")), "--name", "toil")[0] == 0  # busy for 30 s from the nudge
    code, _, err = pao("send", "toil", "queued while busy")
    assert code == 0, err
    assert received(pao.workdir / "toil")[-1]["text"] == "queued while busy"


def test_monitor_refreshes_until_interrupted(pao: Pao) -> None:
    import subprocess
    import sys

    from pao_testing.lifecycle.fixtures import RUN_PAO

    assert pao("spawn", "x", "--folder", str(pao.folder("watched")), "--name", "watched", "--no-nudge")[0] == 0
    log = pao.workdir / "monitor.out"
    with open(log, "w") as out:
        monitor = subprocess.Popen([sys.executable, RUN_PAO, "monitor", "--interval", "0.2"], cwd=pao.workdir,
                                   stdout=out, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30  # several refreshes, however loaded the machine
        while log.read_text().count("NAME  ") < 3 and time.monotonic() < deadline and monitor.poll() is None:
            time.sleep(0.2)
        monitor.terminate()
        monitor.wait(timeout=10)
    shown = log.read_text()
    assert shown.count("NAME  ") >= 3 and re.search(r"\nwatched +\S+ +fake +ready ", shown), shown

def test_kill_without_the_terminal_plugin_changes_nothing_until_told_to_forget(pao: Pao) -> None:
    import datetime as dt

    from pao_agents.spec import AgentRecord

    folder = pao.folder("mac")
    record = AgentRecord(name="mac", folder=str(folder), topic="t", host="fake", terminal="terminalapp-uninstalled",
                         target="window 4/tab 1", created_at=dt.datetime.now(dt.timezone.utc))
    _registry(pao).add(record)
    code, _, err = pao("kill", "mac")
    assert code == 2 and err.count("\n") == 1
    assert "unknown terminal" in err and "pao kill mac --forget" in err
    assert [r.name for r in _registry(pao).list()] == ["mac"]
    code, _, err = pao("kill", "mac", "--forget")
    assert code == 0 and "forgot mac" in err
    assert _registry(pao).list() == []


def test_kill_takes_back_the_file_channel_only_when_no_other_agent_uses_it(pao: Pao) -> None:
    """A host without a session channel gets CONTEXT_BRIEFING.md and a marked block; kill removes exactly those."""
    folder = pao.folder("shared")
    rules = "# Rules\nRun the tests.\n"
    (folder / "AGENTS.md").write_text(rules)  # the fake host's context file, the user's own text
    (folder / "notes.txt").write_text("mine\n")
    for name in ("one", "two"):
        assert pao("spawn", "x", "--folder", str(folder), "--name", name, "--no-nudge")[0] == 0
    assert (folder / "CONTEXT_BRIEFING.md").is_file() and "pao:briefing:begin" in (folder / "AGENTS.md").read_text()

    assert pao("kill", "one")[0] == 0
    assert (folder / "CONTEXT_BRIEFING.md").is_file(), "agent two still reads the briefing file"
    assert pao("kill", "two")[0] == 0
    assert sorted(p.name for p in folder.iterdir() if p.name != ".fake-agent") == ["AGENTS.md", "notes.txt"]  # the agent's own
    assert (folder / "AGENTS.md").read_text() == rules and (folder / "notes.txt").read_text() == "mine\n"


def test_send_waits_for_the_cli_s_receipt_of_the_prompt(pao: Pao) -> None:
    """An agent whose CLI reports events: ``send`` succeeds only once the CLI reported that prompt submitted
    (UserPromptSubmit), pressing the submit key once more in between; without it, one line and exit 1."""
    folder = pao.folder("rx")
    assert pao("spawn", "wait", "--folder", str(folder), "--name", "rx", "--no-nudge")[0] == 0
    registry = _registry(pao)
    agent_dir = pao.home / "agents" / "rx"
    agent_dir.mkdir(parents=True, exist_ok=True)
    log = agent_dir / "events.jsonl"
    stale = {"event": {"hook_event_name": "UserPromptSubmit", "prompt": "second words", "session_id": "s"},
             "at": int(time.time()) - 100}
    log.write_text(json.dumps(stale) + "\n")  # an earlier prompt of the same text is no receipt for this one
    registry.update("rx", extra={**registry.get("rx").extra, "events": True, "agent_dir": str(agent_dir)})

    started = time.monotonic()
    code, _, err = pao("send", "rx", "first words", "--receipt-timeout", "0.5")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "rx shows the text taken, but its CLI reported no submitted prompt within 1 s" in err
    assert 1.0 <= time.monotonic() - started < 30
    assert [m["text"] for m in received(folder)] == ["first words"]  # typed and submitted, only unconfirmed

    def hook() -> None:  # what the CLI's UserPromptSubmit hook appends once it took the prompt
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up and "second words" not in [m["text"] for m in received(folder)]:
            time.sleep(0.05)
        event = {"event": {"hook_event_name": "UserPromptSubmit", "prompt": "second  words", "session_id": "s"},
                 "at": int(time.time())}
        with log.open("a") as stream:
            stream.write(json.dumps(event) + "\n")

    writer = threading.Thread(target=hook)
    writer.start()
    code, out, err = pao("send", "rx", "second words", "--json")
    writer.join()
    assert code == 0, err
    assert json.loads(out)["receipt"] is not None
    assert pao("send", "rx", "x", "--receipt-timeout", "-1")[0] == 2
