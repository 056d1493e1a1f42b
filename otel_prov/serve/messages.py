"""What ``serve``'s front and its mapping workers (:mod:`.workers`, :mod:`.worker`) send each other
over their connection: one type per message (pickled), and the results of a request's parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..mapping.mapper import ConversationOp
from .slices import Failure, Tally

CLOSE_GRACE = 10.0
"""Seconds a worker takes, at most, to close its store (when its front is gone, or restarted)."""


@dataclass
class PoolResult(Tally):
    """What was done with a request, over every worker (or by one: :class:`PartResult`)."""

    failure: tuple[Failure, str] | None = None
    """``(kind, message)``: not known durable (the request is not acknowledged)."""


@dataclass
class PartResult(PoolResult):
    """What one worker did with its part of a request (or a batch of conversation changes)."""

    ops: list[ConversationOp] = field(default_factory=list)
    ops_end: int = 0
    """Set by the front: the sequence number of the last conversation change this part handed out."""


# -- the front to a worker (a request's protobuf bytes follow MapSpans and MapLogs) ---------------------


class MapSpans(NamedTuple):
    """Map and store this worker's share of the ``ExportTraceServiceRequest`` that follows."""

    rid: int
    deadline: float


class MapLogs(NamedTuple):
    """The same for the ``ExportLogsServiceRequest`` that follows (the log records of its traces)."""

    rid: int
    deadline: float


class MapConversations(NamedTuple):
    """Worker 0: the other workers' conversation changes, to apply and store."""

    rid: int
    deadline: float
    ops: list[ConversationOp]


class Close(NamedTuple):
    """Answer what is queued, close the store (within ``timeout`` seconds), answer :class:`Closed`."""

    timeout: float


# -- a worker to the front ---------------------------------------------------------------------------


class Ready(NamedTuple):
    """The worker has opened its store."""


class StartFailed(NamedTuple):
    """The worker could not open its store (it exits)."""

    error: str


class Done(NamedTuple):
    """The answer to a :class:`MapSpans`, :class:`MapLogs` or :class:`MapConversations`."""

    rid: int
    result: PartResult


class Status(NamedTuple):
    """The worker's store's state, sent when it changes."""

    failing: str | None
    failures: int
    written_quads: int


class Closed(NamedTuple):
    """The answer to :class:`Close`: whether everything was stored."""

    stored: bool


ToWorker = MapSpans | MapLogs | MapConversations | Close
ToFront = Ready | StartFailed | Done | Status | Closed
