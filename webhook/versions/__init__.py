"""Versions and version ranges in the dialects upstream components read them, reproduced quirk for quirk.

* ``blang`` (blang/semver v4.0.0): strict ``Parse`` of bundle and installed versions (``parse_version``) and
  ``ParseRange`` of ``olm.skipRange`` (``parse_skip_range`` → ``SkipRange``).
* ``masterminds`` (Masterminds/semver v3.4 .. v3.5): ``NewConstraint``/``Check`` of a ClusterExtension's
  ``spec.source.catalog.version`` (``parse_constraint`` → ``Constraint``) and the loose ``NewVersion``
  (``parse_loose_version``) the add-on installVersion lifecycle reads versions with.
* ``keys``: what both share, the SemVer precedence key ranges are compiled against.

Parsed ranges are small frozen objects cached by text; ``admits`` costs a few tuple comparisons. Errors are
``webhook.errors.InvalidVersion`` and ``InvalidConstraint`` with the libraries' own texts.
"""

from webhook.versions.blang import SkipRange, parse_skip_range, parse_version
from webhook.versions.masterminds import Constraint, parse_constraint, parse_loose_version

__all__ = ["Constraint", "SkipRange", "parse_constraint", "parse_loose_version", "parse_skip_range", "parse_version"]
