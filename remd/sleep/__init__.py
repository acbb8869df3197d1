"""The sleep wing of the engine: importance, triggers and the REM cycle (plan, cluster,
synthesise, consolidate, roll back).
"""
