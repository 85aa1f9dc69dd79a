"""Admitting: one request matched, dispatched to (policy, binding, param) tuples, evaluated and mutated into a
``Decision``. May import ``webhook.policy.model``, ``webhook.cel`` and the pure core, never the loading."""
