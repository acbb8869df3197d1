"""Text: words, sentences, dates, tagging, facts, links, embeddings and tokens. Pure functions of
text (and the offline models); imports only the base layer and the vector format of the store.
"""
