"""Which SGLang release wrote a start-up log, and how that is known.

    found = detect_release(log, override=None)
    found.release     # the SUPPORTED_RELEASES entry the comparison plans with
    found.source      # "request" | "printed" | "inferred" | "assumed default"
    found.how         # the evidence, in words
    found.candidates  # (first, last) releases the evidence allows, when the release is guessed

In order: the caller's `sglang_version` wins; then the version the log prints; then what the
log's own text allows: the `server_args` record's fields (each release's argparse surface,
service/sglang_flags_releases.json: a field that only some releases define bounds the range)
and the wordings that changed between releases (mambasizer.service.startlog.formats). Inside
the range left, the newest release is compared with (0.5.23 when it is in the range), and the
answer says it was guessed and whether the range's releases all size alike (one accounting
epoch). A printed release mambasizer does not carry (newer, older, a pre-release) is compared
with the nearest one it carries, and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES
from mambasizer.service.solver.releases.registry import base_release, epoch_of, release_key
from mambasizer.service.startlog.formats import MARKS
from mambasizer.service.startlog.parse import BootLog

Source = Literal["request", "printed", "inferred", "assumed default"]

# A record holding this share of the fields every release defines is taken as printed whole:
# then a field a release defines that the record lacks rules that release out too.
_WHOLE_RECORD_SHARE = 0.9


@dataclass
class ReleaseFinding:
    release: str
    source: Source
    how: str
    printed: str | None = None
    candidates: tuple[str, str] | None = None
    same_accounting: bool | None = None  # every candidate in one accounting epoch
    note: str | None = None  # a guess, a nearest release, or evidence that disagrees


def _bases() -> list[str]:
    out: list[str] = []
    for r in SUPPORTED_RELEASES:
        b = base_release(r)
        if b not in out:
            out.append(b)
    return out


@lru_cache(maxsize=1)
def _dests() -> dict[str, frozenset[str]]:
    """Base release -> the server_args fields its launch parser defines."""
    from mambasizer.service.sglang_args import FROM_CLI_ARGS_RENAMES, _flags

    # The record prints ServerArgs fields: an old release's long parallel dests under their field names.
    return {b: frozenset(FROM_CLI_ARGS_RENAMES.get(d, d) for d in _flags(b)[1]) for b in _bases()}


def _span(bases: set[str]) -> str:
    first, last = _range(bases)
    if base_release(first) == base_release(last):
        return first
    if last == SUPPORTED_RELEASES[-1]:
        return f"{first} on"
    if first == SUPPORTED_RELEASES[0]:
        return f"up to {last}"
    return f"{first}-{last}"


def _from_record(record: dict[str, Any]) -> tuple[set[str] | None, list[str]]:
    """(the base releases the record's fields allow, the fields that decided it); None when
    the record says nothing about the release."""
    dests = _dests()
    every = set(dests)
    common = frozenset.intersection(*dests.values())
    keys = set(record)
    allowed = set(every)
    deciding: dict[str, set[str]] = {}
    for key in keys:
        where = {b for b, d in dests.items() if key in d}
        if where and where != every:
            allowed &= where
            deciding[key] = where
    whole = len(keys & common) >= _WHOLE_RECORD_SHARE * len(common)
    lacking: dict[str, set[str]] = {}
    if whole:
        for b in list(allowed):
            missing = dests[b] - common - keys
            if missing:
                allowed.discard(b)
                lacking[b] = set(missing)
    if allowed == every:
        return None, []
    if not allowed:
        return set(), ["the record's fields match no single release's parser"]
    words = []
    # The fields that set the bounds: the latest first release and the earliest last one.
    lower = max(deciding.items(), key=lambda kv: min(release_key(b) for b in kv[1]), default=None)
    upper = min(deciding.items(), key=lambda kv: max(release_key(b) for b in kv[1]), default=None)
    for item in (lower, upper):
        if item is not None and f"`{item[0]}` ({_span(item[1])})" not in words:
            words.append(f"`{item[0]}` ({_span(item[1])})")
    if lacking:
        fewest: list[str] = min((sorted(names) for names in lacking.values()), key=len)
        words.append(f"no field a later release adds ({', '.join(fewest[:2])})")
    return allowed, sorted(words)


def _from_marks(found: set[str]) -> tuple[set[str] | None, list[str]]:
    if not found:
        return None, []
    allowed = set(_bases())
    words = []
    for name in sorted(found):
        mark = MARKS[name]
        last = mark.last or _bases()[-1]
        where = {b for b in _bases() if release_key(mark.first) <= release_key(b) <= release_key(last)}
        allowed &= where
        words.append(f"{mark.says} ({_span(where)})")
    return allowed, words


def _releases_of(bases: set[str]) -> list[str]:
    return [r for r in SUPPORTED_RELEASES if base_release(r) in bases]


_NUMERIC = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:\.?(post|dev|rc|a|b)(\d+))?")


def _nearest(printed: str) -> tuple[str | None, str | None]:
    """(the supported release to compare with, why it is not the printed one) for a printed
    version; (None, why) when it names no release (a development build's 0.0.0)."""
    plain = printed.split("+", 1)[0]
    if plain in SUPPORTED_RELEASES:
        return plain, None if plain == printed else f"local build {printed!r} of {plain}"
    m = _NUMERIC.fullmatch(plain)
    if not m:
        return None, f"the printed version {printed!r} is not a release number"
    key = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if key == (0, 0, 0):
        return None, f"the printed version {printed!r} is a development build's and names no release"
    base = ".".join(str(k) for k in key)
    bases = _bases()
    if base in bases:
        kind = {"post": "post-release", "dev": "development build", "rc": "release candidate"}.get(m.group(4) or "", "pre-release")
        return base, f"{printed} is a {kind} of {base}, which mambasizer carries as {base}"
    if key > release_key(bases[-1]):
        return bases[-1], f"SGLang {printed} is newer than any release mambasizer carries: compared with {bases[-1]}, the nearest"
    if key < release_key(bases[0]):
        return bases[0], f"SGLang {printed} is older than any release mambasizer carries: compared with {bases[0]}, the nearest"
    nearest = min(bases, key=lambda b: abs(release_key(b)[2] - key[2]) if release_key(b)[:2] == key[:2] else 99)
    return nearest, f"SGLang {printed} is not a release mambasizer carries: compared with {nearest}, the nearest"


def detect_release(log: BootLog, override: str | None = None) -> ReleaseFinding:
    rec_allowed, rec_words = _from_record(log.server_args)
    mark_allowed, mark_words = _from_marks(log.format_marks)
    allowed: set[str] | None = None
    words: list[str] = []
    conflict = None
    if rec_allowed is not None and mark_allowed is not None and not (rec_allowed & mark_allowed) and rec_allowed:
        # Wordings and fields disagree (a log pasted together from two runs, or a patched
        # build): the record's fields are the release's own parser, and win.
        conflict = f"the start-up wordings ({'; '.join(mark_words)}) point to another release than the server_args record"
        allowed, words = rec_allowed, ["the server_args record's fields " + ", ".join(rec_words)]
    else:
        for part, part_words, label in ((rec_allowed, rec_words, "the server_args record's fields "), (mark_allowed, mark_words, "")):
            if part is None:
                continue
            allowed = part if allowed is None else allowed & part
            words.append(label + ", ".join(part_words) if label else "; ".join(part_words))
    evidence = "; ".join(words)
    printed = log.sglang_version

    def disagreement(release: str) -> str | None:
        if allowed and base_release(release) not in allowed:
            return f"the log's own text allows {_span(allowed)} ({evidence}), not {release}"
        return None

    if override is not None:
        notes = [n for n in (disagreement(override), conflict) if n]
        if printed is not None:
            near, _ = _nearest(printed)
            if near is not None and base_release(near) != base_release(override):
                notes.insert(0, f"the log prints SGLang {printed}")
        return ReleaseFinding(override, "request", "named in the request (sglang_version)", printed, note="; ".join(notes) or None)
    printed_note = None
    if printed is not None:
        near, why = _nearest(printed)
        if near is not None:
            notes = [n for n in (why, disagreement(near), conflict) if n]
            return ReleaseFinding(near, "printed", f"printed in the log (SGLang {printed})", printed, note="; ".join(notes) or None)
        printed_note = why
    if not allowed:
        notes = [n for n in (printed_note, conflict) if n]
        if allowed is not None:  # evidence that contradicts itself
            notes.append(f"the log's text fits no single release ({evidence})")
        notes.append(f"no release printed or told by the log's text: SGLang {DEFAULT_RELEASE}'s rules are assumed")
        first, last = SUPPORTED_RELEASES[0], SUPPORTED_RELEASES[-1]
        return ReleaseFinding(DEFAULT_RELEASE, "assumed default", "assumed (the default release)", printed, (first, last), False, "; ".join(notes))
    first, last = _range(allowed)
    epochs = {epoch_of(b) for b in allowed}
    chosen = DEFAULT_RELEASE if base_release(DEFAULT_RELEASE) in allowed else _releases_of(allowed)[-1]
    notes = [n for n in (printed_note, conflict) if n]
    if first != last:
        alike = "every one of them sizes alike" if len(epochs) == 1 else "they do not all size alike"
        notes.append(f"the release is guessed: the log's text allows {first}-{last} ({alike}); compared with {chosen}, the newest")
    return ReleaseFinding(chosen, "inferred", "inferred from " + evidence, printed, (first, last), len(epochs) == 1, "; ".join(notes) or None)


def _range(bases: set[str]) -> tuple[str, str]:
    releases = _releases_of(bases)
    return releases[0], releases[-1]
