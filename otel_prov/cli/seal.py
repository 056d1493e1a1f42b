"""``otel-prov seal`` and ``otel-prov verify``: a canonical digest of each session's graph recorded
in the graph ``urn:graph:seals``, and the sessions whose graph changed, went, or came since
(:mod:`otel_prov.read.seals`; docs/audit.md, "Seal and verify").

Both take the sessions ``list`` takes (``--collection``, ``--since``, ``--until``) or the ones named
(``--session``, repeatable), and the keys a seal is authenticated with: ``--hmac-key FILE`` (HMAC-SHA256,
the standard library) and ``--ed25519-key FILE`` (a PEM key; the ``cryptography`` package, the
``sign`` extra)."""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import settings
from ..model.quads import nquads
from ..model.terms import isoformat_ns
from ..model.vocab import GRAPH_SEALS
from ..read.model import SessionFilter, TraceNotFound
from ..read.reader import TraceReader
from ..read.seals import (
    ALGORITHM,
    BAD_SIGNATURE,
    INTACT,
    STATUSES,
    UNSIGNED,
    Finding,
    Seal,
    blobs_of,
    compare,
    digest,
    read_seals,
    with_blobs,
)
from ..stores import Blobs, open_for_writing
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    Reading,
    blob_store,
    check_iri,
    option,
    resolve_format,
    write,
)
from .read import check_time_range

HMAC_MIN_BYTES = 16
"""The shortest HMAC key taken (a shorter one is guessed too easily)."""
SEALS_PER_WRITE = 5000
"""Seals written to the store at once."""
REPORT_SUFFIXES = {".json": "json", ".txt": "text"}
"""``--output``'s suffixes, and the format each means when ``--format`` is not given."""

SEALED, RESEALED, UNCHANGED, CHANGED = "sealed", "resealed", "unchanged", "changed"
"""What ``seal`` did with a session: sealed it (its first seal); sealed it again (``--reseal`` over a
changed graph, or other keys); nothing (already sealed as it is, with these keys); nothing, though
its graph changed since its seal (``verify`` names it; ``--reseal`` seals it as it is now)."""
SEAL_LABELS = {SEALED: "sealed", RESEALED: "sealed again", UNCHANGED: "unchanged since sealed",
               CHANGED: "changed since sealed (not sealed again)"}


# -- keys -------------------------------------------------------------------------------------------


@dataclass
class Keys:
    """The keys given: an HMAC key, an Ed25519 key (private to seal; public or private to verify)."""

    hmac_key: bytes | None = None
    private: Any = None
    public: Any = None
    public_text: str | None = None
    """The public key, raw, in base64 (as a seal records it)."""

    @property
    def names(self) -> list[str]:
        return [name for name, key in (("HMAC-SHA256", self.hmac_key), ("Ed25519", self.public)) if key]

    def sign(self, seal: Seal) -> Seal:
        message = seal.message()
        found = replace(seal, public_key=self.public_text)
        if self.hmac_key is not None:
            found = replace(found, hmac=hmac.new(self.hmac_key, message, hashlib.sha256).hexdigest())
        if self.private is not None:
            found = replace(found, signature=base64.b64encode(self.private.sign(message)).decode("ascii"))
        return found

    def problem(self, seal: Seal) -> tuple[str, str] | None:
        """None when ``seal`` carries a valid HMAC and signature for each key given, else what is wrong."""
        message = seal.message()
        if self.hmac_key is not None:
            if seal.hmac is None:
                return UNSIGNED, "its latest seal has no HMAC (--hmac-key was given)"
            expected = hmac.new(self.hmac_key, message, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(seal.hmac.encode("ascii", "replace"), expected.encode("ascii")):
                return BAD_SIGNATURE, ("its latest seal's HMAC does not match the key given (another "
                                       "key made it, or the seal was altered)")
        if self.public is not None:
            from cryptography.exceptions import InvalidSignature

            if seal.signature is None:
                return UNSIGNED, "its latest seal has no Ed25519 signature (--ed25519-key was given)"
            if seal.public_key != self.public_text:
                return BAD_SIGNATURE, "its latest seal is signed with another Ed25519 key"
            try:
                self.public.verify(base64.b64decode(seal.signature, validate=True), message)
            except (InvalidSignature, ValueError):
                return BAD_SIGNATURE, ("its latest seal's Ed25519 signature does not match (the seal "
                                       "was altered)")
        return None


def _read_key(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _serialization() -> Any:
    """``cryptography``'s key serialization module, or a :class:`CliError` saying how to install it."""
    try:
        from cryptography.hazmat.primitives import serialization
    except ImportError:
        raise CliError("--ed25519-key needs the 'cryptography' package, which is not installed: "
                       "pip install 'otel-prov[sign]'") from None
    return serialization


def _ed25519(path: str, *, private: bool) -> tuple[Any, Any]:
    """(private key or None, public key) from a PEM file: a private key to seal; to verify, its
    public key or the private key."""
    serialization = _serialization()
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    data = _read_key(path)
    key: Any = None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise CliError(f"the private key in {path} is encrypted: give one without a password "
                       "(openssl pkey -in KEY -out PLAIN)") from None
    except (ValueError, UnsupportedAlgorithm):
        if not private:
            try:
                key = serialization.load_pem_public_key(data)
            except (ValueError, UnsupportedAlgorithm):
                pass
    if isinstance(key, Ed25519PrivateKey):
        return key, key.public_key()
    if isinstance(key, Ed25519PublicKey) and not private:
        return None, key
    wanted = "an Ed25519 private key" if private else "an Ed25519 public or private key"
    raise CliError(f"{path} is not {wanted} in PEM (make one: openssl genpkey -algorithm ed25519 -out "
                   "seal.pem; its public key: openssl pkey -in seal.pem -pubout -out seal.pub)")


def load_keys(args: argparse.Namespace, *, signing: bool) -> Keys:
    """The keys ``--hmac-key`` and ``--ed25519-key`` name (read before the store is)."""
    keys = Keys()
    if args.hmac_key is not None:
        keys.hmac_key = _read_key(args.hmac_key)
        if len(keys.hmac_key) < HMAC_MIN_BYTES:
            raise CliError(f"the HMAC key in {args.hmac_key} is {len(keys.hmac_key)} bytes: at least "
                           f"{HMAC_MIN_BYTES} (make one: head -c 32 /dev/urandom > seal.key)")
    if args.ed25519_key is not None:
        keys.private, keys.public = _ed25519(args.ed25519_key, private=signing)
        serialization = _serialization()
        raw = keys.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        keys.public_text = base64.b64encode(raw).decode("ascii")
    return keys


# -- which sessions ---------------------------------------------------------------------------------


@dataclass
class Scope:
    """The sessions a command covers, as ``list`` filters them, or those named."""

    collection: str | None
    where: SessionFilter
    ids: list[str] | None
    """The top-level Questions of the sessions named (``--session``), or None: all."""

    def keeps(self, session: str, seal: Seal) -> bool:
        """Whether a session sealed by ``seal`` (as it was then: its collection, its time) is covered."""
        return ((self.ids is None or session in self.ids)
                and (self.collection is None or seal.collection == self.collection)
                and self.where.keeps_time(seal.session_time))


def _scope(args: argparse.Namespace, reader: TraceReader, sealed: dict[str, list[Seal]] | None) -> Scope:
    """The scope the flags give.  A session named by an IRI that names nothing now is covered when it
    is among ``sealed`` (``verify`` then says it was removed), else it is an error."""
    ids = None
    if args.session:
        ids = []
        for ref in (check_iri(text, trace_id=True) for text in args.session):
            try:
                ids.append(reader.top_question(reader.question_of(ref)))
            except TraceNotFound as exc:
                if sealed is None or ref not in sealed:
                    raise CliError(str(exc)) from exc
                ids.append(ref)
    return Scope(option(args, settings.COLLECTION), SessionFilter(since=args.since, until=args.until), ids)


def _current(reader: TraceReader, scope: Scope) -> dict[str, dict[str, str]]:
    """The top-level sessions in scope now: Question -> its listing row (time, collection)."""
    rows = reader.listed(collection=scope.collection, where=scope.where, ids=scope.ids)
    return {row["q"]: row for row in rows}


def _digests(reader: TraceReader, sessions: list[str]) -> dict[str, tuple[str, int]]:
    """Each session's digest and quads now (a session with no quad left is absent)."""
    return {q: digest(triples) for q, triples in reader.session_triples(sessions) if triples}


def _counted(statuses: Iterable[str], labels: dict[str, str]) -> str:
    """``2 changed, 1 removed``: how many of each status, in the order of ``labels``."""
    found = Counter(statuses)
    return ", ".join(f"{found[status]} {label}" for status, label in labels.items() if found[status])


def _prepare(args: argparse.Namespace, *, signing: bool) -> tuple[str, Keys, Reading]:
    """The report's format, the keys and the store to read: every flag checked before the store is read."""
    fmt = resolve_format(args.format, args.output, REPORT_SUFFIXES, "text")
    check_time_range(args)
    return fmt, load_keys(args, signing=signing), Reading(args)


# -- seal -------------------------------------------------------------------------------------------


def cmd_seal(args: argparse.Namespace) -> int:
    fmt, keys, reading = _prepare(args, signing=True)
    with reading as store:
        reader = TraceReader(store)
        scope = _scope(args, reader, None)
        current = _current(reader, scope)
        seals = read_seals(store)
        now = _digests(reader, list(current))
    stamp = isoformat_ns(time.time_ns())
    done: list[tuple[str, str, Seal]] = []
    for session, row in current.items():
        found_digest, quads = now[session]
        latest = seals[session][-1] if session in seals else None
        if latest is None:
            status = SEALED
        elif latest.digest == found_digest and latest.algorithm == ALGORITHM:
            status = UNCHANGED if keys.problem(latest) is None else RESEALED  # other keys: sealed with these
        else:
            status = RESEALED if args.reseal else CHANGED
        if status in (SEALED, RESEALED):
            latest = keys.sign(Seal(session, found_digest, quads, stamp, row.get("coll"), row.get("time")))
        assert latest is not None
        done.append((session, status, latest))
    written = [seal for _, status, seal in done if status in (SEALED, RESEALED)]
    if written:
        store_ = open_for_writing(reading.spec)
        try:
            for start in range(0, len(written), SEALS_PER_WRITE):
                quads_ = [q for seal in written[start:start + SEALS_PER_WRITE] for q in seal.quads_in_graph()]
                store_.add(nquads(quads_), len(quads_))
        finally:
            store_.close()
    if fmt == "json":
        sessions = [{"session": session, "status": status, "digest": seal.digest, "quads": seal.quads,
                     "seal": seal.iri} for session, status, seal in done]
        write(json.dumps({"store": str(reading.spec), "graph": GRAPH_SEALS, "algorithm": ALGORITHM,
                          "time": stamp, "keys": keys.names,
                          "counts": dict(Counter(status for _, status, _ in done)), "sessions": sessions},
                         indent=2) + "\n", args.output)
        return EXIT_OK
    lines = [f"{CHANGED:<9} {session}: its graph changed since it was sealed at {seal.time}; not sealed "
             "again (verify names it; --reseal seals it as it is now)"
             for session, status, seal in done if status == CHANGED]
    if not done:
        lines.append("nothing to seal: no session in scope")
    else:
        counts = _counted((status for _, status, _ in done), SEAL_LABELS)
        how = ", ".join([ALGORITHM, *keys.names])
        seals_written = f"{len(written)} seal{'' if len(written) == 1 else 's'} written"
        lines.append(f"{len(done)} session{'' if len(done) == 1 else 's'}: {counts}; {seals_written} to "
                     f"<{GRAPH_SEALS}> of {reading.spec} ({how})")
    write("\n".join(lines) + "\n", args.output)
    return EXIT_OK


# -- verify -----------------------------------------------------------------------------------------


def cmd_verify(args: argparse.Namespace) -> int:
    fmt, keys, reading = _prepare(args, signing=False)
    with reading as store:
        reader = TraceReader(store)
        seals = read_seals(store)
        scope = _scope(args, reader, seals)
        current = _current(reader, scope)
        sealed = [session for session, found in seals.items() if scope.keeps(session, found[-1])]
        sessions = list(dict.fromkeys([*current, *sorted(sealed)]))
        now = _digests(reader, sessions)
        problems = _blob_problems(reader, sessions, blob_store(args))
    findings = with_blobs(compare(sessions, now, seals, keys.problem if keys.names else None), problems)
    ok = all(f.status == INTACT for f in findings)
    unchecked = _unchecked(findings, keys)
    if fmt == "json":
        write(json.dumps({
            "ok": ok, "store": str(reading.spec), "graph": GRAPH_SEALS, "algorithm": ALGORITHM,
            "keys": keys.names, "unchecked": unchecked,
            "counts": {status: sum(f.status == status for f in findings) for status in STATUSES},
            "sessions": [f.as_json() for f in findings]}, indent=2) + "\n", args.output)
    else:
        write(_verify_text(findings, keys, unchecked), args.output)
    return EXIT_OK if ok else EXIT_FAILED


def _blob_problems(reader: TraceReader, sessions: list[str], blobs: Blobs | None) -> dict[str, list[str]]:
    """Each session's blobs that are missing or whose bytes hash to another name (no blob
    directory: every blob a session names is missing)."""
    out: dict[str, list[str]] = {}
    for session, triples in reader.session_triples(sessions):
        for found in blobs_of(triples):
            problem = blobs.check(found) if blobs is not None else "missing (no blob directory)"
            if problem is not None:
                out.setdefault(session, []).append(f"sha256:{found} {problem}")
    return out


def _unchecked(findings: list[Finding], keys: Keys) -> list[str]:
    """What the latest seals carry that no key was given to check."""
    seals = [f.seal for f in findings if f.seal is not None]
    return [name for name, carried, given in (("HMAC-SHA256", any(s.hmac for s in seals), keys.hmac_key),
                                              ("Ed25519", any(s.signature for s in seals), keys.public))
            if carried and not given]


def _verify_text(findings: list[Finding], keys: Keys, unchecked: list[str]) -> str:
    if not findings:
        return "nothing to verify: no session and no seal in scope\n"
    lines = [f"{f.status:<13} {f.session}: {f.detail}" for f in findings if f.status != INTACT]
    checked = f"; {' and '.join(keys.names)} checked" if keys.names else ""
    bad = [f.status for f in findings if f.status != INTACT]
    statuses = [f.status for f in findings]
    many = len(findings) > 1
    said = _counted(statuses, {s: s for s in STATUSES}) if bad else f"all {len(findings)} intact" if many \
        else "intact"
    lines.append(f"verified {len(findings)} session{'s' if many else ''}: {said} ({ALGORITHM}{checked})")
    flags = {"HMAC-SHA256": "--hmac-key", "Ed25519": "--ed25519-key"}
    lines += [f"note: the seals carry {name} authentication, not checked: give {flags[name]} to check it"
              for name in unchecked]
    return "\n".join(lines) + "\n"
