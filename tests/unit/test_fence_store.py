"""Fenced mode's promises on disk (node/replication/fence_store.py): saved before they count,
read back with the history of the log the node loaded, refused when unreadable."""

from __future__ import annotations

import os

import pytest

from node.replication.fence_store import FenceFileError, fence_path, load_fence
from replication import NO_TENURE, EpochHistory

R1, R2 = "1" * 40, "2" * 40


def test_a_fresh_node_leads_epoch_zero_and_writes_nothing_until_a_change(tmp_path: object) -> None:
    path = fence_path(str(tmp_path))
    fence = load_fence(path, R1, 0)
    assert (fence.fence_epoch, fence.tenure, fence.epoch) == (0, 0, 0) and fence.leads()
    assert not os.path.exists(path)


def test_every_change_is_on_disk_when_it_returns(tmp_path: object) -> None:
    path = fence_path(str(tmp_path))
    fence = load_fence(path, R1, 100)
    fence.raise_to(4)
    assert load_fence(path, R1, 100).fence_epoch == 4
    fence.follow(4, R2, EpochHistory.from_pairs([(2, 0), (4, 80)]))
    again = load_fence(path, R2, 120)
    assert (again.fence_epoch, again.tenure, again.history.pairs()) == (4, NO_TENURE, [(2, 0), (4, 80)])
    # A restart that loaded the older log (R1's: its AOF was not rewritten yet) gets its history.
    assert load_fence(path, R1, 100).epoch == 0
    fence.promote(6, 120, R1)
    promoted = load_fence(path, R1, 120)
    assert (promoted.tenure, promoted.fence_epoch, promoted.log_epoch(120)) == (6, 6, 6)
    assert not [name for name in os.listdir(str(tmp_path)) if name.startswith("temp-")]


def test_a_log_shorter_than_its_history_drops_the_entries_past_its_end(tmp_path: object) -> None:
    path = fence_path(str(tmp_path))
    fence = load_fence(path, R1, 0)
    fence.follow(3, R2, EpochHistory.from_pairs([(2, 0), (3, 500)]))
    assert load_fence(path, R2, 400).history == EpochHistory.from_pairs([(2, 0)])


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 2}', b'{"format": 1, "fence_epoch": "3"}',
                                     b'{"format": 1, "fence_epoch": 3, "tenure": 3, "histories": [{"replid": "x", '
                                     b'"epochs": [[3, 10], [2, 20]]}]}'])
def test_an_unreadable_file_stops_the_node(tmp_path: object, content: bytes) -> None:
    path = fence_path(str(tmp_path))
    with open(path, "wb") as f:
        f.write(content)
    with pytest.raises(FenceFileError):
        load_fence(path, R1, 0)
