"""CEL admission policies with Kubernetes ValidatingAdmissionPolicy / MutatingAdmissionPolicy semantics."""
