"""Synthetic Accel-Sim traces for gpumem's probes.

Accel-Sim replays SASS traces that NVBit records on a real GPU. gpumem's probes are so simple
that their traces can be written directly from a request, with the same chains
(:mod:`gpumem.contracts.chains`) and the same address orderings as the CUDA kernels: no GPU, no
NVBit.

A trace directory holds ``kernelslist.g`` and one ``kernel-N.traceg`` per launch, in the
format of Accel-Sim's trace parser (tracer version 5: a ``-key = value`` header closed by a
``#`` line, then ``#BEGIN_TB`` blocks, one per CTA in launch order, each warp's instructions
``PC mask ndst [Rd] OPCODE nsrc [Rs] width [mode addresses] imm`` ending in ``EXIT``).

Each probe is several kernels whose cycle counts are subtracted, because a kernel's
``gpu_sim_cycle`` includes the launch latency and the drain, and the simulator flushes L1
between kernels (``-gpgpu_flush_l1_cache 1``, as the hardware does):

* pointer chase: ``warmup`` (the first ``request.warmup`` accesses, so L2 holds what a warm
  chase finds; preceded by ``warmup_recorded``, the warm-up's visits to the lines the chase
  records, where it has any), ``base`` (the same accesses again) and ``timed`` (those
  accesses followed by the ``record`` timed ones, in the same kernel, so L1 is as warm as on
  hardware). The mean latency is ``(cycles(timed) - cycles(base)) / record``. Without
  warm-up (a cold chase) ``base`` is an empty kernel.
* stream: ``empty`` (the same grid, every warp exits at once), an optional ``warmup`` run and
  the ``timed`` run; the run took ``cycles(timed) - cycles(empty)``.

The kernels run in the order of :attr:`TraceSet.kernels`; their ``uid`` is the
``kernel_launch_uid`` Accel-Sim prints for them. Nothing copies data to the GPU
(``MemcpyHtoD`` would pre-fill L2 and spoil DRAM-resident chases).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gpumem.api import PLACEMENT_PADS, ChaseRequest, ProbeUnsupported, StreamRequest
from gpumem.api.simulator import chain_offsets, cycle_length

#: Binary versions (SASS opcode maps) Accel-Sim's trace-driven front end accepts.
BINARY_VERSIONS = (35, 60, 61, 70, 75, 80, 86)
TRACER_VERSION = 5
NVBIT_VERSION = "1.5.5"
WARP = 32

#: Where the synthetic buffers live (a user-space address as NVBit reports them).
GLOBAL_BASE = 0x00007F8000000000
#: Second buffer of a write or copy stream (far above any footprint gpumem simulates).
GLOBAL_BASE_B = 0x00007FC000000000
SHMEM_BASE = 0x00007F0000000000
LOCAL_BASE = 0x00007F1000000000

#: Chase loads unrolled per loop iteration (the PCs of a loop body repeat, as in a real loop).
CHASE_UNROLL = 8
#: Largest trace (warp instructions over all kernels) the generators write by default: about
#: 150 MB of trace text, a single pass of 16-byte loads over a 75 MB buffer at K = 1 (a slow
#: device's DRAM-resident stream, :mod:`gpumem.run.pace`). What a run will cost is priced before it
#: runs; this bounds the files, and a trace over it is a skipped point, which the price knows
#: (:func:`chase_warp_insts`, :func:`stream_warp_insts`).
MAX_WARP_INSTS = 2_000_000

_FORMAT_LINE = ("#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num "
                "[reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate")
_WIDTH_SUFFIX = {4: "", 8: ".64", 16: ".128"}
#: Opcode suffix per load path. ``ca``: a plain LDG, cached in L1 (unless the config sets
#: ``-gpgpu_gmem_skip_L1D 1``); ``cg``: a .STRONG.GPU load, which Accel-Sim always sends past
#: L1 (cache operator CACHE_GLOBAL); ``nc``: the read-only path, cached in L1 like ``ca``
#: (Accel-Sim has no separate read-only cache for LDG).
_PATH_SUFFIX = {"ca": "", "cg": ".STRONG.GPU", "nc": ".CONSTANT.SYS"}


class TraceTooLarge(ValueError):
    """The trace would take too long to simulate (more warp instructions than allowed)."""


@dataclass(frozen=True)
class TraceKernel:
    """One launch of a trace: its ``kernel_launch_uid``, role, name and file."""

    uid: int
    role: str
    name: str
    file: str
    warp_insts: int
    thread_insts: int


@dataclass(frozen=True)
class TraceSet:
    """What a generator wrote: the kernels in launch order and what the timed one does.

    ``accesses``: chase accesses timed (``record``), or thread-level memory instructions of
    one stream run; ``bytes``: bytes the timed stream kernel moves (read + written), 0 for
    a chase.
    """

    directory: Path
    kernels: tuple[TraceKernel, ...]
    accesses: int
    bytes: int = 0

    @property
    def kernelslist(self) -> Path:
        return self.directory / "kernelslist.g"

    def uid(self, role: str) -> int:
        """Launch uid of the kernel playing ``role`` (``timed``, ``base``, ``empty``...)."""
        for k in self.kernels:
            if k.role == role:
                return k.uid
        raise KeyError(f"no {role!r} kernel in this trace (roles: "
                       f"{', '.join(k.role for k in self.kernels)})")

    @property
    def warp_insts(self) -> int:
        return sum(k.warp_insts for k in self.kernels)


def load_opcode(width: int, path: str) -> str:
    """SASS opcode of a global load of ``width`` bytes through ``path`` (``LDG.E.128``...)."""
    if width not in _WIDTH_SUFFIX:
        raise ValueError(f"load width must be 4, 8 or 16 bytes, got {width}")
    if path not in _PATH_SUFFIX:
        raise ProbeUnsupported(f"Accel-Sim traces have no '{path}' load path "
                               f"(paths: {', '.join(_PATH_SUFFIX)})")
    return "LDG.E" + _WIDTH_SUFFIX[width] + _PATH_SUFFIX[path]


def store_opcode(width: int) -> str:
    """SASS opcode of a global store of ``width`` bytes that bypasses L1 (``st.global.cg``)."""
    if width not in _WIDTH_SUFFIX:
        raise ValueError(f"store width must be 4, 8 or 16 bytes, got {width}")
    return "STG.E" + _WIDTH_SUFFIX[width] + ".STRONG.GPU"


def _header(name: str, uid: int, grid: int, block: int, nregs: int,
            binary_version: int) -> list[str]:
    return [
        f"-kernel name = {name}",
        f"-kernel id = {uid}",
        f"-grid dim = ({grid},1,1)",
        f"-block dim = ({block},1,1)",
        "-shmem = 0",
        f"-nregs = {nregs}",
        f"-binary version = {binary_version}",
        "-cuda stream id = 0",
        f"-shmem base_addr = 0x{SHMEM_BASE:016x}",
        f"-local mem base_addr = 0x{LOCAL_BASE:016x}",
        f"-nvbit version = {NVBIT_VERSION}",
        f"-accelsim tracer version = {TRACER_VERSION}",
        "-enable lineinfo = 0",
        "",
        _FORMAT_LINE,
        "",
    ]


def _mem_line(pc: int, mask: int, dsts: tuple[int, ...], opcode: str, srcs: tuple[int, ...],
              width: int, addrs: np.ndarray) -> str:
    """One memory instruction; addresses of the active lanes in lane order. An arithmetic
    run is written as ``1 base stride`` (address mode 1), anything else lane by lane."""
    d = " ".join(f"R{r}" for r in dsts)
    s = " ".join(f"R{r}" for r in srcs)
    head = f"{pc:04x} {mask:08x} {len(dsts)}{' ' + d if d else ''} {opcode} {len(srcs)}"
    head += f" {s}" if s else ""
    a = np.asarray(addrs, dtype=np.int64)
    if a.size > 1 and np.all(np.diff(a) == a[1] - a[0]):
        return f"{head} {width} 1 0x{int(a[0]):016x} {int(a[1] - a[0])} 0"
    listed = " ".join(f"0x{int(x):016x}" for x in a)
    return f"{head} {width} 0 {listed} 0"


def _plain_line(pc: int, mask: int, opcode: str) -> str:
    return f"{pc:04x} {mask:08x} 0 {opcode} 0 0 0"


def _lanes_mask(lanes: int) -> int:
    return (1 << lanes) - 1


def _write_kernel(path: Path, header: list[str], ctas: list[list[tuple[int, list[str]]]]) -> None:
    """Write a trace file: header, then per CTA its warps' (live lanes, instruction lines)."""
    out = list(header)
    for cta, warps in enumerate(ctas):
        out += ["#BEGIN_TB", "", f"thread block = {cta},0,0", ""]
        for w, (_lanes, lines) in enumerate(warps):
            out += [f"warp = {w}", f"insts = {len(lines)}", *lines, ""]
        out += ["#END_TB", ""]
    path.write_text("\n".join(out) + "\n")


def _write_list(directory: Path, kernels: list[TraceKernel]) -> None:
    (directory / "kernelslist.g").write_text("".join(k.file + "\n" for k in kernels))


def _check_version(binary_version: int) -> None:
    if binary_version not in BINARY_VERSIONS:
        raise ValueError(f"binary version {binary_version} is not one Accel-Sim accepts "
                         f"({', '.join(map(str, BINARY_VERSIONS))})")


def check_size(warp_insts: int, limit: int) -> None:
    """Raise :class:`TraceTooLarge` for a trace of more than ``limit`` warp instructions."""
    if warp_insts > limit:
        raise TraceTooLarge(f"the trace would hold {warp_insts} warp instructions, over the "
                            f"limit of {limit} (minutes of simulation); shrink the request")


# ---- pointer chase ------------------------------------------------------------------------

#: Warps per CTA of the L2 warm-up kernel, and warps of the chase's own CTA. Loads issued
#: together land in the cache in no set order, so what a cache keeps of a warm-up larger than
#: itself is the latest part only to within one slab (``warps x 32`` positions): the L2
#: kernel's 132 x 8 warps blur 7 % of an H200's L2 (a footprint up to 1.07 L2 may still hit
#: in part), but 32 warps blurred 57 % of its L1 (a chase of 1.33 L1 hit half its lines, a
#: level that is not there), so the L1's warm-up is one warp: chain order to 32 positions.
WARM_WARPS, L1_WARM_WARPS = 8, 1
#: Registers of a warm-up load: its address and its destination. Every warm-up load of a warp
#: writes the same register, so the scoreboard lets one load (32 lines) per warp be in flight
#: and the reading ``MOV`` after the last waits for all of them (GPGPU-Sim checks a pending
#: write against an instruction's destinations as well as its sources).
_WARM_ADDR, _WARM_DST, _WARM_SINK = 6, 4, 3


def _slabs(addrs: np.ndarray, warps: int) -> list[list[np.ndarray]]:
    """``addrs`` (chain order) as warp instructions of up to 32 lanes, dealt to ``warps``
    warps slab by slab: the k-th instruction of every warp together load the k-th slab of
    ``32 * warps`` consecutive chain positions, so loads run roughly in chain order."""
    rows = [addrs[i:i + WARP] for i in range(0, addrs.size, WARP)]
    return [rows[w::warps] for w in range(warps)]


def _warm_lines(rows: list[np.ndarray], opcode: str, width: int) -> list[str]:
    return [_mem_line(0x0, _lanes_mask(r.size), (_WARM_DST,), opcode, (_WARM_ADDR,), width, r)
            for r in rows]


def _warm_grid(positions: int, warm_ctas: int) -> tuple[int, int]:
    """(CTAs, warps per CTA) of the L2 warm-up kernel loading ``positions`` chain positions:
    a warp per 32 positions, up to :data:`WARM_WARPS` per CTA on up to ``warm_ctas`` CTAs."""
    warps = max(1, -(-positions // WARP))
    ctas = max(1, min(warm_ctas, -(-warps // WARM_WARPS)))
    return ctas, (-(-warps // ctas) if warps < ctas * WARM_WARPS else WARM_WARPS)


def chase_warp_insts(request: ChaseRequest, *, unroll: int = CHASE_UNROLL, warm_ctas: int = 1,
                     l1_window: int | None = None, l2_window: int | None = None) -> int:
    """Warp instructions :func:`chase_trace` would write for ``request``, counted without
    writing them: what the trace-size limit is checked against, before a line is built, and
    what a slow device's price knows of a chase the limit will refuse."""
    warm, record = request.warmup, request.record
    chase = record + -(-record // unroll)  # the loads and a BRA closing each iteration
    if not warm:
        return 1 + chase + 1  # base: EXIT; timed: the chase and EXIT
    lo, first = warm_split(request, l2_window)
    n1 = min(warm, warm if l1_window is None else l1_window)
    l2_kernel = 0
    if first > lo:  # the recorded lines' kernel: one load per line and EXIT
        l2_kernel += first - lo + 1
    if warm > max(lo, first):
        ctas, per = _warm_grid(warm - max(lo, first), warm_ctas)
        l2_kernel += -(-(warm - max(lo, first)) // WARP) + ctas * per  # loads, EXIT per warp
    rows1 = -(-n1 // WARP)
    warps1 = max(1, min(L1_WARM_WARPS, rows1))
    # base and timed: each loads the L1 window (MOV after a warp's loads, BAR and EXIT per
    # warp); timed's first warp then chases
    l1_kernel = rows1 + min(warps1, rows1) + 2 * warps1
    return l2_kernel + 2 * l1_kernel + chase


def warm_split(request: ChaseRequest, l2_window: int | None) -> tuple[int, int]:
    """(``lo``, ``first``): the L2 warm-up loads positions ``lo .. warmup-1`` (its window);
    positions ``0 .. first-1`` are the warm-up's visits to the lines the chase records next,
    as :func:`gpumem.contracts.chains.warm_segments` finds them (none where the warm-up is
    longer than one cycle of the chain, which visits those lines more than once)."""
    warm = request.warmup
    lo = max(0, warm - (warm if l2_window is None else l2_window))
    cycle = cycle_length(request.footprint, request.stride, request.order, request.element,
                         request.pattern)
    first = min(max(warm + request.record - cycle, 0), warm) if warm <= cycle else 0
    return lo, first


def chase_trace(directory: str | Path, request: ChaseRequest, *, binary_version: int = 70,
                base: int = GLOBAL_BASE, unroll: int = CHASE_UNROLL,
                max_warp_insts: int = MAX_WARP_INSTS, warm_ctas: int = 1,
                l1_window: int | None = None, l2_window: int | None = None) -> TraceSet:
    """Write the traces of a pointer chase into ``directory`` (created if missing).

    The timed part is one thread: a chain of dependent loads (each load's destination register
    is the next load's address register) over the byte offsets :func:`gpumem.contracts.chains.
    chain_offsets` gives, at ``base + PLACEMENT_PADS[placement] + offset``, ``element`` bytes
    wide, through ``request.path`` (see :func:`load_opcode`); ``unroll`` loads form one loop
    iteration, closed by a ``BRA``. It is the ``record`` accesses that follow the first
    ``warmup`` positions of the chain.

    The warm-up leaves the caches as a single thread's chase of those ``warmup`` positions
    would, but is loaded in parallel: one thread's chase costs the simulator every idle cycle
    of every SM (about 0.1 s per L2 hit on a 132-SM config), parallel loads only their
    requests (a 60 MB warm-up: 2 minutes instead of 16 hours). ``warmup`` (a kernel of
    ``warm_ctas`` CTAs of :data:`WARM_WARPS` warps) loads the last ``l2_window`` warm-up
    positions into L2. Those among them that visit the lines the chase records (the first
    ``record`` of a warm-up that walks the whole chain once, :func:`warm_split`) go first, in
    a kernel of their own (``warmup_recorded``; ``warmup`` where they are all of it): one line
    per load, in chain order, so that in every cache set they are older than the set's other
    lines, as after one thread's chase. Loaded in parallel with the rest (and a warp's 32
    lanes reach the L2 last lane first), they were not: on Accel-Sim's TITAN X, whose lines
    fall into its 24 L2 slices at random, sets of 17 to 26 lines kept some of them, and a
    ladder's recorded lines missed 3-4 times where their sets' sizes said 6-8 (2.1-2.4 MB),
    its half crossing 8 % past the capacity (tests/data/accelsim/runs/README.md); on QV100,
    RTX 2060 and RTX 3070 half of them still hit for 25-32 % past the knee. ``base`` and
    ``timed`` (one CTA: the simulator flushes L1 between
    kernels) load the last ``l1_window`` into that CTA's L1 with up to :data:`L1_WARM_WARPS`
    warps, wait for them (``MOV`` of the loaded register, ``BAR.SYNC``), and then ``timed``'s
    first thread chases the ``record`` positions. Loads run slab by slab in chain order, so
    what a cache keeps of a warm-up larger than itself is, as after a chase, the latest part of
    it. A window (in positions, ``None``: all) need only exceed what its cache can hold: the
    positions before it would be evicted again. Mean latency: ``(cycles(timed) -
    cycles(base)) / record``. A cold chase (``warmup`` 0) has no ``warmup`` kernel, and an
    empty ``base``.
    """
    request.validate()
    _check_version(binary_version)
    opcode = load_opcode(request.element, request.path)
    check_size(chase_warp_insts(request, unroll=unroll, warm_ctas=warm_ctas,
                                 l1_window=l1_window, l2_window=l2_window), max_warp_insts)
    warm, record = request.warmup, request.record
    offsets = chain_offsets(request.footprint, request.stride, request.order, request.seed,
                            warm + record, element=request.element, pattern=request.pattern)
    addrs = base + PLACEMENT_PADS[request.placement] + offsets
    lo, recorded = warm_split(request, l2_window)
    first_rows = addrs[lo:recorded]
    l2_rows = addrs[max(lo, recorded):warm]
    l1_rows = addrs[max(0, warm - (warm if l1_window is None else l1_window)):warm]
    first = 0x30  # the chase's PCs follow the warm-up's LDG, MOV and BAR
    exit_pc = first + (unroll + 1) * 0x10

    def chase(lanes: int) -> list[str]:
        """The timed chase, every lane of the warp loading the same address (one request:
        a warp's lanes are in lockstep and coalesce, so it is one thread's chase)."""
        mask, out = _lanes_mask(lanes), []
        for i in range(record):
            slot = i % unroll
            out.append(_mem_line(first + slot * 0x10, mask, (2,), opcode, (2,),
                                 request.element, np.repeat(addrs[warm + i], lanes)))
            if slot == unroll - 1 or i == record - 1:
                out.append(_plain_line(first + unroll * 0x10, mask, "BRA"))
        return out

    def one_cta(timed: bool) -> tuple[int, list[list[tuple[int, list[str]]]]]:
        """(threads, CTAs) of ``base`` or ``timed``: the L1 warm-up, then the chase."""
        if not warm:
            return 1, [[(1, [*(chase(1) if timed else []), _plain_line(exit_pc, 1, "EXIT")])]]
        warps = max(1, min(L1_WARM_WARPS, -(-l1_rows.size // WARP)))
        out = []
        for w, rows in enumerate(_slabs(l1_rows, warps)):
            lines = _warm_lines(rows, opcode, request.element)
            if rows:
                lines.append(f"{0x10:04x} {_lanes_mask(WARP):08x} 1 R{_WARM_SINK} MOV 1 "
                             f"R{_WARM_DST} 0 0")
            lines.append(_plain_line(0x20, _lanes_mask(WARP), "BAR.SYNC.DEFER_BLOCKING"))
            if w == 0 and timed:
                lines += chase(WARP)
            lines.append(_plain_line(exit_pc, _lanes_mask(WARP), "EXIT"))
            out.append((WARP, lines))
        return WARP * warps, [out]

    plan: list[tuple[str, int, list]] = []
    if first_rows.size:  # one line per load: a warp's lanes reach the L2 in reverse order
        rows = [first_rows[i:i + 1] for i in range(first_rows.size)]
        plan.append(("warmup_recorded" if l2_rows.size else "warmup", WARP, [[(WARP, [
            *_warm_lines(rows, opcode, request.element),
            _plain_line(0x10, _lanes_mask(WARP), "EXIT")])]]))
    if l2_rows.size:
        ctas, per = _warm_grid(l2_rows.size, warm_ctas)
        slabs = _slabs(l2_rows, ctas * per)
        grid = [[(WARP, [*_warm_lines(slabs[c * per + w], opcode, request.element),
                         _plain_line(0x10, _lanes_mask(WARP), "EXIT")])
                 for w in range(per)] for c in range(ctas)]
        plan.append(("warmup", WARP * per, grid))
    for role in ("base", "timed"):
        threads, grid = one_cta(role == "timed")
        plan.append((role, threads, grid))
    counts = [sum(len(lines) for cta in grid for _l, lines in cta) for _r, _t, grid in plan]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    kernels = []
    for uid, ((role, threads, grid), count) in enumerate(zip(plan, counts, strict=True),
                                                         start=1):
        name = f"gpumem_chase_{role}"
        file = f"kernel-{uid}.traceg"
        _write_kernel(directory / file,
                      _header(name, uid, len(grid), threads, 16, binary_version), grid)
        thread_insts = sum(bin(int(ln.split()[1], 16)).count("1")
                           for cta in grid for _l, lines in cta for ln in lines)
        kernels.append(TraceKernel(uid, role, name, file, count, thread_insts))
    _write_list(directory, kernels)
    return TraceSet(directory, tuple(kernels), accesses=record)


# ---- stream -------------------------------------------------------------------------------

def stream_shape(request: StreamRequest) -> tuple[int, int, int]:
    """(elements per chunk, chunks in the buffer, iterations) of a stream, as the CUDA
    stream kernel computes them: a chunk is one load of every thread's ``ilp``."""
    elems = request.footprint // request.width
    chunk = request.ctas * request.threads * request.ilp
    chunks = elems // chunk
    if chunks < 1:
        raise ValueError("the footprint is smaller than one chunk of the grid "
                         f"({chunk} elements of {request.width} B)")
    iters = -(-(request.bytes_per_direction // request.width) // chunk)
    return chunk, chunks, iters


def stream_elements(request: StreamRequest, tid: np.ndarray, it: int, k: int) -> np.ndarray:
    """Element index load ``k`` of iteration ``it`` reads, for global thread ids ``tid``:
    the CUDA stream kernel's formula (``gpumem/cuda/kernels/stream.cu``)."""
    chunk, chunks, _iters = stream_shape(request)
    nthreads = request.ctas * request.threads
    c = it % chunks
    if request.reverse:
        c = chunks - 1 - c
    base = c * chunk
    if request.order == "coalesced":
        return base + k * nthreads + tid
    if request.order == "thread":
        return base + tid * request.ilp + k
    return base + ((tid >> 5) * request.ilp + k) * WARP + (tid & 31)


def _stream_plan(request: StreamRequest, warmup: bool) -> list[tuple[str, int]]:
    """(role, instructions of each warp) of a stream's kernels in launch order."""
    _chunk, _chunks, iters = stream_shape(request)
    loop = iters * (request.ilp * (2 if request.kind == "copy" else 1) + 1) + 1
    return [("empty", 1)] + ([("warmup", loop)] if warmup else []) + [("timed", loop)]


def stream_warp_insts(request: StreamRequest, *, warmup: bool = True) -> int:
    """Warp instructions :func:`stream_trace` would write for ``request`` (see
    :func:`chase_warp_insts`)."""
    warps = request.ctas * -(-request.threads // WARP)
    return sum(n for _r, n in _stream_plan(request, warmup)) * warps


def stream_trace(directory: str | Path, request: StreamRequest, *, binary_version: int = 70,
                 base: int = GLOBAL_BASE, base_b: int = GLOBAL_BASE_B, warmup: bool = True,
                 max_warp_insts: int = MAX_WARP_INSTS) -> TraceSet:
    """Write the traces of a streaming run into ``directory`` (created if missing).

    ``request.ctas`` CTAs of ``request.threads`` threads; per iteration every thread issues
    ``ilp`` independent loads of ``width`` bytes (reads), stores (writes) or both (copy:
    load k, then store it to the second buffer), in the address order of the CUDA kernel;
    the iterations run until ``bytes_per_direction`` are moved, wrapping around the buffer.
    The loads' destination registers are reused each iteration, so at most ``ilp`` loads
    per warp are in flight, as the fold of the values enforces on hardware. Reads go through
    ``request.path`` (:func:`load_opcode`), stores bypass L1.
    """
    request.validate()
    _check_version(binary_version)
    width, ilp, kind = request.width, request.ilp, request.kind
    ld = load_opcode(width, request.path) if kind != "write" else ""
    st = store_opcode(width) if kind != "read" else ""
    chunk, _chunks, iters = stream_shape(request)
    warps_per_cta = -(-request.threads // WARP)
    per_iter = ilp * (2 if kind == "copy" else 1) + 1
    plan = _stream_plan(request, warmup)
    total_warps = request.ctas * warps_per_cta
    check_size(stream_warp_insts(request, warmup=warmup), max_warp_insts)
    regs = width // 4
    dst = [4 + k * regs for k in range(ilp)]
    nregs = -(-(4 + ilp * regs) // 8) * 8
    bra_pc = (per_iter - 1) * 0x10
    exit_pc = bra_pc + 0x10

    def warp_lines(cta: int, w: int) -> tuple[int, list[str]]:
        lanes = min(WARP, request.threads - w * WARP)
        mask = _lanes_mask(lanes)
        tid = cta * request.threads + w * WARP + np.arange(lanes, dtype=np.int64)
        lines = []
        for it in range(iters):
            pc = 0
            for k in range(ilp):
                elem = stream_elements(request, tid, it, k)
                if kind != "write":
                    lines.append(_mem_line(pc, mask, (dst[k],), ld, (2,), width,
                                           base + elem * width))
                    pc += 0x10
                if kind != "read":
                    src = (2, dst[k]) if kind == "copy" else (2, 4)
                    lines.append(_mem_line(pc, mask, (), st, src, width,
                                           base_b + elem * width))
                    pc += 0x10
            lines.append(_plain_line(bra_pc, mask, "BRA"))
        lines.append(_plain_line(exit_pc, mask, "EXIT"))
        return lanes, lines

    timed_ctas = [[warp_lines(c, w) for w in range(warps_per_cta)]
                  for c in range(request.ctas)]
    empty_ctas = [[(lanes, [_plain_line(exit_pc, _lanes_mask(lanes), "EXIT")])
                   for lanes, _ in warps] for warps in timed_ctas]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    kernels = []
    for uid, (role, n) in enumerate(plan, start=1):
        name = f"gpumem_stream_{role}"
        file = f"kernel-{uid}.traceg"
        _write_kernel(directory / file,
                      _header(name, uid, request.ctas, request.threads, nregs, binary_version),
                      empty_ctas if role == "empty" else timed_ctas)
        kernels.append(TraceKernel(uid, role, name, file, n * total_warps,
                                   n * request.ctas * request.threads))
    _write_list(directory, kernels)
    moved = iters * chunk * width * (2 if kind == "copy" else 1)
    accesses = iters * chunk * (2 if kind == "copy" else 1)
    return TraceSet(directory, tuple(kernels), accesses=accesses, bytes=moved)
