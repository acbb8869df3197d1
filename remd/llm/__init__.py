"""The LLM: the one client (client.py), the tagger and the update judge that use it.
"""
