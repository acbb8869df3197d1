"""The long-running service: the consolidation daemon behind ``remd serve``, what it shares with
``remd mcp``, and sd_notify.
"""
