"""The leader election: the vote this sentinel casts in each epoch (one per epoch, on disk
before it is answered) and the leader of an epoch, counted from the votes the other
sentinels reported (node/sentinel/election.py counts them: an absolute majority of every
sentinel known and at least the quorum)."""

from __future__ import annotations

from node.sentinel import election
from node.sentinel.instance import Instance
from node.sentinel.messages import WARNING
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import State
from node.sentinel.timings import MAX_DESYNC


class Voting:
    """sentinelVoteLeader and sentinelGetLeader."""

    def __init__(self, state: State, outbox: Outbox) -> None:
        self._state = state
        self._outbox = outbox

    def vote(self, master: Instance, req_epoch: int, req_runid: str) -> tuple[str | None, int]:
        """sentinelVoteLeader: vote for `req_runid` unless we voted in this epoch or a later
        one; either way return our vote and its epoch. The vote is flushed to disk before the
        shell answers (the FlushConfig precedes the reply)."""
        state = self._state
        if req_epoch > state.current_epoch:
            state.current_epoch = req_epoch
            self._outbox.flush()
            self._outbox.event(WARNING, "+new-epoch", master, str(state.current_epoch), describe=False)
        if master.leader_epoch < req_epoch and state.current_epoch <= req_epoch:
            master.leader = req_runid
            master.leader_epoch = state.current_epoch
            self._outbox.flush()
            self._outbox.event(WARNING, "+vote-for-leader", master, f"{master.leader} {master.leader_epoch}",
                               describe=False)
            # Having voted for someone else, do not start our own failover right away.
            if req_runid.lower() != state.myid.lower():
                master.failover_start_time = state.now + state.rng.randrange(MAX_DESYNC)
        return master.leader, master.leader_epoch

    def leader(self, master: Instance, epoch: int) -> str | None:
        """sentinelGetLeader: the winner of `epoch` if there is one; casts our vote (for the
        most voted sentinel so far, or ourselves) if we have not voted yet.

        Only votes cast in `epoch` count. Redis counts those of its current epoch, which a
        hello or another candidate's request may have raised meanwhile: a candidate still
        waiting in epoch e can then win with votes of epoch e+1 while another sentinel
        legitimately won e, and both promote a replica under config epoch e — two leaders of
        one epoch (redis/redis#2230, #11571, still open). Counting the failover's own epoch,
        and asking in it, keeps one leader per epoch, which fenced mode relies on."""
        voters = len(master.sentinels) + 1
        counts = election.tally(master.sentinels.values(), epoch)
        winner = election.most_voted(counts)
        max_votes = counts[winner] if winner is not None else 0
        myvote, leader_epoch = self.vote(master, epoch, winner if winner is not None else self._state.myid)
        if myvote is not None and leader_epoch == epoch:
            votes = counts[myvote] = counts.get(myvote, 0) + 1
            if votes > max_votes:
                max_votes = votes
                winner = myvote
        if winner is not None and not election.wins(max_votes, voters, master.quorum):
            winner = None
        return winner
