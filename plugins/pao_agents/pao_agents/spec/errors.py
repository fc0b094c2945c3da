"""The agent side's errors, which a registry store raises and the agent commands turn into one line."""

from __future__ import annotations

from pao_core.errors import PaoError, shown


class UnknownAgent(PaoError):
    """No agent of that name is in the registry."""

    @classmethod
    def named(cls, name: str) -> UnknownAgent:
        return cls(f"no agent named {shown(name)} (see 'pao list')")


class DuplicateAgent(PaoError):
    """An agent of that name is already in the registry."""

    @classmethod
    def named(cls, name: str, numbered: bool = False) -> DuplicateAgent:
        if numbered:
            return cls(f"no free agent name left for {name!r}")
        return cls(f"an agent named {name!r} already exists (pick another --name)")


class RegistryUnavailable(PaoError):
    """The registry's store cannot be reached or read; the message names it (password masked)."""
