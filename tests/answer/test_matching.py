"""The match-aware response spec's tokenizer, preview and match-line rules, case by case."""

from __future__ import annotations

from onetool_code.answer.matching import match_lines, preview, preview_text
from onetool_code.names import match_tokens as tokenize


def test_tokenize_basic():
    assert tokenize("UserAvatar component") == ["useravatar", "component"]


def test_tokenize_drops_single_chars_and_deduplicates():
    assert tokenize("a b foo") == ["foo"]
    assert tokenize("foo bar foo") == ["foo", "bar"]
    assert tokenize("") == []


def test_tokenize_special_characters():
    assert tokenize("user-avatar.tsx") == ["user", "avatar", "tsx"]


def _preview(content: str, query: str | None) -> str:
    lines = content.split("\n")
    return preview_text(lines, preview(lines, tokenize(query or "")))


def test_preview_shows_matching_line():
    content = (
        "import React from 'react'\nimport { cn } from '@/lib/utils'\n\n\nexport function UserAvatar({\n  size,\n})"
    )
    assert "export function UserAvatar({" in _preview(content, "UserAvatar")
    assert "import React" not in _preview(content, "UserAvatar")


def test_preview_falls_back_to_first_two_lines():
    content = "\n\ndef verify_credentials(user, password):\n    check(user)\n    return True"
    expected = "def verify_credentials(user, password):\n    check(user)"
    assert _preview(content, "authentication logic") == expected
    assert _preview(content, None) == expected
    assert _preview(content, "a b c") == expected


def test_preview_is_case_insensitive():
    assert _preview("x = 1\ny = 2\nclass UserAvatar:\n    pass", "useravatar").startswith("class UserAvatar")


def test_preview_picks_best_match_and_nearest_other_match():
    lines = [f"line {i}" for i in range(1, 21)]
    for n in (3, 8, 15):
        lines[n - 1] = f"foo at {n}"
    assert _preview("\n".join(lines), "foo") == "foo at 3\nfoo at 8"


def test_preview_prefers_the_line_with_most_tokens():
    content = "alpha only\nbeta only\nfiller\nalpha and beta\nmore"
    assert _preview(content, "alpha beta") == "beta only\nalpha and beta"


def test_single_match_gets_nearest_non_empty_neighbour_below_on_a_tie():
    lines = [f"line {i}" for i in range(1, 11)]
    lines[4] = "the match"
    assert _preview("\n".join(lines), "match") == "the match\nline 6"


def test_neighbour_skips_blank_lines():
    assert _preview("first\n\n\nthe match\n\n", "match") == "first\nthe match"


def test_single_line_chunk():
    assert _preview("only line", "line") == "only line"
    assert _preview("only line", "zzz") == "only line"


def test_preview_capped_at_200_characters():
    text = _preview("x" * 250 + " match", "match")
    assert len(text) == 200 and text.endswith("...")


def test_match_lines_are_absolute():
    assert match_lines(["foo", "bar", "foo again"], ["foo"], 10) == [10, 12]


def test_match_lines_empty_without_lexical_match():
    assert match_lines(["verify_credentials()"], tokenize("authentication logic"), 1) == []
    assert match_lines(["anything"], [], 1) == []


def test_match_lines_capped_at_eight():
    assert match_lines(["self.x"] * 20, ["self"], 1) == list(range(1, 9))


def test_camel_case_does_not_match_snake_case():
    assert match_lines(["user_avatar = 1"], tokenize("UserAvatar"), 1) == []
