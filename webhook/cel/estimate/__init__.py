"""Worst-case cost estimates of CEL expressions at load time, in the apiserver's cost units.

``estimate(tree, variables, namespaces)`` walks a checked parse tree (``frontend.check.front_end``) and returns
the most an evaluation can cost, the figure cel-go's estimator (``checker/cost.go``) computes with Kubernetes'
``CostEstimator`` (``k8s.io/apiserver/pkg/cel/library/cost.go``, ``reference/k8s-cel-admission.md`` §8):

- an identifier costs 1, a field selection 1 on a map or object (0 on ``dyn``, as cel-go charges only typed
  selections), a literal 0 (``-1`` too: cel-go's parser folds it), an index or an O(1) function 1, ``&&``,
  ``||`` and ``?:`` nothing beyond their operands (the dearer branch of ``?:``); list literals 10, map
  literals 30, object initializers 40, plus their elements;
- a comprehension costs its range, then range size * (loop condition + step) of cel-go's macro expansion:
  ``all`` 3 + body per element, ``exists`` 4 +, ``exists_one`` 2 +, ``map`` 12 +, ``filter`` 13 + (and
  the two-variable forms alike); ``has()`` costs its operand only (the apiserver sets its presence test to 0);
- string functions cost ``ceil(size * 0.1)`` per traversal (``replace``/``split`` two), ``matches``,
  ``find`` and ``findAll`` ``ceil((size + 1) * 0.1) * ceil(len(regex) * 0.25)``, ``contains`` the product of
  both traversals, equality and ordering of strings ``ceil(min size * 0.1)``, string concatenation the
  result's traversal; ``in`` a list and the Kubernetes list functions one traversal; the sets functions every
  pair of elements (``sets.equivalent`` twice); ``check`` 350,000.

Sizes (the most ``size()`` can return) come from literals, from what functions return, from the bounds a
``Shape`` declares (a CRD schema's ``maxItems``/``maxLength``/``maxProperties``, ``from_schema``), and
otherwise from the request: nothing in a request is longer than ``MAX_REQUEST_SIZE_BYTES`` (3 MiB), so a list
holds at most ``(3 MiB - 2) / (its smallest element's JSON size + 1)`` elements and a string
``3 MiB - 2`` characters, as the apiserver bounds unbounded schema fields. That is what ``object``,
``oldObject``, ``params`` (``dyn``, no schema in a ValidatingAdmissionPolicy) and the untyped parts of
``request`` get here (cel-go alone would call them unbounded). Costs saturate at 2**64 - 1 like cel-go's.

What the apiserver does with an estimate (recorded from kube-apiserver 1.32 in ``tests/data/oracle/crd_costs.yaml``
and ``policy_costs.yaml``):
a CRD ``x-kubernetes-validations`` rule whose estimate exceeds 10,000,000 (``StaticEstimatedCostLimit``) is
refused at create (``estimated rule cost exceeds budget by factor of ...``); a ValidatingAdmissionPolicy or a
MutatingAdmissionPolicy is created whatever its expressions' estimates (a triple nested comprehension over
``object`` included), with no ``status.typeChecking`` written within 10 s (the status controller that type-checks
policies runs in kube-controller-manager, which the recording lacked), and only the run-time limit
(``PerCallLimit``, 1,000,000 per evaluation) stops it. So the
policy loader refuses nothing on an estimate; ``policy lint`` reports each expression whose estimate exceeds
``PER_CALL_LIMIT`` (it may be cancelled at run time) and does not call its policy portable.

Modules: ``shapes`` (``Shape``, the request's bounds, ``from_schema``, the admission variables), ``functions``
(what each operator and library function costs and returns), ``walk`` (``estimate``, the walk over the tree) and
``text`` (``estimate_text``: an expression's text estimated with chosen shapes, for ``policy lint``).
"""

from webhook.cel.estimate.shapes import (
    ADMISSION_VARIABLES,
    MAX_REQUEST_SIZE_BYTES,
    Shape,
    admitted_object,
    bounded,
    from_schema,
    object_of,
)
from webhook.cel.estimate.text import estimate_text
from webhook.cel.estimate.walk import PER_CALL_LIMIT, SATURATED, estimate, estimate_shape

__all__ = [
    "ADMISSION_VARIABLES",
    "MAX_REQUEST_SIZE_BYTES",
    "PER_CALL_LIMIT",
    "SATURATED",
    "Shape",
    "admitted_object",
    "bounded",
    "estimate",
    "estimate_shape",
    "estimate_text",
    "from_schema",
    "object_of",
]
