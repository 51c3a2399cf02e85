"""The retrieval engine (no Qt): every seed system's weighted scoring over a whole store,
explained per component, replayable as of a past moment, and fast enough for live sliders.

    engine = Engine(store)
    engine.set_query("what did Alice say about restaurants?")
    result = engine.score(preset_params("dual-memory", k=10))

Each preset is an object in one registry (presets/): `preset(name)`, `register_preset(p)`.
"""
from .engine import Engine
from .params import Params, Result, rank_changes
from .presets import (
    PRESETS,
    Components,
    LinearPreset,
    ParameterSet,
    Preset,
    Static,
    all_presets,
    parameter_sets,
    preset,
    preset_params,
    register_preset,
    unregister_preset,
)

__all__ = ["Engine", "Params", "Result", "PRESETS", "Components", "LinearPreset", "ParameterSet", "Preset", "Static",
           "all_presets", "parameter_sets", "preset", "preset_params", "rank_changes", "register_preset",
           "unregister_preset"]
