"""Kubernetes' URL library (``pkg/cel/library/urls.go``, "kubernetes.urls") on a port of Go's ``net/url``::

    url(string) -> URL                  isURL(string) -> bool
    <URL>.getScheme() .getHost() .getHostname() .getPort() .getEscapedPath() -> string
    <URL>.getQuery() -> map<string, list<string>>

As in Kubernetes a string is a URL when ``url.ParseRequestURI`` accepts it (an absolute URI or an absolute
path; no relative references; no control characters; valid ``%`` escapes; a valid port), and the URL is then
read with ``url.Parse`` (so a ``#fragment`` is not part of the path or query). Errors read
``URL parse error during conversion from string: parse "<url>": <reason>`` with Go's reasons
(``invalid URI for request``, ``missing protocol scheme``, ``invalid port ":x" after host``,
``invalid URL escape "%zz"``, ...). Getters follow Go: ``getHost`` keeps IPv6 brackets and the port,
``getHostname`` strips both, a missing part is ``''``; ``getEscapedPath`` is the path as written when that
is a valid encoding, else re-escaped; ``getQuery`` drops pairs with ``;`` or bad escapes and decodes ``+``.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from webhook.cel.libraries.registry import Overload, function, member
from webhook.errors import CelEvaluationError, URLError

_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_HOST_SUB_DELIMS = frozenset(b"!$&'()*+,;=:[]<>\"")
_UNRESERVED_MARKS = frozenset(b"-_.~")
_RESERVED = frozenset(b"$&+,/:;=?@")
_PATH_KEPT = frozenset(b"!$&'()*+,;=:@[]%")
_USERINFO = _ALNUM | frozenset(b"-._:~!$&'()*+,;=%@")


class URL:
    """A parsed URL (CEL type ``kubernetes.URL``); ``str`` is the text it was parsed from."""

    cel_type_name = "kubernetes.URL"
    __slots__ = ("fragment", "host", "opaque", "path", "raw_query", "scheme", "text", "written_path")

    def __init__(self, text: str) -> None:
        self.text = text
        self.scheme = self.opaque = self.host = self.raw_query = self.fragment = ""
        self.path = self.written_path = b""

    def _key(self) -> tuple[object, ...]:
        return (self.scheme, self.opaque, self.host, self.path, self.raw_query, self.fragment)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.text


def _should_escape(char: int, mode: str) -> bool:
    """Go's ``shouldEscape`` for the modes ``path``, ``host``, ``zone``, ``query``."""
    if char in _ALNUM or char in _UNRESERVED_MARKS:
        return False
    if mode in ("host", "zone") and char in _HOST_SUB_DELIMS:
        return False
    if char in _RESERVED and mode == "path":
        return char == ord("?")
    return True


def _unescape(text: bytes, mode: str) -> bytes:
    """Go's ``unescape``: validates ``%XX`` (and host characters), decodes; ``+`` is a space in ``query``."""
    position = 0
    while position < len(text):
        char = text[position]
        if char == ord("%"):
            escape = text[position : position + 3]
            if len(escape) < 3 or escape[1] not in _HEX or escape[2] not in _HEX:
                raise URLError(f'invalid URL escape "{escape.decode(errors="replace")}"')
            if mode == "host" and int(escape[1:2], 16) < 8 and escape != b"%25":
                raise URLError(f'invalid URL escape "{escape.decode()}"')
            position += 3
            continue
        if mode in ("host", "zone") and char < 0x80 and _should_escape(char, mode):
            raise URLError(f'invalid character "{chr(char)}" in host name')
        position += 1
    return unquote_to_bytes(text.replace(b"+", b" ") if mode == "query" else text)


def _escape_path(path: bytes) -> bytes:
    return b"".join(b"%%%02X" % char if _should_escape(char, "path") else bytes([char]) for char in path)


def _valid_port(port: bytes) -> bool:
    """Go's ``validOptionalPort``: empty, or ``:`` followed by digits."""
    return port == b"" or (port[:1] == b":" and all(char in b"0123456789" for char in port[1:]))


def _parse_host(host: bytes) -> bytes:
    if host.startswith(b"["):
        end = host.rfind(b"]")
        if end < 0:
            raise URLError("missing ']' in host")
        if not _valid_port(host[end + 1 :]):
            raise URLError(f'invalid port "{host[end + 1 :].decode(errors="replace")}" after host')
        zone = host.find(b"%25", 0, end)
        if zone >= 0:
            return _unescape(host[:zone], "host") + _unescape(host[zone:end], "zone") + _unescape(host[end:], "host")
    elif b":" in host and not _valid_port(host[host.rfind(b":") :]):
        raise URLError(f'invalid port "{host[host.rfind(b":") :].decode(errors="replace")}" after host')
    return _unescape(host, "host")


def _parse_authority(url: URL, authority: bytes) -> None:
    userinfo, at, host = authority.rpartition(b"@")
    url.host = _parse_host(host).decode(errors="replace")
    if at:
        if not all(char in _USERINFO for char in userinfo):
            raise URLError("net/url: invalid userinfo")
        _unescape(userinfo, "user")


def _scheme(text: bytes) -> tuple[str, bytes]:
    """Go's ``getScheme``: a leading ``[A-Za-z][A-Za-z0-9+-.]*:``, else no scheme."""
    for position, char in enumerate(text):
        if chr(char).isascii() and chr(char).isalpha():
            continue
        if char in b"0123456789+-.":
            if position == 0:
                return "", text
            continue
        if char == ord(":"):
            if position == 0:
                raise URLError("missing protocol scheme")
            return text[:position].decode().lower(), text[position + 1 :]
        break
    return "", text


def _parse(text: str, *, via_request: bool) -> URL:
    """Go's ``url.parse``; ``via_request`` is ``ParseRequestURI`` (absolute URI or absolute path only)."""
    raw = text.encode()
    url = URL(text)
    if any(char < 0x20 or char == 0x7F for char in raw):
        raise URLError("net/url: invalid control character in URL")
    if raw == b"" and via_request:
        raise URLError("empty url")
    if raw == b"*":
        url.path = url.written_path = b"*"
        return url
    url.scheme, rest = _scheme(raw)
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        rest = rest[:-1]
    else:
        rest, _, query = rest.partition(b"?")
        url.raw_query = query.decode(errors="replace")
    if not rest.startswith(b"/"):
        if url.scheme:
            url.opaque = rest.decode(errors="replace")
            return url
        raise URLError("invalid URI for request")  # url.Parse is only used on request URIs here
    if (url.scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, slash, path = rest[2:].partition(b"/")
        _parse_authority(url, authority)
        rest = slash + path
    url.path, url.written_path = _unescape(rest, "path"), rest
    return url


def _error(text: str, error: URLError) -> CelEvaluationError:
    return CelEvaluationError(f'URL parse error during conversion from string: parse "{text}": {error}')


def parse_request_uri(text: str) -> URL:
    """Go's ``url.ParseRequestURI``; raises ``URLError``."""
    return _parse(text, via_request=True)


def parse(text: str) -> URL:
    """``url(text)``: checked with ``ParseRequestURI``, read with ``Parse`` (fragment split off)."""
    try:
        parse_request_uri(text)
        before, hashed, fragment = text.partition("#")
        url = _parse(before, via_request=False)
        url.fragment = _unescape(fragment.encode(), "fragment").decode(errors="replace") if hashed else ""
    except URLError as error:
        raise _error(text, error) from None
    url.text = text
    return url


def is_url(text: str) -> bool:
    """``isURL(text)``: true when ``ParseRequestURI`` accepts it."""
    try:
        parse_request_uri(text)
    except URLError:
        return False
    return True


def get_scheme(url: URL) -> str:
    """The scheme in lower case, or ''."""
    return url.scheme


def get_host(url: URL) -> str:
    """The authority's host with port (IPv6 in brackets), or ''."""
    return url.host


def _split_host_port(host: str) -> tuple[str, str]:
    """Go's ``splitHostPort``."""
    name, port = host, ""
    colon = host.rfind(":")
    if colon >= 0 and _valid_port(host[colon:].encode()):
        name, port = host[:colon], host[colon + 1 :]
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name, port


def get_hostname(url: URL) -> str:
    """The host without port and brackets."""
    return _split_host_port(url.host)[0]


def get_port(url: URL) -> str:
    """The port, or ''."""
    return _split_host_port(url.host)[1]


def get_escaped_path(url: URL) -> str:
    """Go's ``EscapedPath``: the path as written if it is a valid encoding, else the path escaped."""
    written = url.written_path
    if all(char in _PATH_KEPT or not _should_escape(char, "path") for char in written):
        return written.decode(errors="replace")
    return _escape_path(url.path).decode()


def get_query(url: URL) -> dict[str, list[str]]:
    """Go's ``URL.Query``: ``&``-separated pairs; pairs with ``;`` or bad escapes are dropped."""
    values: dict[str, list[str]] = {}
    for pair in url.raw_query.split("&"):
        if not pair or ";" in pair:
            continue
        key, _, value = pair.partition("=")
        try:
            decoded = [_unescape(part.encode(), "query").decode(errors="replace") for part in (key, value)]
        except URLError:
            continue
        values.setdefault(decoded[0], []).append(decoded[1])
    return values


_T = URL.cel_type_name
OVERLOADS: tuple[Overload, ...] = (
    function("url", parse, "string"),
    function("isURL", is_url, "string"),
    member("getScheme", get_scheme, _T),
    member("getHost", get_host, _T),
    member("getHostname", get_hostname, _T),
    member("getPort", get_port, _T),
    member("getEscapedPath", get_escaped_path, _T),
    member("getQuery", get_query, _T),
)
