"""The CEL front end both backends share, so that both accept exactly the same expressions: the parser (cel-python's
grammar, with the optional syntax), the parse tree, the standard functions' signatures, and the load-time checks
(length and nesting limits, undeclared names and functions, macro shapes, the apiserver's type rules)."""
