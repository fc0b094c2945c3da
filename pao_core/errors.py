"""Errors that reach the user as one line."""

from __future__ import annotations


class PaoError(Exception):
    """An error the user can act on; the CLI prints its message and exits non-zero."""

    exit_code = 1


class ConfigError(PaoError):
    """The configuration file or an environment override is invalid."""

    exit_code = 2


class ValidationError(PaoError):
    """A name, path, topic or target failed validation (before anything started)."""

    exit_code = 2


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: a :class:`PaoError`'s message as is, any other prefixed with its type."""
    text = " ".join(str(exc).split())
    if isinstance(exc, PaoError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
