"""The benchmark's data: seeded, reproducible sessions of ~400-character messages.

Words come from a fixed vocabulary drawn with Zipf weights (rank ** -1), as in natural text, so the
full-text index sees a realistic mix of very common and rare terms. A few words that are not in the
vocabulary are planted in a handful of messages for the search figure.

Entry pattern, repeating every 20 entries (10% of the entries are tool entries):
    user, assistant, tool_call, tool_result, then (user, assistant) x 8
"""

from __future__ import annotations

import itertools
import random
import string
from dataclasses import dataclass

from anyy.domain.entries import (
    AssistantData,
    EntryKind,
    NewEntry,
    ToolCallData,
    ToolResultData,
    Usage,
    encode_data,
)

SEED = 20240611
VOCABULARY_SIZE = 10_000
MESSAGE_CHARS = 400
CYCLE = 20
# Words planted for search; the vocabulary generator skips them, so each occurs only where planted.
RARE_WORDS = ("quetzalqoatl", "zymurgyqx", "kerfuffleqz", "brouhahaqy", "snollygosterq")
RARE_COPIES = 3  # messages holding each rare word


def _vocabulary(rng: random.Random) -> list[str]:
    letters = string.ascii_lowercase
    words: set[str] = set()
    ordered: list[str] = []
    while len(ordered) < VOCABULARY_SIZE:
        word = "".join(rng.choices(letters, k=rng.randint(2, 10)))
        if word not in words and word not in RARE_WORDS:
            words.add(word)
            ordered.append(word)
    return ordered


@dataclass(frozen=True)
class Workload:
    """``count`` message texts of ~400 characters, and where the rare words were planted."""

    texts: list[str]
    planted: dict[str, list[int]]  # rare word -> indexes of the entries (in the pattern) holding it
    vocabulary: list[str]  # most frequent first

    def messages_with(self, word: str, count: int) -> int:
        """How many of the first ``count`` searchable messages contain ``word``."""
        return sum(
            1
            for i in range(count)
            if self.kind_at(i) in (EntryKind.USER, EntryKind.ASSISTANT) and word in self.texts[i].split()
        )

    def kind_at(self, index: int) -> EntryKind:
        slot = index % CYCLE
        if slot == 2:
            return EntryKind.TOOL_CALL
        if slot == 3:
            return EntryKind.TOOL_RESULT
        if slot % 2 == 0:
            return EntryKind.USER
        return EntryKind.ASSISTANT

    def entry(self, index: int) -> NewEntry:
        """The entry at ``index`` of the pattern (its text is ``texts[index]``)."""
        kind = self.kind_at(index)
        text = self.texts[index]
        if kind == EntryKind.USER:
            return NewEntry(kind=kind, text=text)
        if kind == EntryKind.ASSISTANT:
            stop = "tool_use" if index % CYCLE == 1 else "end_turn"
            usage = Usage(input=1_000 + index % 5_000, output=100 + index % 400, cache_read=index % 3_000)
            return NewEntry(
                kind=kind,
                text=text,
                data=AssistantData(provider="offline", model="bench-model-1", usage=usage, stop_reason=stop),
            )
        call_id = f"call_{index // CYCLE:08d}"
        if kind == EntryKind.TOOL_CALL:
            # A tool call carries its arguments, not a message: its text is empty.
            command = f"grep -rn {text[:40]!r} src/ | head -n 20"
            return NewEntry(
                kind=kind, text="", data=ToolCallData(call_id=call_id, name="shell", arguments={"command": command})
            )
        return NewEntry(kind=kind, text=text, data=ToolResultData(call_id=call_id, name="shell"))

    def entries(self, start: int, stop: int) -> list[NewEntry]:
        return [self.entry(i) for i in range(start, stop)]

    def is_message(self, index: int) -> bool:
        """Whether the entry carries a ~400-character text (every kind but tool calls)."""
        return self.kind_at(index) != EntryKind.TOOL_CALL

    def raw_row(self, index: int) -> tuple[int, str, str | None]:
        """(kind, text, data JSON) exactly as the store encodes them, for the raw-SQLite reference."""
        new = self.entry(index)
        data = encode_data(new.kind, new.data)
        return int(new.kind), new.text, data.decode() if data is not None else None


def build(count: int, *, seed: int = SEED) -> Workload:
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocabulary))))
    texts = []
    for _ in range(count):
        words = rng.choices(vocabulary, cum_weights=cumulative, k=90)
        joined = " ".join(words)
        while len(joined) < MESSAGE_CHARS:
            joined += " " + " ".join(rng.choices(vocabulary, cum_weights=cumulative, k=30))
        cut = joined.rfind(" ", 0, MESSAGE_CHARS + 1)
        texts.append(joined[:cut])
    planted: dict[str, list[int]] = {}
    workload = Workload(texts=texts, planted=planted, vocabulary=vocabulary)
    searchable = [i for i in range(count) if workload.kind_at(i) in (EntryKind.USER, EntryKind.ASSISTANT)]
    for word in RARE_WORDS:
        spots = sorted(rng.sample(searchable, RARE_COPIES)) if len(searchable) >= RARE_COPIES else []
        for spot in spots:
            text = texts[spot]
            texts[spot] = word + text[text.find(" ") :]
        planted[word] = spots
    return workload


def message_stats(workload: Workload, count: int) -> dict[str, float]:
    lengths = [len(workload.texts[i]) for i in range(count) if workload.is_message(i)]
    return {
        "messages": len(lengths),
        "mean_chars": sum(lengths) / len(lengths),
        "min_chars": min(lengths),
        "max_chars": max(lengths),
    }
