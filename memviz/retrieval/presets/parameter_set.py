"""Named settings of a preset's parameters: a fitted or saved weighting, listed and chosen like
the presets themselves (each preset's defaults are the parameter set of its own name)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..params import Params
from .registry import PARAM_FIELDS, all_presets, preset, preset_params


@dataclass(frozen=True)
class ParameterSet:
    """A name for `values` of the Params fields of the registered preset `preset`; the preset's
    defaults fill the fields it leaves out. Plain data: it can be saved as JSON (`as_dict`)."""

    name: str
    preset: str
    values: Mapping[str, Any] = field(default_factory=dict, hash=False)
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a parameter set needs a name, not {self.name!r}")
        if not isinstance(self.values, Mapping):
            raise ValueError(f"parameter set {self.name!r}: values must be a mapping of parameter names")
        unknown = sorted(set(self.values) - PARAM_FIELDS)
        if unknown:
            raise ValueError(f"parameter set {self.name!r}: no such parameter: {', '.join(map(str, unknown))}")
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @classmethod
    def of(cls, name: str, params: Params, description: str = "") -> ParameterSet:
        """The set holding `params`'s settings of its preset (weights, knobs, k), not its filters."""
        return cls(name, params.preset, {f: getattr(params, f) for f in preset(params.preset).settings}, description)

    def params(self, **overrides) -> Params:
        """The Params this set describes (overrides, e.g. filters, on top). ValueError when its
        preset is not registered or a value is not valid."""
        return preset_params(self.preset, **{**self.values, **overrides})

    def as_dict(self) -> dict:
        return {"name": self.name, "preset": self.preset, "values": dict(self.values), "description": self.description}

    @classmethod
    def from_dict(cls, d: Mapping) -> ParameterSet:
        """A set from `as_dict`'s shape (e.g. read back from JSON); ValueError saying what is wrong."""
        if not isinstance(d, Mapping) or not isinstance(d.get("preset"), str):
            raise ValueError(f"not a parameter set (name, preset, values): {d!r}")
        return cls(d.get("name"), d["preset"], d.get("values") or {}, str(d.get("description") or ""))


def parameter_sets(saved: Iterable[ParameterSet] = ()) -> list[ParameterSet]:
    """What a user chooses from: every registered preset's defaults, then the `saved` sets."""
    return [ParameterSet(p.name, p.name, p.defaults, p.description) for p in all_presets()] + list(saved)
