"""Kubernetes' quantity library (``pkg/cel/library/quantity.go``, "kubernetes.quantity") over a port of
apimachinery's ``resource.Quantity`` (``pkg/api/resource/quantity.go``, ``amount.go``, ``suffix.go``)::

    quantity(string) -> Quantity         isQuantity(string) -> bool         sign(Quantity) -> int (-1, 0, 1)
    <Quantity>.isGreaterThan(Quantity) / .isLessThan(Quantity) -> bool
    <Quantity>.compareTo(Quantity) -> int (-1, 0, 1)
    <Quantity>.add(Quantity | int) / .sub(Quantity | int) -> Quantity
    <Quantity>.isInteger() -> bool       .asInteger() -> int                .asApproximateFloat() -> double

Syntax: ``<sign?><digits?>[.<digits?>]<suffix>`` with the decimal SI suffixes ``n u m "" k M G T P E``, the
binary ones ``Ki Mi Gi Ti Pi Ei`` and decimal exponents ``e<int>``/``E<int>``. Errors are apimachinery's
(``quantities must match the regular expression ...``, ``unable to parse quantity's suffix``, ``unable to
parse numeric part of quantity``): ``200K``, ``Three`` and ``1,3G`` are errors. apimachinery's scanner reads
an empty number as 0, so ``Mi`` and ``.`` are zero quantities (the library's godoc lists ``quantity('Mi')``
as an error; the code it documents does not reject it, and we follow the code).

Values are exact (integers scaled by powers of ten, never floats). Parsing rounds away from zero to 1n
precision and caps binary quantities at 2^63-1, as apimachinery does. ``sign`` is declared as a global
function only, as in Kubernetes. ``==`` compares values (``quantity('200M') == quantity('0.2G')``); quantities
are not ordered by ``<``. ``string(q)`` and result conversion give the canonical form (``1.5Gi`` -> ``1536Mi``).

apimachinery keeps a quantity either as an int64 scaled by a power of ten or as an arbitrary-precision
decimal, and ``AsInt64`` (hence ``isInteger``/``asInteger``) only succeeds for the first form: this port
keeps the same two forms (``packed``), so ``quantity('1.5Gi').isInteger()`` is false there and here.
A decimal exponent is read as an int64 and then wrapped to int32, as apimachinery's suffixer does
(``1e4294967297`` is ``1e1``). Magnitudes beyond 10^1100 are the error ``quantity is outside the supported
range``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from webhook.cel.libraries.registry import Overload, function, member
from webhook.errors import CelEvaluationError

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_INT64 = range(-(2**63), 2**63)
_MAX_INT64 = 2**63 - 1
#: Bound on the exponent and the digits of the unscaled integer (keeps every number far below Python's
#: 4300-digit int/str conversion limit).
_LIMIT = 1100
_SCAN = re.compile(r"([+-]?)([0-9]*)(\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[eE]([+-]?)0*([0-9]{1,19})")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_NAMES = {exponent // 10: suffix for suffix, exponent in _BINARY_SUFFIXES.items()}

_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_NUMERIC = "unable to parse numeric part of quantity"
_SUFFIX = "unable to parse quantity's suffix"


class Quantity:
    """``unscaled * 10**exponent`` in a ``format`` (``DecimalSI``, ``BinarySI``, ``DecimalExponent``);
    ``packed`` is apimachinery's int64 form (``int64Amount``), else its decimal form (``inf.Dec``)."""

    cel_type_name = "kubernetes.Quantity"
    __slots__ = ("exponent", "format", "packed", "unscaled")

    def __init__(self, unscaled: int, exponent: int, *, packed: bool, format: str) -> None:
        if not (abs(unscaled) < 10**_LIMIT and -_LIMIT <= exponent <= _LIMIT):
            raise CelEvaluationError("quantity is outside the supported range")
        self.unscaled = unscaled
        self.exponent = exponent
        self.packed = packed
        self.format = format

    @property
    def value(self) -> Fraction:
        """The exact value."""
        return self.unscaled * Fraction(10) ** self.exponent

    def compare_to(self, other: Quantity) -> int:
        """-1, 0 or 1 by value."""
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self})"

    def __str__(self) -> str:
        """apimachinery's canonical form (``CanonicalizeBytes``): no fraction digits, the largest suffix."""
        value = self.value
        if value == 0:
            return "0"
        format = self.format
        if format == BINARY_SI and abs(value) >= 1024 and value.denominator == 1:
            mantissa, times = _remove_factors(int(value), 1024)
            if times <= max(_BINARY_NAMES):
                return f"{mantissa}{_BINARY_NAMES.get(times, '')}"
        elif format == BINARY_SI:  # below 1024 or fractional: shown as DecimalSI
            format = DECIMAL_SI
        mantissa, exponent = _remove_factors(self.unscaled, 10)
        exponent += self.exponent
        mantissa *= 10 ** (exponent % 3)
        exponent -= exponent % 3
        if format == DECIMAL_SI and exponent in _DECIMAL_NAMES:
            return f"{mantissa}{_DECIMAL_NAMES[exponent]}"
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def _remove_factors(value: int, factor: int) -> tuple[int, int]:
    """``value`` without trailing factors of ``factor`` (keeping its sign), and how many were removed."""
    if factor == 10:
        digits = str(abs(value))
        stripped = digits.rstrip("0")
        return (-1 if value < 0 else 1) * int(stripped), len(digits) - len(stripped)
    times, magnitude = 0, abs(value)
    while magnitude >= factor and magnitude % factor == 0:
        magnitude //= factor
        times += 1
    return (-1 if value < 0 else 1) * magnitude, times


def _interpret(suffix: str) -> tuple[int, int, str]:
    """``(base, exponent, format)`` of a suffix (apimachinery ``suffixer.interpret``)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    written = _EXPONENT.fullmatch(suffix)
    if written is not None and int(written.group(2)) < 2**63:  # apimachinery: ParseInt(.., 64), then int32()
        exponent = (int(written.group(1) + written.group(2)) + 2**31) % 2**32 - 2**31
        return 10, exponent, DECIMAL_EXPONENT
    raise CelEvaluationError(_SUFFIX)


def parse(text: str) -> Quantity:
    """``quantity(text)``: apimachinery's ``ParseQuantity``; raises ``CelEvaluationError`` with its reason."""
    if text == "":
        raise CelEvaluationError(_FORMAT_WRONG)
    scanned = _SCAN.fullmatch(text)
    if scanned is None:
        raise CelEvaluationError(_FORMAT_WRONG)
    sign, digits, _, fraction, suffix = scanned.groups()
    fraction = fraction or ""
    numerator = digits.lstrip("0") or "0"
    base, exponent, format = _interpret(suffix)
    negative = sign == "-"
    # The fast path: an int64 scaled by a power of ten (apimachinery's "precision" estimate decides).
    if format == BINARY_SI:
        precision = -1 if fraction else 15 - len(numerator) - exponent * 3 // 10 - 1
        scale, mantissa = 0, 1 << exponent
    else:
        precision = 18 - len(numerator) - len(fraction)
        scale, mantissa = exponent - len(fraction), 1
    if precision >= 0 and scale >= -9:
        result = int(numerator + fraction) * mantissa
        if result in _INT64:
            return Quantity(-result if negative else result, scale, packed=True, format=format)
    return _parse_decimal(digits, fraction, negative=negative, base=base, exponent=exponent, format=format)


def _parse_decimal(digits: str, fraction: str, *, negative: bool, base: int, exponent: int, format: str) -> Quantity:
    """The ``inf.Dec`` path of ``ParseQuantity``: exact, rounded up to 1n, binary capped at 2^63-1."""
    if not digits and not fraction:
        raise CelEvaluationError(_NUMERIC)
    significant = (digits + fraction).lstrip("0")
    if len(significant) > _LIMIT:
        raise CelEvaluationError("quantity is outside the supported range")
    unscaled, scale = int(significant or "0"), -len(fraction)
    if base == 10:
        scale += exponent
    else:
        unscaled <<= exponent
    if unscaled != 0:
        if scale < -9:
            shift = -9 - scale
            unscaled = 1 if shift > len(str(unscaled)) else -(-unscaled // 10**shift)
        elif scale > _LIMIT:
            raise CelEvaluationError("quantity is outside the supported range")
        else:
            unscaled *= 10 ** (scale + 9)
        scale = -9
    else:  # a zero keeps its scale; only its form matters (it is not an int64 amount)
        scale = max(-_LIMIT, min(_LIMIT, scale))
    if format == BINARY_SI and unscaled * Fraction(10) ** scale > _MAX_INT64:
        unscaled, scale = _MAX_INT64, 0
    if format == BINARY_SI and 0 < unscaled * Fraction(10) ** scale < 1:
        format = DECIMAL_SI
    return Quantity(-unscaled if negative else unscaled, scale, packed=False, format=format)


def is_quantity(text: str) -> bool:
    """True if ``quantity(text)`` would succeed."""
    try:
        parse(text)
    except CelEvaluationError:
        return False
    return True


def _packed_sum(a: Quantity, b: Quantity) -> tuple[int, int] | None:
    """apimachinery ``int64Amount.Add``: the int64 form of ``a + b``, or None when it overflows."""
    if b.unscaled == 0:
        return a.unscaled, a.exponent
    if a.unscaled == 0:
        return b.unscaled, b.exponent
    low, high = (a, b) if a.exponent <= b.exponent else (b, a)
    scaled = high.unscaled * 10 ** (high.exponent - low.exponent)
    if scaled not in _INT64 or scaled + low.unscaled not in _INT64:
        return None
    return scaled + low.unscaled, low.exponent


def _sum(q: Quantity, other: Quantity) -> Quantity:
    """``Quantity.Add``: a zero receiver takes the operand's format; int64 form while it fits."""
    format = other.format if q.unscaled == 0 else q.format
    if q.packed and other.packed:
        packed = _packed_sum(q, other)
        if packed is not None:
            return Quantity(*packed, packed=True, format=format)
    exponent = min(q.exponent, other.exponent)
    unscaled = q.unscaled * 10 ** (q.exponent - exponent) + other.unscaled * 10 ** (other.exponent - exponent)
    return Quantity(unscaled, exponent, packed=False, format=format)


def _operand(other: Quantity | int) -> Quantity:
    """An int operand as apimachinery's ``NewQuantity(n, DecimalExponent)``."""
    return other if isinstance(other, Quantity) else Quantity(int(other), 0, packed=True, format=DECIMAL_EXPONENT)


def add(q: Quantity, other: Quantity | int) -> Quantity:
    """``q.add(other)``: the sum."""
    return _sum(q, _operand(other))


def sub(q: Quantity, other: Quantity | int) -> Quantity:
    """``q.sub(other)``: the difference."""
    operand = _operand(other)
    negated = Quantity(-operand.unscaled, operand.exponent, packed=operand.packed, format=operand.format)
    return _sum(q, negated)


def sign(q: Quantity) -> int:
    """``sign(q)``: -1, 0 or 1."""
    return (q.unscaled > 0) - (q.unscaled < 0)


def compare_to(q: Quantity, other: Quantity) -> int:
    """``q.compareTo(other)``: -1, 0 or 1."""
    return q.compare_to(other)


def is_greater_than(q: Quantity, other: Quantity) -> bool:
    """``q.isGreaterThan(other)``."""
    return q.compare_to(other) > 0


def is_less_than(q: Quantity, other: Quantity) -> bool:
    """``q.isLessThan(other)``."""
    return q.compare_to(other) < 0


def _as_int64(q: Quantity) -> int | None:
    """apimachinery ``AsInt64``: the value if it is an int64 held in the int64 form, else None."""
    if not q.packed or q.exponent < 0:
        return None
    value = q.unscaled * 10**q.exponent
    return value if value in _INT64 else None


def is_integer(q: Quantity) -> bool:
    """``q.isInteger()``: true exactly when ``asInteger`` succeeds."""
    return _as_int64(q) is not None


def as_integer(q: Quantity) -> int:
    """``q.asInteger()``; error ``cannot convert value to integer`` on overflow or precision loss."""
    value = _as_int64(q)
    if value is None:
        raise CelEvaluationError("cannot convert value to integer")
    return value


def _pow10(n: int) -> float:
    """Go's ``math.Pow10`` (table products, so the rounding is the same)."""
    if 0 <= n <= 308:
        return float(f"1e{n // 32 * 32}") * float(f"1e{n % 32}")
    if -323 <= n < 0:
        return float(f"1e-{-n // 32 * 32}") / float(f"1e{-n % 32}")
    return math.inf if n > 0 else 0.0


def as_approximate_float(q: Quantity) -> float:
    """``q.asApproximateFloat()``: apimachinery's ``AsApproximateFloat64`` (±Inf out of range)."""
    try:
        base = float(q.unscaled)
    except OverflowError:
        base = math.copysign(math.inf, q.unscaled)
    return base if q.exponent == 0 else base * _pow10(q.exponent)


_T = Quantity.cel_type_name
OVERLOADS: tuple[Overload, ...] = (
    function("quantity", parse, "string"),
    function("isQuantity", is_quantity, "string"),
    function("sign", sign, _T),
    member("isGreaterThan", is_greater_than, _T, _T),
    member("isLessThan", is_less_than, _T, _T),
    member("compareTo", compare_to, _T, _T),
    member("add", add, _T, _T),
    member("add", add, _T, "int"),
    member("sub", sub, _T, _T),
    member("sub", sub, _T, "int"),
    member("isInteger", is_integer, _T),
    member("asInteger", as_integer, _T),
    member("asApproximateFloat", as_approximate_float, _T),
)
