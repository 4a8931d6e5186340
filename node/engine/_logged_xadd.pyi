def xadd_block(data: bytes, pos: int) -> tuple[int, list[tuple[bytes, bytes]]]: ...
def append_run(
    data: bytes,
    positions: bytes,
    index: int,
    key: bytes,
    names: list[bytes],
    data_len: int,
    base_ms: int,
    master_seq: int,
    last_key: int,
    last_ms: int,
    last_seq: int,
    lp_base: int,
    live: int,
    tombs: int,
    cap: int,
    max_entries: int,
) -> tuple[int, int, bytes, bytes, bytes, int, int, int]: ...
