"""Time windows of the upgrade settings: freeze windows and maintenance windows.

A window is written in one of two forms:

- ``START/END``: an interval of two RFC 3339 times, e.g. ``2026-12-20T00:00:00Z/2027-01-04T00:00:00Z``
  (a one-off freeze). The start is inside, the end is not.
- ``DAYS HH:MM-HH:MM``: a weekly window in UTC, e.g. ``Sat 02:00-06:00`` or ``Mon-Fri 22:00-02:00``. ``DAYS``
  is a day (``Mon`` ... ``Sun``) or a range of days (``Fri-Mon`` wraps over the weekend); a window whose end is
  not after its start runs past midnight into the next day; ``24:00`` is the end of the day.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from webhook.errors import InputError

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
"""Day names in ``datetime.weekday()`` order."""

_WEEKLY = re.compile(r"(?P<first>[A-Z][a-z]{2})(?:-(?P<last>[A-Z][a-z]{2}))? +(?P<start>\d\d:\d\d)-(?P<end>\d\d:\d\d)")
_MINUTES_PER_DAY = 24 * 60
_MINUTES_PER_WEEK = 7 * _MINUTES_PER_DAY


@dataclass(frozen=True, slots=True)
class Window:
    """One parsed window: an interval (``start``/``end`` aware datetimes) or weekly spans (minutes of the week,
    Monday 00:00 = 0, each ``(start, end)`` with ``end`` possibly past the week's end)."""

    text: str
    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    weekly: tuple[tuple[int, int], ...] = ()

    def contains(self, moment: datetime.datetime) -> bool:
        """True if the aware ``moment`` lies in the window (start inclusive, end exclusive)."""
        if self.start is not None and self.end is not None:
            return self.start <= moment < self.end
        _, minute = _week_of(moment)
        return any(start <= at < end for start, end in self.weekly for at in (minute, minute + _MINUTES_PER_WEEK))

    def closes_at(self, moment: datetime.datetime) -> datetime.datetime | None:
        """When the window that contains the aware ``moment`` ends (its end, or the end of the weekly span that
        holds it, whichever runs longest); ``None`` when ``moment`` is outside."""
        if self.start is not None and self.end is not None:
            return self.end if self.contains(moment) else None
        week, minute = _week_of(moment)
        remaining = [
            end - at for start, end in self.weekly for at in (minute, minute + _MINUTES_PER_WEEK) if start <= at < end
        ]
        return week + datetime.timedelta(minutes=minute + max(remaining)) if remaining else None

    def opens_at(self, moment: datetime.datetime) -> datetime.datetime | None:
        """When the window next begins at or after the aware ``moment`` (``moment`` itself when it is inside);
        ``None`` for an interval that has ended."""
        if self.contains(moment):
            return moment
        if self.start is not None and self.end is not None:
            return self.start if moment < self.start else None
        week, minute = _week_of(moment)
        starts = [
            start + offset for start, _ in self.weekly for offset in (0, _MINUTES_PER_WEEK) if start + offset > minute
        ]
        return week + datetime.timedelta(minutes=min(starts)) if starts else None


def _week_of(moment: datetime.datetime) -> tuple[datetime.datetime, int]:
    """The UTC Monday 00:00 of ``moment``'s week and the minute of the week ``moment`` falls in (rounded down)."""
    utc = moment.astimezone(datetime.UTC).replace(second=0, microsecond=0)
    minute = utc.weekday() * _MINUTES_PER_DAY + utc.hour * 60 + utc.minute
    return utc - datetime.timedelta(minutes=minute), minute


def parse_window(text: str) -> Window:
    """The window ``text`` (either form of this module's docstring), or ``InputError`` saying what is wrong."""
    cleaned = text.strip()
    if "/" in cleaned:
        return _interval(cleaned)
    match = _WEEKLY.fullmatch(cleaned)
    if match is None:
        raise InputError(f'window "{cleaned}" is neither START/END (RFC 3339) nor DAYS HH:MM-HH:MM (UTC)')
    days = _days(cleaned, match["first"], match["last"] or match["first"])
    start, end = _minute(cleaned, match["start"]), _minute(cleaned, match["end"])
    length = end - start if end > start else end + _MINUTES_PER_DAY - start
    return Window(
        cleaned, weekly=tuple((day * _MINUTES_PER_DAY + start, day * _MINUTES_PER_DAY + start + length) for day in days)
    )


def _interval(text: str) -> Window:
    first, _, second = text.partition("/")
    try:
        start, end = (datetime.datetime.fromisoformat(part.strip()) for part in (first, second))
    except ValueError:
        raise InputError(f'window "{text}": START/END must be two RFC 3339 times') from None
    if start.tzinfo is None or end.tzinfo is None:
        raise InputError(f'window "{text}": START/END must give a time zone (Z or an offset)')
    if end <= start:
        raise InputError(f'window "{text}" ends before it starts')
    return Window(text, start=start, end=end)


def _days(text: str, first: str, last: str) -> list[int]:
    for name in (first, last):
        if name not in DAYS:
            raise InputError(f'window "{text}": unknown day "{name}", expected one of {", ".join(DAYS)}')
    begin, finish = DAYS.index(first), DAYS.index(last)
    return [(begin + offset) % 7 for offset in range((finish - begin) % 7 + 1)]


def _minute(text: str, clock: str) -> int:
    hours, minutes = int(clock[:2]), int(clock[3:])
    if minutes > 59 or hours > 24 or (hours == 24 and minutes):
        raise InputError(f'window "{text}": {clock} is not a time of day')
    return hours * 60 + minutes
