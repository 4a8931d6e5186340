"""Glob-style pattern matching with Redis's exact rules (util.c `stringmatchlen`), shared by
KEYS, SCAN MATCH and CONFIG GET.

Redis interprets a pattern while it walks the string, but how far each pattern element reaches
never depends on the string, so a pattern is split into elements once (cached) and compiled
into fixed-width segments between stars, each matched by bytes methods or a small regular
expression at C speed. The split reproduces Redis's reading of the pattern byte for byte,
malformed patterns included:

* ``*`` (runs collapse) matches any sequence, ``?`` any one byte;
* ``[...]`` is a set; a leading ``^`` negates it; ``\\x`` inside adds ``x`` literally;
  ``a-z`` is a range whose ends are swapped when reversed (``[z-a]`` = ``[a-z]``); a ``[``
  that is never closed takes the rest of the pattern as its set;
* ``\\x`` outside a set is ``x`` literally; a trailing lone ``\\`` is a literal backslash;
* an empty string is matched only by the empty pattern (Redis's loop stops when the string
  is exhausted; KEYS and SCAN special-case the pattern ``*`` before matching);
* recursion is capped at 1000 nested ``*`` (Redis 7.2's guard against abusive patterns): a
  ``*`` after the 1000th that is not the pattern's last element can never match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final, Union, cast

# stringmatchlen_impl gives up when its '*' recursion is deeper than this.
_MAX_NESTING: Final = 1000

_STAR: Final = -1
_ANY: Final = -2
# An element is _STAR, _ANY, a byte value (literal) or a frozenset of byte values.
_Element = Union[int, frozenset[int]]

_SPECIAL: Final = frozenset(b"*?[\\")


def _lower(c: int) -> int:
    """C's tolower() in the C locale: ASCII letters only."""
    return c + 32 if 65 <= c <= 90 else c


def _same_letter(c: int) -> frozenset[int]:
    """The bytes equal to c under tolower()."""
    low = _lower(c)
    return frozenset(b for b in range(256) if _lower(b) == low)


def _parse_set(pattern: bytes, i: int, nocase: bool) -> tuple[frozenset[int], int]:
    """The set that starts after '[' at i; returns it and the index just past it."""
    n = len(pattern)
    negate = i < n and pattern[i] == 0x5E  # '^'
    if negate:
        i += 1
    members: set[int] = set()
    while True:
        c = pattern[i] if i < n else 0
        if c == 0x5C and n - i >= 2:  # '\\': the next byte, compared exactly (even nocase)
            i += 1
            members.add(pattern[i])
        elif c == 0x5D:  # ']'
            break
        elif i >= n:  # unterminated: Redis steps back onto the last byte and stops
            i -= 1
            break
        elif n - i >= 3 and pattern[i + 1] == 0x2D:  # 'a-z'
            start, end = c, pattern[i + 2]
            if start > end:
                start, end = end, start
            if nocase:
                # Redis swaps first and lowers afterwards, so a range may become empty.
                start, end = _lower(start), _lower(end)
                members.update(b for b in range(256) if start <= _lower(b) <= end)
            else:
                members.update(range(start, end + 1))
            i += 2
        elif nocase:
            members.update(_same_letter(c))
        else:
            members.add(c)
        i += 1
    if negate:
        members = set(range(256)) - members
    return frozenset(members), i + 1


def _elements(pattern: bytes, nocase: bool) -> list[_Element]:
    out: list[_Element] = []
    n = len(pattern)
    i = 0
    while i < n:
        c = pattern[i]
        if c == 0x2A:  # '*'
            while i + 1 < n and pattern[i + 1] == 0x2A:
                i += 1
            out.append(_STAR)
            i += 1
        elif c == 0x3F:  # '?'
            out.append(_ANY)
            i += 1
        elif c == 0x5B:  # '['
            members, i = _parse_set(pattern, i + 1, nocase)
            out.append(members)
        else:
            if c == 0x5C and n - i >= 2:
                i += 1
                c = pattern[i]
            if nocase and len(_same_letter(c)) > 1:
                out.append(_same_letter(c))
            else:
                out.append(c)
            i += 1
    return out


def _byte_class(members: frozenset[int]) -> bytes:
    if not members:
        return b"(?!)"
    if len(members) == 256:
        return b"."
    return b"[" + b"".join(re.escape(bytes([b])) for b in sorted(members)) + b"]"


class _Segment:
    """A run of fixed-width elements between two stars: a plain byte string when every
    element is a literal, else an anchored regular expression of the same width."""

    __slots__ = ("width", "literal", "regex")

    def __init__(self, elements: list[_Element]) -> None:
        self.width = len(elements)
        self.literal: bytes | None = None
        self.regex: re.Pattern[bytes] | None = None
        if all(isinstance(e, int) and e >= 0 for e in elements):
            self.literal = bytes(cast(list[int], elements))
        else:
            self.regex = re.compile(b"".join(_element_regex(e) for e in elements), re.DOTALL)

    def at(self, text: bytes, pos: int) -> bool:
        if self.literal is not None:
            return text.startswith(self.literal, pos)
        assert self.regex is not None
        return self.regex.match(text, pos) is not None

    def find(self, text: bytes, pos: int, endpos: int) -> int:
        """Where the segment first matches inside text[pos:endpos], or -1."""
        if self.literal is not None:
            return text.find(self.literal, pos, endpos)
        assert self.regex is not None
        found = self.regex.search(text, pos, endpos)
        return -1 if found is None else found.start()


def _element_regex(element: _Element) -> bytes:
    if element == _ANY:
        return b"."
    if isinstance(element, frozenset):
        return _byte_class(element)
    return re.escape(bytes([element]))


def _never(text: bytes) -> bool:
    return False


def _matcher(segments: list[_Segment]) -> Callable[[bytes], bool]:
    """Match segments separated by stars. The middle segments are placed at their leftmost
    possible position: with '*' as the only variable-width element that choice never loses
    a match, so matching is polynomial, never the exponential backtracking that abusive
    patterns (many stars) cause in a backtracking matcher."""
    first, last = segments[0], segments[-1]
    if len(segments) == 1:
        width = first.width

        def fixed(text: bytes) -> bool:
            return len(text) == width and first.at(text, 0)

        return fixed
    middle = segments[1:-1]
    minimum = sum(seg.width for seg in segments)

    def starred(text: bytes) -> bool:
        size = len(text)
        if size < minimum or not first.at(text, 0):
            return False
        tail = size - last.width
        pos = first.width
        for seg in middle:
            found = seg.find(text, pos, tail)
            if found < 0:
                return False
            pos = found + seg.width
        return last.at(text, tail)

    return starred


# Patterns longer than this are compiled per call rather than pinned in the cache.
_CACHED_PATTERN_MAX: Final = 1024


def compile_glob(pattern: bytes, nocase: bool = False) -> Callable[[bytes], bool]:
    """A predicate equivalent to `stringmatchlen(pattern, text, nocase)` for every text."""
    if len(pattern) > _CACHED_PATTERN_MAX:
        return _compile(pattern, nocase)
    return _compile_cached(pattern, nocase)


def _compile(pattern: bytes, nocase: bool) -> Callable[[bytes], bool]:
    if not pattern or not nocase and not _SPECIAL.intersection(pattern):
        return pattern.__eq__
    elements = _elements(pattern, nocase)
    stars = [i for i, e in enumerate(elements) if e == _STAR]
    if len(stars) > _MAX_NESTING and stars[_MAX_NESTING] != len(elements) - 1:
        return _never
    segments: list[_Segment] = []
    run: list[_Element] = []
    for element in elements:
        if element == _STAR:
            segments.append(_Segment(run))
            run = []
        else:
            run.append(element)
    segments.append(_Segment(run))
    match = _matcher(segments)

    def nonempty(text: bytes) -> bool:
        return bool(text) and match(text)

    return nonempty


_compile_cached = lru_cache(maxsize=256)(_compile)


def glob_match(pattern: bytes, text: bytes, nocase: bool = False) -> bool:
    """Whether `text` matches the glob `pattern` under Redis's rules (see the module doc)."""
    return compile_glob(pattern, nocase)(text)
