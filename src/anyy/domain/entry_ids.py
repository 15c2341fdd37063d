"""Entry ids encode who appended them: ``(session number << SEQ_BITS) | sequence``.

A session's own entries are therefore one contiguous id range, in append order. A linear run of the
tree (each entry the child of the one appended just before it by the same session) is a contiguous id
interval, so a whole run loads with one range scan of the primary key instead of a walk of parent links.
The layout keeps ids below 2**53, so they survive JSON and JavaScript numbers intact.
"""

from __future__ import annotations

SEQ_BITS = 30
MAX_SEQ = (1 << SEQ_BITS) - 1
MAX_SESSION_NUMBER = (1 << (53 - SEQ_BITS)) - 1


def make_entry_id(session_number: int, seq: int) -> int:
    return (session_number << SEQ_BITS) | seq


def owner_number(entry_id: int) -> int:
    """The number of the session that appended this entry."""
    return entry_id >> SEQ_BITS


def seq_of(entry_id: int) -> int:
    return entry_id & MAX_SEQ


def session_range(session_number: int) -> tuple[int, int]:
    """The inclusive id interval of every entry a session can append."""
    base = session_number << SEQ_BITS
    return base, base | MAX_SEQ
