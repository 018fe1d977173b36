"""Full-text search over the skills of a turn, for catalogs too big to show whole.

A :class:`SkillIndex` ranks skills by their name, description and ``when_to_use`` (the
frontmatter field Claude Code skills use) with SQLite FTS5 and BM25, in an in-memory database
built on the first search and reused afterwards; without FTS5 a simple token scorer ranks.

One index serves every user of a view, so a query is bounded (:data:`MAX_QUERY_CHARS`
characters, :data:`MAX_QUERY_TERMS` distinct words; :class:`QueryTooLarge` past either) and
searches share no lock once the index is built: each reads the database through its own
connection, so one user's search never waits for another's.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Collection, Iterable
from contextlib import closing
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.skills.skill import Skill

if TYPE_CHECKING:  # imported when an index is first searched: most catalogs are never cut
    import sqlite3

__all__ = ["MAX_QUERY_CHARS", "MAX_QUERY_TERMS", "QueryTooLarge", "SkillIndex", "query_words", "when_to_use"]

#: The longest query a search takes, in characters.
MAX_QUERY_CHARS = 1000
#: The most distinct words a query may hold.
MAX_QUERY_TERMS = 32

_WORD = re.compile(r"\w+")
# BM25 column weights: a word of the name counts most, then the description, then when_to_use.
_WEIGHTS = (8.0, 2.0, 1.0)


class QueryTooLarge(HarnessError, ValueError):
    """A search query over :data:`MAX_QUERY_CHARS` characters or :data:`MAX_QUERY_TERMS` words."""


def query_words(query: str) -> list[str]:
    """The distinct lower-case words of ``query``, in order; :class:`QueryTooLarge` when the
    query is over the limits (checked before any work that grows with it)."""
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLarge(
            f"the search query is {len(query)} characters, over the {MAX_QUERY_CHARS}-character limit; "
            "search with a few keywords"
        )
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    if len(words) > MAX_QUERY_TERMS:
        raise QueryTooLarge(
            f"the search query has {len(words)} different words, over the limit of {MAX_QUERY_TERMS}; "
            "search with a few keywords"
        )
    return words


def when_to_use(skill: Skill) -> str:
    """The skill's ``when_to_use`` text (top-level frontmatter or under ``metadata``), or ``""``."""
    nested = skill.metadata.get("metadata")
    for fields in (skill.metadata, nested if isinstance(nested, dict) else {}):
        for key in ("when_to_use", "when-to-use"):
            value = fields.get(key)
            if isinstance(value, str):
                return value
    return ""


class SkillIndex:
    """A search index over a fixed set of skills; safe to share between turns and threads.

    Nothing is built until the first :meth:`search`. Hidden skills are not indexed. With
    ``fts=False`` the simple word scorer ranks, as it does when SQLite lacks FTS5.

    With ``base``, the index covers ``skills`` over the skills of ``base`` (an index shared by
    many users, this one holding a user's own few): a skill whose name is the query comes
    first, then the matches among ``skills``, then the base's; the base's skills that the
    caller's ``allowed`` leaves out (those ``skills`` replace) are never returned.
    """

    def __init__(self, skills: Iterable[Skill], *, fts: bool = True, base: SkillIndex | None = None) -> None:
        self._source: Iterable[Skill] | None = skills  # read on the first search: a view costs nothing until then
        self._base = base
        self._docs: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()  # held only while the index is built
        # A named in-memory database in shared-cache mode: the builder's connection keeps it
        # alive, each search reads it through a connection of its own. The name is random bytes,
        # not a uuid: importing uuid loads platform, which a first turn otherwise never needs.
        self._uri = f"file:harness-skill-index-{os.urandom(16).hex()}?mode=memory&cache=shared"
        self._db: sqlite3.Connection | None = None
        self._fts = fts

    def search(self, query: str, limit: int, allowed: Collection[str]) -> list[str]:
        """The ids of the best ``limit`` matches for ``query`` among ``allowed`` skill ids, best
        first; a skill whose name is the query comes first. :class:`QueryTooLarge` for a query
        over the limits. Blocking: call from a thread."""
        words = query_words(query)
        if not words or limit < 1:
            return []
        if self._source is not None:  # only searches that arrive before the index is built wait
            with self._lock:
                self._build()
        found = [doc[0] for doc in self._docs if doc[1] == query.strip() and doc[0] in allowed]
        if self._base is not None:
            found += self._base.named(query, allowed)
        # Enough rows that ``limit`` remain after dropping what the turn may not see.
        rows = limit + sum(1 for doc in self._docs if doc[0] not in allowed)
        for skill_id in self._ranked(words, rows):
            if len(found) >= limit:
                break
            if skill_id in allowed and skill_id not in found:
                found.append(skill_id)
        if self._base is not None and len(found) < limit:
            found += [i for i in self._base.search(query, limit, allowed) if i not in found]
        return found[:limit]

    def named(self, query: str, allowed: Collection[str]) -> list[str]:
        """The ids among ``allowed`` of the skills named exactly ``query``. Blocking."""
        if self._source is not None:
            with self._lock:
                self._build()
        return [doc[0] for doc in self._docs if doc[1] == query.strip() and doc[0] in allowed]

    def _ranked(self, words: list[str], rows: int) -> list[str]:
        """The ids of the best ``rows`` matches of any of ``words`` (as word prefixes)."""
        if self._db is None:
            return _token_ranked(self._docs, words)[:rows]
        import sqlite3

        match = " OR ".join(f'"{w}"*' for w in words)
        with closing(sqlite3.connect(self._uri, uri=True)) as reader:
            ranked = reader.execute(
                "SELECT skill_id FROM skills WHERE skills MATCH ? ORDER BY rank LIMIT ?", (match, rows)
            )
            return [row[0] for row in ranked]

    def _build(self) -> None:
        """Read the skills and fill the database, once (under the lock); the index counts as
        built only when both are in place, as searches after it take no lock."""
        if self._source is None:
            return
        self._docs = [(s.skill_id, s.name, s.description, when_to_use(s)) for s in self._source if not s.hidden]
        self._db = self._fts_database() if self._fts else None
        self._source = None

    def _fts_database(self) -> sqlite3.Connection | None:
        """The FTS5 table of the documents, or ``None`` when SQLite lacks FTS5."""
        import sqlite3

        db = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
        try:
            db.execute("CREATE VIRTUAL TABLE skills USING fts5(name, description, when_to_use, skill_id UNINDEXED)")
        except sqlite3.OperationalError:  # an SQLite built without FTS5
            db.close()
            return None
        # ``ORDER BY rank`` with a LIMIT lets FTS5 keep only the best rows while ranking.
        db.execute("INSERT INTO skills (skills, rank) VALUES ('rank', ?)", (f"bm25({', '.join(map(str, _WEIGHTS))})",))
        db.executemany("INSERT INTO skills (skill_id, name, description, when_to_use) VALUES (?, ?, ?, ?)", self._docs)
        db.commit()  # searches read through their own connections, which see only committed rows
        return db


def _token_ranked(docs: list[tuple[str, str, str, str]], words: list[str]) -> list[str]:
    """Ranking without FTS5: a query word in the name scores most, in the text less."""
    scored = []
    for skill_id, name, description, when in docs:
        in_name = {w.lower() for w in _WORD.findall(name)}
        in_text = {w.lower() for w in _WORD.findall(f"{description} {when}")}
        score = sum(_WEIGHTS[0] * (w in in_name) + _WEIGHTS[1] * (w in in_text) for w in words)
        if score:
            scored.append((-score, name, skill_id))
    return [skill_id for _, _, skill_id in sorted(scored)]
