"""The README's table of settings, made from the declarations (`python -m conductor.config`)."""

from __future__ import annotations

from conductor.config.declaration import Declaration
from conductor.config.fields import SettingField, setting_fields


def settings_table() -> str:
    """One Markdown row per setting: its file key, flag, default, what it allows and does."""
    rows = [
        "| setting | flag | default | allowed | what it does |",
        "|---|---|---|---|---|",
    ]
    rows += [_row(field) for field in setting_fields(Declaration)]
    return "\n".join(rows) + "\n"


def _row(field: SettingField) -> str:
    flag = f"`{field.flag}`, `--no-{field.flag[2:]}`" if field.kind == "bool" else f"`{field.flag}`"
    what = field.description.replace("|", "\\|")
    return f"| `{field.path}` | {flag} | {field.shown_default()} | {field.allowed()} | {what} |"
