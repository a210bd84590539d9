"""`Settings`: the declared fields (declaration.py), read from their sources.

pydantic-settings reads them, highest first, from `Settings(**values)` (the command line
passes its flags so), `CONDUCTOR_*` variables, the config file, then the defaults.
"""

from __future__ import annotations

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from conductor.config.declaration import Declaration
from conductor.config.sources import EnvSource, FileSource


class Settings(BaseSettings, Declaration):
    """The user's settings as the sources give them (fields: `Declaration`)."""

    model_config = SettingsConfigDict(
        env_prefix="CONDUCTOR_", env_nested_delimiter="__", extra="forbid"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No .env file and no secrets directory: the precedence the README gives.
        return init_settings, EnvSource(settings_cls), FileSource(settings_cls)
