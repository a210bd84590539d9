"""conductor: a sandboxed meta-prompting conductor."""

__version__ = "0.1.0"
