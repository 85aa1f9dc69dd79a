"""catalogd over HTTP: a ClusterCatalog's File-Based Catalog as catalogd serves it at ``<base>/api/v1/all``.

``open_catalog(location)`` is what the front ends call: a catalogd base URL (``http://``, ``https://``) is
fetched, anything else is a directory or file for ``webhook.olm.fbc.load_catalog``.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

from webhook.errors import CatalogError, CatalogUnavailable, FetchError, outage
from webhook.olm import Catalog, catalog_from_stream, load_catalog


def open_catalog(location: str | Path, *, timeout: float = 30.0) -> Catalog:
    """The catalog at a catalogd base URL, or in a directory or FBC file; see ``fetch_catalog`` and
    ``load_catalog`` for names and errors."""
    text = str(location)
    if text.startswith(("http://", "https://")):
        return fetch_catalog(text, timeout)
    return load_catalog(location)


def fetch_catalog(base: str, timeout: float = 30.0, *, cafile: Path | None = None) -> Catalog:
    """The catalog catalogd serves at ``<base>/api/v1/all``, named after the URL's last path segment.

    ``timeout`` is in seconds; ``cafile`` is a PEM bundle that verifies an ``https`` server (catalogd's CA; the
    system's trust store without it). Raises ``CatalogUnavailable`` (a ``FetchError``) when the server does not
    answer, fails (HTTP 5xx) or throttles (429), ``FetchError`` for another HTTP error (404: no such catalog), and
    ``CatalogError`` when the answer is not UTF-8; malformed blobs are recorded on the catalog.
    """
    base = base.rstrip("/")
    url = f"{base}/api/v1/all"
    try:
        context = ssl.create_default_context(cafile=str(cafile)) if cafile is not None else None
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            text = response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        error.close()
        kind = CatalogUnavailable if outage(error.code) else FetchError
        raise kind(f"{url}: cannot fetch catalog: {error}") from None
    except (urllib.error.URLError, OSError) as error:
        raise CatalogUnavailable(f"{url}: cannot fetch catalog: {error}") from None
    except UnicodeDecodeError as error:
        raise CatalogError(f"{url}: cannot read catalog: {error}") from None
    return catalog_from_stream(base.rsplit("/", 1)[-1], text, url)
