"""What every routed command shares: which machine runs an agent, and the remote pao's JSON over ssh.

The remote pao always runs as ``pao machine here -- COMMAND ... --json``: ``here`` stops
it from routing anything further (no machine ever calls back), and ``--json`` is what
this side reads. When any of those words is one a login shell could change (a topic's
spaces, quotes, ``!``...), the whole command line goes as one encoded word instead,
``pao machine run -- WORDS`` (:mod:`pao_machines.words`), which the remote pao decodes.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any, Sequence

from pao_agents.spec import machine_name, registry_options
from pao_machines.ssh import RemoteFailed, Ssh
from pao_machines.targets import Machine, resolve
from pao_machines.words import encode, neutral

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import AgentRecord

RUN = "run"
"""``pao machine run``: the remote pao's command line, encoded (older pao's do not have it)."""
COMMAND_TIME = 120.0
"""Seconds a routed command may take once connected (a send confirms on the agent's screen)."""


def machine_of(record: AgentRecord) -> str:
    """The machine a record says runs the agent."""
    return record.machine


def runs_here(record: AgentRecord, config: PaoConfig) -> bool:
    return record.machine in ("", machine_name(config))


def shared_registry(config: PaoConfig) -> bool:
    """Whether every machine keeps its agents in one registry (``[registry] url``), not a file each."""
    return bool(registry_options(config).url)


def remote_pao(machine: Machine, *argv: str) -> list[str]:
    """The words that run ``pao ARGV`` on ``machine`` only: as they are where every login shell reads them as
    themselves (a pao of any version takes them), else encoded, for ``pao machine run``."""
    program = shlex.split(machine.options.pao)
    if all(neutral(word) for word in argv):
        return [*program, "machine", "here", "--", *argv]
    return [*program, "machine", RUN, "--", encode(argv)]


def pao_words(command: str, *positionals: str, options: Sequence[str] = ()) -> list[str]:
    """``COMMAND OPTIONS -- POSITIONALS``: a topic, a text or a name that starts with ``-`` stays a value."""
    return [command, *options, "--", *positionals]


def call(config: PaoConfig, machine: Machine, argv: Sequence[str], *, timeout: float,
         stdin: str | None = None) -> dict[str, Any]:
    """Run ``pao ARGV --json`` on ``machine``; its JSON, or the remote pao's one-line error."""
    answer = Ssh(config.home).run(machine, remote_pao(machine, *argv), timeout=timeout, stdin=stdin)
    if answer.returncode != 0:
        raise remote_error(machine, answer.stderr, answer.returncode)
    try:
        data = json.loads(answer.stdout)
    except ValueError:
        raise RemoteFailed(f"machine {machine.name}: its pao did not answer in JSON "
                           f"({_last_line(answer.stdout) or 'nothing on stdout'})") from None
    if not isinstance(data, dict):
        raise RemoteFailed(f"machine {machine.name}: its pao answered {type(data).__name__}, not an object")
    return data


def remote_error(machine: Machine, stderr: str, code: int) -> RemoteFailed:
    """The remote pao's own last line (``pao: ...``), said to come from that machine."""
    line = _last_line(stderr)
    if code == 127 or "not found" in line and "pao" in line.split(":")[0:2]:
        error = RemoteFailed(f"machine {machine.name}: pao is not installed there (or not at "
                             f"{machine.options.pao!r}; set pao = \"...\" in [machines.{machine.name}])")
    elif code == 2 and f"invalid choice: '{RUN}'" in line:
        error = RemoteFailed(f"machine {machine.name}: its pao is too old for words a shell would change (it has no "
                             f"'pao machine {RUN}'): upgrade pao there; nothing was run")
    else:
        error = RemoteFailed(f"on {machine.name}: {line.removeprefix('pao: ') or f'pao exited with {code}'}")
    error.exit_code = code if 0 < code < 126 else 1  # type: ignore[misc]
    return error


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def machine_for(config: PaoConfig, record: AgentRecord) -> Machine:
    return resolve(config, machine_of(record))


