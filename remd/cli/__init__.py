"""Front end: the ``remd`` command (main.py) and its command groups.
"""
