"""The core experiments' figures, one module per family, and the sections of the page they
share.

Each experiment's ``presentation()`` (:mod:`gpumem.contracts.presentation`) names its section (one
of
the constants below) and its draw functions, imported from these modules inside the method:
this package's ``__init__`` imports no matplotlib, its modules do. The sections are ordered
in steps of 100, so a plugin's section can go between two of them.
"""

from __future__ import annotations

from gpumem.contracts.presentation import ReportSection

LATENCY = ReportSection(
    "latency", "Latency ladder",
    "One thread chases a chain over a growing footprint and times every access: each "
    "cache level is a plateau, ending at its capacity (the knees). Levels and knees are "
    "labelled from the latency findings; the TLB reaches from the tlb_structure findings.",
    100)
CACHE_STRUCTURE = ReportSection(
    "cache_structure", "Cache structure: fine-grained chases",
    "Mei & Chu's fine-grained P-chase, as the cache_structure search ran it: every access "
    "of a chase timed, only the slow ones (events) stored. The size search on the first "
    "load path, and the chases that show the fill granularity.",
    200)
TLB_STRUCTURE = ReportSection(
    "tlb_structure", "TLB structure: paired chases",
    "Each page is touched twice, first element then the next word: the pair difference "
    "cancels the L2 hit both pay and leaves what only the first pays, a TLB miss.",
    300)
BANDWIDTH = ReportSection(
    "bandwidth", "Bandwidth",
    "DRAM throughput over the launch grid, shared-memory throughput over warps and "
    "independent loads, and read bandwidth over footprint through the L1 and the L2.",
    400)
ILP = ReportSection(
    "ilp", "ILP sweep by address ordering",
    "Plain-load bandwidth over K independent loads per thread at fixed work and fixed "
    "occupancy; only the address ordering of the K loads changes (the H100 study's "
    "missing experiment).",
    500)
CPASYNC = ReportSection(
    "cpasync", "cp.async",
    "cp.async copies into shared memory against plain loads of the same addresses, "
    "over the number of groups in flight per thread, at two occupancies.",
    600)
BULK_COPY = ReportSection(
    "bulk_copy", "TMA bulk copies",
    "One thread per block keeps S bulk copies (cp.async.bulk) of a chunk in flight into "
    "shared memory; the copy engine moves the data. By Little's law the bandwidth follows "
    "the bytes each SM has in flight until HBM saturates.",
    700)
DSMEM = ReportSection(
    "dsmem", "Distributed shared memory",
    "Thread block clusters: loads from another block's shared memory (mapa + "
    "ld.shared::cluster) against the same loads from the block's own.",
    800)
BANK_CONFLICTS = ReportSection(
    "bank_conflicts", "Shared-memory bank conflicts",
    "One warp, thread t reading word t x stride: the latency grows with the conflict "
    "degree gcd(stride, banks) and stops growing at the number of banks.",
    900)
