"""What reaching an object store needs from the user's side, never from a repository: the cache folder, how often
a store is asked for a new version, an S3-compatible endpoint and keys as the AWS tools take them, and every
credential value, to keep out of messages."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onetool_code import parameters, published
from onetool_code.errors import BadInputError
from onetool_code.settings.host import cache_root, tool_int

# Published indexes: seconds between two checks of a store for a new version: OneTool's ``tools.code.refresh``,
# else ``ONETOOL_CODE_REFRESH``, else a minute.
REFRESH = parameters.Parameter(
    "refresh", "integer", "Seconds between two checks of a store for a new version.", default=60, low=0, high=86400
)
REFRESH_ENV = "ONETOOL_CODE_REFRESH"
_S3_ENDPOINTS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")
_CREDENTIAL_NAMES = re.compile(r"(SECRET|TOKEN|PASSWORD|KEY|CREDENTIAL|SAS)", re.IGNORECASE)


def store_environment(tool: Mapping[str, Any] | None = None) -> published.Environment:
    """What reaching an object store needs from the user's side (never from a repository): the cache folder,
    the refresh period (``tool`` is OneTool's ``tools.code``), an S3-compatible endpoint as the AWS tools take
    it, keys of the AWS tools' shared files when the environment names none, and every credential value, to keep
    out of messages."""
    if tool and tool.get(REFRESH.name) is not None:
        refresh = float(tool_int(tool, REFRESH))
    else:
        try:
            refresh = max(0.0, float(os.environ.get(REFRESH_ENV) or REFRESH.default))
        except ValueError:
            raise BadInputError(f"{REFRESH_ENV} must be a number of seconds, got {os.environ[REFRESH_ENV]!r}") from None
    profile = _aws_profile()
    secrets = {v for n, v in os.environ.items() if len(v) >= 6 and _CREDENTIAL_NAMES.search(n)}
    secrets |= {v for n, v in profile.items() if n != "region" and len(v) >= 6}
    return published.Environment(
        cache_root=cache_root(),
        refresh=refresh,
        s3_endpoint=next((os.environ[name] for name in _S3_ENDPOINTS if os.environ.get(name)), None),
        s3_profile=profile,
        secrets=tuple(sorted(secrets, key=len, reverse=True)),
    )


def _aws_profile() -> dict[str, str]:
    """Keys from the AWS tools' shared files (``~/.aws/credentials`` and ``~/.aws/config``, or the files
    ``AWS_SHARED_CREDENTIALS_FILE`` and ``AWS_CONFIG_FILE`` name), profile ``AWS_PROFILE`` or ``default``, when
    the environment names none: the store client reads the variables, roles and web identity itself, not these."""
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    import configparser

    name = os.environ.get("AWS_PROFILE") or "default"
    credentials = configparser.ConfigParser()
    config = configparser.ConfigParser()
    try:
        credentials.read(Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials").expanduser())
        config.read(Path(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser())
    except (OSError, configparser.Error, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    section = credentials[name] if credentials.has_section(name) else {}
    for option in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
        if section.get(option):
            found[option.removeprefix("aws_")] = section[option]
    wanted = "default" if name == "default" else f"profile {name}"
    region = config[wanted].get("region") if config.has_section(wanted) else None
    if region and not os.environ.get("AWS_REGION"):
        found["region"] = region
    return found if "access_key_id" in found or "region" in found else {}
