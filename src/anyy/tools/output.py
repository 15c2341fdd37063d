"""Capping what a tool hands back to the model.

The start and the end of a long output are kept and the middle is cut, with a note of how much: a build
log's first lines say what ran and its last lines say how it ended, and both matter more than the middle.
"""

from __future__ import annotations

import codecs


def cut_note(cut: int) -> str:
    return f"\n[... {cut} characters cut from the middle of the output ...]\n"


def cap_text(text: str, cap: int) -> str:
    """``text`` itself if it fits in ``cap`` characters, else its head and tail around a cut note."""
    if len(text) <= cap:
        return text
    head = max(cap, 0) // 2
    tail = max(cap, 0) - head
    return text[:head] + cut_note(len(text) - head - tail) + (text[len(text) - tail :] if tail else "")


class CappedOutput:
    """Bytes from a process decoded as UTF-8 and kept within ``cap`` characters, however many arrive.

    Memory stays bounded by the cap: only the head and a rolling tail are kept while counting the rest.
    """

    def __init__(self, cap: int) -> None:
        self._head_limit = max(cap, 0) // 2
        self._tail_limit = max(cap, 0) - self._head_limit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head = ""
        self._tail = ""
        self.total = 0  # characters seen

    def feed(self, data: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        self.total += len(text)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if text:
            self._tail += text
            # Trim only once the tail is well past its limit, so that feeding stays linear.
            if len(self._tail) > 2 * self._tail_limit + 4096:
                self._tail = self._tail[len(self._tail) - self._tail_limit :]

    def text(self) -> str:
        """Everything received so far, capped; call after the last ``feed``."""
        self.feed(b"", final=True)
        tail = self._tail[len(self._tail) - self._tail_limit :] if self._tail_limit else ""
        cut = self.total - len(self._head) - len(tail)
        if cut <= 0:
            return self._head + self._tail
        return self._head + cut_note(cut) + tail
