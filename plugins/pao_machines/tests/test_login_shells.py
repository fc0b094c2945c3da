"""Remote words under every login shell: ssh hands its command to the remote user's login shell, and sh, bash,
dash, zsh, fish and tcsh each read quotes, backslashes, ``!`` and newlines their own way. Against a real sshd on
127.0.0.1 whose account logs in with each of them, the words pao sends arrive byte for byte (the remote pao
echoes them, and a remote spawn names its folder), no word runs as a command, ``~/`` in the pao command is
that account's HOME, and a remote pao too old to decode words says so in one line."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest

from pao_core.plugins import load_config
from pao_core.errors import ValidationError

from pao_machines.remote import call
from pao_machines.ssh import Ssh
from pao_machines.targets import resolve

from pao_testing.two_machines import Box, two_machines

SHELLS = ("sh", "bash", "dash", "zsh", "fish", "tcsh")

HOSTILE = [
    "ends in a backslash\\", ";touch PWNED-semicolon;#", "two words", "it's", '"double"', "back\\slash", "\\",
    "'", "\\'", "$(touch PWNED-dollar)", "`touch PWNED-backtick`", "$HOME", "${HOME}", "!!", "fix!it", "!-1",
    "a\nnewline", "\n", "a\ttab", "*", "?", "[a]", "{a,b}", "a~b", "~", "~/x", "=ls", "%self", "^x", "#comment",
    "ünïcødé ✓ 日本", "-rf", "--json", "", " ", "&& touch PWNED-and", "| touch PWNED-pipe", ">PWNED-redirect",
    "(touch PWNED-paren)", "x\r\n", "trailing\\",
]
"""Words each shell would read differently; ``PWNED-*``: a file that exists only if a word ran."""


@pytest.fixture(scope="module", params=SHELLS)
def shell_box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    """The second machine, its account logging in with one shell; its pao command ``~/bin/pao`` (from its HOME).
    One per shell for this module: its tests only read that machine (what ran there shows as ``PWNED-*``)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: an account whose login shell is each of the shells (as scripts/test runs)")
    shell = shutil.which(request.param)
    assert shell, f"{request.param} is not installed (scripts/setup --test installs it)"
    with two_machines(tmp_path_factory.mktemp(f"shell-{request.param}"), None, {}, shell=shell) as box:
        assert box.sshd.run_remote(["getent", "passwd", box.sshd.user]).stdout.strip().endswith(f":{shell}")
        box.remote_script("bin/pao", f'#!/bin/sh\nexec {" ".join(box.runtime.pao)} "$@"\n')
        box.use_remote_pao("~/bin/pao")
        yield box


def _pwned(home: Path) -> list[str]:
    return [os.path.join(folder, name) for folder, dirs, files in os.walk(home) for name in [*dirs, *files]
            if "PWNED" in name]


def test_every_word_arrives_byte_for_byte_and_none_runs(shell_box: Box) -> None:
    box = shell_box
    config = load_config(box.local_env)
    machine = resolve(config, "box")
    assert machine.options.pao == "~/bin/pao"
    assert call(config, machine, ["machine", "echo", "--", *HOSTILE], timeout=60) == {"words": HOSTILE}
    # each alone too (a word's meaning in a shell may hang on what follows it), in sessions side by side on the
    # connection the first call opened: each waits mostly for the remote login shell and pao to start
    with ThreadPoolExecutor(max_workers=4) as pool:
        alone = list(pool.map(lambda word: call(config, machine, ["machine", "echo", "--", word], timeout=60), HOSTILE))
    assert [(word, answer) for word, answer in zip(HOSTILE, alone) if answer != {"words": [word]}] == []
    # the case: a topic ending in a backslash, then a folder holding a command, through spawn --on
    folder = "~/x;touch PWNED-folder;#"
    done = box.pao("spawn", "--on", "box", f"--folder={folder}", "--", "-rf the parser! $HOME `id`\\", check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"pao: on box: folder {folder} does not exist"
    checked = json.loads(box.pao("machine", "check", "box", "--json").stdout)  # plain words, then encoded ones
    assert checked["ok"] and checked["remote"]["pao"], checked
    assert _pwned(box.sshd.home) == [] and _pwned(box.local) == []


def test_a_word_a_shell_could_change_never_reaches_it_as_it_is(shell_box: Box) -> None:
    config = load_config(shell_box.local_env)
    machine = resolve(config, "box")
    ssh = Ssh(config.home, environ=shell_box.local_env)
    assert ssh.run(machine, ["echo", "plain-words_1.0", "a=b", "--x", "/p:q@r%s+t,u"], timeout=60).stdout == \
        "plain-words_1.0 a=b --x /p:q@r%s+t,u\n"
    for word in ("it's", "a b", "~/x", "$HOME", "", "=ls", "x\\"):
        with pytest.raises(ValidationError, match="cannot go to a remote shell as it is"):
            ssh.run(machine, ["echo", word], timeout=60)


OLD_PAO = '''#!{python}
"""pao as it was before 'pao machine run': this pao's own command line without that subcommand."""
import argparse

add_parser = argparse._SubParsersAction.add_parser


def without_run(self, name, **kwargs):
    parser = add_parser(self, name, **kwargs)
    if self.dest == "machine_command" and name == "run":
        del self._name_parser_map[name]
    return parser


argparse._SubParsersAction.add_parser = without_run
from pao_core.cli import run  # noqa: E402

run()
'''


def test_a_remote_pao_too_old_to_decode_words_says_so_in_one_line(box: Box) -> None:
    box.remote_script("bin/oldpao", OLD_PAO.format(python=box.runtime.python))
    box.use_remote_pao("~/bin/oldpao")
    box.remote_folder("api")
    done = box.pao("spawn", "fix the parser's tests", "--on", "box", "--folder", "~/api", check=False)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == (
        "pao: machine box: its pao is too old for words a shell would change (it has no 'pao machine run'): "
        "upgrade pao there; nothing was run")
    assert json.loads(box.pao("list", "--json").stdout) == {"agents": []}
    assert json.loads(box.remote_pao("list", "--json").stdout) == {"agents": []}
    checked = json.loads(box.pao("machine", "check", "box", "--json", check=False).stdout)
    assert checked["remote"]["pao"] and not checked["ok"] and "too old" in checked["error"]  # plain words still work
