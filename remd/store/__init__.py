"""The store: a SQLite file (sqlite.py) or a PostgreSQL database (postgres.py) behind one
seam, the schema and the migrations of both. Imports only the base layer.
"""
