"""CEL admission policies with Kubernetes ValidatingAdmissionPolicy / MutatingAdmissionPolicy semantics."""

from webhook.policy.cel import evaluate as evaluate
