"""The gap map: why each slow operator is slow (per-call overhead, kernel throughput,
threading) and how it scales. Pure analysis of a results record: size-sweep decomposition
(decompose.py; its frozen records in sweep.py), the work an instance does (work.py),
attribution to a cause (attribute.py), each instance against the ceiling of the memory
level its working set fits (roofline.py, from the ceilings runner/ceilings.py measured), the whole map (analysis.py) and its plots
(plots.py)."""
