"""A client's Pub/Sub subscriptions: what the session (node.commands.context) holds and the
ACL (node.commands.acl_users) checks when a user's channel rules change."""

from __future__ import annotations


class Subscriptions:
    """A client's Pub/Sub subscriptions (insertion-ordered sets), as Redis's c->pubsub_channels,
    c->pubsub_patterns and c->pubsub_shard_channels."""

    __slots__ = ("channels", "patterns", "shard_channels")

    def __init__(self) -> None:
        self.channels: dict[bytes, None] = {}
        self.patterns: dict[bytes, None] = {}
        self.shard_channels: dict[bytes, None] = {}

    def count(self) -> int:
        """clientTotalPubSubSubscriptionCount: while above 0 the client is in Pub/Sub mode."""
        return len(self.channels) + len(self.patterns) + len(self.shard_channels)
