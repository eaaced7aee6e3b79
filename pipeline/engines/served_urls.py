"""Where a served engine's servers are and how it may speak to them.

The base_url setting read into URLs (never with credentials in them), a server's host:port as the records name
it, the API key from the environment, and the names a server may give a checkpoint."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.config import ConfigError

SETTINGS = "conf/engine/openai.yaml"


def parse_urls(base_url: str | Sequence[str]) -> list[str]:
    """The server URLs of base_url (one or a list), without a trailing / or /v1; refused in one line when
    not http(s) or when they carry credentials (those belong in the variable api_key_env names)."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise ConfigError(f"{SETTINGS}: base_url = {base_url!r}: give null, a URL or a list of URLs")
    out = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{SETTINGS}: base_url {url!r} is not an http(s) URL, e.g. http://gpu1:8000")
        if parts.username or parts.password:
            raise ConfigError(
                f"{SETTINGS}: base_url {host_of(url)!r} carries credentials; remove them from the URL and "
                "put the key in an environment variable named by api_key_env (it is never written anywhere)"
            )
        out.append(url.rstrip("/").removesuffix("/v1"))
    if len(set(out)) != len(out):
        raise ConfigError(f"{SETTINGS}: base_url lists a server twice ({', '.join(out)})")
    return out


def host_of(url: str) -> str:
    """host:port of a URL, without credentials, path or query (what the records hold)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.hostname}{port}"


def checkpoint_names(model: str) -> set[str]:
    """The names a server may give this checkpoint: its path as given and absolute, and the hub repository
    id of a hub cache snapshot (.../models--org--name/snapshots/<sha>)."""
    path = Path(model)
    names = {model, str(path.absolute()), str(path.resolve())}
    parts = path.resolve().parts
    for i, part in enumerate(parts[:-2]):
        if part.startswith("models--") and parts[i + 1] == "snapshots":
            names.add(part.removeprefix("models--").replace("--", "/"))
    return names


def api_key(env_name: str | None) -> str | None:
    """The API key from the environment variable env_name (None: no key); refused when it is unset."""
    if env_name is None:
        return None
    key = os.environ.get(env_name)
    if not key:
        raise ConfigError(f"{SETTINGS}: api_key_env = {env_name!r}: that environment variable is not set")
    return key
