"""The Terminal.app driver's errors, one line each."""

from __future__ import annotations

from pao_core.errors import PaoError


class TerminalAppError(PaoError):
    """Terminal.app, System Events or the clipboard refused; the message says what to do."""


class TabGone(TerminalAppError):
    """The agent's window or tab no longer exists."""


class NotRunning(TerminalAppError):
    """Terminal.app is not running, so the agent's tab is gone too."""
