"""Where an agent runs: a ``[machines.NAME]`` table or an ssh destination, validated before anything starts.

A target is one of:

- a name configured under ``[machines.NAME]`` (``host``, ``user``, ``port``,
  ``identity_file``, ``pao``, ``deadline``, ``ssh_config``);
- ``[user@]host``, as ``ssh`` takes it;
- ``ssh://[user@]host[:port]``.

Every part is checked against a strict pattern, so nothing the user typed can become
an ``ssh`` option (a host starting with ``-``) or a second remote command.
"""

from __future__ import annotations

import re
import shlex
import urllib.parse
from typing import TYPE_CHECKING

import attrs

from pao_core.errors import ValidationError

from pao_machines.words import program_word

if TYPE_CHECKING:
    from pao_core.config import PaoConfig

DEFAULT_DEADLINE = 2.0
"""Seconds a machine may take to answer a routed command or ``pao list`` before it is unreachable."""

_HOST = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _host(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if not _HOST.match(value):
        raise ValueError(f"{attribute.name}: {value!r} is not a host name or address")


def _user(instance: object, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and not _USER.match(value):
        raise ValueError(f"{attribute.name}: {value!r} is not a user name")


def _port(instance: object, attribute: attrs.Attribute, value: int | None) -> None:
    if value is not None and not 0 < value < 65536:
        raise ValueError(f"{attribute.name}: {value} is not a port (1-65535)")


def _deadline(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not 0 < value <= 600:
        raise ValueError(f"{attribute.name}: must be seconds between 0 and 600, not {value}")


def _pao(instance: object, attribute: attrs.Attribute, value: str) -> None:
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"{attribute.name}: {exc}") from None
    if not words or any(ord(c) < 32 for c in value):
        raise ValueError(f"{attribute.name}: must name the pao command on that machine")
    odd = next((word for index, word in enumerate(words) if not program_word(word, index == 0)), None)
    if odd is not None:  # the remote login shell runs these words, and no quoting reads alike in every shell
        raise ValueError(f"{attribute.name}: {odd!r}: the pao command's words are letters, digits and _./:@%+,=- "
                         f"(the first may start with ~/, that machine's HOME)")


@attrs.frozen
class MachineOptions:
    """``[machines.NAME]``: how to reach one machine and run pao there."""

    host: str = attrs.field(validator=_host)
    user: str | None = attrs.field(default=None, validator=_user)
    port: int | None = attrs.field(default=None, validator=_port)
    identity_file: str | None = None
    """A private key for this machine (``ssh -i``); default: the user's ssh agent and keys."""
    pao: str = attrs.field(default="pao", validator=_pao)
    """The pao command there (words, as a shell would split them, each of letters, digits and ``_./:@%+,=-``);
    a leading ``~/`` is the remote HOME."""
    deadline: float = attrs.field(default=DEFAULT_DEADLINE, validator=_deadline)
    ssh_config: str | None = None
    """An ``ssh_config`` file for this machine (``ssh -F``); default: the user's own."""


@attrs.frozen
class Machine:
    """A resolved target: the name pao records for it and how to reach it."""

    name: str
    options: MachineOptions

    @property
    def destination(self) -> str:
        """``[user@]host``, as this machine is shown in messages."""
        user = f"{self.options.user}@" if self.options.user else ""
        return f"{user}{self.options.host}" + (f":{self.options.port}" if self.options.port else "")


def resolve(config: PaoConfig, target: str) -> Machine:
    """The machine ``target`` names; raises ``ValidationError`` (one line) for anything else."""
    if target in config.machines:
        return Machine(target, configured(config, target))
    if not target or any(ord(c) < 32 or c.isspace() for c in target) or target.startswith("-"):
        raise ValidationError(f"{target!r} is not a machine: use [user@]host, ssh://user@host:port or a [machines.NAME]")
    if target.startswith("ssh://"):
        return Machine(target, _from_url(target))
    user, at, host = target.rpartition("@")
    try:
        options = MachineOptions(host=host, user=user if at else None)
    except ValueError as exc:
        raise ValidationError(f"{target!r} is not an ssh destination ({exc}); known machines: {_known(config)}") from None
    return Machine(target, options)


def configured(config: PaoConfig, name: str) -> MachineOptions:
    """``[machines.NAME]``, validated (an error names the file and the key)."""
    if not _NAME.match(name):
        raise ValidationError(f"[machines.{name}]: a machine name is letters, digits, '.', '_' and '-'")
    return config.options("machines", name, MachineOptions)


def _from_url(target: str) -> MachineOptions:
    try:
        url = urllib.parse.urlsplit(target)
        port = url.port
    except ValueError as exc:
        raise ValidationError(f"{target!r} is not an ssh:// address ({exc})") from None
    if url.path not in ("", "/") or url.query or url.fragment or url.password is not None or not url.hostname:
        raise ValidationError(f"{target!r}: an ssh:// address is ssh://[user@]host[:port], nothing more")
    host = url.hostname if ":" not in url.hostname else f"[{url.hostname}]"
    try:
        return MachineOptions(host=host, user=urllib.parse.unquote(url.username) if url.username else None, port=port)
    except ValueError as exc:
        raise ValidationError(f"{target!r}: {exc}") from None


def _known(config: PaoConfig) -> str:
    return ", ".join(sorted(config.machines)) or "none configured"
