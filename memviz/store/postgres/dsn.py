"""Connection strings: recognising them, and showing them without their password."""
from __future__ import annotations

import re

_SCHEMES = ("postgresql://", "postgres://")


def is_dsn(target) -> bool:
    return isinstance(target, str) and target.lower().startswith(_SCHEMES)


def redact(dsn: str) -> str:
    """The DSN as it may be shown or logged: any password (user:secret@ or password=…) removed."""
    out = re.sub(r"^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@", r"\1@", dsn, flags=re.I)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", out)


def scrub(text: str, dsn: str) -> str:
    """`text` (a server or libpq message) with the DSN's password, if any, blanked out."""
    m = re.match(r"^postgres(?:ql)?://[^:/@?]*:([^@/?]+)@", dsn, flags=re.I)
    secrets = [m.group(1)] if m else []
    secrets += re.findall(r"(?i)[?&]password=([^&]+)", dsn)
    for s in secrets:
        text = text.replace(s, "***")
    return redact(text) if is_dsn(text) else text


def _parts(dsn: str) -> dict:
    import psycopg.conninfo as ci  # noqa: PLC0415 - psycopg only for PostgreSQL
    try:
        return ci.conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - a malformed DSN: show it redacted instead
        return {}


def label(target: str) -> str:
    """What a title or status bar shows for a store: a file's name, or a DSN's database and
    host (a Unix socket shown as `local`), never the password."""
    if not is_dsn(target):
        import os  # noqa: PLC0415
        return os.path.basename(target)
    p = _parts(target)
    if not p:
        return redact(target)
    host = str(p.get("host") or "local")
    host = "local" if host.startswith("/") else host
    return f"{p.get('dbname') or p.get('user') or '?'} @ {host}" + (f":{p['port']}" if p.get("port") else "")


def with_password(dsn: str, password: str) -> str:
    """The URL DSN with `password` in it (for this connection only: memviz never stores it)."""
    from urllib.parse import quote, urlsplit, urlunsplit  # noqa: PLC0415
    dsn = redact(dsn)
    if not password:
        return dsn
    parts = urlsplit(dsn)
    user, _, host = parts.netloc.rpartition("@")
    user = user or ""
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))
