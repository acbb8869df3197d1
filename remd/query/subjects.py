"""Subject hits: the live memories of the attribute a question asks about, whatever their words.

"Who's my boss these days?" shares no word with "I report to Sanne now", yet both speak of one
attribute (:mod:`remd.text.frames`). The question's subject keys (an attribute of a person,
or a standing habit's slot) reach the newest live memories of those keys
(:mod:`remd.index.keys`); of those, the ones about the person the question asks about ("my
mother", "Claire", or the speaker) are candidates of inject, each with the same subject
evidence. One index read per key and one read of at most ``limit`` texts: bounded by the
configuration, never the namespace.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from remd.index.keys import live_keyed
from remd.store.seam import Connection
from remd.text.frames import asked, question_keys, words
from remd.text.reading import asked_person
from remd.text.updates import Reading, read, same_subject

__all__ = ["subject_hits"]


def _asked_about(question: str) -> Reading:
    """The question read as a statement, its person the one it asks about (:func:`remd.text.
    reading.asked_person`: "my mother", "Claire", the speaker)."""
    person = asked_person(question)
    if person in {w for f in asked(question) for w in words(f)}:
        person = "self"  # "who's my boss?" asks the speaker's boss, not about the boss
    return replace(read(question), person=person)


def subject_hits(conn: Connection, namespace: str, question: str, limit: int) -> list[int]:
    """The live memories (rids) of the attributes ``question`` asks about, about its person."""
    keys = question_keys(question)
    if not keys or limit <= 0:
        return []
    rids = live_keyed(conn, namespace, keys, limit=limit, synthesis=True)
    if not rids:
        return []
    marks = ",".join("?" * len(rids))
    rows: Any = conn.execute(f"SELECT rid, content FROM nodes WHERE namespace = ? AND rid IN "
                             f"({marks})", (namespace, *rids)).fetchall()
    asked = _asked_about(question)
    return [int(rid) for rid, content in rows if same_subject(asked, read(str(content)))]
