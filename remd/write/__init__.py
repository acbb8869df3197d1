"""The write wing of the engine: saves, update detection and supersession, the embedding backlog,
export/import and the tag tools.
"""
