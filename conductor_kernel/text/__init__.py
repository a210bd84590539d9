"""Text the kernel measures or shows: token counts (tokens.py), escaping of untrusted text
(display.py), capped captured output (output.py)."""
