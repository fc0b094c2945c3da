"""pao's default briefing sections, registered as a default plugin.

* ``topic``: the task and the agent's folders;
* ``self-priming``: only when memory returned nothing, which tools to query instead;
* ``facts``: longterm facts grouped by entity, each with its date;
* ``conversations``: related past conversations with project, session and date.

A plugin adds its own (say, how to ask memory for more through the tools it wires into a session).

Every memory line is sanitised (controls stripped, secrets redacted, markdown made
inert) and quoted with ``>``, group headings (names) too: the header tells the agent quoted lines are data.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import TYPE_CHECKING, ClassVar, Mapping, Sequence

import attrs

from pao_core.contracts import BriefingSection
from pao_core.fusion import text_date
from pao_core.hookspecs import hookimpl
from pao_core.models import Provenance, parse_timestamp
from pao_core.sanitize import clean, clean_inline, inline_markdown, truncate

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import BriefingContext, MemoryItem

CONVERSATION_KINDS = frozenset({"exchange", "message", "conversation", "turn"})
"""Item kinds shown as past conversations; every other kind is a fact."""

TOPIC_CHARS = 300


def _is_conversation(item: MemoryItem) -> bool:
    return item.kind in CONVERSATION_KINDS


def _quoted(text: str, limit: int, prefix: str = "> - ") -> str:
    """Sanitised, truncated memory text as quoted markdown lines (one per source line)."""
    lines = [inline_markdown(line) for line in clean(text).split("\n")]
    lines = [line for line in lines if line]
    out, used = [], 0
    for index, line in enumerate(lines):
        room = limit - used
        if room <= 20 and index:
            break
        line = truncate(line, room)
        used += len(line)
        out.append((prefix if index == 0 else "> " + " " * (len(prefix) - 2)) + line)
    return "\n".join(out) if out else prefix + "(empty)"


@attrs.frozen
class TopicSection(BriefingSection):
    key: str = "topic"
    title: str = "Task"
    order: int = 10

    def render(self, context: BriefingContext) -> str | None:
        lines = [f"Topic: {truncate(clean_inline(context.topic), TOPIC_CHARS)}"]
        for folder in context.folders:
            lines.append(f"Folder: {truncate(clean_inline(folder), TOPIC_CHARS)}")
        failed = [f"{clean_inline(name)} ({result.status})" for name, result in context.backends.items() if result.status != "ok"]
        if failed:
            lines.append(f"Memory stores that did not answer: {', '.join(failed)}.")
        notes = [f"{clean_inline(name)}: {clean_inline(result.note)}" for name, result in context.backends.items() if result.note]
        if notes:
            lines.append(f"Memory store notes: {'; '.join(notes)}.")
        return "  \n".join(lines)


@attrs.frozen
class SelfPrimingSection(BriefingSection):
    """What to do when memory had nothing on the topic: query it yourself."""

    key: str = "self-priming"
    title: str = "Memory had nothing on this topic"
    order: int = 15

    def render(self, context: BriefingContext) -> str | None:
        if context.items:
            return None
        stores = store_names(context) or "none configured"
        return "\n".join(
            [
                f"None of the memory stores ({stores}) returned anything relevant to this topic. "
                "Before you start, look for context yourself:",
                "",
                "- if you have MCP memory tools (`search_nodes`, `open_nodes`), search them for the project's "
                "names and the libraries involved;",
                "- read the folder's README, recent `git log`, and any notes files before changing anything.",
            ]
        )


@attrs.frozen
class _GroupedSection(BriefingSection):
    """Items of one sort (conversations or facts) in groups within a store: a heading and each item, all quoted.

    Groups come in the order of their best item.
    """

    item_chars: int = 600
    conversations: ClassVar[bool]

    def render(self, context: BriefingContext) -> str | None:
        groups: dict[tuple[str, str], list[MemoryItem]] = {}
        for item in context.items:
            if _is_conversation(item) == self.conversations:
                groups.setdefault((item.backend, self._group_of(item)), []).append(item)
        blocks = []
        for (backend, name), group in groups.items():
            heading, texts = self._group(backend, name, group)
            blocks.append("\n".join(["> " + heading, *(_quoted(text, self.item_chars) for text in texts)]))
        return "\n\n".join(blocks) or None

    def _group_of(self, item: MemoryItem) -> str:
        """What the item is grouped by within its store (an entity, a session)."""
        raise NotImplementedError

    def _group(self, backend: str, name: str, items: list[MemoryItem]) -> tuple[str, list[str]]:
        """The group's heading and its items' texts."""
        raise NotImplementedError


@attrs.frozen
class FactsSection(_GroupedSection):
    """Longterm facts grouped by entity; each line shows its date, earlier ones marked."""

    conversations = False
    key: str = "facts"
    title: str = "What memory knows"
    order: int = 20

    def _group_of(self, item: MemoryItem) -> str:
        return item.title

    def _group(self, backend: str, title: str, items: list[MemoryItem]) -> tuple[str, list[str]]:
        stored = {_date(item.timestamp) for item in items if text_date(item.text) is None}
        heading = f"{truncate(clean_inline(title), 120) or '(untitled)'} · {clean_inline(backend)}"
        shared = len(stored) == 1  # one store date for the group: say it once
        if shared:
            heading += f" · {'stored ' if stored != {'undated'} else ''}{stored.pop()}"
        return heading, [_fact_when(item, shared) + item.text for item in items]


def _fact_when(item: MemoryItem, shared: bool) -> str:
    """A date the text states is shown by the text itself; otherwise the group heading's
    store date covers it (``shared``), or the item says what is known."""
    marks = []
    provenance = item.meta.get("provenance")
    if isinstance(provenance, Mapping) and provenance.get("agent"):
        recorded = parse_timestamp(provenance.get("recorded_at"))
        who = clean_inline(Provenance(str(provenance["agent"]), provenance.get("session_id"), recorded).describe())
        marks.append(f"written by {who}, kept by the user" if provenance.get("kept_at") else f"remembered by {who}")
    elif text_date(item.text) is None and not shared:
        marks.append(f"stored {_date(item.timestamp)}" if item.timestamp else "undated")
    if item.fusion.get("earlier"):
        marks.append(f"earlier: superseded by the {item.fusion.get('superseded_on', 'newer')} item above")
    return f"({'; '.join(marks)}) " if marks else ""


@attrs.frozen
class ConversationsSection(_GroupedSection):
    """Past conversations grouped by session, with project and date."""

    conversations = True
    key: str = "conversations"
    title: str = "Related past conversations"
    order: int = 30

    def _group_of(self, item: MemoryItem) -> str:
        return item.meta.get("session_id") or item.title

    def _group(self, backend: str, session: str, items: list[MemoryItem]) -> tuple[str, list[str]]:
        first = items[0]
        project = os.path.basename(str(first.meta.get("project") or "").rstrip("/")) or first.title
        when = _date(min((i.timestamp for i in items if i.timestamp), default=None))
        heading = f"{truncate(clean_inline(str(project)), 80)} · {when} · {clean_inline(backend)}"
        if first.meta.get("session_id"):
            heading += f" session {clean_inline(str(session))[:8]}"
        return heading, [item.text for item in items]


def store_names(context: BriefingContext) -> str:
    """The memory stores asked, by name, as a briefing shows them."""
    return ", ".join(clean_inline(name) for name in context.backends)


def _date(value: dt.datetime | None) -> str:
    return value.date().isoformat() if value else "undated"


def default_sections(config: PaoConfig) -> Sequence[object]:
    chars = config.briefing.item_chars
    return [TopicSection(), SelfPrimingSection(), FactsSection(chars), ConversationsSection(chars)]


@hookimpl
def pao_briefing_sections(config: PaoConfig) -> Sequence[object]:
    return default_sections(config)
