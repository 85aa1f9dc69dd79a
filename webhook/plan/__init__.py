"""The sync loop's pure planners: change types, extension revisions, catalog image templates, add-ons,
pull-request bodies and policy verdicts. No I/O."""
