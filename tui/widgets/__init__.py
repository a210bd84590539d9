"""Widgets of the conductor TUI."""
