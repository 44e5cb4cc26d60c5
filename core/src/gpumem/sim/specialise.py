"""Pointer-chase kernels specialised to one load path of one hierarchy.

The generic kernel (:func:`gpumem.sim.engine._chase`) reads every level's geometry from the
``meta`` table on every access and walks the path with a small state machine (which level
next, when to splice the TLBs in). For long chases that bookkeeping, not the set scans, is most
of the time. Here the path's level sequence is unrolled in visiting order (caches, the TLB
levels spliced in before the first physically tagged cache or before DRAM) and each level's
static parameters (shifts, sets, ways, policy, index function and its bits or masks, partition
masks, offsets into the flat arrays) become literals in generated Python source, compiled once
per distinct specialisation with Numba. Each level's "last block looked up" lives in a local
variable, not an array. Way-array indices are cast to unsigned, so no negative-index
wraparound is compiled in.

The results are bit-identical to the generic kernel's: same set index, same scan (the SIMD
intrinsics of :mod:`engine` for 4, 8 and 16 ways, the same one-way-at-a-time scan otherwise),
same victims and random draws, same floating-point operations in the same order.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import stat
import sys
import tempfile
import threading
import types as pytypes
from pathlib import Path

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from gpumem.sim import engine as E

_CACHE: dict[tuple, object] = {}
_LOCK = threading.Lock()


@intrinsic
def _parity1(typingctx, x):
    """Parity of an int64's 64 bits (llvm.ctpop & 1): equal to :func:`engine._parity`."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = builder.module.declare_intrinsic("llvm.ctpop", [i64])
        return builder.and_(builder.call(fn, [args[0]]), ir.Constant(i64, 1))

    return sig, codegen


def level_key(h: E.Hierarchy, lv: int) -> tuple:
    """Everything about level ``lv`` that the generated code takes as a literal."""
    m = [int(x) for x in h.meta[lv]]
    kind = m[E.IDX_KIND]
    params = tuple(int(x) for x in h.idx_param[m[E.IDX_OFF]:m[E.IDX_OFF] + m[E.IDX_LEN]]) \
        if kind in (1, 2) else ()
    parts = tuple(int(x) for x in h.idx_param[m[E.PART_OFF]:m[E.PART_OFF] + m[E.PART_LEN]]) \
        if m[E.PARTS] > 1 else ()
    if m[E.EQ_WAYS] > 0:
        way_counts: tuple = ()
    else:
        sb = m[E.SET_BASE]
        way_counts = tuple(sorted({int(x) for x in h.set_ways[sb:sb + m[E.N_SETS]]}))
    return (tuple(m), params, parts, way_counts)


# Prefetch distance (accesses ahead) of the big levels' sets. The generic kernel's 64 is too
# far for this one, which runs twice as fast: hopper far-L2 random 27 (64) -> 30 M/s (16);
# 8, 16 and 24 are within noise, 128 slower.
PF_DIST = 16


def _or(terms: list[str]) -> str:
    return " | ".join(f"({t})" for t in terms) if terms else "np.int64(0)"


def _set_index(lines: list[str], ind: str, lv: int, m: list[int], params: tuple,
               src: str, blk: str, out: str) -> None:
    """Lines that compute level ``lv``'s set of address ``src`` / block ``blk`` into ``out``."""
    kind = m[E.IDX_KIND]
    sets = m[E.N_SETS]
    if kind == 0:
        if sets == 1:
            lines.append(f"{ind}{out} = np.int64(0)")
        elif sets & (sets - 1) == 0:  # blk >= 0: the same as blk % sets
            lines.append(f"{ind}{out} = {blk} & {sets - 1}")
        else:
            mm = m[E.MOD_M] & ((1 << 64) - 1)
            lines.append(f"{ind}{out} = {blk} - np.int64(_mulhi(_U({blk}), _U({mm}))"
                         f" >> _U({m[E.MOD_S]})) * {sets}")
    elif kind == 1:
        terms = [f"(({src} >> {b}) & 1)" + (f" << {j}" if j else "")
                 for j, b in enumerate(params)]
        lines.append(f"{ind}{out} = {_or(terms)}")
    elif kind == 2:
        terms = [f"_parity1({src} & {mask})" + (f" << {j}" if j else "")
                 for j, mask in enumerate(params)]
        lines.append(f"{ind}{out} = {_or(terms)}")
    else:
        lines.append(f"{ind}{out} = idx_param[_P({m[E.IDX_OFF]} + {blk} % {m[E.IDX_LEN]})]")


def _fill_victim(lines: list[str], ind: str, lv: int, pol: int, ways: str, wo: int,
                 total: str) -> None:
    """Lines that draw a random or weighted victim of a full set (``pol`` 2 or 3)."""
    lines.append(f"{ind}z = rg{lv} + _U(0x9E3779B97F4A7C15)")
    lines.append(f"{ind}rg{lv} = z")
    lines.append(f"{ind}z = _mix(z)")
    if pol == 2:
        lines.append(f"{ind}victim = np.int64(z % _U({ways}))")
    else:
        lines.append(f"{ind}rr = (z >> _U(11)) * (1.0 / 9007199254740992.0) * {total}")
        lines.append(f"{ind}victim = {ways} - 1")
        lines.append(f"{ind}acc = 0.0")
        lines.append(f"{ind}for w in range({ways}):")
        lines.append(f"{ind}    acc += weights[_P({wo} + w)]")
        lines.append(f"{ind}    if rr < acc:")
        lines.append(f"{ind}        victim = w")
        lines.append(f"{ind}        break")


def _touch(lines: list[str], ind: str, pol: int) -> None:
    """A hit on way ``j``: stamp it (LRU), and fetch the sector if it is not valid yet."""
    a = lines.append
    a(f"{ind}ss = way[_P(j + 1)]")
    if pol == 0:
        a(f"{ind}ss = (now << 32) | (ss & 0xFFFFFFFF)")
    a(f"{ind}if ss & sbit:")
    a(f"{ind}    hit = True")
    a(f"{ind}else:")
    a(f"{ind}    ss |= sbit")
    a(f"{ind}way[_P(j + 1)] = ss")


def _lookup(lines: list[str], ind: str, lv: int, key: tuple, pf: bool) -> None:
    """Lines that look ``addr`` up in level ``lv`` and set ``hit``: the generic kernel's
    per-level body with this level's constants inlined."""
    m, params, _parts, way_counts = key
    m = list(m)
    shift, sshift = m[E.LINE_SHIFT], m[E.SECTOR_SHIFT]
    pol = m[E.POLICY]
    wo = m[E.W_OFF]
    a = lines.append
    a(f"{ind}block = addr >> {shift}")
    if shift > sshift:
        a(f"{ind}sbit = np.int64(1) << ((addr >> {sshift}) & {(1 << (shift - sshift)) - 1})")
    else:
        a(f"{ind}sbit = np.int64(1)")
    a(f"{ind}hit = False")
    a(f"{ind}if block == mb{lv}:")
    a(f"{ind}    j = mw{lv}")
    a(f"{ind}    ss = way[_P(j + 1)]")
    a(f"{ind}    if ss & sbit:")
    a(f"{ind}        hit = True")
    a(f"{ind}    else:")
    a(f"{ind}        way[_P(j + 1)] = ss | sbit")
    a(f"{ind}else:")
    i2 = ind + "    "
    _set_index(lines, i2, lv, m, params, "addr", "block", "st")
    if pf:
        a(f"{i2}sc{lv} += 1")
    eq = m[E.EQ_WAYS]
    if eq > 0:
        a(f"{i2}base_w = {m[E.WAY_BASE]} + st * {eq}")
        branches = [(None, eq)]
    else:
        a(f"{i2}sid = {m[E.SET_BASE]} + st")
        a(f"{i2}base_w = set_off[_P(sid)]")
        a(f"{i2}nw = set_ways[_P(sid)]")
        simd = [w for w in way_counts if w in (4, 8, 16)]
        branches = [(f"nw == {w}", w) for w in simd]
        if len(simd) < len(way_counts):
            branches.append((None, "nw"))
        else:  # every set has a SIMD way count: the last branch needs no test
            branches[-1] = (None, branches[-1][1])
    total = f"wt{lv}" if eq > 0 else "tot"
    for bi, (cond, ways) in enumerate(branches):
        if cond is not None:
            a(f"{i2}{'if' if bi == 0 else 'elif'} {cond}:")
            i3 = i2 + "    "
        elif bi > 0:
            a(f"{i2}else:")
            i3 = i2 + "    "
        else:
            i3 = i2
        if pol == 3 and eq == 0:
            a(f"{i3}tot = 0.0")
            a(f"{i3}for w in range({ways}):")
            a(f"{i3}    tot += weights[_P({wo} + w)]")
        if ways in (4, 8, 16):
            a(f"{i3}jb = 2 * base_w")
            a(f"{i3}res = _scan{ways}(way, jb, block, now << 32)")
            a(f"{i3}fw = res & 0xFF")
            a(f"{i3}if fw < {ways}:")
            a(f"{i3}    j = jb + 2 * fw")
            _touch(lines, i3 + "    ", pol)
            a(f"{i3}else:")
            a(f"{i3}    e = (res >> 8) & 0xFF")
            a(f"{i3}    if e < {ways}:")
            a(f"{i3}        victim = e")
            a(f"{i3}    else:")
            if pol <= 1:
                a(f"{i3}        victim = (res >> 16) & 0xFF")
            else:
                _fill_victim(lines, i3 + "        ", lv, pol, str(ways), wo, total)
            a(f"{i3}    j = jb + 2 * victim")
            a(f"{i3}    way[_P(j)] = block")
            a(f"{i3}    way[_P(j + 1)] = (now << 32) | sbit")
        else:
            a(f"{i3}found = False")
            a(f"{i3}empty = -1")
            a(f"{i3}victim = 0")
            a(f"{i3}oldest = now << 32")
            a(f"{i3}for w in range({ways}):")
            a(f"{i3}    j = 2 * (base_w + w)")
            a(f"{i3}    tg = way[_P(j)]")
            a(f"{i3}    if tg == block:")
            a(f"{i3}        found = True")
            _touch(lines, i3 + "        ", pol)
            a(f"{i3}        break")
            a(f"{i3}    if tg < 0:")
            a(f"{i3}        if empty < 0:")
            a(f"{i3}            empty = w")
            if pol <= 1:
                a(f"{i3}    elif way[_P(j + 1)] < oldest:")
                a(f"{i3}        oldest = way[_P(j + 1)]")
                a(f"{i3}        victim = w")
            a(f"{i3}if not found:")
            a(f"{i3}    if empty >= 0:")
            a(f"{i3}        victim = empty")
            if pol >= 2:
                a(f"{i3}    else:")
                _fill_victim(lines, i3 + "        ", lv, pol, str(ways), wo, total)
            a(f"{i3}    j = 2 * (base_w + victim)")
            a(f"{i3}    way[_P(j)] = block")
            a(f"{i3}    way[_P(j + 1)] = (now << 32) | sbit")
    a(f"{i2}mb{lv} = block")
    a(f"{i2}mw{lv} = j")


def _prefetch_candidate(key: tuple) -> bool:
    m = key[0]
    return (m[E.IDX_KIND] == 0 and m[E.EQ_WAYS] > 0 and m[E.N_SETS] > 1
            and m[E.N_SETS] * m[E.EQ_WAYS] * 16 > E.PF_BYTES)


def generate(path_keys: tuple, tlb_keys: tuple, path_ids: tuple, tlb_first: int) -> str:
    """Python source of ``_chase_spec`` for this path (levels ``path_ids`` with static
    parameters ``path_keys``) and TLB levels ``tlb_first ...`` (``tlb_keys``)."""
    tlb_ids = tuple(tlb_first + i for i in range(len(tlb_keys)))
    keys = dict(zip(path_ids, path_keys, strict=True)) | dict(zip(tlb_ids, tlb_keys, strict=True))
    visit = list(path_ids) + list(tlb_ids)
    pf_levels = [lv for lv in dict.fromkeys(visit) if _prefetch_candidate(keys[lv])]
    L: list[str] = []
    a = L.append
    a("def _chase_spec(way, rng, clock, set_ways, set_off, idx_param, weights, hitc, farc, "
      "homes, tlbc, dram_latency, page_walk, base, footprint, stride, element, order, fp, "
      "pattern, warmup, record, overhead, jitter, outlier_rate, outlier_cycles, noise_seed, "
      "out_lat, out_idx, out_level):")
    ind = "    "
    a(f"{ind}n_elem = footprint // element")
    a(f"{ind}s_elem = stride // element")
    a(f"{ind}n_lines = footprint // stride")
    a(f"{ind}s_per_block = stride // element")
    a(f"{ind}fp_half, fk0, fk1, fk2, fk3, fn = fp[0], fp[1], fp[2], fp[3], fp[4], fp[5]")
    a(f"{ind}noise = _U(noise_seed)")
    a(f"{ind}cur = np.int64(0)")
    a(f"{ind}t0 = clock[0]")
    a(f"{ind}n_acc = warmup + record")
    a(f"{ind}chunk = np.empty(2 * CHUNK, np.int64)")
    a(f"{ind}gen = np.int64(0)")
    a(f"{ind}pos_l = np.int64(0)")
    a(f"{ind}pos_p = np.int64(0)")
    a(f"{ind}n_pat = pattern.shape[0]")
    a(f"{ind}j = np.int64(0)")
    a(f"{ind}victim = np.int64(0)")
    for i in range(len(path_ids)):
        a(f"{ind}hc{i} = hitc[{i}]")
        a(f"{ind}fc{i} = farc[{i}]")
        a(f"{ind}home{i} = homes[{i}]")
    for i in range(len(tlb_ids)):
        a(f"{ind}tc{i} = tlbc[{i}]")
    for lv in dict.fromkeys(visit):
        m = keys[lv][0]
        a(f"{ind}mb{lv} = np.int64(-1)")
        a(f"{ind}mw{lv} = np.int64(0)")
        if m[E.POLICY] >= 2:
            a(f"{ind}rg{lv} = rng[{lv}]")
        if m[E.POLICY] == 3 and m[E.EQ_WAYS] > 0:
            a(f"{ind}wt{lv} = 0.0")
            a(f"{ind}for w in range({m[E.EQ_WAYS]}):")
            a(f"{ind}    wt{lv} += weights[{m[E.W_OFF]} + w]")
    for lv in pf_levels:
        a(f"{ind}sc{lv} = np.int64(0)")
        a(f"{ind}pf{lv} = True")
    a(f"{ind}for k in range(n_acc):")
    ind = "        "
    a(f"{ind}now = t0 + k + 1")
    a(f"{ind}if k % CHUNK == 0:")
    a(f"{ind}    for r in range(gen, min(k + 2 * CHUNK, n_acc)):")
    a(f"{ind}        if order == 0:")
    a(f"{ind}            chunk[r & (2 * CHUNK - 1)] = cur * element")
    a(f"{ind}            cur += s_elem")
    a(f"{ind}            if cur >= n_elem:")
    a(f"{ind}                cur -= n_elem")
    a(f"{ind}        elif order == 2:")
    a(f"{ind}            chunk[r & (2 * CHUNK - 1)] = pattern[pos_p]")
    a(f"{ind}            pos_p += 1")
    a(f"{ind}            if pos_p == n_pat:")
    a(f"{ind}                pos_p = 0")
    a(f"{ind}        elif order == 3:")
    a(f"{ind}            blk = pos_l")
    a(f"{ind}            pos_l += 1")
    a(f"{ind}            if pos_l == n_lines:")
    a(f"{ind}                pos_l = 0")
    a(f"{ind}            z = (_U(blk) + _U(fp[6])) * _U(0x9E3779B97F4A7C15)")
    a(f"{ind}            z ^= z >> _U(29)")
    a(f"{ind}            z *= _U(0xBF58476D1CE4E5B9)")
    a(f"{ind}            z ^= z >> _U(32)")
    a(f"{ind}            chunk[r & (2 * CHUNK - 1)] = blk * stride"
      " + np.int64(z % _U(s_per_block)) * element")
    a(f"{ind}        else:")
    a(f"{ind}            chunk[r & (2 * CHUNK - 1)] = "
      "_permute(pos_l, fp_half, fk0, fk1, fk2, fk3, fn) * stride")
    a(f"{ind}            pos_l += 1")
    a(f"{ind}            if pos_l == n_lines:")
    a(f"{ind}                pos_l = 0")
    a(f"{ind}    gen = min(k + 2 * CHUNK, n_acc)")
    if pf_levels:
        a(f"{ind}    if k > 0:")
        for lv in pf_levels:
            a(f"{ind}        pf{lv} = sc{lv} >= CHUNK // 8")
            a(f"{ind}        sc{lv} = 0")
    a(f"{ind}off = chunk[k & (2 * CHUNK - 1)]")
    a(f"{ind}addr = base + off")
    if pf_levels:
        a(f"{ind}if k + {PF_DIST} < n_acc:")
        a(f"{ind}    a2 = base + chunk[(k + {PF_DIST}) & (2 * CHUNK - 1)]")
        for lv in pf_levels:
            m = keys[lv][0]
            ew = m[E.EQ_WAYS]
            a(f"{ind}    if pf{lv}:")
            a(f"{ind}        b2 = a2 >> {m[E.LINE_SHIFT]}")
            _set_index(L, ind + "        ", lv, list(m), (), "a2", "b2", "s2")
            a(f"{ind}        j0 = 2 * ({m[E.WAY_BASE]} + s2 * {ew})")
            for d in range(0, 2 * ew, 8):
                a(f"{ind}        _prefetch(way, _P(j0 + {d}))")
    a(f"{ind}pen = 0.0")
    a(f"{ind}lat = 0.0")
    a(f"{ind}lvl = {len(path_ids)}")
    a(f"{ind}while True:")
    ind = "            "
    translated = False
    plen = len(path_ids)

    def tlb_block(ind: str) -> None:
        if not tlb_ids:
            return
        a(f"{ind}while True:")
        for t, lv in enumerate(tlb_ids):
            _lookup(L, ind + "    ", lv, keys[lv], lv in pf_levels)
            a(f"{ind}    if hit:")
            a(f"{ind}        break")
            a(f"{ind}    pen += tc{t}")
        a(f"{ind}    pen += page_walk")
        a(f"{ind}    break")

    for p, lv in enumerate(path_ids):
        m, _params, parts, _wc = keys[lv]
        if m[E.TRANSLATE] == 1 and not translated:
            tlb_block(ind)
            translated = True
        _lookup(L, ind, lv, keys[lv], lv in pf_levels)
        a(f"{ind}if hit:")
        if m[E.PARTS] > 1:
            terms = [f"_parity1(addr & {mask})" + (f" << {j}" if j else "")
                     for j, mask in enumerate(parts)]
            a(f"{ind}    home = {_or(terms)}")
            a(f"{ind}    if home != home{p}:")
            a(f"{ind}        lat = fc{p} + pen")
            a(f"{ind}    else:")
            a(f"{ind}        lat = hc{p} + pen")
        else:
            a(f"{ind}    lat = hc{p} + pen")
        a(f"{ind}    lvl = {p}")
        a(f"{ind}    break")
    if not translated:
        tlb_block(ind)
    a(f"{ind}lat = dram_latency + pen")
    a(f"{ind}lvl = {plen}")
    a(f"{ind}break")
    ind = "        "
    a(f"{ind}if k >= warmup:")
    a(f"{ind}    i = k - warmup")
    a(f"{ind}    tm = lat + overhead")
    a(f"{ind}    if jitter > 0.0:")
    a(f"{ind}        noise += _U(0x9E3779B97F4A7C15)")
    a(f"{ind}        u1 = (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0)")
    a(f"{ind}        noise += _U(0x9E3779B97F4A7C15)")
    a(f"{ind}        u2 = (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0)")
    a(f"{ind}        tm += jitter * np.sqrt(-2.0 * np.log(u1 + 1e-300))"
      " * np.cos(6.283185307179586 * u2)")
    a(f"{ind}    if outlier_rate > 0.0:")
    a(f"{ind}        noise += _U(0x9E3779B97F4A7C15)")
    a(f"{ind}        if (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0) < outlier_rate:")
    a(f"{ind}            noise += _U(0x9E3779B97F4A7C15)")
    a(f"{ind}            u = (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0)")
    a(f"{ind}            tm += -outlier_cycles * np.log(1.0 - u)")
    a(f"{ind}    out_lat[i] = np.floor(tm + 0.5)")
    a(f"{ind}    out_idx[i] = off // element")
    a(f"{ind}    out_level[i] = lvl")
    ind = "    "
    for lv in dict.fromkeys(visit):
        if keys[lv][0][E.POLICY] >= 2:
            a(f"{ind}rng[{lv}] = rg{lv}")
    a(f"{ind}clock[0] = t0 + warmup + record")
    return "\n".join(L) + "\n"


_HEADER = """\
# Generated by gpumem.sim.specialise: a pointer-chase kernel for one path of one hierarchy.
import numba as nb
import numpy as np

from gpumem.sim.engine import (CHUNK, _U, _mix, _mulhi, _permute, _prefetch, _scan4, _scan8,
                               _scan16)
from gpumem.sim.specialise import _parity1

_P = nb.uintp


@nb.njit(cache=True, boundscheck=False, nogil=True)
"""

# The generated modules (and Numba's cache of them) are named after a hash of their source
# and of the code they call into, so an edit to the engine never reuses a stale kernel.
_STAMP = hashlib.sha256(b"".join(
    Path(f).read_bytes() for f in (E.__file__, __file__))).hexdigest()[:16]


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else -1


def _private(p: Path) -> bool:
    """Can only this user (or root) change ``p``: not a symlink, owned by us, and not
    writable by group or others? Generated kernels are executed, and Numba's cache files
    next to them are unpickled, so a folder anyone else can write is a way to run code as us."""
    try:
        st = os.lstat(p)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return False
    if not hasattr(os, "getuid"):  # no POSIX owners and modes to check (Windows)
        return True
    return st.st_uid == _uid() and not st.st_mode & 0o022


def _trusted_parents(d: Path) -> bool:
    """Is every folder above ``d`` owned by us or root and writable by no one else (or
    sticky, as /tmp is, so no one else can rename ``d`` away)? Otherwise ``d`` itself could
    be swapped for another folder between our check and our use."""
    if not hasattr(os, "getuid"):
        return True
    for parent in Path(os.path.abspath(d)).parents:
        try:
            st = os.stat(parent)
        except OSError:
            return False
        if st.st_uid not in (_uid(), 0):
            return False
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return False
    return True


def _roots() -> list[Path]:
    """Where a kernel cache may live, best first: Numba's cache folder if the user set one,
    the package's __pycache__ (a user's own install), the per-user cache folder
    ($XDG_CACHE_HOME or ~/.cache). Never the shared temporary folder."""
    roots = []
    if nb.config.CACHE_DIR:
        roots.append(Path(nb.config.CACHE_DIR))
    roots.append(Path(__file__).parent / "__pycache__")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    except RuntimeError:  # no home folder
        return roots
    roots.append(base / "gpumem")
    return roots


def _cache_dir() -> Path | None:
    """A folder for generated kernels that only this user can write, verified (see
    :func:`_private`, :func:`_trusted_parents`), with Numba's __pycache__ in it verified too;
    None if there is none: the kernel is then compiled in memory, without a disk cache."""
    for root in _roots():
        d = root / "gpumem_chase"
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            (d / "__pycache__").mkdir(mode=0o700, exist_ok=True)
        except OSError:
            continue
        if (os.access(d, os.W_OK) and _private(d) and _private(d / "__pycache__")
                and _trusted_parents(d)):
            return d
    return None


def _holds(path: Path, src: str) -> bool:
    """Is ``path`` a private regular file whose text is exactly ``src``? A file with the
    right name but other content (planted, stale, truncated) is never executed."""
    if not _private(path) or not path.is_file():
        return False
    try:
        return path.read_bytes() == src.encode()
    except OSError:
        return False


_SOURCES: dict[tuple, tuple[str, str]] = {}


def _source(key: tuple) -> tuple[str, str]:
    """The module name and source of the kernel for ``key``."""
    if key not in _SOURCES:
        pids, path_keys, tlb_first, tlb_keys = key
        src = _HEADER + generate(path_keys, tlb_keys, pids, tlb_first)
        _SOURCES[key] = ("chase_" + hashlib.sha256((_STAMP + src).encode()).hexdigest()[:24],
                         src)
    return _SOURCES[key]


def _on_disk(key: tuple) -> bool:
    """Has this kernel been compiled into Numba's on-disk cache before (by any process)?"""
    d = _cache_dir()
    if d is None:
        return False
    name, _ = _source(key)
    return any((d / "__pycache__").glob(f"{name}._chase_spec-*.nbi"))


def _load(key: tuple):
    """The kernel's function: from a verified file of the private cache folder (so Numba can
    cache its machine code there), else compiled in memory. Either way the code executed is
    the source generated here, compiled from memory, never the file's bytes read back."""
    name, src = _source(key)
    d = _cache_dir()
    path = d / f"{name}.py" if d is not None else None
    if path is not None and not _holds(path, src):
        # written whole, then renamed: other processes see all or nothing
        try:
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        except OSError:  # a full disk, say: no disk cache this time
            path = None
        if path is not None and not _holds(path, src):
            path = None
    if path is None:  # no private folder: compile in memory, no disk cache
        linecache.cache[f"<{name}>"] = (len(src), None, src.splitlines(True), f"<{name}>")
        ns: dict = {"__name__": f"gpumem_chase_kernels.{name}"}
        exec(compile(src.replace("cache=True", "cache=False"), f"<{name}>", "exec"), ns)
        return ns["_chase_spec"]
    modname = f"gpumem_chase_kernels.{name}"
    mod = sys.modules.get(modname)
    if mod is None:
        mod = pytypes.ModuleType(modname)
        mod.__file__ = str(path)
        exec(compile(src, str(path), "exec"), mod.__dict__)
        sys.modules[modname] = mod
    return mod._chase_spec


def key_of(h: E.Hierarchy, path_ids: np.ndarray, tlb_first: int, tlb_count: int) -> tuple:
    pids = tuple(int(x) for x in path_ids)
    return (pids, tuple(level_key(h, lv) for lv in pids), int(tlb_first),
            tuple(level_key(h, tlb_first + i) for i in range(tlb_count)))


def kernel(h: E.Hierarchy, path_ids: np.ndarray, tlb_first: int, tlb_count: int):
    """The compiled kernel for this path of ``h`` (generated, and compiled or loaded from
    Numba's cache, on first use in this process)."""
    key = key_of(h, path_ids, tlb_first, tlb_count)
    fn = _CACHE.get(key)
    if fn is None:
        with _LOCK:
            fn = _CACHE.get(key)
            if fn is None:
                fn = _CACHE[key] = _load(key)
    return fn


COMPILE_AFTER = 30_000_000  # accesses the generic kernel runs for a path before it is compiled
_SEEN: dict[tuple, int] = {}


def worth_it(h: E.Hierarchy, path_ids: np.ndarray, tlb_first: int, tlb_count: int,
             n: int) -> bool:
    """Should a chase of ``n`` accesses on this path run a specialised kernel? Yes if one is
    loaded or on disk already, or once this process has run enough accesses on the path
    (including these) that the compile (1-2 s) pays for itself; else the generic kernel runs
    them and they are counted."""
    key = key_of(h, path_ids, tlb_first, tlb_count)
    if key in _CACHE:
        return True
    seen = _SEEN.get(key, 0) + n
    if seen >= COMPILE_AFTER or _on_disk(key):
        return True
    _SEEN[key] = seen
    return False


def run(h: E.Hierarchy, path_ids: np.ndarray, tlb_first: int, tlb_count: int, *,
        dram_latency: float, page_walk: float, sm: int, sm_count: int, args: tuple) -> None:
    """Run the specialised kernel; ``args`` are the generic kernel's arguments from ``base``
    on (without ``scalar``)."""
    fn = kernel(h, path_ids, tlb_first, tlb_count)
    meta = h.meta
    plen = len(path_ids)
    hitc = np.empty(plen, np.float64)
    farc = np.empty(plen, np.float64)
    homes = np.zeros(plen, np.int64)
    for i, lv in enumerate(int(x) for x in path_ids):
        near, far = float(h.cost[lv]), float(h.far_cost[lv])
        smo_len = int(meta[lv, E.SMO_LEN])
        if smo_len > 0:  # the same float additions as the generic kernel, in the same order
            off = float(h.weights[int(meta[lv, E.SMO_OFF]) + sm % smo_len])
            near, far = near + off, far + off
        hitc[i], farc[i] = near, far
        parts = int(meta[lv, E.PARTS])
        homes[i] = (sm * parts) // sm_count
    tlbc = np.array([float(h.cost[tlb_first + i]) for i in range(tlb_count)] or [0.0],
                    np.float64)
    fn(h.way, h.rng, h.clock, h.set_ways, h.set_off, h.idx_param, h.weights, hitc, farc,
       homes, tlbc, float(dram_latency), float(page_walk), *args)

