"""The making of an edition: one typed object assembled from the stages' results, then rendered
(what the site keeps of it, and what is made from records alone, is in archive/).

`model` declares it (the record persisted as edition.json is archive/record.py), `assemble`
computes it from the fetch and synthesis results plus the earlier editions, and `render` only
formats it.
"""
