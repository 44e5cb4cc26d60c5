"""The confidence levels of ``cache_structure``'s findings, each with the rule that earns it.

A finding's confidence says how its value was decided, not how close it is: the same rule
always gives the same level, so a report can be read by level. (``l2.fill_unit`` is the one
finding whose confidence is computed: the share of blocks that start with the miss, lowered
where twice the unit scores too; see :func:`~.l2.l2_fill_unit`.)
"""

#: Read directly off the calibration chase (the hit latency at 512 B, every access kept).
MEASURED = 1.0
#: Two independent decisions agree and each was reproduced by fresh chases: a capacity whose
#: edge held on a second pair of chases with every larger footprint overflowing; a line both
#: the count jump and the one-set overflow give, on such a capacity; FIFO told from LRU by a
#: re-touched line.
SURE = 0.95
#: One decision with a clear margin or reproduced: a scattered-chase plateau that falls by
#: 40 % or more past the line; a sector seen as a gap inside a missing line; the L2's ways
#: with the edge chased twice.
CLEAR = 0.9
#: A replay of the misses finds some ways evicted more often than others (``non-lru``).
REPLAYED = 0.85
#: A reading of a curve or a count rather than a decision on an edge: the half-miss
#: footprint, where conflicts begin (a note), a uniform eviction spread (``random``), the
#: per-way weights.
READING = 0.8
#: A reproduced capacity some larger footprint did not overflow (a ramp too small to call);
#: the L2's ways from one chase per side; a sector only as the line (no gap seen).
QUALIFIED = 0.7
#: One decision alone, which a policy that spares lines can move: a line, ways, sets not
#: confirmed by the count jump; LRU or FIFO (not told apart); a sector from the stride-4
#: fill chase.
SINGLE = 0.6
#: An edge seen once, not reproduced (a capacity whose edge was not chased again), or a
#: scattered-chase plateau that falls less than 40 % past the line.
UNCONFIRMED = 0.5
#: At odds with another finding: a line that is not a power of two; index functions that do
#: not number log2(sets).
DOUBTFUL = 0.4
