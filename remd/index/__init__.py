"""The indexes a query reads: vectors, full text, and the in-process caches of the tag graph and
node metadata with the change logs that keep them exact. Imports text, store and base.
"""
