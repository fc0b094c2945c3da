"""Targets and the ssh command line, checked without a network: nothing typed becomes an option or a command."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from pao_core.plugins import load_config
from pao_core.errors import ConfigError, PaoError, ValidationError

from pao_machines.remote import remote_pao
from pao_machines.ssh import CONTROL_NAME, SOCKET_PATH_MAX, Ssh
from pao_machines.targets import resolve
from pao_machines.words import decode, remote_command


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
    ["send", "--json", "--", "api", "it's $(touch pwned); `id` && echo \"x\" > /tmp/y | cat"],
    ["spawn", "--folder=~/my project", "--json", "--", "fix *.py in ~/code\\"],
    ["send", "--", "a", "line one\nline two\ttab ünï ✓"],
    ["machine", "echo", "--", "", "-rf", "!!", "\udcff"],  # an empty word, a dash, history, undecodable bytes
])
def test_remote_words_reach_the_remote_pao_as_the_same_words_through_neutral_ones(tmp_path: Path,
                                                                                  words: list[str]) -> None:
    machine = resolve(_config(tmp_path, '[machines.b]\nhost = "b"\npao = "~/.local/bin/pao"\n'), "b")
    sent = remote_pao(machine, *words)
    command = remote_command(sent)
    assert re.fullmatch(r"~/[A-Za-z0-9_./:@%+,= -]+", command), command
    assert sent[:4] == ["~/.local/bin/pao", "machine", "run", "--"] and decode(sent[4]) == words


def test_plain_words_go_as_they_are_so_an_older_remote_pao_takes_them(tmp_path: Path) -> None:
    machine = resolve(_config(tmp_path, '[machines.b]\nhost = "b"\npao = "/opt/py/bin/python3 -m pao_core"\n'), "b")
    sent = remote_pao(machine, "status", "--json", "--", "api-2")
    assert remote_command(sent) == "/opt/py/bin/python3 -m pao_core machine here -- status --json -- api-2"


def test_only_the_pao_command_may_start_with_the_remote_home(tmp_path: Path) -> None:
    assert remote_command(["~/.local/bin/pao", "list"]) == "~/.local/bin/pao list"
    for words in (["pao", "~/x"], ["~/my bin/pao"], ["~user/pao"], ["~"], ["=pao"], ["pao", ""]):
        with pytest.raises(ValidationError, match="cannot go to a remote shell as it is"):
            remote_command(words)
    for pao in ("'~/my bin/pao'", "'/my bin/pao'", "pao ~/x", "%pao", "pao $X"):
        with pytest.raises(ConfigError, match="the pao command's words are letters, digits"):
            resolve(_config(tmp_path, f'[machines.b]\nhost = "b"\npao = "{pao}"\n'), "b")


def test_a_command_line_too_long_for_the_remote_shell_is_one_line(tmp_path: Path) -> None:
    machine = resolve(_config(tmp_path, '[machines.b]\nhost = "b"\n'), "b")
    with pytest.raises(ValidationError, match=r"too long: \d+ characters once encoded, at most 100000"):
        remote_command(remote_pao(machine, "send", "--", "api", "it's " * 16_000))
    with pytest.raises(ValidationError, match="NUL"):
        remote_pao(machine, "send", "--", "api", "a\0b")


@pytest.mark.parametrize("word", ["", "-", "a b", "W$", "Wy=", "A", "AAAAA", "~x"])
def test_words_that_are_not_an_encoded_command_line_are_one_line(word: str) -> None:
    with pytest.raises(ValidationError) as refused:
        decode(word)
    assert str(refused.value) == "machine run: WORDS is not a command line pao encoded (base64url)"


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
