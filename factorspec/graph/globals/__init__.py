"""Global constraints: one module per constraint, recognisers apart, and the registry.

  all_different.py          `AllDiff`, posted by `all_different(...)` relations
  sequence.py               `DistinctSequence`, an implied constraint over distinct slots
                            (Hall singletons, Hamiltonian path, time chain, gap partition)
  sequence_recognition.py   finds that pattern in the grounded factors
  linear.py                 linear forms of expressions (shared by recognisers)
  registry.py               the recognisers the solver runs (`post_globals`)
"""
