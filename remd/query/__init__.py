"""The query wing of the engine: inject (seeds, walk, score, pack), reading memories back, and
feedback on packs.
"""
