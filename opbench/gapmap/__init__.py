"""The gap map: why each slow operator is slow (per-call overhead, kernel throughput,
threading) and how it scales. Pure analysis of a results record (decompose, attribute,
roofline fractions) plus the measured machine ceilings and peak memory."""
