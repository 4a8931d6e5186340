"""Text conventions shared by configuration, commands and the request parser: Redis's
memory units ("1gb", "64mb", "100k") and sdssplitargs word splitting (inline requests,
redis.conf lines)."""

from __future__ import annotations

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1024,
    "m": 1000**2, "mb": 1024**2,
    "g": 1000**3, "gb": 1024**3,
}


def memory_to_bytes(raw: str) -> int | None:
    """memtoull: digits with an optional unit, case-insensitive; None when invalid."""
    text = raw.strip().lower()
    digits = text.rstrip("kmgb")
    unit = text[len(digits):]
    neg = digits.startswith("-")
    body = digits[1:] if neg else digits
    if not body.isdigit() or unit not in _UNITS:
        return None
    value = int(body) * _UNITS[unit]
    return -value if neg else value


def split_config_line(line: str) -> list[str] | None:
    """Words of a redis.conf line ('#' comments, "double" and 'single' quotes)."""
    text = line.strip()
    if not text or text.startswith("#"):
        return []
    words = split_inline_args(text.encode())
    if words is None:
        return None
    return [w.decode() for w in words]


def split_inline_args(line: bytes) -> list[bytes] | None:
    """Redis's sdssplitargs: whitespace-separated words with "..." (escapes, \\xHH) and '...'
    quoting. None on unbalanced quotes (or a closing quote not followed by a space)."""
    args: list[bytes] = []
    i = 0
    n = len(line)
    while True:
        while i < n and line[i] in b" \n\r\t\x0b\x0c\x00":
            i += 1
        if i >= n:
            return args
        current = bytearray()
        in_dq = in_sq = False
        while True:
            if in_dq:
                if i >= n:
                    return None
                c = line[i]
                if c == 0x5C and i + 3 < n and line[i + 1] == 0x78 and _is_hex(line[i + 2]) and _is_hex(line[i + 3]):
                    current.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == 0x5C and i + 1 < n:
                    i += 1
                    e = line[i]
                    current.append({0x6E: 10, 0x72: 13, 0x74: 9, 0x62: 8, 0x61: 7}.get(e, e))
                elif c == 0x22:
                    if i + 1 < n and line[i + 1] not in b" \n\r\t\x0b\x0c\x00":
                        return None
                    in_dq = False
                    i += 1
                    break
                else:
                    current.append(c)
            elif in_sq:
                if i >= n:
                    return None
                c = line[i]
                if c == 0x5C and i + 1 < n and line[i + 1] == 0x27:
                    i += 1
                    current.append(0x27)
                elif c == 0x27:
                    if i + 1 < n and line[i + 1] not in b" \n\r\t\x0b\x0c\x00":
                        return None
                    in_sq = False
                    i += 1
                    break
                else:
                    current.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in b" \n\r\t\x0b\x0c\x00":
                    break
                if c == 0x22:
                    in_dq = True
                elif c == 0x27:
                    in_sq = True
                else:
                    current.append(c)
            i += 1
        args.append(bytes(current))


def _is_hex(c: int) -> bool:
    return c in b"0123456789abcdefABCDEF"
