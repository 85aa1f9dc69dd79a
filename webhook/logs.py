"""Structured logging: one JSON object per line, with keys from the constants below.

Nothing is configured at import. Entry points call ``configure(level)`` (or hand ``dict_config(level)`` to a
server that configures logging itself, as gunicorn does); libraries only get loggers and pass fields::

    log.info("admission decision", extra=fields({UID: uid, ALLOWED: False, POLICY: "p"}))

Every line has ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``, ``message`` and the fields.
Object bodies and secrets are never logged: callers pass identifiers (uid, kind, name, user), not objects.
"""

from __future__ import annotations

import datetime
import json
import logging
import logging.config
from collections.abc import Mapping
from typing import Any

# Keys of structured fields (Gatekeeper's pkg/logging/logging.go keeps them as constants too).
EVENT = "event"
ENDPOINT = "endpoint"
UID = "uid"
KIND = "kind"
NAME = "name"
NAMESPACE = "namespace"
OPERATION = "operation"
USER = "user"
DRY_RUN = "dry_run"
ALLOWED = "allowed"
CODE = "code"
POLICY = "policy"
WARNINGS = "warnings"
PATCH_OPERATIONS = "patch_operations"
LATENCY_MS = "latency_ms"
STATUS = "status"
ERROR = "error"
GENERATION = "generation"
PATH = "path"
RESOURCE = "resource"
WORKER_PID = "worker_pid"

_FIELDS = "upgrade_gate_fields"


def fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``extra=`` argument of a logging call that attaches ``values`` as structured fields."""
    return {_FIELDS: dict(values)}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: time, level, logger, message, structured fields, exception text."""

    def format(self, record: logging.LogRecord) -> str:
        """See ``logging.Formatter.format``."""
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


def dict_config(level: str = "INFO") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` document: JSON lines on stderr for the root logger and gunicorn's
    loggers (gunicorn's access log is not used: every admission decision has its own line). urllib3's own
    warnings (one per retried request: dozens a minute while the API server is down) are left out below ERROR:
    the callers report an outage once, in their own words."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": handler},
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "WARNING", "handlers": ["stderr"], "propagate": False},
            "urllib3": {"level": "ERROR"},
        },
    }


def configure(level: str = "INFO") -> None:
    """Send every log record to stderr as JSON lines at ``level`` and above (entry points only)."""
    logging.config.dictConfig(dict_config(level))
