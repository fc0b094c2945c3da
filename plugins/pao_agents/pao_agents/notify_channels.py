"""Where a notification goes: the desktop, a command (an argv template, no shell), a webhook (a JSON POST); and
``pao doctor``'s check of each one that is configured.

A notice's words come from the agent's record and its CLI's events (its topic, folder, a permission prompt's
message): untrusted text, bounded and freed of control characters and secrets before any channel sees it
(:func:`pao_agents.notify.notice`). A webhook's URL is a secret (Slack's path, ntfy's topic): only its scheme
and host are ever shown.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from typing import TYPE_CHECKING, Mapping, Sequence

from pao_agents.spec.options import PLACEHOLDERS

if TYPE_CHECKING:
    from pao_agents.spec.options import NotifyOptions
    from pao_core.contracts import Check

_APPLESCRIPT = ("on run argv", "display notification (item 2 of argv) with title (item 1 of argv)", "end run")
_PLACEHOLDER = re.compile("|".join(re.escape(word) for word in PLACEHOLDERS))


class ChannelFailed(Exception):
    """A channel did not deliver; its message never holds the webhook's URL beyond its host."""


def desktop_command(title: str, body: str, platform: str = sys.platform) -> list[str] | None:
    """The argv that shows a notification here, or ``None`` when the platform has no notifier."""
    if platform == "darwin":
        script = [arg for line in _APPLESCRIPT for arg in ("-e", line)]
        return ["osascript", *script, title, body] if shutil.which("osascript") else None
    binary = shutil.which("notify-send")
    # "--": notify-send (GLib) reads options anywhere on its line, and a topic may start with "-"
    return [binary, "--app-name=pao", "--", title, body] if binary else None


def command_argv(template: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """``template`` with each placeholder replaced in one pass (a value holding ``{state}`` stays as it is);
    every word stays one argument whatever its value holds."""
    return [_PLACEHOLDER.sub(lambda match: values[match[0][1:-1]], word) for word in template]


def run_quietly(argv: Sequence[str], timeout: float) -> None:
    """Run a notifier's program with no stdin, its output discarded, from ``/``, for at most ``timeout`` s."""
    try:
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              check=False, cwd="/")
    except subprocess.TimeoutExpired:
        raise ChannelFailed(f"{argv[0]} took over {timeout:g} s") from None
    except OSError as exc:
        raise ChannelFailed(f"{argv[0]}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise ChannelFailed(f"{argv[0]} exited with status {done.returncode}")


def masked_url(url: str) -> str:
    """What may be shown of a webhook's URL: its scheme and host (and port), never its path or query."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    shown = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.scheme}://{shown}{f':{port}' if port else ''}/…"


def url_problem(url: str) -> str | None:
    """Why pao will not post to ``url`` (plain http beyond this machine, no host), or ``None``."""
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port
    except ValueError:
        return "its port is not a number"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "it is not an http(s) URL with a host"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return "plain http leaves this machine unencrypted; use https (http only to 127.0.0.1, ::1 or localhost)"
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def webhook_request(url: str, style: str, notice: Mapping[str, str]) -> tuple[str, bytes]:
    """The URL and JSON body to POST: Slack's ``{"text"}``, or ntfy's JSON publish (to the server's root, with
    the URL's last path segment as the topic)."""
    if style == "ntfy":
        parts = urllib.parse.urlsplit(url)
        root, _, topic = parts.path.rstrip("/").rpartition("/")
        body = {"topic": topic, "title": notice["title"], "message": notice["body"], "tags": ["pao", notice["state"]]}
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, root + "/", "", "")), json.dumps(body).encode()
    return url, json.dumps({"text": f"{notice['title']}\n{notice['body']}"}).encode()


def _opener_without_redirects() -> object:
    """An opener to which a redirect is an error: the user named the receiver, pao follows nobody else's choice."""
    import urllib.request  # http.client and email: only a webhook's post needs them

    class Refuse(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    return urllib.request.build_opener(Refuse())


def post_webhook(url: str, style: str, notice: Mapping[str, str], timeout: float) -> int:
    """POST the notice; its HTTP status. A failure says so with the URL masked."""
    import urllib.error  # http.client and email: only a webhook's post needs them
    import urllib.request  # likewise

    problem = url_problem(url)
    if problem:
        raise ChannelFailed(f"webhook {masked_url(url)}: {problem}")
    target, body = webhook_request(url, style, notice)
    request = urllib.request.Request(target, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "pao-notify"})
    try:
        with _opener_without_redirects().open(request, timeout=timeout) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        raise ChannelFailed(f"webhook {masked_url(url)}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ChannelFailed(f"webhook {masked_url(url)}: {str(reason).replace(url, masked_url(url))}") from None


def notifier_checks(options: NotifyOptions, platform: str = sys.platform) -> list[Check]:
    """``pao doctor``'s findings about each channel ``[notify]`` turns on (none: one line saying so)."""
    from pao_core.contracts import Check  # records: only pao doctor needs them

    if not options.any_channel:
        return [Check("notify", "notifier", "ok", "no channel on ([notify] desktop, command, webhook)")]
    checks = []
    if options.desktop:
        found = desktop_command("t", "b", platform) is not None
        program = "osascript" if platform == "darwin" else "notify-send"
        checks.append(Check("notify", "desktop", "ok" if found else "fail", f"desktop: {program} " +
                            ("found" if found else "not found"), "" if found else
                            f"install {program} (libnotify-bin), or set [notify] desktop = false"))
    if options.command:
        program = shutil.which(options.command[0])
        checks.append(Check("notify", "command", "ok" if program else "fail",
                            f"command: {program or options.command[0]}" + ("" if program else " is not an executable"),
                            "" if program else "fix [notify] command (its first word: a program on PATH or a path)"))
    if options.webhook:
        problem = url_problem(options.webhook)
        checks.append(Check("notify", "webhook", "fail" if problem else "ok",
                            f"webhook: {masked_url(options.webhook)} ({options.webhook_style})" +
                            (f": {problem}" if problem else ""), "fix [notify] webhook" if problem else ""))
    return checks
