"""The architecture stays true: the import contracts in pyproject.toml hold (import-linter),
the lint finds nothing (ruff), and importing the core or the CLI loads no Qt at run time.

import-linter's graph counts an import inside a function like one at the top of the file, so
the contracts are the stricter check; the run-time check below also covers what a graph
cannot see (importlib.import_module with a computed name, as the CLI does for its commands)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = ("store", "embed", "retrieval", "edits", "layout", "importers", "reflect", "context", "judge", "samples", "session", "tasks",
        "background", "blas", "userdirs", "commands", "cli")


def tool(name: str) -> str:
    """The console script installed beside this interpreter (the test extra brings both tools)."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.path.exists(here) else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found


def run(*cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold():
    out = run(tool("lint-imports"), "--no-cache")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


# The findings of the first run sit in files other branches edit in parallel: the lead runs
# `ruff check --fix .` after merging them and fixes the rest by hand, then removes this mark
# (strict: once the lint is clean this test fails until the mark is gone).
def test_lint_finds_nothing():
    out = run(tool("ruff"), "check", "--no-cache", "--output-format", "concise", ".")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


def test_core_and_cli_import_no_qt():
    code = textwrap.dedent(f"""
        import importlib, sys
        for name in {CORE!r}:
            importlib.import_module("memviz." + name)
        from memviz.cli import COMMANDS, build_parser
        build_parser()  # imports every subcommand module
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph")
                        or m.startswith("memviz.app"))
        print(loaded)
        sys.exit(1 if loaded else 0)
        """)
    out = run(sys.executable, "-c", code)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def test_a_warning_raised_in_memviz_code_fails_the_test():
    # pyproject's filterwarnings "error:::memviz" matches the module a warning is attributed to
    warn = "import warnings; warnings.warn('careful')"
    with pytest.raises(UserWarning):
        exec(warn, {"__name__": "memviz.example"})
    with pytest.warns(UserWarning):  # elsewhere (a library's own code) it stays a warning
        exec(warn, {"__name__": "somelib.example"})


# ---------------------------------------------------------------- one way to run work off the caller's thread
#: the modules that may start threads or processes (ARCHITECTURE.md, "Running work"): the core's
#: one helper, the window's worker lanes, the UMAP worker process
RUNNERS = {"memviz/background.py": {"Thread"}, "memviz/app/workers.py": {"QThreadPool", "QRunnable"},
           "memviz/layout/umap_worker.py": {"multiprocessing"}}
#: what starts a thread or a process
STARTERS = {"Thread", "Timer", "ThreadPoolExecutor", "ProcessPoolExecutor", "QThread", "QThreadPool", "QRunnable",
            "multiprocessing", "_thread", "start_new_thread", "fork", "Pool"}


def thread_starts(source: str) -> set[tuple[int, str]]:
    """(line, name) of every mention in `source` of something that starts a thread or a process
    (an import of multiprocessing counts; threading's locks and events do not)."""
    import ast
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {(node.lineno, a.name.split(".")[0]) for a in node.names if a.name.split(".")[0] in STARTERS}
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".")[0]
            if module in STARTERS:
                found.add((node.lineno, module))
            found |= {(node.lineno, a.name) for a in node.names if a.name in STARTERS}
        elif isinstance(node, ast.Attribute) and node.attr in STARTERS:
            found.add((node.lineno, node.attr))
        elif isinstance(node, ast.Name) and node.id in STARTERS:
            found.add((node.lineno, node.id))
    return found


def test_threads_and_processes_start_only_in_the_named_runners():
    from pathlib import Path
    found = []
    for path in sorted(Path(ROOT, "memviz").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        allowed = RUNNERS.get(rel, set())
        found += [f"{rel}:{line}: {name}" for line, name in sorted(thread_starts(path.read_text())) if name not in allowed]
    assert not found, ("run core work through memviz.background.in_thread, the window's through app/workers.py "
                       "(ARCHITECTURE.md, Running work):\n" + "\n".join(found))


def test_the_thread_walk_finds_every_way_the_code_once_started_one():
    once = textwrap.dedent("""
        import threading
        from concurrent.futures import ThreadPoolExecutor
        import multiprocessing as mp
        from threading import Thread, Lock, Event
        threading.Thread(target=f).start()
        pool = ThreadPoolExecutor(1)
        lock, done = threading.Lock(), threading.Event()
        """)
    assert sorted(thread_starts(once)) == [(3, "ThreadPoolExecutor"), (4, "multiprocessing"), (5, "Thread"),
                                           (6, "Thread"), (7, "ThreadPoolExecutor")]


def import_cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module in a grimp import graph (each a
    set of modules that import each other, directly or through the others), found by Tarjan's
    algorithm without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_of_memviz_has_no_cycle():
    """No module of memviz imports one that imports it back, directly or around a longer loop
    (imports inside functions count: the graph is import-linter's, grimp's)."""
    import grimp

    assert import_cycles(grimp.build_graph("memviz")) == []


def test_the_cycle_finder_finds_a_cycle_and_only_cycles():
    import grimp

    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.d", "p.e"):
        graph.add_module(name)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.d", "p.e"),
                               ("p.e", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.d", "p.e"], ["p.a", "p.b", "p.c"]]
    graph.remove_import(importer="p.c", imported="p.a")
    graph.remove_import(importer="p.e", imported="p.d")
    assert import_cycles(graph) == []
