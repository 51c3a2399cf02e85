"""The one registry of retrieval presets: the built-in ones, a plugin's (entry point group
`memviz.presets`, memviz/plugins.py) and any other go through `register_preset`, and everything
that names a preset finds it with `preset(name)`. The plugins load when the registry is first
listed, or asked for a name it does not hold."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields

from ... import plugins
from ..params import Params
from .base import LinearPreset, Preset

GROUP = "memviz.presets"
_REGISTRY: dict[str, Preset] = {}
_CLAIMS = plugins.Claims("a preset named")
#: the Params fields a preset can set (all but `preset`)
PARAM_FIELDS = frozenset(f.name for f in fields(Params)) - {"preset"}
_NUMBERS = frozenset(f.name for f in fields(Params) if f.type in ("float", "int"))


def register_preset(p: Preset, *, replace: bool = False, plugin: plugins.Plugin | None = None) -> Preset:
    """Make `p` rankable by its name (the query panel, `memviz query --preset`, Params.preset).
    Raises TypeError or ValueError saying what `p` lacks; a name already taken needs `replace`
    (which a plugin, `plugin` given, never has: the entry already there wins)."""
    check_preset(p)
    if p.name in _REGISTRY and (plugin is not None or not replace):
        raise _CLAIMS.taken(p.name)
    _REGISTRY[p.name] = p
    _CLAIMS.add(p.name, plugin)
    return p


def unregister_preset(name: str) -> None:
    """Remove a registered preset (a test's, or a plug-in's being unloaded)."""
    preset(name)
    del _REGISTRY[name]
    _CLAIMS.drop(name)


def load_plugins() -> None:
    """Register the installed plugins' presets, once (memviz/plugins.py)."""
    plugins.load(GROUP, lambda obj, plugin: register_preset(obj, plugin=plugin).name,
                 lambda plugin: unregister_preset(plugin.registered))


def preset(name: str) -> Preset:
    """The registered preset of that name (ValueError naming the registered ones if none)."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        pass
    load_plugins()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(_REGISTRY)}") from None


def all_presets() -> tuple[Preset, ...]:
    """Every registered preset (the plugins' loaded first), in the order they were registered."""
    load_plugins()
    return tuple(_REGISTRY.values())


def preset_params(name: str, **overrides) -> Params:
    """The preset's default Params (overrides applied on top)."""
    p = preset(name)
    return Params(preset=p.name, **{**p.defaults, **overrides})


class _Descriptions(Mapping):
    """name -> one-line description of every registered preset (a live view of the registry)."""

    def __getitem__(self, name: str) -> str:
        return preset(name).description

    def __iter__(self) -> Iterator[str]:
        return iter([p.name for p in all_presets()])

    def __len__(self) -> int:
        return len(all_presets())

    def __repr__(self) -> str:
        return repr(dict(self))


#: preset name -> one-line description, for lists and help texts
PRESETS: Mapping[str, str] = _Descriptions()


def check_preset(p) -> None:
    """Raise TypeError / ValueError when `p` cannot be ranked: what the engine needs of a preset."""
    if not isinstance(p, Preset):
        raise TypeError(f"{p!r} is not a retrieval preset: make it a memviz.retrieval.presets.Preset "
                        f"(LinearPreset for a weighted sum of components)")
    name = p.name

    def bad(what: str):
        return ValueError(f"preset {name!r}: {what}")

    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"a preset needs a name (text without surrounding spaces), not {name!r}")
    if not isinstance(p.description, str) or not isinstance(p.source, str):
        raise bad("its description (the formula) and source must be text")
    comps = p.components
    if not isinstance(comps, tuple) or not comps or not all(isinstance(c, str) for c in comps) \
            or len(set(comps)) != len(comps):
        raise bad(f"components must be a tuple of distinct names, not {comps!r}")
    if sorted(p.order) != sorted(comps):
        raise bad(f"order {p.order!r} must name each of the components {comps!r} once")
    if not isinstance(p.defaults, Mapping):
        raise bad(f"defaults must map Params fields to values, not {p.defaults!r}")
    if set(p.defaults) - PARAM_FIELDS:
        raise bad(f"defaults name no Params field: {sorted(set(p.defaults) - PARAM_FIELDS)}")
    try:
        Params(preset=name, **p.defaults)
    except (TypeError, ValueError) as e:
        raise bad(f"its defaults are not valid parameters: {e}") from None
    if not isinstance(p.weights, Mapping):
        raise bad(f"weights must map components to Params fields, not {p.weights!r}")
    if not isinstance(p.knobs, tuple) or not all(isinstance(k, str) for k in p.knobs):
        raise bad(f"knobs must be a tuple of Params field names, not {p.knobs!r}")
    if set(p.weights) - set(comps):
        raise bad(f"weights name components it does not have: {sorted(set(p.weights) - set(comps))}")
    if set(p.weights.values()) - _NUMBERS:
        raise bad(f"weights must be numeric Params fields, not {sorted(set(p.weights.values()) - _NUMBERS)}")
    if set(p.knobs) - PARAM_FIELDS:
        raise bad(f"knobs name no Params field: {sorted(set(p.knobs) - PARAM_FIELDS)}")
    own = type(p)
    if own.candidates is not Preset.candidates and p.candidate_rule is None:
        raise bad("it chooses its own candidates, so it must name them (candidate_rule)")
    if isinstance(p, LinearPreset):
        if set(comps) - {"relevance"} and own.static is LinearPreset.static:
            raise bad(f"its components {sorted(set(comps) - {'relevance'})} need a `static` method to compute them")
        if p.relevance_minmax and "relevance" not in comps:
            raise bad("relevance_minmax without a relevance component")
    elif own.rank is Preset.rank or own.component_values is Preset.component_values:
        raise bad("a preset that is not a LinearPreset ranks itself: it needs `rank` and `component_values`")
