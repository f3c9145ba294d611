"""The edition: one typed object assembled from the stages' results, then rendered.

`model` declares it (and the record persisted as edition.json), `assemble` computes it from the
fetch and synthesis results plus the earlier editions, and `render` only formats it.
"""
