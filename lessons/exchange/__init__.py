"""The notebook's exchange: export and import of notes (`transfer`), and merging one
notebook into another (`merge`), every source run kept.
"""
