"""The GitOps side's pure planners: change types, extension revisions, catalog image templates, add-ons,
pull-request bodies, policy verdicts, and the admission requests a change makes (``upgrade-gate review``). No I/O."""
