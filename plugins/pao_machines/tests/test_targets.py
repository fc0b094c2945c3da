"""Targets and the ssh command line, checked without a network: nothing typed becomes an option or a command."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from pao_core.config import load_config
from pao_core.errors import ConfigError, PaoError, ValidationError

from pao_machines.ssh import CONTROL_NAME, SOCKET_PATH_MAX, Ssh, remote_command
from pao_machines.targets import resolve


def _config(tmp_path: Path, text: str = ""):
    (tmp_path / "config.toml").write_text(text)
    env = {"PAO_CONFIG": str(tmp_path / "config.toml"), "PAO_HOME": str(tmp_path / "pao")}
    return load_config(env)


def test_the_three_forms_of_a_target(tmp_path: Path) -> None:
    config = _config(tmp_path, '[machines.build]\nhost = "build.example"\nuser = "dev"\nport = 2222\n'
                               'identity_file = "~/.ssh/build"\npao = "~/.local/bin/pao"\ndeadline = 3\n')
    build = resolve(config, "build")
    assert (build.name, build.options.host, build.options.user, build.options.port) == ("build", "build.example", "dev", 2222)
    assert build.options.deadline == 3 and build.options.pao == "~/.local/bin/pao"
    plain = resolve(config, "me@gpu-01")
    assert (plain.name, plain.options.user, plain.options.host, plain.options.port) == ("me@gpu-01", "me", "gpu-01", None)
    assert resolve(config, "gpu-01").options.user is None
    url = resolve(config, "ssh://me@10.0.0.7:2200")
    assert (url.options.user, url.options.host, url.options.port, url.options.deadline) == ("me", "10.0.0.7", 2200, 2.0)


@pytest.mark.parametrize("target", [
    "-oProxyCommand=touch /tmp/pwned", "me@-oProxyCommand=x", "two words", "host;reboot", "me@host\n",
    "ssh://me:secret@host", "ssh://host/path", "ssh://host:99999", "ssh://-x@host", "", "$(id)@host", "a@b@",
])
def test_a_target_that_could_become_an_option_or_a_command_is_refused(tmp_path: Path, target: str) -> None:
    with pytest.raises(ValidationError) as refused:
        resolve(_config(tmp_path), target)
    assert "\n" not in str(refused.value)


def test_a_bad_machine_table_names_the_file_and_the_key(tmp_path: Path) -> None:
    config = _config(tmp_path, '[machines.build]\nhost = "build.example"\nport = 0\n')
    with pytest.raises(ConfigError) as bad:
        resolve(config, "build")
    assert "machines.build" in str(bad.value) and "port" in str(bad.value) and str(tmp_path) in str(bad.value)
    with pytest.raises(ConfigError, match="unknown key 'hots'"):
        resolve(_config(tmp_path, '[machines.b]\nhots = "x"\nhost = "y"\n'), "b")


@pytest.mark.parametrize("words", [
    ["pao", "send", "api", "it's $(touch pwned); `id` && echo \"x\" > /tmp/y | cat"],
    ["pao", "spawn", "fix *.py in ~/code", "--folder", "~/my project"],
    ["pao", "send", "a", "line one\nline two\ttab"],
])
def test_remote_words_reach_the_remote_shell_as_the_same_words(words: list[str]) -> None:
    assert shlex.split(remote_command(words)) == words


def test_a_pao_command_under_the_remote_home_is_left_to_the_remote_shell() -> None:
    assert remote_command(["~/.local/bin/pao", "list"]) == "~/.local/bin/pao list"
    assert remote_command(["~/my bin/pao"]) == "~/'my bin/pao'"


def test_the_ssh_command_line_never_prompts_never_trusts_and_multiplexes(tmp_path: Path) -> None:
    config = _config(tmp_path, '[machines.build]\nhost = "build.example"\nuser = "dev"\nport = 2222\n'
                               'identity_file = "/keys/build"\n')
    machine = resolve(config, "build")
    home = Path(tempfile.mkdtemp(prefix="pao-t-")) / "pao"  # short: a pytest folder is too long for a socket
    argv = Ssh(home, environ={}).argv(machine, ["pao", "list", "--json"], connect_timeout=2)
    options = [argv[i + 1] for i, word in enumerate(argv) if word == "-o"]
    assert "BatchMode=yes" in options and "StrictHostKeyChecking=yes" in options and "ConnectTimeout=2" in options
    assert "ControlMaster=auto" in options and any(o.startswith("ControlPersist=") for o in options)
    control = Path(next(o for o in options if o.startswith("ControlPath=")).split("=", 1)[1]).parent
    assert control == home / "ssh" and stat.S_IMODE(control.stat().st_mode) == 0o700
    shutil.rmtree(home.parent)
    assert argv[-3:] == ["--", "build.example", "pao list --json"]
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "dev"
    assert argv[argv.index("-i") + 1] == "/keys/build"


def test_a_long_pao_home_keeps_its_sockets_in_a_private_folder_that_fits(tmp_path: Path) -> None:
    home = tmp_path / ("deep-" * 20) / "pao"
    folder = Ssh(home, environ={}).control_dir()
    assert len(str(folder)) + CONTROL_NAME <= SOCKET_PATH_MAX and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.stat().st_uid == os.getuid()
    folder.chmod(0o755)
    with pytest.raises(PaoError, match="private"):
        Ssh(home, environ={}).control_dir()
    folder.chmod(0o700)
