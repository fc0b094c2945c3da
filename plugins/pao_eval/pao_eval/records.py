"""The records of an evaluation: a labelled query, what the pipeline briefed for it, and the corpus's errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from pao_core.errors import PaoError

if TYPE_CHECKING:
    from pao_core.models import Briefing


class CorpusError(PaoError):
    """The corpus folder is missing a file or holds something unreadable."""


@attrs.frozen
class Query:
    qid: str
    topic: str
    kind: str
    domain: str | None
    subtopic: str | None
    evidence: tuple[str, ...] = ()


@attrs.frozen
class QueryRun:
    query: Query
    briefing: Briefing
    latency_ms: float
