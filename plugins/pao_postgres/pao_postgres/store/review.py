"""``pao memory review``: the facts agents wrote (``remember``), for the user to keep or forget.

An agent's fact is an observation with a provenance row whose ``kept_at`` is empty.
``--keep`` sets ``kept_at`` (the fact joins the user's tier: ranked with the user's
facts, never capped); ``--forget`` deletes the observation. Either runs in one write
transaction under the store's lock (SQLite's write lock; row locks on a server), with
bound parameters, and changes nothing unless every id named is an agent's fact.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Sequence

import attrs
import sqlalchemy as sa

from pao_core.errors import PaoError, ValidationError
from pao_core.sanitize import clean, clean_inline
from pao_postgres.store.engine import transaction
from pao_postgres.items import as_utc
from pao_postgres.store.schema import KEPT_AT, create_schema, is_current

if TYPE_CHECKING:
    from pao_postgres.store.longterm import LongtermStore


@attrs.frozen
class AgentFact:
    """One fact in the agents' tier, as the user reviews it (entity and text cleaned)."""

    id: int
    agent: str
    session_id: str | None
    recorded_at: dt.datetime | None
    entity: str
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "session_id": self.session_id,
                "recorded_at": self.recorded_at.isoformat() if self.recorded_at else None,
                "entity": self.entity, "text": self.text}


def _agent_facts_query(store: LongtermStore) -> sa.Select:
    t = store.tables
    prov, obs, ent = t.provenance.c, t.observations.c, t.entities.c
    joined = t.provenance.join(t.observations, obs.id == prov.observation_id).join(t.entities, ent.id == obs.entity_id)
    return (sa.select(prov.observation_id, prov.agent, prov.session_id, prov.recorded_at, ent.name, obs.content)
            .select_from(joined).where(prov[KEPT_AT].is_(None)))


def agent_facts(store: LongtermStore, deadline: float) -> list[AgentFact]:
    """Every fact of the agents' tier, oldest first."""
    if not store.exists():
        return []
    with transaction(store.engine(), deadline) as connection:
        if not is_current(connection, store.tables):
            return []  # no provenance table yet, or made before kept_at: migrated on the next write
        rows = connection.execute(_agent_facts_query(store).order_by(store.tables.provenance.c.recorded_at,
                                                                      store.tables.provenance.c.observation_id))
        return [AgentFact(row[0], clean_inline(row[1]), clean_inline(row[2]) if row[2] else None, as_utc(row[3]),
                          clean_inline(row[4]), clean(row[5])) for row in rows]


def settle(store: LongtermStore, keep: Sequence[int], forget: Sequence[int]) -> None:
    """Keep (promote) and forget agents' facts by id, all or nothing."""
    both = set(keep) & set(forget)
    if both:
        raise ValidationError(f"memory review: {_ids(both)} both kept and forgotten; name each once")
    wanted = set(keep) | set(forget)
    if not store.exists():
        raise PaoError(f"memory review: no agent's fact {_ids(wanted)} (the store is empty); nothing changed")
    prov, obs = store.tables.provenance, store.tables.observations
    with store.write() as connection:
        if not is_current(connection, store.tables):
            create_schema(connection, store.tables)
        locked = sa.select(prov.c.observation_id).where(prov.c.observation_id.in_(sorted(wanted)), prov.c[KEPT_AT].is_(None))
        found = set(connection.execute(locked if store.is_sqlite else locked.with_for_update()).scalars())
        if wanted - found:
            raise PaoError(f"memory review: no agent's fact {_ids(wanted - found)} (see `pao memory review`); nothing changed")
        if keep:
            connection.execute(sa.update(prov).where(prov.c.observation_id.in_(sorted(keep)))
                               .values({KEPT_AT: dt.datetime.now(dt.timezone.utc)}))
        if forget:
            # Explicit: a mapped database's foreign keys may not cascade.
            connection.execute(sa.delete(prov).where(prov.c.observation_id.in_(sorted(forget))))
            connection.execute(sa.delete(obs).where(obs.c.id.in_(sorted(forget))))


def _ids(ids: set[int]) -> str:
    return ", ".join(map(str, sorted(ids)))
