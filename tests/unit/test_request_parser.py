"""Unit and property tests of node.server.request_parser.RequestParser.feed: Redis's request
framing (networking.c processMultibulkBuffer/processInlineBuffer), its limits and error texts,
whatever way the bytes are split into reads.

Expectations marked "redis-server 7.0.15" were measured on the oracle with the same bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.server.request_parser import MAX_INLINE, MAX_MULTIBULK, RequestParser

Commands = list[list[bytes]]


def resp(*argv: bytes) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def feed_all(chunks: list[bytes], parser: RequestParser | None = None) -> tuple[Commands, str | None]:
    """Feed the chunks in order; stop at the first protocol error, as the connection does."""
    parser = parser or RequestParser()
    commands: Commands = []
    for chunk in chunks:
        got, error = parser.feed(chunk)
        commands.extend(got)
        if error is not None:
            return commands, error
    return commands, None


def unauthenticated() -> RequestParser:
    parser = RequestParser()
    parser.authenticated = False
    return parser


PIPELINE_ARGS: Commands = [
    [b"PING"],
    [b"SET", b"key", b"va\r\nl\x00ue"],
    [b"XADD", b"s", b"*", b"f", b""],
    [b"ECHO", b"*1\r\n$4\r\nPING\r\n"],  # RESP inside a payload is data
    [b"GET", b"$-1\r\n"],
]
PIPELINE = b"".join(resp(*argv) for argv in PIPELINE_ARGS)


# -- splitting ----------------------------------------------------------------------------

def test_pipeline_in_one_chunk_yields_every_command() -> None:
    assert feed_all([PIPELINE]) == (PIPELINE_ARGS, None)


def test_pipeline_split_at_every_byte_boundary_yields_the_same_commands() -> None:
    for cut in range(1, len(PIPELINE)):
        assert feed_all([PIPELINE[:cut], PIPELINE[cut:]]) == (PIPELINE_ARGS, None), f"split at {cut}"


def test_pipeline_split_at_every_pair_of_boundaries_yields_the_same_commands() -> None:
    data = resp(b"SET", b"k", b"v\r\n") + resp(b"PING")
    for a in range(1, len(data)):
        for b in range(a + 1, len(data)):
            chunks = [data[:a], data[a:b], data[b:]]
            assert feed_all(chunks) == ([[b"SET", b"k", b"v\r\n"], [b"PING"]], None), (a, b)


def test_pipeline_fed_one_byte_at_a_time_yields_the_same_commands() -> None:
    assert feed_all([PIPELINE[i : i + 1] for i in range(len(PIPELINE))]) == (PIPELINE_ARGS, None)


def test_incomplete_request_yields_nothing_until_its_last_byte() -> None:
    parser = RequestParser()
    data = resp(b"ECHO", b"hello")
    assert parser.feed(data[:-1]) == ([], None)
    assert parser.feed(data[-1:]) == ([[b"ECHO", b"hello"]], None)


def test_read_ending_inside_a_payload_that_repeats_the_previous_request_keeps_the_payload() -> None:
    # The first read ends with bytes equal to the encoding of the last complete request, but
    # they are the start of the next request's value: the rest is data, never a command.
    ping = resp(b"PING")
    value = ping + b"FLUSHALL\r\n"
    wire = ping + resp(b"SET", b"k", value)
    cut = len(wire) - len(b"FLUSHALL\r\n") - 2
    assert wire[:cut].endswith(ping)
    assert feed_all([wire[:cut], wire[cut:]]) == ([[b"PING"], [b"SET", b"k", value]], None)


def test_large_argument_across_many_reads_is_reassembled() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB with every byte value, CRLFs included
    data = resp(b"SET", b"big", payload) + resp(b"PING")
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    assert feed_all(chunks) == ([[b"SET", b"big", payload], [b"PING"]], None)


@pytest.mark.parametrize("step", [65536, 65537, 1 << 20, 3_000_000])
def test_a_request_of_several_mebibytes_is_held_once_and_reassembled(step: int) -> None:
    # Past 1 MiB an incomplete request is kept by the parser alone (not hiredis too): its
    # bytes are what buffered() counts, and it is parsed whole when its last byte comes.
    payload = bytes(range(256)) * 4096 * 3  # 3 MiB, CRLFs and '*' included
    data = PIPELINE + resp(b"SET", b"big", payload, b"EX", b"10") + PIPELINE + resp(b"ECHO", b"x" * 2_000_000)
    parser = RequestParser()
    commands: Commands = []
    for i in range(0, len(data), step):
        got, error = parser.feed(data[i : i + step])
        assert error is None
        commands.extend(got)
        assert parser.buffered() <= len(data) - len(b"".join(resp(*a) for a in commands)) + 1
    assert commands == [*PIPELINE_ARGS, [b"SET", b"big", payload, b"EX", b"10"], *PIPELINE_ARGS, [b"ECHO", b"x" * 2_000_000]]
    assert parser.buffered() == 0


def test_a_held_request_is_checked_and_completed_like_any_other() -> None:
    head = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n"
    parser = RequestParser()
    assert parser.feed(head + b"v" * 1_500_000) == ([], None)
    # The value's announced length is past: what follows must be CRLF, then nothing else.
    commands, error = parser.feed(b"v" * 500_000 + b"\r\n*1\r\n$4\r\nPING\r\n")
    assert error is None and len(commands) == 2 and commands[1] == [b"PING"]
    # An element header after a held value is checked as it arrives.
    parser = RequestParser()
    assert parser.feed(b"*4" + head[2:] + b"v" * 2_000_000 + b"\r\n") == ([], None)
    assert parser.feed(b"$x\r\n") == ([], "Protocol error: invalid bulk length")


def test_chunk_larger_than_one_mebibyte_yields_every_command() -> None:
    argvs = [[b"ECHO", b"%07d" % i + b"x" * 100] for i in range(12000)]
    data = b"".join(resp(*argv) for argv in argvs)
    assert len(data) > 1 << 20
    assert feed_all([data]) == (argvs, None)


# -- inline requests ------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("line", "argv"),
    [
        (b"PING\r\n", [b"PING"]),
        (b"PING\n", [b"PING"]),
        (b"  ECHO   spaced\t words \r\n", [b"ECHO", b"spaced", b"words"]),
        (b'ECHO "a b"\r\n', [b"ECHO", b"a b"]),
        (b'ECHO "\\x41\\n\\t\\\\\\"q"\r\n', [b"ECHO", b'A\n\t\\"q']),
        (b"ECHO 'it\\'s'\r\n", [b"ECHO", b"it's"]),
        (b"ECHO 'no \\n escape'\r\n", [b"ECHO", b"no \\n escape"]),
        (b'SET k ""\r\n', [b"SET", b"k", b""]),
    ],
    ids=["plain", "lf-only", "whitespace", "double-quotes", "escapes", "single-quotes", "sq-raw", "empty-arg"],
)
def test_inline_request_is_split_like_sdssplitargs(line: bytes, argv: list[bytes]) -> None:
    assert RequestParser().feed(line) == ([argv], None)


@pytest.mark.parametrize("line", [b'ECHO "a\r\n', b"ECHO 'a\r\n", b'ECHO "a"b\r\n', b"ECHO 'a'b\r\n"])
def test_unbalanced_quotes_in_inline_request_are_a_protocol_error(line: bytes) -> None:
    assert RequestParser().feed(line) == ([], "Protocol error: unbalanced quotes in request")


def test_empty_inline_lines_are_ignored() -> None:
    assert RequestParser().feed(b"\r\n\r\n\nPING\r\n  \r\n") == ([[b"PING"]], None)


def test_inline_and_multibulk_requests_mix_in_one_chunk() -> None:
    data = b"PING\r\n" + resp(b"ECHO", b"x") + b'ECHO "y z"\r\n' + resp(b"PING")
    assert RequestParser().feed(data) == ([[b"PING"], [b"ECHO", b"x"], [b"ECHO", b"y z"], [b"PING"]], None)


def test_mixed_requests_split_at_every_byte_boundary_yield_the_same_commands() -> None:
    data = b"ECHO a\r\n" + resp(b"ECHO", b"b\r\n") + b"PING\r\n"
    expected = [[b"ECHO", b"a"], [b"ECHO", b"b\r\n"], [b"PING"]]
    for cut in range(1, len(data)):
        assert feed_all([data[:cut], data[cut:]]) == (expected, None), f"split at {cut}"


def test_inline_line_longer_than_64k_is_too_big() -> None:
    assert RequestParser().feed(b"a" * (MAX_INLINE + 1)) == ([], "Protocol error: too big inline request")


def test_inline_line_of_64k_spread_over_reads_is_accepted() -> None:
    line = b"ECHO " + b"a" * (MAX_INLINE - 10)
    chunks = [line[i : i + 1000] for i in range(0, len(line), 1000)] + [b"\r\n"]
    assert feed_all(chunks) == ([[b"ECHO", b"a" * (MAX_INLINE - 10)]], None)


# -- limits and framing errors --------------------------------------------------------------

def test_multibulk_count_over_the_parser_limit_is_invalid() -> None:
    assert RequestParser().feed(b"*%d\r\n" % (MAX_MULTIBULK + 1)) == ([], "Protocol error: invalid multibulk length")


def test_multibulk_count_above_int_max_is_invalid() -> None:
    # redis-server 7.0.15 rejects counts above INT_MAX with this text.
    assert RequestParser().feed(b"*2147483648\r\n") == ([], "Protocol error: invalid multibulk length")


def test_multibulk_count_at_the_parser_limit_waits_for_its_arguments() -> None:
    assert RequestParser().feed(b"*%d\r\n" % MAX_MULTIBULK) == ([], None)


@pytest.mark.parametrize("count", [b"", b"abc", b"+1", b"01", b" 1", b"1 ", b"99999999999999999999999"])
def test_malformed_multibulk_count_is_invalid(count: bytes) -> None:
    # string2ll: no sign but '-', no leading zero, no spaces (redis-server 7.0.15 agrees).
    assert RequestParser().feed(b"*" + count + b"\r\n$4\r\nPING\r\n") == ([], "Protocol error: invalid multibulk length")


def test_bulk_length_over_proto_max_bulk_len_is_invalid() -> None:
    parser = RequestParser(max_bulk=100)
    assert parser.feed(b"*2\r\n$4\r\nECHO\r\n$101\r\n") == ([], "Protocol error: invalid bulk length")


def test_bulk_length_at_proto_max_bulk_len_is_accepted() -> None:
    parser = RequestParser(max_bulk=100)
    assert parser.feed(resp(b"ECHO", b"x" * 100)) == ([[b"ECHO", b"x" * 100]], None)


def test_default_proto_max_bulk_len_is_512mb() -> None:
    assert RequestParser().feed(b"*1\r\n$536870913\r\n") == ([], "Protocol error: invalid bulk length")
    assert RequestParser().feed(b"*1\r\n$536870912\r\n") == ([], None)


@pytest.mark.parametrize("length", [b"-1", b"-2", b"", b"x", b"+4", b"04"])
def test_malformed_or_negative_bulk_length_is_invalid(length: bytes) -> None:
    assert RequestParser().feed(b"*1\r\n$" + length + b"\r\nPING\r\n") == ([], "Protocol error: invalid bulk length")


def test_mbulk_count_line_longer_than_64k_is_too_big() -> None:
    assert RequestParser().feed(b"*" + b"1" * (MAX_INLINE + 1)) == ([], "Protocol error: too big mbulk count string")


def test_bulk_count_line_longer_than_64k_is_too_big() -> None:
    data = b"*1\r\n$" + b"1" * (MAX_INLINE + 1)
    assert RequestParser().feed(data) == ([], "Protocol error: too big bulk count string")


def test_unauthenticated_multibulk_count_over_10_is_refused() -> None:
    assert unauthenticated().feed(b"*11\r\n") == ([], "Protocol error: unauthenticated multibulk length")


def test_unauthenticated_multibulk_count_of_10_is_accepted() -> None:
    argv = [b"x"] * 10
    assert unauthenticated().feed(resp(*argv)) == ([argv], None)


def test_unauthenticated_bulk_over_16384_is_refused() -> None:
    data = b"*2\r\n$4\r\nAUTH\r\n$16385\r\n"
    assert unauthenticated().feed(data) == ([], "Protocol error: unauthenticated bulk length")


def test_unauthenticated_bulk_of_16384_is_accepted() -> None:
    argv = [b"AUTH", b"p" * 16384]
    assert unauthenticated().feed(resp(*argv)) == ([argv], None)


def test_unauthenticated_limit_applies_to_a_request_split_over_reads() -> None:
    parser = unauthenticated()
    assert parser.feed(b"*1") == ([], None)
    assert parser.feed(b"1\r\n") == ([], "Protocol error: unauthenticated multibulk length")


def test_authenticated_client_may_send_more_than_10_arguments() -> None:
    argv = [b"x"] * 11
    assert RequestParser().feed(resp(*argv)) == ([argv], None)


@pytest.mark.parametrize(
    ("element", "shown"),
    [(b":5\r\n", ":"), (b"+5\r\n", "+"), (b"_\r\n", "_"), (b"*1\r\n$1\r\na\r\n", "*"), (b"%1\r\n", "%"), (b"x\r\n", "x")],
    ids=["integer", "simple-string", "null", "nested-array", "map", "garbage"],
)
def test_element_that_is_not_a_bulk_string_is_a_protocol_error(element: bytes, shown: str) -> None:
    data = b"*2\r\n$4\r\nECHO\r\n" + element
    assert RequestParser().feed(data) == ([], f"Protocol error: expected '$', got '{shown}'")


@pytest.mark.parametrize(
    ("element", "shown"),
    [(b":5\r\n", ":"), (b"+5\r\n", "+"), (b"_\r\n", "_"), (b"*1\r\n$1\r\na\r\n", "*")],
    ids=["integer", "simple-string", "null", "nested-array"],
)
def test_non_bulk_element_is_an_error_even_when_more_requests_follow(element: bytes, shown: str) -> None:
    # redis-server 7.0.15: PING first is answered, then the error, and the trailing PING is
    # never run.
    data = resp(b"PING") + b"*2\r\n$4\r\nECHO\r\n" + element + resp(b"PING")
    assert RequestParser().feed(data) == ([[b"PING"]], f"Protocol error: expected '$', got '{shown}'")


def test_null_bulk_element_is_invalid_even_when_more_requests_follow() -> None:
    data = b"*2\r\n$-1\r\n$3\r\nfoo\r\n" + resp(b"PING")
    assert RequestParser().feed(data) == ([], "Protocol error: invalid bulk length")


def test_requests_before_a_protocol_error_are_returned() -> None:
    data = resp(b"PING") + b"PING\r\n" + b"*1\r\n:1\r\n"
    assert RequestParser().feed(data) == ([[b"PING"], [b"PING"]], "Protocol error: expected '$', got ':'")


def test_protocol_error_in_the_rest_of_a_split_request_is_reported() -> None:
    parser = RequestParser()
    assert parser.feed(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n") == ([], None)
    assert parser.feed(b":1\r\n") == ([], "Protocol error: expected '$', got ':'")


def test_empty_and_null_multibulk_requests_are_ignored() -> None:
    assert RequestParser().feed(b"*0\r\n*-1\r\n" + resp(b"PING") + b"*0\r\n") == ([[b"PING"]], None)


def test_negative_multibulk_count_is_ignored() -> None:
    # string2ll accepts -5 and Redis skips any count <= 0 (redis-server 7.0.15 answers the PING).
    assert RequestParser().feed(b"*-5\r\n" + resp(b"PING")) == ([[b"PING"]], None)


def test_empty_multibulk_split_over_reads_is_ignored() -> None:
    assert feed_all([b"*", b"0\r", b"\n*1\r\n$4\r\nPI", b"NG\r\n"]) == ([[b"PING"]], None)


# -- property --------------------------------------------------------------------------------

_inline_word = st.binary(min_size=1, max_size=12).filter(
    lambda w: not any(c in w for c in b" \t\r\n\x0b\x0c\x00\"'") and w[:1] != b"*"
)
_request = st.one_of(
    st.lists(st.binary(max_size=40), min_size=1, max_size=6).map(lambda argv: ("resp", argv)),
    st.lists(_inline_word, min_size=1, max_size=4).map(lambda argv: ("inline", argv)),
)


@settings(max_examples=300, deadline=None)
@given(requests=st.lists(_request, min_size=1, max_size=12), data=st.data())
def test_random_splits_of_a_valid_pipeline_yield_exactly_its_commands(
    requests: list[tuple[str, list[bytes]]], data: st.DataObject
) -> None:
    """Invariant: however a valid pipeline of multibulk and inline requests is cut into
    reads, the parser returns exactly its commands, in order, and no error."""
    wire = b"".join(resp(*argv) if kind == "resp" else b" ".join(argv) + b"\r\n" for kind, argv in requests)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(wire) - 1)), max_size=8)))
    bounds = [0, *cuts, len(wire)]
    chunks = [wire[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    assert feed_all(chunks) == ([argv for _, argv in requests], None)
