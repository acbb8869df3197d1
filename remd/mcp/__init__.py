"""Front end: ``remd mcp``, the memory as MCP tools over stdio (server.py).
"""
