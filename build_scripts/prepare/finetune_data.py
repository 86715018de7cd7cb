"""What the encoder fine-tune learns from, and how it is batched: pure logic, no torch.

``finetune_encoder.py`` trains on (question, capability) pairs. They come
from the training-role query sets and our own set only (never calibration,
selection or held-out, which choose the epochs and report the result), plus
pseudo-questions made from the catalog's own texts. Batches hold distinct
capabilities, so no in-batch negative is another phrasing of the right answer.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass

from build_scripts import querysets
from engine.matching.scoring import Record, humanize

# Sets the encoder may learn from. Narrower than querysets.FIT_ROLES: the calibration sets choose the
# epochs and learning rate here, so training on them would make that choice in-sample.
TRAIN_ROLES = frozenset({"training", "own"})
CATALOG_SOURCE = "catalog"


@dataclass(frozen=True)
class Pair:
    """One training pair: a question, the capability it asks about, and optionally a confusable one."""

    query: str
    capability: str  # capability id
    source: str  # the query set's name, or "catalog" for a pseudo-question
    negative: str | None = None  # capability id the shipped matcher confused it with


def training_sets() -> tuple[querysets.QuerySet, ...]:
    """The query sets the fine-tune reads, in manifest order."""
    return querysets.by_role(*sorted(TRAIN_ROLES))


def read_training_set(name: str) -> list[dict]:
    """A set's queries, refusing any set whose role is not a training role."""
    entry = querysets.get(name)
    if entry.role not in TRAIN_ROLES:
        raise PermissionError(
            f"{name} is a {entry.role} set; the encoder fine-tune reads only {sorted(TRAIN_ROLES)} sets"
        )
    return querysets.read_for_fit(name)["queries"]


def positive_text(record: Record) -> str:
    """The text a question is pulled towards: "Name: summary", the index's description entry."""
    return f"{humanize(record.name)}: {record.description}"


def question_pairs(names: list[str], records: list[Record]) -> list[Pair]:
    """(question, capability) pairs of the named sets; questions that should match nothing are left out."""
    by_name = {r.name: r.id for r in records}
    pairs = []
    for name in names:
        for row in read_training_set(name):
            expected = row.get("expected")
            if expected is None:
                continue
            if expected not in by_name:
                raise ValueError(
                    f"{name}: expected capability {expected!r} is not in the catalog; "
                    f"known: {', '.join(sorted(by_name))}"
                )
            pairs.append(Pair(row["query"], by_name[expected], name))
    return pairs


def pseudo_questions(records: list[Record]) -> list[Pair]:
    """The catalog's own texts as questions: examples, agents' descriptions, setup and config notes.

    Each is paired with its capability's "Name: summary", which teaches the
    encoder the catalog's vocabulary (an agent's description of its hooks
    names the events; its setup note names the config file).
    """
    pairs = []
    for record in records:
        target = positive_text(record).casefold()
        for text in dict.fromkeys([*record.texts, *record.keywords]):
            if text.strip() and text.casefold() != target:
                pairs.append(Pair(text, record.id, CATALOG_SOURCE))
    return pairs


def with_negatives(pairs: list[Pair], negatives: dict[str, dict[str, str]]) -> list[Pair]:
    """Attach mined hard negatives ({set: {query: capability id}}) to the pairs they were mined for."""
    out = []
    for pair in pairs:
        negative = negatives.get(pair.source, {}).get(pair.query)
        if negative == pair.capability:
            raise ValueError(f"hard negative for {pair.query!r} is its own capability {negative!r}")
        out.append(Pair(pair.query, pair.capability, pair.source, negative) if negative else pair)
    return out


def distinct_batches(pairs: list[Pair], size: int, rng: random.Random) -> list[list[Pair]]:
    """Shuffle and pack pairs into batches in which no capability appears twice.

    Greedy: each pair goes into the first open batch that lacks its
    capability. Left-over batches of fewer than two pairs are dropped (one
    pair has no in-batch negative). The batch order is shuffled too, so the
    last, partly filled batches do not always come last.
    """
    if size < 2:
        raise ValueError(f"batch size must be at least 2, got {size}")
    order = list(pairs)
    rng.shuffle(order)
    done: list[list[Pair]] = []
    open_batches: list[tuple[list[Pair], set[str]]] = []
    for pair in order:
        for items, caps in open_batches:
            if pair.capability not in caps:
                items.append(pair)
                caps.add(pair.capability)
                if len(items) == size:
                    done.append(items)
                    open_batches.remove((items, caps))
                break
        else:
            open_batches.append(([pair], {pair.capability}))
    done.extend(items for items, _ in open_batches if len(items) >= 2)
    rng.shuffle(done)
    return done


def batch_columns(batch: list[Pair], text_of: dict[str, str]) -> tuple[list[str], list[str]]:
    """Anchors and candidate texts of one batch: column i is anchor i's positive, then hard negatives.

    Hard negatives whose capability is already a positive in the batch are not
    repeated: a second copy of a right answer's text would be scored as wrong.
    """
    anchors = [p.query for p in batch]
    caps = [p.capability for p in batch]
    if len(set(caps)) != len(caps):
        raise ValueError("a batch holds one capability twice; pack it with distinct_batches")
    extra = [n for n in dict.fromkeys(p.negative for p in batch if p.negative) if n not in caps]
    return anchors, [text_of[c] for c in caps] + [text_of[c] for c in extra]


def pairs_sha256(pairs: list[Pair]) -> str:
    """Digest of the pairs as trained on, order included: what the catalog contributed, exactly."""
    blob = json.dumps([asdict(p) for p in pairs], ensure_ascii=False, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
