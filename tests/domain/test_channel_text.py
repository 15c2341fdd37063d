"""L3: a long answer is split at the platform's limit on readable boundaries (a paragraph, then a line,
then a word), never inside a fenced code block when a cut outside it exists, and nothing is lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from anyy.domain.channels import split_text


def test_l3_short_text_is_one_part() -> None:
    assert split_text("  hello  ", 100) == ["hello"]
    assert split_text("", 100) == [""]


def test_l3_split_prefers_paragraphs_then_lines_then_words() -> None:
    assert split_text("aaaa bbbb\n\ncccc dddd", 12) == ["aaaa bbbb", "cccc dddd"]
    assert split_text("aaaa bbbb\ncccc dddd", 12) == ["aaaa bbbb", "cccc dddd"]
    assert split_text("aaaa bbbb cccc", 10) == ["aaaa bbbb", "cccc"]


def test_l3_split_does_not_cut_inside_a_code_fence() -> None:
    text = "intro line here\n\n```\ncode one\ncode two\n```\nafter"
    parts = split_text(text, 40)
    assert parts[0] == "intro line here"
    assert all(part.count("```") % 2 == 0 for part in parts)


@given(st.text(alphabet="ab \n`", max_size=400), st.integers(min_value=8, max_value=60))
def test_l3_split_parts_fit_and_keep_every_word(text: str, limit: int) -> None:
    parts = split_text(text, limit)
    assert all(len(part) <= limit for part in parts)
    assert "".join("".join(parts).split()) == "".join(text.split())  # only whitespace at the cuts goes
