"""memviz-toy: an example memviz plugin (memviz/manual/plugins.md).

- `source.ToySource`: the toy memory system, a JSON file `{"toymem": 1, "records": [...]}`,
  opened in place; the one edit it allows is correcting a record's text.
- `preset.TOY_RECENCY`: a retrieval preset, score = α·cosine + β·freshness.
- `importer.TOY_NOTES`: an import format, a text file of dated notes.
- `embedder.HashEmbedder`: the model the toy system's vectors are made with.
"""
