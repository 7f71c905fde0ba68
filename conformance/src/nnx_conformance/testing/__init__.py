"""The library hand-written tests are written with: drawing inputs, running one scenario on
two implementations, and asserting that they agree, each failure a sentence about the spec.

- ``assertions``: the assertion helpers every test uses (``assert_same``, ``assert_agrees``, ...).
- ``describe``: the one account of what a run leaves (``describe``) and the one comparison of
  two accounts (``difference``); ``outcomes`` runs a call on one implementation (``Side``) and
  records what it did; ``layer_cases`` (layers built and run on both) and ``snapshots`` (one
  graph by plain attribute access) are built on them.
- ``strategies``, ``graph_strategies``, ``programs``: hypothesis strategies of inputs and programs.
- ``isolated``: running a snippet that may recurse forever in a fresh interpreter.
"""
