"""Front end: the HTTP API (app.py), its bodies, protocol and request log.
"""
