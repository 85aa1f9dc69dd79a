"""Go's formatting where upstream messages use it, so that texts match the Go components byte for byte."""

from __future__ import annotations

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def quote(text: str) -> str:
    """``text`` quoted as Go's ``%q`` verb (``strconv.Quote``) does: printable characters as they are, ``"`` and
    ``\\`` escaped, the usual control escapes, other non-printables as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)
