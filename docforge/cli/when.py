"""Times as a person reads them: "3 min ago (2026-12-01 15:04)", in the local time zone."""

from __future__ import annotations

from datetime import UTC, datetime


def ago(iso: str | None, now: datetime | None = None, exact: bool = True) -> str:
    """An ISO timestamp as "5 min ago (2026-12-01 15:04)" (without the date unless `exact`); None: "never"."""
    if not iso:
        return "never"
    when = datetime.fromisoformat(iso)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - when).total_seconds()
    local = when.astimezone().strftime("%Y-%m-%d %H:%M")
    return f"{_span(seconds)} ({local})" if exact else _span(seconds)


def _span(seconds: float) -> str:
    if seconds < 0:
        return "in the future"
    if seconds < 60:
        return "just now"
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''} ago"
    return "just now"
