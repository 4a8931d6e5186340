"""Shop events for the example pipeline: page views, cart additions and orders of simulated
users, with an event time that is sometimes a few seconds late (as events from phones are),
and a producer that writes them into a stream at a steady rate."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis

CATEGORIES = {
    "books": (8.0, 40.0), "music": (5.0, 25.0), "garden": (10.0, 150.0), "kitchen": (6.0, 120.0),
    "toys": (4.0, 60.0), "sports": (12.0, 200.0),
}
COUNTRIES = ("DE", "FR", "NL", "PL", "ES", "IT", "SE", "US")
KINDS = ("view", "cart", "order")
KIND_WEIGHTS = (0.70, 0.20, 0.10)
LATE_SHARE = 0.05  # events that arrive up to LATE_MAX late
LATE_MAX = timedelta(seconds=8)


def events(seed: int) -> Iterator[dict[str, str]]:
    """An endless, reproducible sequence of events (field -> value, as XADD takes them)."""
    rng = random.Random(seed)
    products = {c: [f"{c}-{n:03d}" for n in range(40)] for c in CATEGORIES}
    users = [f"u{n:05d}" for n in range(5000)]
    while True:
        category = rng.choice(list(CATEGORIES))
        low, high = CATEGORIES[category]
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        at = datetime.now(UTC)
        if rng.random() < LATE_SHARE:
            at -= timedelta(seconds=rng.uniform(0, LATE_MAX.total_seconds()))
        yield {
            "kind": kind,
            "user": rng.choice(users),
            "product": rng.choice(products[category]),
            "category": category,
            "price": f"{rng.uniform(low, high):.2f}",
            "quantity": str(rng.choices((1, 2, 3, 4), (70, 20, 7, 3))[0]) if kind != "view" else "1",
            "country": rng.choice(COUNTRIES),
            "event_time": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }


@dataclass
class Producer:
    """Writes `rate` events a second to `stream` on a thread until stopped."""

    client: redis.Redis
    stream: str
    rate: int
    seed: int
    sent: int = 0
    error: Exception | None = None

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{self.seed}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        source = events(self.seed)
        tick = 0.05
        started = time.monotonic()
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - started) * self.rate) - self.sent
                if due > 0:
                    with self.client.pipeline(transaction=False) as pipe:
                        for _ in range(due):
                            pipe.xadd(self.stream, next(source))  # type: ignore[arg-type]
                        pipe.execute()
                    self.sent += due
                self._stop.wait(tick)
        except redis.RedisError as e:
            self.error = e
