"""The admission webhook: an ASGI application over the policy engine, served by gunicorn over TLS.

``review`` (AdmissionReview in/out, no I/O) · ``runtime`` (the policy set served, reloads) · ``stores`` (object
stores composed for lookups) · ``app`` (the admission endpoints, decided on the event loop or in evaluation
threads, in front of the Flask application of probes and metrics) · ``metrics`` · ``tls`` (certificates, reloading
TLS contexts) · ``worker`` (gunicorn's asyncio worker with bounded connections) · ``server`` (gunicorn embedding).
"""

from webhook.serve.metrics import multiprocess_directory
from webhook.serve.server import serve
from webhook.serve.tls import generate_certificates

__all__ = ["generate_certificates", "multiprocess_directory", "serve"]
