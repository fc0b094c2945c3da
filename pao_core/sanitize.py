"""Memory text is untrusted data: make it inert before it reaches a briefing or a disk.

Three steps, always in this order (``clean`` does all of them):

1. :func:`strip_controls` removes terminal escape sequences (CSI, OSC, DCS...) and every
   other control or bidirectional-override character, keeping newlines and tabs;
2. :func:`redact_secrets` replaces API keys, tokens, private keys, passwords and URL
   credentials with ``[redacted]``;
3. :func:`inline_markdown` turns an item into one inert line of markdown: no fence, no
   heading, no HTML-like tag and no ``@`` at all (:func:`neutralise_imports`).
"""

from __future__ import annotations

import functools
import re
import unicodedata

REDACTED = "[redacted]"
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/@:\s]*:)(?P<pw>[^@/\s]+)(?P<tail>@)", re.IGNORECASE)


def mask_url(text: str) -> str:
    """Replace the password of any ``scheme://user:password@host`` in ``text`` with ``***``."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}***{m['tail']}", text)


# ESC-introduced sequences: CSI (ESC [ ... final), OSC/DCS/SOS/PM/APC strings (up to
# BEL or ST), and two-byte escapes. An unterminated string sequence runs to the end.
_ANSI = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]?                      # CSI
    | \x1b[\]PX^_].*?(?:\x07|\x1b\\|$)             # OSC, DCS, SOS, PM, APC
    | \x1b[ -/]*[0-~]?                             # other escapes (ESC c, ESC ( B, ...)
    | \x9b[0-?]*[ -/]*[@-~]?                       # 8-bit CSI
    | [\x90\x9d\x98\x9e\x9f].*?(?:\x07|\x9c|$)     # 8-bit string sequences
    """,
    re.VERBOSE | re.DOTALL,
)
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ufeff]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029\x85]")

# Secrets with a recognisable shape, whatever surrounds them.
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END \1-----|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=]{8,})*(?:\.{2,3}|…)?)",
    re.DOTALL,
)
_TOKEN_SHAPES = re.compile(
    r"""
    \bsk-(?:[a-z]+-)?[A-Za-z0-9_-]{16,}                    # OpenAI/Anthropic style sk-...
    | \b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}               # Stripe secret/restricted keys
    | \b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b    # AWS access key ids
    | \bgh[pousr]_[A-Za-z0-9]{20,}                         # GitHub tokens
    | \bgithub_pat_[A-Za-z0-9_]{20,}
    | \bglpat-[A-Za-z0-9_-]{20,}                           # GitLab
    | \bhf_[A-Za-z0-9]{20,}                                # Hugging Face
    | \btskey-[A-Za-z0-9-]{16,}                            # Tailscale
    | \bxox[abprse]-[A-Za-z0-9-]{10,}                      # Slack
    | \bAIza[0-9A-Za-z_-]{30,}                             # Google API keys
    | \b(?:AAAA[A-Za-z0-9_-]{5,}:)?APA91b[A-Za-z0-9_-]{20,}  # FCM legacy server keys
    | \bnpm_[A-Za-z0-9]{30,}
    | \beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}  # JWTs
    """,
    re.VERBOSE,
)
_BEARER = re.compile(r"\b(Bearer|Basic)(\s+)(?=[A-Za-z0-9._~+/=-]*\d)(?!\[redacted)[A-Za-z0-9._~+/=-]{12,}", re.IGNORECASE)
# NAME=value, NAME: value, "NAME": "value" where NAME says it is secret.
_ASSIGNMENT = re.compile(
    r"""
    (?P<name>[A-Za-z0-9_.-]*(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey
        |access[_-]?key|auth[_-]?key|authkey|private[_-]?key|client[_-]?secret|credentials?)[A-Za-z0-9_.-]*)
    (?P<sep>["']?[ \t]*[:=][ \t]*["']?)
    (?!\[redacted)
    (?P<value>[^\s"',;`)\]}]{4,})
    """,
    re.VERBOSE | re.IGNORECASE,
)
_NOT_SECRET_NAMES = re.compile(r"(tokens|_count|_len|_limit|_ttl|_file|_path|_env|_name|_url)$", re.IGNORECASE)
_NOT_SECRET_VALUES = frozenset(
    "true false yes no on off none null nil unset empty active enabled disabled required optional".split()
)


def strip_controls(text: str) -> str:
    """Remove escape sequences and control/bidi characters; keep ``\\n`` and ``\\t``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    text = _LINE_SEPARATORS.sub("\n", text)
    return _CONTROL.sub("", text)


def _assignment(match: re.Match[str]) -> str:
    name, value = match["name"], match["value"]
    if (
        _NOT_SECRET_NAMES.search(name)
        or value.lower() in _NOT_SECRET_VALUES
        or (value.isdigit() and len(value) < 8)
        or value.startswith(("$", "<", "{"))
    ):
        # not a secret itself, but the value may hold one ("tokens: password=..."): look inside
        return f"{name}{match['sep']}{_ASSIGNMENT.sub(_assignment, value)}"
    return f"{name}{match['sep']}{REDACTED}"


# Cheap tests that let most text skip the expensive patterns.
_MAYBE_ASSIGNMENT = re.compile(r"(?:pass|pwd|secret|token|key|credential)\w*[\"']?[ \t]*[:=]", re.IGNORECASE)
_MAYBE_BEARER = re.compile(r"bearer|basic", re.IGNORECASE)


def redact_secrets(text: str) -> str:
    """Replace every secret-shaped substring with ``[redacted]``."""
    if "-----BEGIN" in text:
        text = _PEM.sub(f"{REDACTED} private key", text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    if _MAYBE_BEARER.search(text):
        text = _BEARER.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)
    if _MAYBE_ASSIGNMENT.search(text):
        text = _ASSIGNMENT.sub(_assignment, text)
    if "://" in text:
        text = mask_url(text).replace(":***@", f":{REDACTED}@")
    return text


_FENCE = re.compile(r"`{3,}|~{3,}")
_TAG = re.compile(r"<(/?[A-Za-z!?][^<>]{0,80})>")
AT_LOOKALIKE = "\uff20"  # FULLWIDTH COMMERCIAL AT: reads as "@", expanded by no CLI
_BLOCK_START = re.compile(r"^(?:#{1,6}|>|[-+*]|\d{1,9}[.)]|=+|_{3,}|\|)(?=\s|$)")
_SPACES = re.compile(r"\s+")


def inline_markdown(text: str) -> str:
    """One line of inert markdown: newlines folded, fences, tags and imports defused."""
    text = _SPACES.sub(" ", text).strip()
    text = _FENCE.sub(lambda m: "'" * len(m[0]), text)
    # Tags look like instructions to a model and like HTML to a renderer: show them as text.
    text = _TAG.sub(lambda m: f"‹{m[1]}›", text)
    text = neutralise_imports(text)
    if _BLOCK_START.match(text):
        text = "\\" + text
    return text


def neutralise_imports(text: str) -> str:
    """Every ``@`` replaced by a look-alike, so no context-file import can start anywhere.

    Claude Code lexes the file as markdown and imports ``@path`` at the start of any text
    token (after emphasis, an escape, a link, an HTML tag or comment, a code span...);
    Gemini CLI imports ``@path`` after whitespace outside backticks. Enumerating those
    contexts is fragile across versions, so no ``@`` of memory text survives at all.
    """
    return text.replace("@", AT_LOOKALIKE)


@functools.lru_cache(maxsize=4096)
def clean(text: str) -> str:
    """Controls stripped, secrets redacted: safe to keep as plain text (not yet markdown)."""
    return redact_secrets(strip_controls(text))


def clean_inline(text: str) -> str:
    """Everything: one inert line of markdown with no control character and no secret."""
    return inline_markdown(clean(text))


def truncate(text: str, limit: int, ellipsis: str = "…") -> str:
    """At most ``limit`` characters, cut at a word boundary when one is near, never inside
    a character and never between a character and its combining marks."""
    if len(text) <= limit:
        return text
    if limit <= len(ellipsis):
        return _safe_cut(text, limit)
    cut = _safe_cut(text, limit - len(ellipsis))
    space = cut.rfind(" ")
    if space >= len(cut) * 0.6:
        cut = cut[:space]
    return cut.rstrip() + ellipsis


def _safe_cut(text: str, limit: int) -> str:
    """``text[:limit]`` moved back so that no combining mark or joiner is separated from its base."""
    end = max(0, limit)
    while 0 < end < len(text) and (unicodedata.combining(text[end]) or text[end] in "\u200d\ufe0f\ufe0e"
                                   or text[end - 1] == "\u200d"):
        end -= 1
    return text[:end]
