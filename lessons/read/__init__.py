"""The read path: a question in, the relevant experience out (recall, candidates, kin,
the semantic index, rendering under a token budget).
"""
