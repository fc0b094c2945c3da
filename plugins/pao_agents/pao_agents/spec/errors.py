"""The agent side's errors, which a registry store raises and the agent commands turn into one line."""

from __future__ import annotations

from typing import Iterable

from pao_core.errors import PaoError, did_you_mean, shown


class UnknownAgent(PaoError):
    """No agent of that name is in the registry."""

    @classmethod
    def named(cls, name: str, known: Iterable[str] = ()) -> UnknownAgent:
        """``known``: the names there are, for a "did you mean" when one is close, or begins with ``name`` (one or two
        of them: ``fix`` for ``fix-invoice-rounding-bug``, since names made from a topic's words are long)."""
        known = sorted(set(known))
        begun = [agent for agent in known if agent.startswith(name)] if len(name) >= 2 else []
        hint = f"; did you mean {' or '.join(map(repr, begun))}?" if 0 < len(begun) <= 2 else did_you_mean(name, known)
        return cls(f"no agent named {shown(name)} (see 'pao list'){hint}")


class DuplicateAgent(PaoError):
    """An agent of that name is already in the registry."""

    @classmethod
    def named(cls, name: str, numbered: bool = False) -> DuplicateAgent:
        if numbered:
            return cls(f"no free agent name left for {name!r}")
        return cls(f"an agent named {name!r} already exists (pick another --name)")


class RegistryUnavailable(PaoError):
    """The registry's store cannot be reached or read; the message names it (password masked)."""
