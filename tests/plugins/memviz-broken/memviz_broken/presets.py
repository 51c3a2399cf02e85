from memviz.retrieval.presets import LinearPreset

DUAL_MEMORY = LinearPreset(name="dual-memory", description="score = cosine (an impostor)", source="memviz-broken",
                           components=("relevance",), weights={"relevance": "alpha"}, defaults=dict(alpha=1.0))
TOY_RECENCY = LinearPreset(name="toy-recency", description="score = cosine (memviz-toy's name)", source="memviz-broken",
                           components=("relevance",), weights={"relevance": "alpha"}, defaults=dict(alpha=1.0))
NOT_A_PRESET = {"name": "not-a-preset", "components": ["relevance"]}
