"""The simulated cache model, written once, as the source of both pointer-chase kernels.

The generic kernel reads each level's geometry from the hierarchy's ``meta`` table on every
access, so one compiled function serves every path. Long chases run a kernel generated for
their path instead: the levels unrolled in visiting order, their static parameters literals,
each level's last block and replacement stream local variables (about twice as fast). Both
are emitted by the fragments below (set index, set scan, victim, fill, hit latency, TLB
splice): where a :class:`Level` parameter is a literal a fragment picks its branch now, where
it is read at run time the fragment emits the branches. Same operations in the same order
either way, so the two kernels are bit-identical.

Source, not shared ``@njit`` functions: Numba increments and decrements the reference count
of every array passed to a function it does not inline, which costs more than a cache
look-up, and literals let LLVM fold each level's arithmetic.

A leaf module: it imports nothing from :mod:`gpumem.sim`, and the source it writes imports
only :mod:`gpumem.sim.primitives`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

POLICY_CODES = {"lru": 0, "fifo": 1, "random": 2, "weighted": 3}
INDEX_CODES = {"modulo": 0, "bits": 1, "xor": 2, "table": 3, "spread": 4}
ORDER_CODES = {"sequential": 0, "random": 1, "pattern": 2, "scattered": 3}

# Columns of the per-level metadata table ``Hierarchy.meta``.
COLUMNS = ("LINE_SHIFT", "SECTOR_SHIFT", "N_SETS", "SET_BASE", "IDX_KIND", "IDX_OFF", "IDX_LEN",
           "POLICY", "W_OFF", "TRANSLATE", "PARTS", "PART_OFF", "PART_LEN", "SMO_OFF", "SMO_LEN",
           "MOD_M", "MOD_S", "EQ_WAYS", "WAY_BASE", "HOME_OFF", "HOME_LEN", "SLICE_OFF",
           "SLICE_LEN", "SLAT_OFF", "SLAT_ROWS", "SLICE_N", "SLUT_BITS")
LINE_SHIFT, SECTOR_SHIFT, N_SETS, SET_BASE, IDX_KIND, IDX_OFF, IDX_LEN, POLICY, W_OFF, \
    TRANSLATE, PARTS, PART_OFF, PART_LEN, SMO_OFF, SMO_LEN, MOD_M, MOD_S, EQ_WAYS, WAY_BASE, \
    HOME_OFF, HOME_LEN, SLICE_OFF, SLICE_LEN, SLAT_OFF, SLAT_ROWS, SLICE_N, SLUT_BITS = \
    range(len(COLUMNS))
# A sliced level: SLICE_N slices, each line's by SLICE_LEN masks at SLICE_OFF of idx_param,
# or (SLUT_BITS > 0, no masks) by a table of 2**SLUT_BITS slices, one per line of a page,
# there, followed by the page number of the config's base_address and the footprint whose
# buffer's first page the table is (-1: any): that page looks its lines up in the table as
# given, every other XOR a shift, the top bits of SplitMix64's output function (_mix) of its
# number counted from there plus BUFFER_MIX times the footprint's difference (as an H200's
# physical pages are shifts of each other in its slice hash, and each allocation gets its
# own): gpumem.sim.config.CacheLevel.slice_of says it once more.
BUFFER_MIX = 0x2545F4914F6CDD1D
META_COLUMNS = len(COLUMNS)

PF_BYTES = 1 << 18  # levels with more way state than this get their sets prefetched
# ... this many accesses ahead (host cache lines only: no effect on results). Specialised
# hopper far-L2 random 27 (64) -> 30 M/s (16); the generic kernel, 64 until both came from
# here, is within noise at 16.
PF_DIST = 16
SIMD_WAYS = (16, 8, 4)  # set sizes looked up by one vector intrinsic (primitives._make_find)
#: The way words: int32 (tag bits 31 - sectors) while the tags a hierarchy holds fit, else
#: int64 (63 - sectors); see :func:`tag_mask`.
NARROW, WIDE = 31, 63
HOST_LINE = 64  # bytes: the prefetch granularity


def prefetch_candidate(m: Sequence[int], wbits: int) -> bool:
    """Is a level (its ``meta`` row) big enough, and simple enough to index, to prefetch, with
    way words of ``wbits`` (:data:`NARROW` or :data:`WIDE`)?"""
    return (m[IDX_KIND] == 0 and m[EQ_WAYS] > 0 and m[N_SETS] > 1
            and m[N_SETS] * m[EQ_WAYS] * word_bytes(wbits) > PF_BYTES)


def stamped(m: Sequence[int]) -> bool:
    """Can a path's kernel keep a level (its ``meta`` row) as a table of the lines a chase
    touches while the chase cannot fill it past its ways (:func:`_lookup_stamped`)? One
    LRU set of one sector a line, indexed by the block (the first-level TLBs)."""
    return (m[POLICY] == 0 and m[IDX_KIND] == 0 and m[EQ_WAYS] > 0
            and m[LINE_SHIFT] == m[SECTOR_SHIFT] and m[N_SETS] * m[EQ_WAYS] <= STAMPED_WAYS)


#: The most ways (of all sets) a :func:`stamped` level has: its table of stamps, a word per
#: way, is that long. Hopper's second-level TLB has 1024 (an 8 GB random chase touches 512
#: of its pages, 8 a set).
STAMPED_WAYS = 4096


def word_bytes(wbits: int) -> int:
    return 4 if wbits == NARROW else 8


def sectors(m: Sequence[int]) -> int:
    """Sectors per line (1 ... 32) of a level's ``meta`` row: the valid-sector mask's bits,
    the low bits of its way words."""
    return 1 << (int(m[LINE_SHIFT]) - int(m[SECTOR_SHIFT]))


def tag_mask(m: Sequence[int], wbits: int) -> int:
    """The tag bits a way word of ``wbits`` keeps above the level's sector mask, as a mask
    (0 if none). A way word is ``(tag & tag_mask) << sectors | valid-sector mask``, 0 for an
    invalid way; the tag is the block number divided by the sets (modulo index) or the block
    number (other indexes). Truncated tags are exact while every tag the level holds lies in a
    window of ``tag_mask + 1`` consecutive values: the engine checks that before each chase
    and takes the wide words where the narrow ones would not do."""
    return (1 << max(0, wbits - sectors(m))) - 1


def visit_order(path_ids: Sequence[int], translate: Sequence[bool], tlb_first: int,
                tlb_count: int) -> list[tuple[int, int]]:
    """(level, path position) in the order a load looks levels up: the path's caches, with
    the TLB levels (position ``-1 - t``) spliced in before the first physically tagged
    cache, or before DRAM."""
    tlbs = [(tlb_first + t, -1 - t) for t in range(tlb_count)]
    out = []
    for p, lv in enumerate(path_ids):
        if translate[p] and tlbs:
            out += tlbs
            tlbs = []
        out.append((int(lv), p))
    return out + tlbs


class Level:
    """One cache or TLB level as a fragment sees it. With a ``key`` (meta row, index bits or
    masks, partition masks, way counts of unequal sets) it is static: parameters are literals
    and its state lives in locals named after ``lv``. Without, everything is read through the
    runtime variable ``lv``."""

    def __init__(self, lv: int | None = None, key: tuple | None = None,
                 prefetched: bool = False, wbits: int = NARROW):
        self.key, self.wbits = key, wbits
        self.lz: str | None = None
        self.ts: str | None = None
        self.lb: str | None = None
        self.at = ""  # where its stamps start in the kernel's scratch array
        self.ix: str | None = None  # its ring of set and tag words worked out ahead
        self.sc: str | None
        self.wt: str | None
        if key is None:
            self.mb, self.mw, self.rg, self.sc = ("mru_block[lv]", "mru_way[lv]", "rng[lv]",
                                                  "scans[lv]")
            self.wt = None
        else:
            self.mb, self.mw, self.rg = f"mb{lv}", f"mw{lv}", f"rg{lv}"
            if stamped(key[0]):  # the stamped mode's names (_lookup_stamped)
                self.lz, self.ts, self.lb = f"zo{lv}", f"ts{lv}", f"lb{lv}"
            self.sc = f"sc{lv}" if prefetched else None
            self.wt = f"wt{lv}" if self.v(POLICY) == 3 and self.v(EQ_WAYS) > 0 else None

    def m(self, col: int) -> int | None:
        """The column's value if static, else None."""
        return None if self.key is None else int(self.key[0][col])

    def v(self, col: int) -> int:
        """The column's value of a static level (what code only a static level reaches
        reads: :meth:`m` without its None)."""
        if self.key is None:
            raise TypeError(f"meta column {col}: no static value (level read through lv)")
        return int(self.key[0][col])

    def e(self, col: int) -> str:
        """The column as an expression: a literal, or a read of the meta table."""
        return f"meta[lv, {COLUMNS[col]}]" if self.key is None else str(self.key[0][col])

    def tags(self) -> tuple[str, str, str]:
        """Expressions: sectors per line (the mask's bits), the tag mask, and ``keep``, the
        word bits above the mask (:func:`tag_mask`)."""
        if self.key is None:
            return "tsec[lv]", "tmask[lv]", "tkeep[lv]"
        sec = sectors(self.key[0])
        return str(sec), str(tag_mask(self.key[0], self.wbits)), str(~((1 << sec) - 1))


class Src:
    """Lines of Python source with indentation: ``s(line)``, ``with s.block(header):``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, *lines: str) -> None:
        self.lines.extend("    " * self.depth + x for x in lines)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self(header)
        self.depth += 1
        yield
        self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _bits(bit, values: Sequence[int]) -> str:
    """An int64 whose bit j is ``bit(values[j])`` (an expression), for literal values."""
    terms = [bit(str(x)) + (f" << {j}" if j else "") for j, x in enumerate(values)]
    return " | ".join(f"({t})" for t in terms) if terms else "np.int64(0)"


# ---------------------------------------------------------------------------------------------
# The model: one level's look-up, fill, victim and hit latency
# ---------------------------------------------------------------------------------------------

def set_index(s: Src, L: Level, src: str, blk: str, out: str, kind: int | None = None,
              quot: str | None = None) -> None:
    """``out`` = the set of address ``src`` (block ``blk``) in level ``L``; with ``quot``,
    that variable = the block's tag: ``blk // sets`` for the modulo index (the quotient the
    set came from), else ``blk``."""
    kind = L.m(IDX_KIND) if kind is None else kind
    if kind is None:
        s("kind = meta[lv, IDX_KIND]")
        for k, head in enumerate(("if kind == 0:", "elif kind == 1:", "elif kind == 2:",
                                  "elif kind == 3:", "else:")):
            with s.block(head):
                set_index(s, L, src, blk, out, k, quot)
        return
    if kind != 0 and quot:
        s(f"{quot} = {blk}")
    if kind == 0:  # block % sets, without a division (engine._divider)
        q = quot or "qq"
        sets = L.m(N_SETS)
        if sets is None:
            with s.block("if meta[lv, MOD_S] < 0:"):
                s(f"{out} = np.int64(0)")
                if quot:
                    s(f"{quot} = {blk}")
            with s.block("else:"):
                s(f"{q} = np.int64(_mulhi(_U({blk}), _U(meta[lv, MOD_M])) >> _U(meta[lv, MOD_S]))",
                  f"{out} = {blk} - {q} * meta[lv, N_SETS]")
        elif sets == 1:
            s(f"{out} = np.int64(0)")
            if quot:
                s(f"{quot} = {blk}")
        elif sets & (sets - 1) == 0:  # blk >= 0: the same as blk % sets
            s(f"{out} = {blk} & {sets - 1}")
            if quot:
                s(f"{quot} = {blk} >> {sets.bit_length() - 1}")
        else:
            s(f"{q} = np.int64(_mulhi(_U({blk}), _U({L.v(MOD_M) & ((1 << 64) - 1)}))"
              f" >> _U({L.m(MOD_S)}))", f"{out} = {blk} - {q} * {sets}")
    elif kind in (1, 2):  # selected address bits, or parities of masked addresses
        def bit(x: str) -> str:
            return f"(({src} >> {x}) & 1)" if kind == 1 else f"_parity1({src} & {x})"
        if L.key is None:
            s(f"{out} = np.int64(0)")
            with s.block("for b in range(meta[lv, IDX_LEN]):"):
                s(f"{out} |= {bit('idx_param[meta[lv, IDX_OFF] + b]')} << b")
        else:
            s(f"{out} = {_bits(bit, L.key[1])}")
    elif kind == 3:  # a table indexed by block % its length
        s(f"{out} = idx_param[_P({L.e(IDX_OFF)} + {blk} % {L.e(IDX_LEN)})]")
    else:  # spread: the block's place in its page, the table's (a power of two long) XOR
        # its page's mix, then modulo the sets (SetIndex.spread_sets says it once more)
        n = L.e(IDX_LEN)
        s(f"pb = ({blk} & ~np.int64({n} - 1)) | (idx_param[_P({L.e(IDX_OFF)} + ({blk} & "
          f"({n} - 1)))] ^ np.int64(_mix(_U({blk} // {n})) & _U({n} - 1)))")
        set_index(s, L, src, "pb", out, 0)


def _front(s: Src, L: Level, ways: str, simd: list[int], f: str, word: str) -> None:
    """Way ``f`` of the set moves to the front as ``word``, ways ``0 .. f - 1`` one place
    back (``f = ways - 1``: a fill pushing the last way out): one vector intrinsic for the
    set sizes in ``simd``, else one way at a time."""
    if not simd:
        with s.block(f"for w in range({f}, 0, -1):"):
            s("way[_P(base_w + w)] = way[_P(base_w + w - 1)]")
        s(f"way[_P(base_w)] = {word}")
        return
    _by_ways(s, ways, simd, lambda w: f"_front{w}(way, _P(base_w), {f}, {word})")


def _by_ways(s: Src, ways: str, simd: list[int], call) -> None:
    """``call(w)``'s line for the set size ``ways`` among ``simd`` (the last one otherwise)."""
    for i, w in enumerate(simd):
        if len(simd) == 1:
            s(call(w))
        else:
            head = "else:" if i == len(simd) - 1 else \
                f"{'if' if i == 0 else 'elif'} {ways} == {w}:"
            with s.block(head):
                s(call(w))


def _touch(s: Src, L: Level, ways: str, simd: list[int]) -> None:
    """A hit on way ``f``: its sector fetched if not valid yet; LRU moves it to the front
    (the ways stand in recency order, so no time stamps), the others leave it in place."""
    s("jf = base_w + f", "ss = way[_P(jf)]")
    with s.block("if ss & sbit:"):
        s("hit = True")
    with s.block("else:"):
        s("ss |= sbit")
    pol = L.m(POLICY)
    if pol is None:
        with s.block("if pol == 0:"):
            _front(s, L, ways, simd, "f", "ss")
            s("j = base_w")
        with s.block("else:"):
            s("way[_P(jf)] = ss", "j = jf")
    elif pol == 0:
        _front(s, L, ways, simd, "f", "ss")
        s("j = base_w")
    else:
        s("way[_P(jf)] = ss", "j = jf")


def _fill(s: Src, L: Level, ways: str, simd: list[int]) -> None:
    """A miss: the line comes in with only this sector valid. LRU and FIFO put it at the
    front, pushing the last way (the oldest, or an invalid one) out; random and weighted
    put it in the first invalid way ``e``, or in a drawn victim's place in a full set."""
    pol = L.m(POLICY)
    if pol is None:
        with s.block("if pol <= 1:"):
            _front(s, L, ways, simd, f"{ways} - 1", "tw | sbit")
            s("j = base_w")
        with s.block("else:"):
            _fill_slot(s, L, ways, None)
    elif pol <= 1:
        _front(s, L, ways, simd, f"{ways} - 1", "tw | sbit")
        s("j = base_w")
    else:
        _fill_slot(s, L, ways, pol)


def _fill_slot(s: Src, L: Level, ways: str, pol: int | None) -> None:
    with s.block(f"if e < {ways}:"):
        s("victim = e")
    with s.block("else:"):
        _draw(s, L, ways, pol)
    s("j = base_w + victim", "way[_P(j)] = tw | sbit")


def _draw(s: Src, L: Level, ways: str, pol: int | None) -> None:
    """``victim`` = a random or weighted way of a full set: one draw from the level's
    stream; way w goes with probability weights[w] / sum (weighted)."""
    s(f"z = {L.rg} + _U(0x9E3779B97F4A7C15)", f"{L.rg} = z", "z = _mix(z)")
    if pol is None:
        with s.block("if pol == 2:"):
            _pick(s, L, ways, 2)
        with s.block("else:"):
            _pick(s, L, ways, 3)
    else:
        _pick(s, L, ways, pol)


def _pick(s: Src, L: Level, ways: str, pol: int) -> None:
    if pol == 2:
        s(f"victim = np.int64(z % _U({ways}))")
        return
    wo = L.e(W_OFF)
    total = L.wt
    if total is None:
        total = "tot"
        s("tot = 0.0")
        with s.block(f"for w in range({ways}):"):
            s(f"tot += weights[_P({wo} + w)]")
    s(f"rr = (z >> _U(11)) * (1.0 / 9007199254740992.0) * {total}",
      f"victim = {ways} - 1", "acc = 0.0")
    with s.block(f"for w in range({ways}):"):
        s(f"acc += weights[_P({wo} + w)]")
        with s.block("if rr < acc:"):
            s("victim = w", "break")


def _scan_simd(s: Src, L: Level, ways: str, simd: list[int]) -> None:
    """The set looked up by one vector intrinsic (4, 8 or 16 ways), then updated."""
    _, _, keep = L.tags()
    _by_ways(s, ways, simd, lambda w: f"res = _find{w}(way, _P(base_w), tw, {keep})")
    s("f = res & 0xFF", "e = res >> 8")
    with s.block(f"if f < {ways}:"):
        _touch(s, L, ways, simd)
    with s.block("else:"):
        _fill(s, L, ways, simd)


NEVER = -(1 << 62)  # the stamp of a line a level in the stamped mode does not hold


def _lookup_stamped(s: Src, L: Level) -> None:
    """:func:`lookup` of a :func:`stamped` level in the stamped mode (chosen for a chase by
    :func:`stamped_prologue`): the chase cannot fill it past its ways, so nothing is evicted
    and the order of its ways matters only once the chase is over. It keeps, per line the
    chase can touch (from ``L.lb`` on), the access number of its last look-up (its stamp,
    in the kernel's scratch array ``todo`` at ``L.lz`` plus the line; :data:`NEVER` while
    the level does not hold it, the ways it held before numbered ``-1, -2, ...`` from the
    most recent): a hit is a held line, a miss brings it in. :func:`stamped_epilogue`
    writes the ways back in recency order. A look-up is then a load and a store that no
    later look-up waits for, where the move to the front stores the set that the next one
    loads: a random walk over a few pages chained each access to the one before through
    the host's memory."""
    s(f"bi = (addr >> {L.m(LINE_SHIFT)}) + {L.lz}", f"hit = todo[bi] != {NEVER}",
      "todo[bi] = k")


def stamped_prologue(s: Src, L: Level) -> None:
    """Choose the stamped mode for this chase (:func:`_lookup_stamped`): if each set's valid
    ways and the lines of the addresses ``a_lo ... a_hi`` that fall in it (block modulo
    sets: consecutive blocks, so as many in each set, one more in the first ``nb % sets``
    from ``lb``'s) fit its ways, on a random order or a pattern (a sequential walk repeats
    the last line: the test of the last block that the other mode starts with is quicker
    then). ``L.lz`` is then where the stamps of line 0 would be in ``todo`` (else
    :data:`NEVER`), and each line it holds among those gets its way's stamp."""
    ways, sets, wb, shift = L.v(EQ_WAYS), L.v(N_SETS), L.v(WAY_BASE), L.v(LINE_SHIFT)
    tsec, tmask, keep = L.tags()
    s(f"{L.lb} = a_lo >> {shift}", f"nb = (a_hi >> {shift}) - {L.lb} + 1",
      f"fits = n_acc > 0 and (order == 1 or order == 2) and nb <= {sets * ways}")
    with s.block("if fits:"):
        with s.block(f"for st in range({sets}):"):
            s("nv = 0")  # valid ways come first
            with s.block(f"while nv < {ways} and way[{wb} + st * {ways} + nv] != 0:"):
                s("nv += 1")
            s(f"ns = nb // {sets} + ((st - {L.lb} % {sets} + {sets}) % {sets} < nb % {sets})")
            with s.block(f"if nv + ns > {ways}:"):
                s("fits = False", "break")
    s(f"{L.lz} = {L.at} - {L.lb} if fits else {NEVER}",
      f"{L.ts} = todo[{L.at}:{L.at} + {sets * ways}]", f"{L.ts}[:] = {NEVER}")
    with s.block(f"if {L.lz} != {NEVER}:"):
        with s.block("for bi in range(nb):"):
            s(f"b = {L.lb} + bi", f"st = b % {sets}",
              f"tg = ((b // {sets}) & {tmask}) << {tsec}")
            with s.block(f"for w in range({ways}):"):
                s(f"x = way[{wb} + st * {ways} + w]")
                with s.block("if x == 0:"):
                    s("break")
                with s.block(f"if (x & {keep}) == tg:"):
                    s(f"{L.ts}[bi] = -1 - w")


def stamped_epilogue(s: Src, L: Level) -> None:
    """The stamped mode's ways written back, set by set: the lines held, most recently
    looked up first (the ways held before and not looked up keep their stamps
    ``-1 - way``)."""
    ways, sets, wb, shift = L.m(EQ_WAYS), L.m(N_SETS), L.m(WAY_BASE), L.m(LINE_SHIFT)
    tsec, tmask, keep = L.tags()
    with s.block(f"if {L.lz} != {NEVER}:"):
        s(f"hw = np.zeros({ways}, np.int64)  # (stamp, word) of the ways held",
          f"ht = np.full({ways}, {NEVER}, np.int64)",
          f"nb = (a_hi >> {shift}) - {L.lb} + 1")
        with s.block(f"for st in range({sets}):"):
            # the set's lines among the chase's: blocks b0, b0 + sets, ... before lb + nb
            s("nh = 0", f"b0 = {L.lb} + (st - {L.lb} % {sets} + {sets}) % {sets}",
              f"sw = {wb} + st * {ways}")
            with s.block(f"for w in range({ways}):"):  # lines the chase cannot have touched
                s("x = np.int64(way[sw + w])")
                with s.block("if x == 0:"):
                    s("break")
                s("inside = False")
                with s.block(f"for b in range(b0, {L.lb} + nb, {sets}):"):
                    with s.block(f"if (x & {keep}) == (((b // {sets}) & {tmask}) << {tsec}):"):
                        s("inside = True")
                with s.block("if not inside:"):
                    s("hw[nh] = x", "ht[nh] = -1 - w", "nh += 1")
            with s.block(f"for b in range(b0, {L.lb} + nb, {sets}):"):
                with s.block(f"if {L.ts}[b - {L.lb}] != {NEVER}:"):
                    s(f"hw[nh] = (((b // {sets}) & {tmask}) << {tsec}) | 1",
                      f"ht[nh] = {L.ts}[b - {L.lb}]", "nh += 1")
            with s.block(f"for w in range({ways}):"):  # the most recent of those left, in turn
                s("best = 0")
                with s.block("for x in range(1, nh):"):
                    with s.block("if ht[x] > ht[best]:"):
                        s("best = x")
                with s.block(f"if nh > 0 and ht[best] != {NEVER}:"):
                    s("way[sw + w] = hw[best]", f"ht[best] = {NEVER}")
                with s.block("else:"):
                    s("way[sw + w] = 0")


def _scan_scalar(s: Src, L: Level, ways: str) -> None:
    """The set looked up one way at a time (other way counts; ``scalar=True``). A set's valid
    ways come first (nothing invalidates a line, fills take the first invalid way or push
    the last out), so the first invalid way ends the search."""
    _, _, keep = L.tags()
    s(f"f = {ways}", f"e = {ways}")
    with s.block(f"for w in range({ways}):"):
        s("x = way[_P(base_w + w)]")
        with s.block("if x == 0:"):
            s("e = w", "break")
        with s.block(f"if (x & {keep}) == tw:"):
            s("f = w", "break")
    with s.block(f"if f < {ways}:"):
        _touch(s, L, ways, [])
    with s.block("else:"):
        _fill(s, L, ways, [])


def lookup(s: Src, L: Level) -> None:
    """``hit`` = does level ``L`` hold ``addr``'s sector; its state updated either way (LRU
    order, sector fetched, line filled); ``j`` = the way that holds the line now (not in
    the stamped mode, :func:`_lookup_stamped`)."""
    if L.lz:
        with s.block(f"if {L.lz} != {NEVER}:"):
            _lookup_stamped(s, L)
        with s.block("else:"):
            _lookup_sets(s, L)
    else:
        _lookup_sets(s, L)


def _lookup_sets(s: Src, L: Level) -> None:
    """:func:`lookup` through the level's sets."""
    if L.key is None:
        s("pol = meta[lv, POLICY]", "shift = meta[lv, LINE_SHIFT]",
          "sshift = meta[lv, SECTOR_SHIFT]", "block = addr >> shift",
          "sbit = np.int64(1) << ((addr >> sshift) & ((np.int64(1) << (shift - sshift)) - 1))")
    else:
        shift, sshift = L.v(LINE_SHIFT), L.v(SECTOR_SHIFT)
        s(f"block = addr >> {shift}")
        s(f"sbit = np.int64(1) << ((addr >> {sshift}) & {(1 << (shift - sshift)) - 1})"
          if shift > sshift else "sbit = np.int64(1)")
    s("hit = False")
    # the block this level saw last is still where it was put: no set scan, and it is
    # already the most recent in its set (LRU order needs no update)
    with s.block(f"if block == {L.mb}:"):
        s(f"j = {L.mw}", "ss = way[_P(j)]")
        with s.block("if ss & sbit:"):
            s("hit = True")
        with s.block("else:"):  # sector miss: the line stays, the sector is fetched
            s("way[_P(j)] = ss | sbit")
    with s.block("else:"):
        eq = L.m(EQ_WAYS)
        if L.ix:  # worked out ahead (_Static.index_ahead): first way word, tag word
            s(f"px = {L.ix}[k & (2 * CHUNK - 1)]", "tw = px & 0xFFFFFFFF", "base_w = px >> 32")
        else:
            set_index(s, L, "addr", "block", "st", quot="q")
            tsec, tmask, _ = L.tags()
            s(f"tw = (q & {tmask}) << {tsec}")
        if L.sc:
            s(f"{L.sc} += 1")
        counts: list[int]
        if L.ix:
            ways, counts = str(eq), [L.v(EQ_WAYS)]
        elif L.key is None:
            ways, counts = "ways", list(SIMD_WAYS) + [0]
            s("ways = meta[lv, EQ_WAYS]")
            with s.block("if ways > 0:"):  # equal sets: no set_off look-up (a host cache miss)
                s("base_w = meta[lv, WAY_BASE] + st * ways")
            with s.block("else:"):
                s("sid = meta[lv, SET_BASE] + st", "base_w = set_off[_P(sid)]",
                  "ways = set_ways[_P(sid)]")
        elif L.v(EQ_WAYS) > 0:
            ways, counts = str(eq), [L.v(EQ_WAYS)]
            s(f"base_w = {L.m(WAY_BASE)} + st * {eq}")
        else:
            ways, counts = "nw", list(L.key[3])
            s(f"sid = {L.m(SET_BASE)} + st", "base_w = set_off[_P(sid)]",
              "nw = set_ways[_P(sid)]")
        simd = [w for w in SIMD_WAYS if w in counts]
        if not simd:
            _scan_scalar(s, L, ways)
        elif len(simd) == len(counts):
            _scan_simd(s, L, ways, simd)
        else:
            cond = " or ".join(f"{ways} == {w}" for w in simd)
            with s.block(f"if not scalar and ({cond}):" if L.key is None else f"if {cond}:"):
                _scan_simd(s, L, ways, simd)
            with s.block("else:"):
                _scan_scalar(s, L, ways)
        s(f"{L.mb} = block", f"{L.mw} = j")


def _slow_far(s: Src, p: str, var: str) -> None:
    """A far hit is slow (``slowc[p]``: its share, its latency) on a draw from the recorded
    access's number and the chase's noise seed: the same draw in either kernel."""
    with s.block(f"if slowc[{p}, 0] > 0.0:"):
        s("z = _mix(_U(k) * _U(0x9E3779B97F4A7C15) + _U(noise_seed))")
        with s.block(f"if np.float64(z >> _U(11)) * {2.0 ** -53!r} < slowc[{p}, 0]:"):
            s(f"{var} = slowc[{p}, 1]")


def hit_latency(s: Src, L: Level, p: int | None) -> None:
    """``lat`` = a hit's latency at path position ``p``: near or far partition (``hitc``,
    ``farc`` include the SM's offset; a share of far hits slow, ``slowc``), or on a sliced
    level the SM's latency to the line's slice (``slicec``), plus the access's TLB penalties
    ``pen``."""
    if L.key is None:
        s("c = hitc[p]")
        with s.block("if meta[lv, PARTS] > 1:"):  # which partition is home, and is it ours?
            s("home = np.int64(0)")
            with s.block("for b in range(meta[lv, PART_LEN]):"):
                s("home |= _parity1(addr & idx_param[meta[lv, PART_OFF] + b]) << b")
            with s.block("if home != homes[p]:"):
                s("c = farc[p]")
                _slow_far(s, "p", "c")
        with s.block("if meta[lv, SLICE_LEN] > 0:"):  # the line's slice, as far as this SM
            s("sl = np.int64(0)")
            with s.block("for b in range(meta[lv, SLICE_LEN]):"):
                s("sl |= _parity1(addr & idx_param[meta[lv, SLICE_OFF] + b]) << b")
            s("c = slicec[p, sl]")
        with s.block("if meta[lv, SLUT_BITS] > 0:"):  # by the table of a page's lines
            s("tb = meta[lv, SLUT_BITS]", "tls = meta[lv, LINE_SHIFT]",
              "to = meta[lv, SLICE_OFF]",
              "pg = (addr >> (tls + tb)) - idx_param[to + (1 << tb)]",
              "tfp = idx_param[to + (1 << tb) + 1]")
            with s.block("if tfp >= 0:"):
                s(f"pg += (footprint ^ tfp) * {BUFFER_MIX}")
            s("sl = idx_param[to + (((addr >> tls) ^ np.int64(_mix(_U(pg)) >> _U(64 - tb))) "
              "& ((1 << tb) - 1))]", "c = slicec[p, sl]")
        s("lat = c + pen")
    elif L.v(SLICE_LEN) > 0:
        s(f"sl = {_bits(lambda x: f'_parity1(addr & {x})', L.key[4])}",
          f"lat = slicec[{p}, sl] + pen")
    elif L.v(SLUT_BITS) > 0:
        b, ls, to = L.v(SLUT_BITS), L.v(LINE_SHIFT), L.v(SLICE_OFF)
        s(f"pg = (addr >> {ls + b}) - idx_param[{to + (1 << b)}]")
        with s.block(f"if idx_param[{to + (1 << b) + 1}] >= 0:"):
            s(f"pg += (footprint ^ idx_param[{to + (1 << b) + 1}]) * {BUFFER_MIX}")
        s(f"sl = idx_param[{to} + (((addr >> {ls}) ^ np.int64(_mix(_U(pg)) >> _U({64 - b}))) "
          f"& {(1 << b) - 1})]", f"lat = slicec[{p}, sl] + pen")
    elif L.v(PARTS) > 1:
        s(f"home = {_bits(lambda x: f'_parity1(addr & {x})', L.key[2])}")
        with s.block(f"if home != home{p}:"):
            s(f"c = fc{p}")
            _slow_far(s, str(p), "c")
            s("lat = c + pen")
        with s.block("else:"):
            s(f"lat = hc{p} + pen")
    else:
        s(f"lat = hc{p} + pen")


# ---------------------------------------------------------------------------------------------
# The kernel around it: chain generation, prefetch, the walk down the path, timer noise
# ---------------------------------------------------------------------------------------------

ARGS = ("way, rng, clock, meta, set_ways, set_off, idx_param, weights, hitc, farc, homes, "
        "slowc, slicec, tlbc, "
        "steps, step_pos, tlb_done, pf_cand, dram_latency, page_walk, base, footprint, stride, "
        "element, order, fp, pattern, warmup, record, overhead, jitter, outlier_rate, "
        "outlier_cycles, noise_seed, out_lat, out_idx, out_level, scalar, wbits")

#: The arguments of ``_chain``, the chain's next offsets (:func:`_chain_chunk`).
CHAIN_ARGS = ("chunk, todo, pattern, fp, k, gen, n_acc, order, cur, pos_l, pos_p, footprint, "
              "stride, element")

HEADER = f"""\
# Generated by gpumem.sim.model: a pointer-chase kernel.
import numba as nb
import numpy as np

from gpumem.sim.primitives import (CHUNK, _P, _U, _find4, _find8, _find16, _front4, _front8,
                                   _front16, _mix, _mulhi, _parity1, _permute_step,
                                   _prefetch, _timer_noise)

{", ".join(COLUMNS)} = range({len(COLUMNS)})
"""


def source(path_ids: Sequence[int] | None = None, path_keys: Sequence[tuple] = (),
           tlb_first: int = 0, tlb_keys: Sequence[tuple] = (), wbits: int = NARROW) -> str:
    """Python source of ``_chase``: the generic kernel, or with ``path_ids`` the kernel for
    that path (levels ``path_ids`` with static parameters ``path_keys``, see
    :func:`gpumem.sim.specialise.level_key`), TLB levels ``tlb_first ...`` (``tlb_keys``) and
    way words of ``wbits`` (:data:`NARROW`, :data:`WIDE`; the generic kernel reads them from
    its argument ``wbits``). Both take :data:`ARGS`; each ignores what it does not need."""
    s = Src()
    # no cache=True: Numba would keep its cache wherever NUMBA_CACHE_DIR says; the private
    # cache is attached by gpumem.sim.specialise
    s(HEADER, "")
    # the chain's offsets are worked out by a function of their own, called once a chunk:
    # inlined, its loops made the hot loop's code slower (an L1-resident chase by 7%)
    s('@nb.njit(boundscheck=False, nogil=True, inline="never")', f"def _chain({CHAIN_ARGS}):")
    s.depth = 1
    _chain_chunk(s)
    s("return cur, pos_l, pos_p")
    s.depth = 0
    if path_ids is None:
        kernel: _Generic | _Static = _Generic()
    else:
        kernel = _Static(path_ids, path_keys, tlb_first, tlb_keys, wbits)
    kernel.index_function(s)
    s("", "", "@nb.njit(boundscheck=False, nogil=True)", f"def _chase({ARGS}):")
    s.depth = 1
    s("cur = np.int64(0)  # element index (sequential order)",
      "t0 = clock[0]", "n_acc = warmup + record",
      "# byte offsets of the accesses, computed up to two chunks ahead in a ring",
      "chunk = np.empty(2 * CHUNK, np.int64)", "gen = np.int64(0)  # accesses computed so far",
      "pos_l = np.int64(0)  # (k + r) % n_lines, kept as a counter (no division per access)",
      "pos_p = np.int64(0)  # (k + r) % len(pattern)",
      "plen = hitc.shape[0]", "j = np.int64(0)", "victim = np.int64(0)")
    # positions of the chunk still cycle walking; after them, the stamped levels' stamps
    s(f"todo = np.empty(2 * CHUNK + {kernel.stamp_words}, np.int64)")
    kernel.prologue(s)
    with s.block("for k in range(n_acc):"):
        with s.block("if k % CHUNK == 0:"):
            s("g0 = gen", f"cur, pos_l, pos_p = _chain({CHAIN_ARGS})",
              "gen = min(k + 2 * CHUNK, n_acc)")
            kernel.index_ahead(s)
            kernel.choose_prefetched(s)
        s("off = chunk[k & (2 * CHUNK - 1)]", "addr = base + off")
        kernel.prefetch(s)
        s("pen = 0.0", "lvl = plen")
        kernel.walk(s)
        _record(s, kernel)
    kernel.epilogue(s)
    _noise(s)
    s("clock[0] = t0 + warmup + record")
    return s.text()


class _Generic:
    """The generic kernel's parts: per-level state in arrays indexed by level, the path from
    the ``steps`` table, one look-up body for every level."""

    stamp_words = 0

    def index_function(self, s: Src) -> None:
        pass

    def index_ahead(self, s: Src) -> None:
        pass

    def prologue(self, s: Src) -> None:
        s("n_steps = steps.shape[0]", "n_levels = meta.shape[0]",
          "mru_block = np.full(n_levels, -1, np.int64)  # last block each level looked up",
          "mru_way = np.zeros(n_levels, np.int64)  # ... and where it sits",
          "scans = np.zeros(n_levels, np.int64)  # set scans per level in this chunk",
          "n_cand = pf_cand.shape[0]", "pf = pf_cand.copy()", "n_pf = n_cand",
          "pos_lv = np.zeros(max(plen, 1), np.int64)  # the level at each path position",
          "# each level's way words: sector-mask bits, tag mask, the bits above the mask",
          "tsec = np.empty(n_levels, np.int64)", "tmask = np.empty(n_levels, np.int64)",
          "tkeep = np.empty(n_levels, np.int64)")
        with s.block("for lv in range(n_levels):"):
            s("tsec[lv] = np.int64(1) << (meta[lv, LINE_SHIFT] - meta[lv, SECTOR_SHIFT])",
              "tmask[lv] = (np.int64(1) << max(0, wbits - tsec[lv])) - 1",
              "tkeep[lv] = ~((np.int64(1) << tsec[lv]) - 1)")
        with s.block("for i in range(n_steps):"):
            with s.block("if step_pos[i] >= 0:"):
                s("pos_lv[step_pos[i]] = steps[i]")
        s(f"pf_step = {HOST_LINE // word_bytes(NARROW)} if wbits == {NARROW} else "
          f"{HOST_LINE // word_bytes(WIDE)}  # way words a host cache line")

    def choose_prefetched(self, s: Src) -> None:
        """Prefetch only levels that did set scans in the last chunk: an L1-resident chase
        would pay for prefetches it never uses."""
        with s.block("if k > 0:"):
            s("n_pf = 0")
            with s.block("for i in range(n_cand):"):
                with s.block("if scans[pf_cand[i]] >= CHUNK // 8:"):
                    s("pf[n_pf] = pf_cand[i]", "n_pf += 1")
            s("scans[:] = 0")

    def prefetch(self, s: Src) -> None:
        """The big levels' sets that access k + PF_DIST will look up: their host cache lines
        are fetched now, which hides the host's memory latency on random orders."""
        with s.block(f"if n_pf > 0 and k + {PF_DIST} < n_acc:"):
            s(f"a2 = base + chunk[(k + {PF_DIST}) & (2 * CHUNK - 1)]")
            with s.block("for i in range(n_pf):"):
                s("lv = pf[i]", "b2 = a2 >> meta[lv, LINE_SHIFT]")
                set_index(s, Level(), "a2", "b2", "s2", kind=0)
                s("ew = meta[lv, EQ_WAYS]", "j0 = meta[lv, WAY_BASE] + s2 * ew")
                with s.block("for jj in range(j0, j0 + ew, pf_step):"):
                    s("_prefetch(way, _P(jj))")

    def walk(self, s: Src) -> None:
        s("i = 0")
        with s.block("while True:"):
            with s.block("if i == n_steps:"):
                s("lvl = plen", "break")
            s("lv = steps[i]")
            lookup(s, Level())
            s("p = step_pos[i]")
            with s.block("if p < 0:"):  # TLB level -1 - p; all missed: the page walk is paid
                with s.block("if hit:"):
                    s("i = tlb_done")
                with s.block("else:"):
                    s("pen += tlbc[-1 - p]", "i += 1")
                    with s.block("if i == tlb_done:"):
                        s("pen += page_walk")
                s("continue")
            with s.block("if hit:"):
                s("lvl = p", "break")
            s("i += 1")

    def latency(self, s: Src) -> None:
        """``lat`` of a recorded access served at path position ``lvl`` (``plen``: DRAM)."""
        with s.block("if lvl == plen:"):
            s("lat = dram_latency + pen")
        with s.block("else:"):
            s("p = lvl", "lv = pos_lv[p]")
            hit_latency(s, Level(), None)

    def epilogue(self, s: Src) -> None:
        pass


class _Static:
    """A path's kernel's parts: per-level state in locals, the levels unrolled in visiting
    order, each with its own literals."""

    def __init__(self, path_ids: Sequence[int], path_keys: Sequence[tuple], tlb_first: int,
                 tlb_keys: Sequence[tuple], wbits: int):
        self.plen, self.n_tlb, self.wbits = len(path_ids), len(tlb_keys), wbits
        self.order = visit_order(path_ids, [bool(k[0][TRANSLATE]) for k in path_keys],
                                 tlb_first, len(tlb_keys))
        keys = dict(zip(path_ids, path_keys, strict=True)) | {
            tlb_first + t: k for t, k in enumerate(tlb_keys)}
        self.pf = [lv for lv in keys if prefetch_candidate(keys[lv][0], wbits)]
        self.levels = {lv: Level(lv, k, lv in self.pf, wbits) for lv, k in keys.items()}
        self.stamp_words = 0  # the stamped levels' stamps, at 2 * CHUNK + ... in todo
        for L in self.levels.values():
            if L.lz:
                L.at = f"2 * CHUNK + {self.stamp_words}"
                self.stamp_words += L.v(EQ_WAYS) * L.v(N_SETS)
        # the path's caches of equal sets indexed by block modulo sets: their set and tag
        # words worked out a chunk ahead (in words of at most 31 bits: both fit an int64)
        self.ahead = [L for L in (self.levels[lv] for lv, p in self.order if p >= 0)
                      if wbits <= NARROW and L.v(IDX_KIND) == 0 and L.v(EQ_WAYS) > 0
                      and L.v(N_SETS) > 1]
        #: the rings of :attr:`ahead`, one per level, as the kernel's locals are named
        self.ix_names = [f"ix{i}" for i in range(len(self.ahead))]
        for L, ix in zip(self.ahead, self.ix_names, strict=True):
            L.ix = ix

    def index_function(self, s: Src) -> None:
        """``_index``: the set and tag words of the accesses at ring positions ``g0 ...
        gen - 1`` (one run of the ring, as :func:`_chain_chunk` fills it) of each level in
        :attr:`ahead`: ``(first way word) << 32 | tag word``. Worked out here, a chunk at a
        time, not in the hot loop: there a block's division by the sets took a 128-bit
        multiply per level and access, twice for a prefetched level, and its registers;
        here a loop that the compiler vectorises divides in doubles (``fast``: addresses
        below 2**51, so the quotient is off by at most one, then corrected: exact), else
        by the multiply."""
        if not self.ahead:
            return
        s("", "", '@nb.njit(boundscheck=False, nogil=True, inline="never")',
          f"def _index(chunk, {', '.join(self.ix_names)}, g0, gen, base, fast):")
        s.depth = 1
        s("a0 = _P(g0 & (2 * CHUNK - 1))", "b0 = a0 + _P(gen - g0)")
        for fast in (True, False):
            with s.block("if fast:" if fast else "else:"):
                with s.block("for i in range(a0, b0):"):
                    s("a = base + chunk[i]")
                    for L in self.ahead:
                        self._index_one(s, L, fast)
        s.depth = 0

    @staticmethod
    def _index_one(s: Src, L: Level, fast: bool) -> None:
        sets, shift, ways, wb = L.v(N_SETS), L.v(LINE_SHIFT), L.v(EQ_WAYS), L.v(WAY_BASE)
        tsec, tmask, _ = L.tags()
        s(f"blk = a >> {shift}")
        if sets & (sets - 1) == 0:
            s(f"r = blk & {sets - 1}", f"q = blk >> {sets.bit_length() - 1}")
        elif fast:  # q within one of blk // sets (blk < 2**51): corrected without a branch
            s(f"q = np.int64(np.float64(blk) * {1.0 / sets!r})", f"r = blk - q * {sets}",
              "c = r >> 63", "q += c", f"r += c & {sets}",
              f"c = ({sets - 1} - r) >> 63", "q -= c", f"r -= c & {sets}")
        else:
            set_index(s, L, "a", "blk", "r", quot="q")
        s(f"{L.ix}[i] = (({wb} + r * {ways}) << 32) | ((q & {tmask}) << {tsec})")

    def index_ahead(self, s: Src) -> None:
        if self.ahead:
            s(f"_index(chunk, {', '.join(self.ix_names)}, g0, gen, base, fast)")

    def prologue(self, s: Src) -> None:
        for p in range(self.plen):
            s(f"hc{p} = hitc[{p}]", f"fc{p} = farc[{p}]", f"home{p} = homes[{p}]")
        for t in range(self.n_tlb):
            s(f"tc{t} = tlbc[{t}]")
        for lv, L in self.levels.items():
            s(f"{L.mb} = np.int64(-1)", f"{L.mw} = np.int64(0)")
            if L.v(POLICY) >= 2:
                s(f"{L.rg} = rng[{lv}]")
            if L.wt:
                s(f"{L.wt} = 0.0")
                with s.block(f"for w in range({L.m(EQ_WAYS)}):"):
                    s(f"{L.wt} += weights[{L.m(W_OFF)} + w]")
        for lv in self.pf:
            s(f"sc{lv} = np.int64(0)", f"pf{lv} = True")
        for L in self.ahead:
            s(f"{L.ix} = np.empty(2 * CHUNK, np.int64)")
        if self.ahead:
            s("fast = base + (pattern.max() if order == 2 else max(footprint - 1, 0)) "
              "< (1 << 51)")
        if any(L.lz for L in self.levels.values()):
            s("# the addresses the chase can touch", "a_lo = base",
              "a_hi = base + max(footprint - 1, 0)")
            with s.block("if order == 2:"):
                s("a_lo = base + pattern.min()", "a_hi = base + pattern.max()")
            for L in self.levels.values():
                if L.lz:
                    stamped_prologue(s, L)

    def choose_prefetched(self, s: Src) -> None:
        if self.pf:
            with s.block("if k > 0:"):
                for lv in self.pf:
                    s(f"pf{lv} = sc{lv} >= CHUNK // 8", f"sc{lv} = 0")

    def prefetch(self, s: Src) -> None:
        if not self.pf:
            return
        with s.block(f"if k + {PF_DIST} < n_acc:"):
            if any(not self.levels[lv].ix for lv in self.pf):  # an address to index
                s(f"a2 = base + chunk[(k + {PF_DIST}) & (2 * CHUNK - 1)]")
            for lv in self.pf:
                L = self.levels[lv]
                with s.block(f"if pf{lv}:"):
                    if L.ix:
                        s(f"j0 = {L.ix}[(k + {PF_DIST}) & (2 * CHUNK - 1)] >> 32")
                    else:
                        s(f"b2 = a2 >> {L.v(LINE_SHIFT)}")
                        set_index(s, L, "a2", "b2", "s2")
                        s(f"j0 = {L.v(WAY_BASE)} + s2 * {L.v(EQ_WAYS)}")
                    for d in range(0, L.v(EQ_WAYS), HOST_LINE // word_bytes(self.wbits)):
                        s(f"_prefetch(way, _P(j0 + {d}))")

    def walk(self, s: Src) -> None:
        tlbs = [(lv, -1 - p) for lv, p in self.order if p < 0]
        with s.block("while True:"):
            for lv, p in self.order:
                if p >= 0:
                    lookup(s, self.levels[lv])
                    with s.block("if hit:"):
                        s(f"lvl = {p}", "break")
                elif p == -1:  # all TLB levels at once; all missed: the page walk is paid
                    with s.block("while True:"):
                        for tlv, t in tlbs:
                            lookup(s, self.levels[tlv])
                            with s.block("if hit:"):
                                s("break")
                            s(f"pen += tc{t}")
                        s("pen += page_walk", "break")
            s(f"lvl = {self.plen}", "break")

    def latency(self, s: Src) -> None:
        """``lat`` of a recorded access served at path position ``lvl``."""
        by_pos = {p: lv for lv, p in self.order if p >= 0}
        for p in range(self.plen):
            with s.block(f"{'if' if p == 0 else 'elif'} lvl == {p}:"):
                hit_latency(s, self.levels[by_pos[p]], p)
        with s.block("else:" if self.plen else "if True:"):
            s("lat = dram_latency + pen")

    def epilogue(self, s: Src) -> None:
        for lv, L in self.levels.items():
            if L.lz:
                stamped_epilogue(s, L)
            if L.v(POLICY) >= 2:
                s(f"rng[{lv}] = {L.rg}")


def _chain_chunk(s: Src) -> None:
    """The chain's next byte offsets, up to two chunks ahead (same order as
    gpumem.contracts.chains).
    The random order's cycle walking goes a step at a time over the whole chunk, as
    ``chains.permute_vec`` does: one value in four needs a second step on a footprint of
    3 * 2**k lines, and a branch on that per value costs more than the step."""
    s("n_elem = footprint // element", "s_elem = stride // element",
      "n_lines = footprint // stride", "s_per_block = stride // element",
      "n_pat = pattern.shape[0]", "hi = min(k + 2 * CHUNK, n_acc)")
    with s.block("if order == 1:"):
        # the permutation (chains.permutation_params), as uint64
        s("pmask = (_U(1) << _U(fp[0])) - _U(1)", "psh = _U((fp[0] + 1) // 2)",
          "pk0, pk1, pk2, pk3, pn = _U(fp[1]), _U(fp[2]), _U(fp[3]), _U(fp[4]), _U(fp[5])")
        # positions gen ... hi - 1 lie in the ring without wrapping round (gen is 0 or a
        # chunk past k), so each pass is a loop over one run of it; indices as uintp: no
        # negative-index check, the step's loop is vectorised
        s("a0 = _P(gen & (2 * CHUNK - 1))", "b0 = a0 + _P(hi - gen)")
        with s.block("for i in range(a0, b0):"):
            s("chunk[i] = pos_l", "pos_l += 1")
            with s.block("if pos_l == n_lines:"):
                s("pos_l = 0")
        with s.block("for i in range(a0, b0):"):
            s("chunk[i] = np.int64(_permute_step(_U(chunk[i]), pmask, psh, pk0, pk1, pk2, "
              "pk3))")
        s("nr = np.int64(0)  # the positions whose value is still outside the chain")
        with s.block("for i in range(a0, b0):"):
            s("todo[_P(nr)] = i", "nr += _U(chunk[i]) >= pn")
        with s.block("while nr > 0:"):  # kept in order, in place: the writes trail the reads
            s("n2 = np.int64(0)")
            with s.block("for i in range(_P(nr)):"):
                s("r = _P(todo[i])",
                  "v = _permute_step(_U(chunk[r]), pmask, psh, pk0, pk1, pk2, pk3)",
                  "chunk[r] = np.int64(v)", "todo[_P(n2)] = r", "n2 += v >= pn")
            s("nr = n2")
        with s.block("for i in range(a0, b0):"):
            s("chunk[i] *= stride")
    with s.block("else:"):
        with s.block("for r in range(gen, hi):"):
            with s.block("if order == 0:"):
                s("chunk[r & (2 * CHUNK - 1)] = cur * element", "cur += s_elem")
                with s.block("if cur >= n_elem:"):
                    s("cur -= n_elem")
            with s.block("elif order == 2:"):
                s("chunk[r & (2 * CHUNK - 1)] = pattern[pos_p]", "pos_p += 1")
                with s.block("if pos_p == n_pat:"):
                    s("pos_p = 0")
            with s.block("else:"):  # chains.scatter_vec, one block at a time
                s("blk = pos_l", "pos_l += 1")
                with s.block("if pos_l == n_lines:"):
                    s("pos_l = 0")
                s("z = (_U(blk) + _U(fp[6])) * _U(0x9E3779B97F4A7C15)", "z ^= z >> _U(29)",
                  "z *= _U(0xBF58476D1CE4E5B9)", "z ^= z >> _U(32)",
                  "chunk[r & (2 * CHUNK - 1)] = blk * stride"
                  " + np.int64(z % _U(s_per_block)) * element")


def _record(s: Src, kernel) -> None:
    """A recorded access: its latency (worked out only here: the warm-up needs none; timer
    noise is added after the loop, in one pass: :func:`gpumem.sim.primitives._timer_noise`),
    the element read, the level that served it."""
    with s.block("if k >= warmup:"):
        kernel.latency(s)
        s("i = k - warmup", "out_lat[i] = lat", "out_idx[i] = off // element",
          "out_level[i] = lvl")


def _noise(s: Src) -> None:
    """The timer's overhead, jitter and outliers on every recorded latency, rounded."""
    s("_timer_noise(out_lat, overhead, jitter, outlier_rate, outlier_cycles, noise_seed, "
      "scalar)")
