"""A request mapped slice by slice, as ``serve``'s in-process receiver and its mapping workers both
do it, written once: how many spans are read at a time, what the slices add up to (:class:`Tally`),
and why a request was not acknowledged (:class:`Failure`: the words the counters and the log use)."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field

from ..mapping.mapper import Update
from ..mapping.spans import OtlpSlice

RETRY_BUSY_SECONDS = 1.0
"""Retry delay suggested when the in-flight bound is reached, or the store is slow."""
RETRY_STORE_SECONDS = 5.0
"""Retry delay suggested while the store is failing."""
RETRY_DRAINING_SECONDS = 5.0
"""Retry delay suggested while the receiver shuts down."""


class Failure(str, enum.Enum):
    """Why a request was not acknowledged (the client is answered UNAVAILABLE and retries).  Its
    value is the reason as counted (``refused`` in ``/health``) and logged."""

    STORE_FAILING = "store failing"
    TOO_SLOW = "store too slow (ack timeout)"
    NOT_KEEPING_UP = "the store is not keeping up"
    """The writer's queue stayed full (in-process mapping)."""
    WRITER_STOPPED = "writer stopped"
    CLOSED = "closed"
    CLOSED_WHILE_MAPPING = "closed while mapping"
    CLOSED_UNCONFIRMED = "closed before the commit was confirmed"
    """The drain ran out and the closing writer may have rescued the quads to a file."""
    INTERNAL = "internal error"
    WORKER_STOPPED = "worker stopped"

    @property
    def retry_after(self) -> float:
        """The retry delay the client is told (seconds): soon when the store is only busy, later
        while it fails or the receiver shuts down."""
        if self in (Failure.TOO_SLOW, Failure.NOT_KEEPING_UP):
            return RETRY_BUSY_SECONDS
        if self in (Failure.CLOSED, Failure.CLOSED_WHILE_MAPPING, Failure.CLOSED_UNCONFIRMED):
            return RETRY_DRAINING_SECONDS
        return RETRY_STORE_SECONDS

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


SLICE_SPANS = 1000
"""Spans of a request read and mapped at a time (~20-40 ms of mapping; a large request is never all
records at once): between two slices, the other requests take their turn."""


def rejection_kind(error: str) -> str:
    """The kind of a span's rejection, for the problem counters (one line logged per kind)."""
    return "too large for the store" if "limit" in error else "the mapping failed"


@dataclass
class Tally:
    """What the slices of a request (or one worker's share of it) add up to."""

    accepted: int = 0
    rejected: int = 0
    """Spans rejected for good (partial success): a count, a request may hold millions."""
    first_rejected: str = ""
    """Why the first of them was."""
    problems: Counter[str] = field(default_factory=Counter)
    """Each kind of problem met, with its count."""
    added: int = 0
    """Quads added."""

    def add(self, part: OtlpSlice, update: Update) -> Counter[str]:
        """Count one slice and what its mapping did (``update``): a span the mapping raised on, or too
        large for the store, is rejected (a retry would fail the same way); the others are stored.
        Returns the slice's problems (counted in :attr:`problems` too)."""
        problems: Counter[str] = Counter(part.problems)
        if part.rejected:
            self.rejected += len(part.rejected)
            self.first_rejected = self.first_rejected or part.rejected[0]
            problems["spans rejected: invalid trace or span id"] += 1
        for rec, error in update.failed:
            self.rejected += 1
            self.first_rejected = self.first_rejected or f"span {rec.name[:200]!r} rejected: {error}"
            problems[f"span rejected ({rejection_kind(error)})"] += 1
        self.accepted += len(part.records) - len(update.failed)
        self.added += len(update.add)
        problems.update(update.problems)
        self.problems.update(problems)
        return problems

    def merge(self, other: Tally) -> None:
        """Add another share of the same request (a worker's)."""
        self.accepted += other.accepted
        self.rejected += other.rejected
        self.first_rejected = self.first_rejected or other.first_rejected
        self.problems.update(other.problems)
        self.added += other.added
