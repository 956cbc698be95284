"""Settings: the one place that reads the outside world (arguments, OneTool, environment variables,
``.chunkhound.json``, ``secrets.yaml``, the cache folder); no other module reads ``os.environ`` or a config file.

The map, in the order a call meets it:
- ``places``: where a call searches; the one owner of ``path`` (roots, ``@name`` workspaces), for every tool.
- ``workspaces``: named workspaces, from OneTool's config or a ``--workspace`` file.
- ``project``: a project on disk as ChunkHound finds it (root, ``.chunkhound.json``, index file, committed model).
- ``resolve``: every setting of one call, into one frozen ``Settings``.
- ``providers``: embedding providers and rerankers; which URLs a request may go to.
- ``keys``: API keys, read only when needed, and the trust they follow.
- ``host``: OneTool's secrets and ``tools.code``, and the cache folder.
- ``stores``: what reaching an object store takes from the user's side (published indexes).
"""

from onetool_code.settings.host import CACHE_ENV, OneToolHost, cache_root, onetool_host
from onetool_code.settings.keys import SECRETS_ENV, Secret, api_key
from onetool_code.settings.places import (
    Located,
    Member,
    Where,
    all_failed,
    labels,
    locate,
    locate_one,
    named_paths,
    one,
)
from onetool_code.settings.project import PROJECT_CONFIG, Committed, committed, index_path, project_root
from onetool_code.settings.providers import PROVIDERS, Reranker, url_problem
from onetool_code.settings.resolve import MAX_RETRIES, TIMEOUT, Settings, resolve
from onetool_code.settings.stores import REFRESH_ENV, store_environment
from onetool_code.settings.workspaces import Workspaces, workspace_file, workspaces

__all__ = [
    "CACHE_ENV",
    "MAX_RETRIES",
    "PROJECT_CONFIG",
    "PROVIDERS",
    "REFRESH_ENV",
    "SECRETS_ENV",
    "TIMEOUT",
    "Committed",
    "Located",
    "Member",
    "OneToolHost",
    "Reranker",
    "Secret",
    "Settings",
    "Where",
    "Workspaces",
    "all_failed",
    "api_key",
    "cache_root",
    "committed",
    "index_path",
    "labels",
    "locate",
    "locate_one",
    "named_paths",
    "one",
    "onetool_host",
    "project_root",
    "resolve",
    "store_environment",
    "url_problem",
    "workspace_file",
    "workspaces",
]
