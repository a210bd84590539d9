"""The notebook's storage: the schema and its migrations, opening and safe writes, the
queries the application reads, adding and retiring notes, and the figures.
"""
