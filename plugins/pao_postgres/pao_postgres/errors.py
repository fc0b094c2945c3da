"""The longterm store's errors, with the standard library only (the search path of the
embedded store must not import SQLAlchemy)."""

from __future__ import annotations

import re
import time

from pao_core.sanitize import mask_url
from pao_core.errors import PaoError


# libpq's errors on a malformed URL or DSN quote a piece of it, which may be the password
_CONNINFO_ERROR = re.compile(r"unexpected spaces found in|invalid percent-encoded token|in connection info string|"
                             r"invalid URI query parameter|invalid connection option|invalid integer value|"
                             r"invalid port number|end of string reached|unterminated quoted string")


class LongtermError(PaoError):
    """The longterm store could not answer; the message is one line, passwords masked."""


def remaining(deadline: float) -> float:
    """Seconds left before ``deadline``; raise once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise LongtermError("deadline passed before the query could run")
    return left


def reason(exc: BaseException) -> str:
    """One line saying what went wrong, without SQL text, parameters or passwords."""
    original = getattr(exc, "orig", None) or exc
    sqlstate = getattr(original, "sqlstate", None)
    text = " ".join(str(original).split("\n")[0].split())
    hints = {
        "42P01": "a table is missing: run `pao memory init`",
        "42703": "a column is missing: check the [backends.longterm] column mapping or run `pao memory init`",
        "57014": "the query ran past its deadline",
        "28P01": "password authentication failed",
        "3D000": "the database does not exist",
    }
    if sqlstate in hints:
        text = f"{hints[sqlstate]} ({text})" if sqlstate in ("42P01", "42703") else f"{hints[sqlstate]}: {text}"
    elif "interrupted" in text and type(original).__name__ == "OperationalError":
        text = "the query ran past its deadline"
    elif "no such table" in text:
        text = f"a table is missing: run `pao memory init` ({text})"
    if _CONNINFO_ERROR.search(text):
        text = re.sub(r'"[^"]*"', '"***"', text)
    return mask_url(text) or type(original).__name__
