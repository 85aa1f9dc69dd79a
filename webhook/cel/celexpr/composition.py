"""How cel-cpp reads composited variables (``variables.<name>``): through a Python reader, or bound in cel-cpp.

cel-cpp activations take complete values only, so ``read_variables`` compiles each ``variables.<name>`` to a call
of ``VARIABLE_READER("<name>")``, which reads the lazy ``variables`` mapping of the activation (the apiserver's
composited activation, ``composition.go``: each variable evaluated on first read, its value or error kept for the
other expressions of the evaluation). Every such read is a call into Python, and every variable is a separate
evaluation.

``bound_variables`` writes the same expression with the variables it reads that the backend finds bindable
(those that call no Python function and do not iterate, or that this expression alone needs) bound in cel-cpp
instead: ``cel.bind(<bound name>, dyn(<variable's expression>), <expression>)``, outermost first in
declaration order (a variable reads only the ones declared before it). cel-cpp evaluates a bound variable lazily,
at its first read, and once per evaluation (its ``bindings`` extension), as the composited activation does; only
its error text differs (the apiserver's reads ``composited variable "<name>" fails to evaluate: ...``), so an
evaluation of the bound form that ends in an error is done again as written (``executable.CelExprExecutable``). A
variable that must come from Python and is read more than once is bound to one reader call the same way, so that
its value (a ``cluster.get`` object, say) crosses into cel-cpp once per evaluation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping

from webhook.cel.backend import Executable
from webhook.cel.celexpr.optionals import NAME, OPTIONAL_TYPE, from_list
from webhook.cel.lexical import VARIABLE_REFERENCE, blank_strings, read_names

#: The function that reads one composited variable (``read_variables``).
VARIABLE_READER = "upgrade_gate_variable"
#: The prefix of a bound variable's name in cel-cpp (no expression declares or can read such a name).
BOUND = "upgrade_gate_bound_"
#: ``has(variables.<name>)`` (the name in group 1) or any other ``variables.<name>`` (group 2).
_READ = re.compile(rf"(?<![\w.])has\s*\(\s*{VARIABLE_REFERENCE.pattern}\s*\)|{VARIABLE_REFERENCE.pattern}")


def read_variables(source: str, bound: Collection[str] = (), optional: Collection[str] = ()) -> str:
    """``source`` with each ``variables.<name>`` (outside string literals) as ``VARIABLE_READER("<name>")``, or as
    the bound name of ``<name>`` if ``<name>`` is in ``bound``. A reader call of a variable in ``optional`` (whose
    value is an optional, which crosses from Python as a list) is made a cel-cpp optional (``optionals.from_list``).

    The rewrite keeps everything else, so ``has(variables.x.y)`` still tests ``y``. ``has(variables.x)`` becomes
    ``([<read of x>].size() == 1)``: true once ``x`` evaluates, its error if it fails, as cel-go's presence test
    on the composited activation's lazy map (``lazy.MapValue.Find`` evaluates the variable); the checker has
    already refused an undeclared ``x``.
    """
    code = blank_strings(source)
    parts, end = [], 0
    for found in _READ.finditer(code):
        tested, name = found.group(1), found.group(1) or found.group(2)
        read = BOUND + name if name in bound else reader(name, optional)
        parts += [source[end : found.start()], f"([{read}].size() == 1)" if tested else read]
        end = found.end()
    return "".join(parts) + source[end:]


def reader(name: str, optional: Collection[str]) -> str:
    """The call of ``VARIABLE_READER`` that reads the variable ``name``, as an optional if it is in ``optional``."""
    call = f'{VARIABLE_READER}("{name}")'
    return from_list(f"{NAME}variable_{name}", call) if name in optional else call


def optional_variables(source: str, definitions: Mapping[str, Executable] | None) -> frozenset[str]:
    """The composited variables ``source`` reads whose value is an optional (by their result type)."""
    found = definitions or {}
    return frozenset(
        name
        for name in read_names(source)
        if name in found and (found[name].result_type or "").startswith(OPTIONAL_TYPE)
    )


def binding(name: str) -> str:
    """How ``bound_variables`` begins binding the variable ``name`` to its expression."""
    return f"cel.bind({BOUND}{name}, "


def bound_variables(source: str, bindable: Mapping[str, str], optional: Collection[str] = ()) -> str | None:
    """``source`` with the variables it reads (also through other variables) that are in ``bindable`` (name ->
    the variable's expression, in declaration order: the bindable ones, see the module docstring) bound in
    cel-cpp, and each other variable it reads more than once bound to one ``VARIABLE_READER`` call (a read of a
    large value, a ``cluster.get`` result, converts all of it each time); ``None`` if there is nothing to bind.
    ``optional``: the variables whose values are optionals (``read_variables``)."""
    if BOUND in source:  # a name of ours written in the expression (a comprehension variable): leave it alone
        return None
    needed: set[str] = set()
    pending = [name for name in read_names(source) if name in bindable]
    while pending:
        name = pending.pop()
        if name not in needed:
            needed.add(name)
            pending += [read for read in read_names(bindable[name]) if read in bindable]
    reads = Counter(
        name
        for text in (source, *(bindable[name] for name in needed))
        for name in read_names(text)
        if name not in needed
    )
    read_once = sorted(name for name, count in reads.items() if count > 1)
    if not needed and not read_once:
        return None
    names = needed.union(read_once)
    text = read_variables(source, names)
    for name in reversed([name for name in bindable if name in needed]):
        text = f"{binding(name)}dyn({read_variables(bindable[name], names)}), {text})"
    for name in reversed(read_once):
        text = f"cel.bind({BOUND}{name}, {reader(name, optional)}, {text})"
    return text
