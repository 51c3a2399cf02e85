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
