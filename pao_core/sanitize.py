"""Memory text is untrusted data: make it inert before it reaches a briefing or a disk.

Every way memory text leaves pao goes through this module: :func:`clean` for plain text
(JSON, a terminal, a server's answer, an MCP tool), :func:`clean_item` for a whole
``MemoryItem``, :func:`clean_inline` for markdown a CLI reads as a context file.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from pao_core.models import MemoryItem

REDACTED = "[redacted]"
# To the last "@" of its word ("/" occurs in passwords), a few spaces allowed; "host:8080 and me@x" is a port.
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^/@:\s]*:)(?!\d+(?:[/\s]|$))"
                           r"(?P<pw>(?:\S+[ \t]+){0,5}?\S+)(?P<tail>@)(?=[\w\[])", re.IGNORECASE)
# libpq and most drivers also take the password as a query parameter: ...?password=secret
_URL_QUERY_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://\S*?[?&](?:ssl)?(?:password|passwd|pwd)=)[^&#\s]+",
                                 re.IGNORECASE)
# ...or a keyword DSN: host=db user=app password='a b c' (a quoted value may hold spaces and \')
_DSN_PASSWORD = re.compile(r"(?P<head>(?<![\w?&-])password\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s']+)", re.IGNORECASE)


def mask_url(text: str, mask: str = "***") -> str:
    """The password of any ``scheme://user:password@host``, ``...?password=``, ``host=db password='a b'`` masked."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{mask}{m['tail']}", text)
    text = _URL_QUERY_PASSWORD.sub(lambda m: f"{m['head']}{mask}", text)
    return _DSN_PASSWORD.sub(lambda m: f"{m['head']}{mask}", text) if "=" in text else text


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
# Invisible yet read by a model: zero-width, word joiner, invisible operators, Unicode tags (hidden ASCII),
# variation selectors (not U+FE0E/U+FE0F, emoji), soft hyphen and other format characters.
_INVISIBLE = ("\u00ad\u180e\u200b-\u200d\u2060-\u2064\u206a-\u206f\ufe00-\ufe0d\ufff9-\ufffb"
              "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef")
INVISIBLE = _CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ufeff{_INVISIBLE}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029\x85]")

SECRET_RULES = Path(__file__).with_name("secret_rules.toml")
"""pao's secret rules (a table covering gitleaks v8.30.1's default rules; see docs/security.md)."""

# After a secret name (found by keyword): the rest of the identifier, maybe a few words,
# an assignment operator and the value: NAME=value, NAME: value, "NAME": "value", NAME => value.
_ASSIGNMENT_TAIL = re.compile(
    r"""
    [\w.-]*(?:[ \t]{1,20}[\w.-]{1,30}){0,3}?
    (?P<sep>[ \t'"]{0,8}(?P<op>:{1,3}=|=>|\?=|\|\||[=:>,])[ \t]{0,20})
    (?!\[redacted)
    (?:(?P<quote>["'`])(?P<spaced>[^"'`\n]{0,200}?\s[^"'`\n]{0,200}?)(?P=quote)  # "correct horse battery"
     |[ \t'"`=]{0,20}(?!\[redacted)(?P<value>[^\s"'`,;)\]}]{4,}))
    """,
    re.VERBOSE,
)
_STRONG_OPERATORS = frozenset(("=", ":", ":=", "::=", ":::=", "=>", "?="))
_NOT_SECRET_NAMES = re.compile(r"(tokens|_count|_len|_limit|_ttl|_file|_path|_env|_name|_url|_type|_id_type)$",
                               re.IGNORECASE)
_NOT_SECRET_VALUES = frozenset(
    "true false yes no on off none null nil unset empty active enabled disabled required optional".split()
)
_WORDS = re.compile(r"[A-Za-z][a-z]*(?:[_.-][A-Za-z]?[a-z]+)*|[\d.:/-]+|(?:https?://|\.{0,2}/|~/)\S*")


@attrs.frozen
class SecretRule:
    id: str
    keywords: frozenset[str]
    regex: str
    covers: tuple[str, ...]

    @property
    def pattern(self) -> re.Pattern[str]:
        # compiled on first use: a rule runs only when its keywords occur, and compiling all 39 costs a briefing ~20 ms
        return _compiled(self.regex)

    def redact(self, text: str) -> str:
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        """The secret group (``secret``, ``secret2``...) that took part, else the whole match."""
        group = next((name for name, value in match.groupdict().items() if value and name.startswith("secret")), None)
        if group is None:
            return REDACTED
        start, end = match.start(group) - match.start(), match.end(group) - match.start()
        return match[0][:start] + REDACTED + match[0][end:]


@attrs.frozen
class SecretRules:
    """The table, read once: shapes, the assignment rule's names, one automaton over every keyword."""

    shapes: tuple[SecretRule, ...]
    strong: frozenset[str]
    weak: frozenset[str]
    keywords: tuple[str, ...]
    automaton: Any

    def hits(self, text: str) -> list[tuple[str, int]]:
        """Every keyword occurrence (overlapping) in lower-cased ``text``, with its index."""
        lowered = text.lower()
        if len(lowered) != len(text):  # a letter whose lower case is longer: keep indexes aligned
            lowered = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)
        try:
            found = self.automaton.find_matches_as_indexes(lowered, overlapping=True)
        except UnicodeEncodeError:  # a lone surrogate (text that was not UTF-8): same length, encodable
            found = self.automaton.find_matches_as_indexes(_SURROGATE.sub("\ufffd", lowered), overlapping=True)
        return [(self.keywords[k], start) for k, start, _end in found]


@functools.cache
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


@functools.cache
def secret_rules() -> SecretRules:
    # lazy: most pao commands never redact; Aho-Corasick finds all keywords in one pass, as gitleaks does
    import tomllib

    import ahocorasick_rs  # only this path needs it: start-up stays light

    table = tomllib.loads(SECRET_RULES.read_text(encoding="utf-8"))
    shapes = tuple(SecretRule(rule["id"], frozenset(rule["keywords"]), rule["regex"], tuple(rule["covers"]))
                   for rule in table["shape"])
    strong, weak = frozenset(table["assignment"]["strong"]), frozenset(table["assignment"]["weak"])
    keywords = tuple(sorted(strong | weak | {k for shape in shapes for k in shape.keywords}))
    return SecretRules(shapes, strong, weak, keywords, ahocorasick_rs.AhoCorasick(keywords))


def strip_controls(text: str) -> str:
    """Remove escape sequences, control, bidi and invisible characters (not \\n, \\t); a lone surrogate: U+FFFD."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    text = _LINE_SEPARATORS.sub("\n", text)
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", text))


def _looks_secret(value: str) -> bool:
    """A value worth hiding even after a vague name: long, not a word, date, version, path or URL."""
    return len(value) >= 8 and (value.isdigit() or not _WORDS.fullmatch(value))


def _is_secret_assignment(name: str, match: re.Match[str], strong_name: bool) -> bool:
    if _NOT_SECRET_NAMES.search(name.split()[-1]):
        return False
    if match["spaced"] is not None:  # a quoted value with spaces: a passphrase after a secret's name only
        return strong_name
    value = match["value"]
    if value.lower() in _NOT_SECRET_VALUES:
        return False
    if strong_name and (match["op"] in _STRONG_OPERATORS or _looks_secret(value)):
        return not (value.isdigit() and len(value) < 8) and not value.startswith(("$", "<", "{"))
    return _looks_secret(value)


def _redact_assignments(text: str, hits: list[tuple[str, int]], rules: SecretRules) -> str:
    """Values assigned to a secret name replaced (``tokens: password=...`` included).

    Anchored on the name keywords the automaton found rather than trying an identifier at
    every position: the briefing path redacts many items.
    """
    starts: dict[int, bool] = {}
    for keyword, start in hits:
        if keyword in rules.strong or keyword in rules.weak:
            starts[start] = starts.get(start, False) or keyword in rules.strong
    out, position = [], 0
    for start in sorted(starts):
        if start < position:
            continue
        match = _ASSIGNMENT_TAIL.match(text, start)
        if match is None:
            continue
        head = start
        while head > 0 and (text[head - 1].isalnum() or text[head - 1] in "_.-"):
            head -= 1
        if _is_secret_assignment(text[head:match.start("sep")], match, starts[start]):
            group = "value" if match["spaced"] is None else "spaced"
            out.append(text[position:match.start(group)] + REDACTED)
            position = match.end(group)
    return "".join(out) + text[position:]


def redact_secrets(text: str) -> str:
    """Replace every secret-shaped substring with ``[redacted]`` (pao's one redaction).

    Shaped tokens first (a rule runs only when one of its keywords occurs), then values
    assigned to secret names, then URL passwords.
    """
    rules = secret_rules()
    hits = rules.hits(text)
    found = {keyword for keyword, _start in hits}
    original = text
    for shape in rules.shapes:
        if not shape.keywords or not found.isdisjoint(shape.keywords):
            text = shape.redact(text)
    if found.intersection(rules.strong) or found.intersection(rules.weak):
        text = _redact_assignments(text, hits if text == original else rules.hits(text), rules)
    if "://" in text:
        text = mask_url(text, REDACTED)
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

    One host CLI lexes the file as markdown and imports ``@path`` at the start of any text
    token (after emphasis, an escape, a link, an HTML tag or comment, a code span...);
    another imports ``@path`` after whitespace outside backticks. Enumerating those
    contexts is fragile across versions, so no ``@`` of memory text survives at all.
    """
    return text.replace("@", AT_LOOKALIKE)


@functools.lru_cache(maxsize=4096)
def clean(text: str) -> str:
    """Controls stripped, secrets redacted: safe to keep as plain text (not yet markdown)."""
    return redact_secrets(strip_controls(text))


def clean_item(item: MemoryItem) -> MemoryItem:
    """``item`` with its title and text :func:`clean`: what every output of memory items shows."""
    return attrs.evolve(item, title=clean(item.title), text=clean(item.text))


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
