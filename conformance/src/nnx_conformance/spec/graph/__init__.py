"""The graph API: split, merge, update and the graph functions, with_vars, graph-mode flags."""
