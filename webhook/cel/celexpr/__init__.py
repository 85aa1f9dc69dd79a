"""The cel-expr-python backend (cel-cpp, Google's C++ CEL, through pybind11): ``backend.CelExprBackend``.

The front end both backends share (``webhook.cel.frontend``: parser and load-time checker, so both
accept the same policies), then cel-cpp's own type checker and evaluator; the library functions of ``libraries/`` are
registered as typed cel-cpp overloads (``functions.py``) and library values travel as run-time protobuf
messages (``types.py``). docs/cel-engines.md compares the two backends.
"""
