"""The cel-python (``celpy``) backend: parser, checker, evaluator with a cost budget, value conversion."""
