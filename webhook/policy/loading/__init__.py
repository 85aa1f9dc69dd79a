"""Loading: policy documents read, validated as the kube-apiserver validates them on create, and compiled into the
frozen ``webhook.policy.model`` set. May import ``webhook.policy.model``, ``webhook.cel`` and the pure core."""
