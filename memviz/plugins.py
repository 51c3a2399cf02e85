"""Plugins: memory systems, retrieval presets, importers and embedders from other installed
packages, declared as entry points in their groups (GROUPS):

    [project.entry-points."memviz.sources"]
    toymem = "memviz_toy.source:ToySource"

Each registry has one register function that its built-in entries and the plugins go through
(`frameworks.register_source`, `retrieval.presets.register_preset`, `importers.register_format`,
`embed.register_embedder`), and each checks there what its group's interface declares. The
built-in entries are registered in code when their registry is first used; the first time a
registry is listed it calls `load(group, register, unregister)`, which imports the group's
entry points and hands each object to the same register function. So an entry's way in is the
same for both, the order built-ins are tried in (a source's recognition, an import format's
detection) stays the code's, the built-ins do not depend on installed metadata being fresh (a
source tree run without reinstalling), and nothing is scanned or imported before a registry is
listed: `memviz --help` loads no plugin (the CLI builds its parser `deferred`).

A plugin that cannot be imported, raises, gives the wrong interface or a name another entry
holds is skipped, with one line naming it and why (`Plugin.line`): every listener gets it (the
CLI prints it on stderr, the window shows it in its status bar), and `memviz --version` lists
every plugin with its state. Where a registry's use calls a plugin's code (a source's
`recognise`, an import format's detection) it does so through `guarded`: a plugin that raises
there is skipped from then on, in the same way, and never stops memviz opening anything.
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: entry point group -> what a plugin in it gives
GROUPS = {
    "memviz.sources": "memory system",
    "memviz.presets": "retrieval preset",
    "memviz.importers": "import format",
    "memviz.embedders": "embedder",
}


@dataclass(eq=False)
class Plugin:
    """One entry point of a plugin group, and what became of it."""

    group: str
    name: str                  # the entry point's name
    value: str                 # what it points at: "module:attribute"
    dist: str                  # the distribution that declares it, with its version
    registered: str | None = None   # the name its registry holds it under, once registered
    error: str | None = None   # why it is skipped (one line); None: loaded and registered

    def who(self) -> str:
        return f"plugin {self.name} ({GROUPS.get(self.group, self.group)}, {self.group}, from {self.dist})"

    def line(self) -> str:
        """What `memviz --version` says of it: OK, or why it is skipped."""
        return f"{self.who()}: " + ("OK" if self.error is None else f"skipped: {self.error}")


class Claims:
    """Which plugin registered each name of one registry (a name not here is memviz's own), and
    what a name already registered answers: the entry there first keeps it."""

    def __init__(self, what: str):
        self.what = what   # how the registry's names are named: "a preset named", "the memory system key"
        self._by: dict[str, Plugin] = {}

    def taken(self, name: str) -> ValueError:
        held = self._by.get(name)
        by = f"{held.who()}, loaded first" if held is not None else "memviz's own, which wins"
        return ValueError(f"{self.what} {name!r} is already registered: {by}")

    def add(self, name: str, plugin: Plugin | None) -> None:
        if plugin is not None:
            self._by[name] = plugin

    def drop(self, name: str) -> None:
        self._by.pop(name, None)

    def plugin(self, name: str) -> Plugin | None:
        """The plugin that registered `name`; None: memviz's own (or nothing registered)."""
        return self._by.get(name)


_lock = threading.RLock()   # one loader at a time; a plugin's import may list a registry (re-entrant)
_loaded: dict[str, list[Plugin]] = {}   # group -> its plugins, once its loading began
_complete: set[str] = set()             # the groups whose loading has ended (another thread need not wait)
_unregister: dict[str, Callable[[Plugin], None]] = {}
_listeners: list[Callable[[Plugin], None]] = []
_deferred = 0
_scan = None   # every entry point of the GROUPS, from one look at the installed distributions


def load(group: str, register: Callable[[object, Plugin], str], unregister: Callable[[Plugin], None]) -> None:
    """Load `group`'s plugins once (later calls return at once): each entry point is imported and
    its object given to `register(obj, plugin)`, which returns the name it registered it under or
    raises TypeError / ValueError saying what is wrong with it. `unregister(plugin)` takes a
    registered one out again (`reset`, or a plugin that raises in use)."""
    if group in _complete or _deferred:
        return
    with _lock:  # another thread loading it: wait for its end
        if group in _loaded or _deferred:  # loaded, or being loaded by this thread (a plugin's import lists it)
            return
        found = _loaded[group] = []
        _unregister[group] = unregister
        for ep in _entry_points(group):
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "an unknown distribution"
            plugin = Plugin(group, ep.name, ep.value, dist)
            found.append(plugin)
            try:
                obj = ep.load()
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: BLE001 - whatever a plugin's import does (SystemExit too) skips it
                _skip(plugin, f"it cannot be imported: {one_line(e)}")
                continue
            try:
                plugin.registered = register(obj, plugin)
            except (TypeError, ValueError) as e:  # the registry's checks: what the plugin lacks
                _skip(plugin, str(e).strip().splitlines()[0] if str(e).strip() else one_line(e))
            except Exception as e:  # noqa: BLE001 - the plugin's own code raised under the checks
                _skip(plugin, f"it raised {one_line(e)} when it was checked")
        _complete.add(group)


def guarded(plugin: Plugin | None, fn: Callable, *args, default=None, doing: str = "", allow: tuple = ()):
    """fn(*args) where `fn` is a plugin's code (`plugin` None: a built-in entry's, called as is):
    an exception other than those in `allow` skips the plugin (its registry unregisters it, the
    listeners are told) and `default` is returned."""
    if plugin is None:
        return fn(*args)
    try:
        return fn(*args)
    except allow:
        raise
    except Exception as e:  # noqa: BLE001 - a plugin's fault never stops what memviz was doing
        fault(plugin, f"it raised {one_line(e)}{' ' + doing if doing else ''}")
        return default


def fault(plugin: Plugin, why: str) -> None:
    """A registered plugin failed in use (raised, answered with the wrong type): skipped from now on."""
    with _lock:
        if plugin.error is not None:
            return
        if plugin.registered is not None and plugin.group in _unregister:
            _unregister[plugin.group](plugin)
        plugin.registered = None
        _skip(plugin, why)


def _skip(plugin: Plugin, why: str) -> None:
    plugin.error = why
    for fn in list(_listeners):
        fn(plugin)


def one_line(e: BaseException) -> str:
    """`Type: message` on one line, shortened."""
    text = " ".join(str(e).split())
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def listen(fn: Callable[[Plugin], None]) -> Callable[[], None]:
    """Call fn(plugin) for each plugin skipped from now on; returns what stops it."""
    _listeners.append(fn)
    return lambda: _listeners.remove(fn) if fn in _listeners else None


@contextmanager
def deferred() -> Iterator[None]:
    """Inside it, a registry listed answers with what it holds and loads no plugin (nor marks its
    group loaded): for what lists registries without needing plugins (`memviz --help`)."""
    global _deferred
    with _lock:
        _deferred += 1
    try:
        yield
    finally:
        with _lock:
            _deferred -= 1


def installed() -> dict[str, list[str]]:
    """group -> the names of its entry points installed (nothing imported)."""
    out: dict[str, list[str]] = {}
    for group in GROUPS:
        names = [ep.name for ep in _entry_points(group)]
        if names:
            out[group] = names
    return out


def plugins() -> list[Plugin]:
    """Every plugin of the groups loaded so far, in the order they were loaded."""
    with _lock:
        return [p for group in _loaded.values() for p in group]


def problems() -> list[Plugin]:
    """The plugins skipped so far."""
    return [p for p in plugins() if p.error is not None]


def reset() -> None:
    """Unregister every plugin and forget what was found, so that the next listing of each
    registry looks again (the installed distributions changed: tests, a plugin removed)."""
    global _scan
    with _lock:
        for group, found in _loaded.items():
            for plugin in found:
                if plugin.registered is not None:
                    _unregister[group](plugin)
                    plugin.registered = None
        _loaded.clear()
        _complete.clear()
        _unregister.clear()
        _scan = None


def _entry_points(group: str):
    global _scan
    with _lock:
        if _scan is None:
            if not _may_declare():
                _scan = {}
            else:
                from importlib import metadata  # only here: its import costs more than a look at every folder

                everything = metadata.entry_points()
                _scan = {g: list(everything.select(group=g)) for g in GROUPS}
        return _scan.get(group, [])


def _may_declare() -> bool:
    """Whether any distribution on the path may declare a memviz entry point: a look at the
    entry_points.txt of each one in the path's folders (a few ms, where importlib.metadata's
    import and scan take tens), and yes for a path entry that is no folder (a zip: only
    importlib.metadata reads it)."""
    for folder in sys.path:
        try:
            entries = os.scandir(folder or ".")
        except NotADirectoryError:
            return True
        except OSError:
            continue
        with entries:
            for entry in entries:
                if entry.name.endswith((".dist-info", ".egg-info")):
                    try:
                        with open(os.path.join(entry.path, "entry_points.txt"), "rb") as f:
                            if b"[memviz." in f.read():
                                return True
                    except OSError:
                        continue
    return False
