"""The OpenSSH transport against a real sshd on 127.0.0.1 (a second account): words arrive intact, one
handshake serves many commands, an unknown host key or an unauthorised key is refused in one line, a
machine that is gone or silent costs at most its deadline, and spawn --on validates before anything runs."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from pao_core.plugins import load_config

from pao_machines.remote import call
from pao_machines.ssh import MachineRefused, MachineUnreachable, Ssh
from pao_machines.targets import resolve

from pao_testing.two_machines import Box


def _machine(box: Box, target: str = "box"):
    config = load_config(box.local_env)
    return config, resolve(config, target)


def _logins(box: Box) -> int:
    return (box.sshd.root / "sshd.log").read_text(errors="replace").count("Accepted publickey")


def test_words_arrive_intact_and_one_handshake_serves_every_command(box: Box) -> None:
    config, machine = _machine(box)
    ssh = Ssh(config.home, environ=box.local_env)
    hostile = ["it's $(touch pwned); `id` && echo \"x\" > y | cat", "~/*", "line\nbreak"]
    for _ in range(5):  # through the remote pao, encoded (tests/test_login_shells.py: under every login shell)
        assert call(config, machine, ["machine", "echo", "--", *hostile], timeout=20) == {"words": hostile}
    whoami = ssh.run(machine, ["id", "-un"], timeout=20)
    assert whoami.stdout.strip() == box.sshd.user
    assert not (box.sshd.home / "pwned").exists()
    assert _logins(box) == 1, "every command after the first must reuse the multiplexed connection"
    sockets = list(ssh.control_dir().iterdir())
    assert len(sockets) == 1 and ssh.control_dir().stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("length", [40, 46, 52, 58, 64])
def test_the_connection_is_made_whatever_the_length_of_pao_home(box: Box, length: int) -> None:
    """ssh binds its control socket at ``FOLDER/%C.<16 random characters>``: all of it must fit in ``sun_path``."""
    config, machine = _machine(box)
    base = Path(tempfile.mkdtemp(prefix="pao-h-", dir="/tmp"))
    try:
        home = base / ("h" * (length - len(str(base)) - len("//pao/ssh"))) / "pao"
        assert len(str(home / "ssh")) == length
        answer = Ssh(home, environ=box.local_env).run(machine, ["echo", "here"], timeout=20)
        assert answer.returncode == 0 and answer.stdout == "here\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_unknown_host_key_is_a_one_line_refusal_that_says_how_to_add_it(box: Box) -> None:
    config, machine = _machine(box)
    box.sshd.forget_host_key()
    started = time.monotonic()
    with pytest.raises(MachineRefused) as refused:
        Ssh(config.home, environ=box.local_env).run(machine, ["true"], timeout=20)
    message = str(refused.value)
    assert "host key of 127.0.0.1 is not known" in message and "ssh-keyscan -p" in message and "\n" not in message
    assert time.monotonic() - started < 10
    assert box.sshd.known_hosts.read_text() == "", "a key must never be trusted on first use"
    done = box.pao("status", "anything", check=False)  # through the CLI: no agent, nothing routed
    assert done.returncode == 1


def test_a_key_the_machine_does_not_accept_fails_at_once_without_a_prompt(box: Box, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    own = tmp_path / "ssh_config"  # the machine's host key, but not the key it accepts
    own.write_text(f"Host *\n  UserKnownHostsFile {box.sshd.known_hosts}\n  IdentitiesOnly yes\n")
    box.write_config()
    text = (box.local / "config.toml").read_text().replace(str(box.sshd.ssh_config), str(own))
    (box.local / "config.toml").write_text(text + f'identity_file = "{stranger}"\n')
    config, machine = _machine(box)
    started = time.monotonic()
    with pytest.raises(MachineRefused) as refused:
        Ssh(config.home, environ=box.local_env).run(machine, ["true"], timeout=30)
    assert f"refused the login of {box.sshd.user}" in str(refused.value) and "never asks for a password" in str(refused.value)
    assert time.monotonic() - started < 10


def test_a_stopped_machine_is_unreachable_at_once(box: Box) -> None:
    config, machine = _machine(box)
    box.sshd.stop()
    started = time.monotonic()
    with pytest.raises(MachineUnreachable, match="machine box is unreachable: .*Connection refused"):
        Ssh(config.home, environ=box.local_env).run(machine, ["true"], timeout=machine.options.deadline)
    assert time.monotonic() - started < 2


def test_a_silent_machine_costs_its_deadline_and_no_more(box: Box) -> None:
    with socket.socket() as silent:  # accepts, never says a word: no SSH banner
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        held: list[socket.socket] = []
        threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
        port = silent.getsockname()[1]
        config, machine = _machine(box, f"ssh://{box.sshd.user}@127.0.0.1:{port}")
        started = time.monotonic()
        with pytest.raises(MachineUnreachable):
            Ssh(config.home, environ={**box.local_env, "PAO_SSH_CONFIG": str(box.sshd.ssh_config)}).run(
                machine, ["true"], timeout=machine.options.deadline)
        elapsed = time.monotonic() - started
        for connection in held:
            connection.close()
    assert machine.options.deadline == 2.0 and elapsed < 2.0 + 1.0


def test_spawn_on_validates_before_any_connection_and_registers_nothing(box: Box) -> None:
    before = _logins(box)
    for args, words in (
        (["--on", "-oProxyCommand=touch /tmp/x", "--folder", "~/p"], "not a machine"),
        (["--on", "box"], "needs --folder"),
        (["--on", "box", "--folder", "~/p", "--name", "bad name!"], "not allowed"),
        (["--on", "nosuch@", "--folder", "~/p"], "not an ssh destination"),
    ):
        done = box.pao("spawn", "fix the parser", *args, check=False)
        assert done.returncode != 0 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert _logins(box) == before
    assert json.loads(box.pao("list", "--json").stdout) == {"agents": []}


def test_a_failed_remote_spawn_leaves_no_agent_on_either_machine(box: Box) -> None:
    done = box.pao("spawn", "fix the parser", "--on", "box", "--folder", "~/missing", "--name", "p", check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == "pao: on box: folder ~/missing does not exist"
    assert json.loads(box.pao("list", "--json").stdout) == {"agents": []}
    assert json.loads(box.remote_pao("list", "--json").stdout) == {"agents": []}


def test_machine_check_reports_the_remote_pao_and_tmux(box: Box) -> None:
    done = box.pao("machine", "check", "box", "--json")
    report = json.loads(done.stdout)
    assert report["ok"] and report["remote"]["pao"] and report["remote"]["tmux"].startswith("tmux ")
    assert report["first_ms"] > 0 and report["again_ms"] > 0


def test_attach_says_in_one_line_what_went_wrong_there_or_on_the_way(box: Box) -> None:
    from pao_agents.spec import open_registry
    from pao_agents.spec import AgentRecord

    open_registry(load_config(box.local_env)).add(
        AgentRecord("far", str(box.sshd.home / "far"), "t", "claude-code", "tmux", "pao:%0", state="busy", machine="box"))
    gone = box.pao("attach", "far", check=False)  # the machine no longer runs it: its pao says so
    assert gone.returncode == 1 and gone.stderr.strip().splitlines() == ["pao: no agent named 'far' (see 'pao list')"]
    box.sshd.stop()
    down = box.pao("attach", "far", check=False)
    assert down.returncode == 1 and len(down.stderr.strip().splitlines()) == 1, down.stderr
    assert down.stderr.startswith("pao: machine box is unreachable: ") and "Connection refused" in down.stderr
