"""Global constraints: one module per constraint, recognisers apart, and the registry.

  all_different.py          `AllDiff`, posted by `all_different(...)` relations
  sequence.py               `DistinctSequence`, an implied constraint over distinct slots
                            (Hall singletons, Hamiltonian path, time chain, gap partition)
  sequence_recognition.py   finds that pattern in the grounded factors
  no_overlap.py             `NoOverlap`, an implied disjunctive resource (overload checking,
                            edge-finding; per resource value when pairs are conditional)
  no_overlap_recognition.py finds pairwise `a.end <= b.start or b.end <= a.start` cliques
  linear.py                 linear forms of expressions (shared by recognisers)
  registry.py               the recognisers the solver runs (`post_globals`)
"""
