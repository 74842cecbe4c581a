"""The column kinds a domain records and the checks of their optional fields (timezone, decimals, date_format)."""
from __future__ import annotations

import re

from lopub.errors import DomainError

#: column types a schema records (the release gives each column back in its type)
KINDS = ("number", "integer", "boolean", "date", "datetime", "text")
#: a fixed UTC offset as a domain records it (``+01:00``, ``-05:30``)
UTC_OFFSET = re.compile(r"^[+-](?:[01]\d|2[0-3]):[0-5]\d$")


def check_timezone(name: str, zone: object, kind: str | None) -> None:
    """Refuse a ``timezone`` that is not a string naming a zone (IANA name, ``UTC``, ``+HH:MM``)
    or that is given to an attribute of another kind than ``datetime``."""
    if not isinstance(zone, str):
        raise DomainError(f"attribute {name!r}: timezone ({zone!r}) must be a string such as "
                          f"'Europe/Paris', 'UTC' or '+01:00'")
    if kind != "datetime":
        raise DomainError(f"attribute {name!r}: a timezone ({zone!r}) needs kind 'datetime', not {kind!r}")
    if zone == "UTC" or UTC_OFFSET.match(zone):
        return
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        raise DomainError(f"attribute {name!r}: timezone ({zone!r}) is not a time zone; expected an "
                          f"IANA name such as 'Europe/Paris', 'UTC' or a UTC offset such as '+01:00'") from None


def check_decimals(name: str, decimals: object, kind: str | None) -> None:
    """Refuse ``decimals`` that is not an integer in [0, 15] or that is given to an attribute of
    another kind than ``number``."""
    if type(decimals) is not int or not 0 <= decimals <= 15:
        raise DomainError(f"attribute {name!r}: decimals ({decimals!r}) must be an integer in [0, 15]")
    if kind != "number":
        raise DomainError(f"attribute {name!r}: decimals ({decimals!r}) need kind 'number', not {kind!r}")


def check_date_format(name: str, fmt: object, kind: str | None) -> None:
    """Refuse a ``date_format`` that is not a ``strftime`` format writing day, month and year
    (read back as the same date) or that is given to an attribute of another kind than ``date``."""
    import datetime

    day = datetime.date(2024, 1, 31)
    try:
        ok = isinstance(fmt, str) and datetime.datetime.strptime(day.strftime(fmt), fmt).date() == day
    except ValueError:
        ok = False
    if not ok:
        raise DomainError(f"attribute {name!r}: date_format ({fmt!r}) must be a strftime format of day, "
                          f"month and year such as '%m/%d/%Y'")
    if kind != "date":
        raise DomainError(f"attribute {name!r}: a date_format ({fmt!r}) needs kind 'date', not {kind!r}")
