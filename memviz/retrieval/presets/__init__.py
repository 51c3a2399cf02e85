"""Retrieval presets: each one an object that owns its scoring beside its defaults (base.py says
what a preset supplies and what the engine lends it), one file per built-in preset, all found by
name in one registry (registry.py) that the built-in ones enter like any other:

    from memviz.retrieval.presets import LinearPreset, Static, register_preset

    class ImportanceOnly(LinearPreset):
        def static(self, run):
            return Static(values={"importance": run.arrays.importance[run.rows] / 10})

    register_preset(ImportanceOnly(name="importance-only", description="score = γ·importance/10",
                                   source="an example", components=("importance",),
                                   weights={"importance": "gamma"}, uses_ref_time=False,
                                   defaults=dict(gamma=1.0, k=10), needs_vector=False))

A ParameterSet (parameter_set.py) is a named setting of one preset's parameters.
"""
from .ada import ADA
from .base import ABG, FILTERS, Components, LinearPreset, Personas, Preset, Run, Static
from .dual_memory import DUAL_MEMORY
from .generative_agents import GENERATIVE_AGENTS
from .hybrid import HYBRID
from .parameter_set import ParameterSet, parameter_sets
from .registry import PRESETS, all_presets, check_preset, preset, preset_params, register_preset, unregister_preset
from .working_memory import WORKING_MEMORY

for _p in (DUAL_MEMORY, GENERATIVE_AGENTS, ADA, HYBRID, WORKING_MEMORY):
    register_preset(_p)
del _p

__all__ = ["ABG", "FILTERS", "PRESETS", "Components", "LinearPreset", "ParameterSet", "Personas", "Preset", "Run",
           "Static", "check_preset", "all_presets", "parameter_sets", "preset", "preset_params", "register_preset",
           "unregister_preset"]
