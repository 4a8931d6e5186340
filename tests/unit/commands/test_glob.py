"""Redis's glob rules as `node.commands.glob` implements them. The case-sensitive rules are
also checked against redis-server by KEYS in tests/conformance/test_generic_keys.py; these
pin the parts KEYS cannot reach (nocase, used by CONFIG GET) and the edge rules by name.
"""

from __future__ import annotations

import pytest

from node.commands.glob import compile_glob, glob_match


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (b"", b"", True),
        (b"*", b"", False),  # Redis's loop ends with the string; KEYS special-cases "*"
        (b"**", b"", False),
        (b"a*", b"a", True),
        (b"*a", b"bba", True),
        (b"a?c", b"abc", True),
        (b"a?c", b"ac", False),
        (b"[z-a]", b"m", True),  # reversed ranges are swapped
        (b"[^a]", b"a", False),
        (b"[^", b"x", True),  # an unterminated negated empty set matches any byte
        (b"[", b"[", False),
        (b"[a-", b"-", True),  # too short for a range: "a" and "-" are members
        (b"[a-", b"a", True),
        (b"x\\", b"x\\", True),  # a trailing backslash is literal
        (b"\\*", b"*", True),
        (b"\\*", b"a", False),
        (b"a*b*c", b"aXbYbZc", True),
        (b"a*b*c", b"aXcYb", False),
        (b"a\x00*", b"a\x00b", True),
    ],
)
def test_case_sensitive_rules(pattern: bytes, text: bytes, expected: bool) -> None:
    assert glob_match(pattern, text) is expected


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (b"MAXMEMORY*", b"maxmemory-policy", True),
        (b"max?EMORY", b"maxmemory", True),
        (b"[A-Z]*", b"port", True),
        (b"[Z-a]", b"z", False),  # Redis swaps before lowering: 'z'..'a' is empty
        (b"[Z-a]", b"_", False),
        (b"[\\A]", b"a", False),  # an escaped set member is compared exactly
        (b"[\\A]", b"A", True),
        (b"P", b"p", True),
    ],
)
def test_nocase_rules(pattern: bytes, text: bytes, expected: bool) -> None:
    assert glob_match(pattern, text, nocase=True) is expected


def test_nesting_cap_of_a_thousand_stars() -> None:
    text = b"a" * 1200
    assert glob_match(b"*a" * 1000, text)
    assert not glob_match(b"*a" * 1001, text)
    assert glob_match(b"*a" * 1000 + b"*", text)


def test_long_patterns_compile_without_the_cache() -> None:
    pattern = b"x" * 2000 + b"*"
    assert compile_glob(pattern)(b"x" * 2000 + b"tail")
    assert not compile_glob(pattern)(b"x" * 1999)
