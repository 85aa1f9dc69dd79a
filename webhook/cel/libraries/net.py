"""Kubernetes' IP and CIDR libraries (``pkg/cel/library/ip.go`` "kubernetes.net.ip", ``cidr.go`` "net.cidr")::

    ip(string) -> net.IP                isIP(string) -> bool              ip.isCanonical(string) -> bool
    <IP>.family() -> int (4, 6)         <IP>.isUnspecified() .isLoopback() .isLinkLocalMulticast()
                                        .isLinkLocalUnicast() .isGlobalUnicast() -> bool
    string(IP) -> string
    cidr(string) -> net.CIDR            isCIDR(string) -> bool
    <CIDR>.containsIP(IP | string) -> bool          <CIDR>.containsCIDR(CIDR | string) -> bool
    <CIDR>.ip() -> net.IP               <CIDR>.masked() -> net.CIDR       <CIDR>.prefixLength() -> int
    string(CIDR) -> string

Addresses are parsed with the standard ``ipaddress`` module under Go ``net/netip`` rules (``ParseAddr``,
``ParsePrefix``) and Kubernetes' additions: IPv4 octets with leading zeros, IPv6 zones and IPv4-mapped IPv6
addresses (``::ffff:1.2.3.4``) are errors; a CIDR prefix length is decimal without sign or leading zeros.
As in Kubernetes a CIDR may have host bits set (``cidr('10.0.0.1/8').ip()`` is ``10.0.0.1``; ``masked()``
clears them). ``string(ip)``/``string(cidr)`` (the libraries' overloads of the standard conversion) give
netip's canonical forms (RFC 5952 for IPv6). The predicates are netip's:
``isGlobalUnicast`` is true for private ranges too; ``isLinkLocalMulticast`` is ``224.0.0.0/24`` and
``ffx2::/16``. ``containsCIDR`` is true for a network inside the receiver's
(``cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')``, as kube-apiserver 1.32 answers).
``containsIP`` with an unparsable string is ``no matching overload`` (Kubernetes'), ``containsCIDR`` with one
is the parse error. Error texts are Kubernetes' up to the address-level reason, which is always
``unable to parse IP`` here (netip words some reasons differently).
"""

from __future__ import annotations

import ipaddress
import re

from webhook.cel.libraries.registry import Namespace, Overload, function, member, namespaced
from webhook.errors import CelEvaluationError
from webhook.golang import quote as go_quote

NAMESPACE = Namespace("ip")
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_BITS = re.compile(r"0|[1-9][0-9]{0,18}")


class IP:
    """An IP address (CEL type ``net.IP``); ``str`` is netip's canonical text."""

    cel_type_name = "net.IP"
    __slots__ = ("address",)

    def __init__(self, address: Address) -> None:
        self.address = address

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IP) and self.address == other.address

    def __hash__(self) -> int:
        return hash(self.address)

    def __str__(self) -> str:
        return str(self.address)


class CIDR:
    """An address with a prefix length (CEL type ``net.CIDR``), host bits kept; ``str`` is ``addr/bits``."""

    cel_type_name = "net.CIDR"
    __slots__ = ("address", "bits")

    def __init__(self, address: Address, bits: int) -> None:
        self.address = address
        self.bits = bits

    @property
    def network(self) -> Address:
        """The address with the host bits cleared."""
        host_bits = self.address.max_prefixlen - self.bits
        return type(self.address)(int(self.address) >> host_bits << host_bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDR) and (self.address, self.bits) == (other.address, other.bits)

    def __hash__(self) -> int:
        return hash((self.address, self.bits))

    def __str__(self) -> str:
        return f"{self.address}/{self.bits}"


def _parse_address(text: str) -> tuple[Address | None, str]:
    """The address and its IPv6 zone (netip ``ParseAddr``), or ``(None, '')`` if it does not parse."""
    address, _, zone = text.partition("%") if ":" in text else (text, "", "")
    if "%" in text and not zone:
        return None, ""
    try:
        return ipaddress.ip_address(address), zone
    except ValueError:
        return None, ""


def _address_error(text: str) -> str:
    return f"ParseAddr({go_quote(text)}): unable to parse IP"


def parse_ip(text: str) -> IP:
    """``ip(text)``; errors are Kubernetes' (zones and IPv4-mapped IPv6 addresses are rejected)."""
    address, zone = _parse_address(text)
    if address is None:
        raise CelEvaluationError(
            f"IP Address {go_quote(text)} parse error during conversion from string: {_address_error(text)}"
        )
    if zone:
        raise CelEvaluationError(f"IP address {go_quote(text)} with zone value is not allowed")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelEvaluationError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return IP(address)


def is_ip(text: str) -> bool:
    """True if ``ip(text)`` would succeed."""
    try:
        parse_ip(text)
    except CelEvaluationError:
        return False
    return True


def is_canonical(_namespace: Namespace, text: str) -> bool:
    """``ip.isCanonical(text)``: true if ``text`` is the canonical form of its address; parse errors raise."""
    return str(parse_ip(text)) == text


def family(ip: IP) -> int:
    """4 or 6."""
    return ip.address.version


def _top(ip: IP, bits: int) -> int:
    """The first ``bits`` bits of the address."""
    return int(ip.address) >> (ip.address.max_prefixlen - bits)


def is_unspecified(ip: IP) -> bool:
    """``0.0.0.0`` or ``::``."""
    return int(ip.address) == 0


def is_loopback(ip: IP) -> bool:
    """``127.0.0.0/8`` or ``::1``."""
    return _top(ip, 8) == 127 if ip.address.version == 4 else int(ip.address) == 1


def is_link_local_multicast(ip: IP) -> bool:
    """``224.0.0.0/24`` or ``ffx2::/16`` (any flags)."""
    return _top(ip, 24) == 0xE00000 if ip.address.version == 4 else _top(ip, 16) & 0xFF0F == 0xFF02


def is_link_local_unicast(ip: IP) -> bool:
    """``169.254.0.0/16`` or ``fe80::/10``."""
    return _top(ip, 16) == 0xA9FE if ip.address.version == 4 else _top(ip, 10) == 0xFE80 >> 6


def _is_multicast(ip: IP) -> bool:
    return _top(ip, 4) == 0xE if ip.address.version == 4 else _top(ip, 8) == 0xFF


def is_global_unicast(ip: IP) -> bool:
    """netip's ``IsGlobalUnicast``: not unspecified, broadcast, loopback, multicast or link-local unicast."""
    if ip.address.version == 4 and int(ip.address) == 0xFFFFFFFF:
        return False
    return not (is_unspecified(ip) or is_loopback(ip) or _is_multicast(ip) or is_link_local_unicast(ip))


def _prefix_error(text: str, reason: str) -> CelEvaluationError:
    message = (
        f"network address parse error during conversion from string: netip.ParsePrefix({go_quote(text)}): {reason}"
    )
    return CelEvaluationError(f"network address parse error during conversion from string: {message}")


def parse_cidr(text: str) -> CIDR:
    """``cidr(text)``: netip ``ParsePrefix`` plus Kubernetes' rejection of IPv4-mapped IPv6 addresses."""
    address_text, slash, bits_text = text.rpartition("/")
    if not slash:
        raise _prefix_error(text, "no '/'")
    address, zone = _parse_address(address_text)
    if address is None:
        raise _prefix_error(text, _address_error(address_text))
    if zone:
        raise _prefix_error(text, "IPv6 zones cannot be present in a prefix")
    if not _BITS.fullmatch(bits_text) or int(bits_text) >= 2**63:  # strconv.Atoi's int64 range
        raise _prefix_error(text, f"bad bits after slash: {go_quote(bits_text)}")
    if int(bits_text) > address.max_prefixlen:
        raise _prefix_error(text, "prefix length out of range")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelEvaluationError(
            "network address parse error during conversion from string: "
            f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed"
        )
    return CIDR(address, int(bits_text))


def is_cidr(text: str) -> bool:
    """True if ``cidr(text)`` would succeed."""
    try:
        parse_cidr(text)
    except CelEvaluationError:
        return False
    return True


def contains_ip(cidr: CIDR, ip: IP | str) -> bool:
    """``cidr.containsIP(ip)``: same family and the same network bits."""
    if isinstance(ip, str):
        if not is_ip(ip):
            raise TypeError("containsIP")  # Kubernetes answers no such overload here
        ip = parse_ip(ip)
    if ip.address.version != cidr.address.version:
        return False
    return CIDR(ip.address, cidr.bits).network == cidr.network


def contains_cidr(cidr: CIDR, other: CIDR | str) -> bool:
    """``cidr.containsCIDR(other)``: Kubernetes' ``Masked() == PrefixFrom(other.Addr(), Bits()).Masked()`` and
    ``Bits() <= other.Bits()``: the operand lies inside the receiver's network (same family)."""
    operand = parse_cidr(other) if isinstance(other, str) else other
    if type(operand.address) is not type(cidr.address) or cidr.bits > operand.bits:
        return False
    return CIDR(operand.address, cidr.bits).network == cidr.network


def cidr_ip(cidr: CIDR) -> IP:
    """``cidr.ip()``: the address as written (host bits kept)."""
    return IP(cidr.address)


def masked(cidr: CIDR) -> CIDR:
    """``cidr.masked()``: the network (host bits cleared)."""
    return CIDR(cidr.network, cidr.bits)


def prefix_length(cidr: CIDR) -> int:
    """``cidr.prefixLength()``."""
    return cidr.bits


def to_string(value: IP | CIDR) -> str:
    """``string(ip)``, ``string(cidr)``: the canonical text."""
    return str(value)


_IP, _CIDR = IP.cel_type_name, CIDR.cel_type_name
OVERLOADS: tuple[Overload, ...] = (
    function("ip", parse_ip, "string"),
    function("isIP", is_ip, "string"),
    namespaced("ip", "isCanonical", is_canonical, "string"),
    member("family", family, _IP),
    member("isUnspecified", is_unspecified, _IP),
    member("isLoopback", is_loopback, _IP),
    member("isLinkLocalMulticast", is_link_local_multicast, _IP),
    member("isLinkLocalUnicast", is_link_local_unicast, _IP),
    member("isGlobalUnicast", is_global_unicast, _IP),
    function("string", to_string, _IP),
    function("cidr", parse_cidr, "string"),
    function("isCIDR", is_cidr, "string"),
    member("containsIP", contains_ip, _CIDR, _IP),
    member("containsIP", contains_ip, _CIDR, "string"),
    member("containsCIDR", contains_cidr, _CIDR, _CIDR),
    member("containsCIDR", contains_cidr, _CIDR, "string"),
    member("ip", cidr_ip, _CIDR),
    member("masked", masked, _CIDR),
    member("prefixLength", prefix_length, _CIDR),
    function("string", to_string, _CIDR),
)
