"""Errors that reach the user as one line."""

from __future__ import annotations

from typing import Iterable


class PaoError(Exception):
    """An error the user can act on; the CLI prints its message and exits non-zero."""

    exit_code = 1


class ConfigError(PaoError):
    """The configuration file or an environment override is invalid."""

    exit_code = 2


class ValidationError(PaoError):
    """A name, path, topic or target failed validation (before anything started)."""

    exit_code = 2


def shown(text: str, limit: int = 80) -> str:
    """User input quoted in a one-line message: ``repr``, cut to ``limit`` characters with its length."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'list'?"`` (or ``'a' or 'b'``) when a known word is close to ``word``, else ``""``."""
    import difflib  # only a mistake needs it

    close = difflib.get_close_matches(word, sorted(set(known)), n=2, cutoff=0.6)
    return "; did you mean " + " or ".join(map(repr, close)) + "?" if close else ""


def describe(exc: BaseException) -> str:
    """One line, in words, for any error: the message a user reads (never a class name when there are words).

    pao's own errors and OSErrors say what happened; any other exception keeps its
    message, and only an exception without one is named by its class.
    """
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    elif isinstance(exc, TimeoutError) and not str(exc):
        text = "timed out"
    else:
        text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    text = " ".join(text.split())
    return text or type(exc).__name__.replace("Error", " error").strip()
