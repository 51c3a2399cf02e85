"""memviz: inspect, query and edit the long-term memory of LLM agents."""

__version__ = "0.1.0"
