"""C's lenient number parsing, which Redis applies to INFO replies, hello messages and
sentinel.conf values: leading digits count, anything after them is ignored, and no digits
read as 0. Reading them the strict Python way would reject what Redis accepts."""

from __future__ import annotations


def atoi(text: str) -> int:
    """atoi/strtoll: leading blanks, an optional sign, then digits; 0 when there are none."""
    if text.isdigit() and text.isascii():
        return int(text)
    text = text.lstrip()
    sign = 1
    if text[:1] in ("-", "+"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    end = 0
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return sign * int(text[:end]) if end else 0


def strtoull(text: str) -> int:
    """strtoull(…, 10): as atoi, a negative value wrapping around 2**64."""
    value = atoi(text)
    return value if value >= 0 else value % (1 << 64)
