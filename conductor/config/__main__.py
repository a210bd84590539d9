"""`python -m conductor.config`: the README's table of settings, made from the declarations."""

from conductor.config.table import settings_table

print(settings_table(), end="")
