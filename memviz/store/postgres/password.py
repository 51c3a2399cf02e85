"""Passwords for PostgreSQL stores from the OS keyring (`keyring`). No Qt here.

libpq itself reads PGPASSWORD and ~/.pgpass; the keyring is the third place, for a password
typed once in File ▸ Open database… and remembered there at the user's request. Entries are
keyed by the redacted DSN (user, host, port, database), so nothing secret is in the key.
A keyring that is missing or locked is simply not used.
"""
from __future__ import annotations

from .dsn import redact

SERVICE = "memviz-postgresql"


def stored_password(dsn: str) -> str | None:
    try:
        import keyring  # noqa: PLC0415
        return keyring.get_password(SERVICE, redact(dsn))
    except Exception:  # noqa: BLE001 - no usable keyring: libpq's own sources remain
        return None


def remember_password(dsn: str, password: str) -> bool:
    """Keep `password` for this DSN in the OS keyring; False when there is no usable keyring."""
    try:
        import keyring  # noqa: PLC0415
        keyring.set_password(SERVICE, redact(dsn), password)
        return True
    except Exception:  # noqa: BLE001
        return False
