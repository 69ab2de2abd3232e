"""A clock for the HTTP retry policy (pipeline.http.Clock) that records each wait instead of sleeping it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

NOW = datetime(2030, 1, 1, tzinfo=UTC)


class FakeClock:
    def __init__(self, now: datetime = NOW) -> None:
        self.t, self.waits = now, []

    def now(self) -> datetime:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.t += timedelta(seconds=seconds)
