"""The library hand-written tests are written with: drawing inputs, running one scenario on
two implementations, and asserting that they agree, each failure a sentence about the spec.

- ``assertions``: the assertion helpers every test uses (``assert_same``, ``assert_agrees``, ...).
- ``compare_state``, ``differential``, ``snapshots``: describing what a run leaves, to compare.
- ``strategies``, ``graph_strategies``, ``programs``: hypothesis strategies of inputs and programs.
- ``isolated``: running a snippet that may recurse forever in a fresh interpreter.
"""
