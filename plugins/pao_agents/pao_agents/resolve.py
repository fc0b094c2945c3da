"""What spawn and the later commands both need to start an agent's process: names to objects, its environment, its pid."""

from __future__ import annotations

import re
from typing import Any, Mapping

from pao_core.errors import ValidationError
from pao_core.topic import shown as quoted


def first_named(objects: list[Any], name: str, what: str) -> Any:
    """The first object called ``name`` (the first registered wins), or a one-line error."""
    for candidate in objects:
        if candidate.name == name:
            return candidate
    known = ", ".join(sorted({o.name for o in objects})) or "none installed"
    raise ValidationError(f"unknown {what} {quoted(name)} (known: {known})")


_PAO_CREDENTIAL = re.compile(r"PAO_\w*(?:URL|TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIALS?|DSN)\w*")
"""pao's own credentials (PAO_POSTGRES_URL, PAO_HISTORY_TOKEN...): never in an agent's environment."""


def agent_environment(base: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """``base`` without pao's credentials, with a host's ``changes`` applied: a value sets a
    variable, ``None`` removes it. Every agent pao starts or resumes gets its environment here."""
    env = {key: value for key, value in base.items() if not _PAO_CREDENTIAL.fullmatch(key)}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env
