"""The compiled pieces the chase kernels call: LLVM intrinsics (wide multiply, SIMD set look-ups
and move-to-front, prefetch, parity) and small inlined Numba functions (SplitMix64 output,
chain permutation).

A leaf module on purpose: the generated kernels import only this, so compiling one never
pulls in the engine or the generator, and :mod:`gpumem.sim.specialise` hashes this file into
every kernel's name (Numba's cache of a kernel does not notice a change to what it calls).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_U = nb.uint64
_P = nb.uintp
CHUNK = 4096  # accesses whose chain offsets are computed in one tight loop


@intrinsic
def _mulhi(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        prod = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(prod, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen


def _vector_parts(context, builder, aryty, arr, j, n):
    """Pointer to ``arr[j]``, the LLVM integer type of its elements, the vector of ``n`` of
    them and a function that splats a scalar (an int64, truncated) across that vector."""
    ary = context.make_array(aryty)(context, builder, arr)
    ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [j])
    it = context.get_data_type(aryty.dtype)
    vt = ir.VectorType(it, n)
    i32 = ir.IntType(32)

    def splat(x):
        x = builder.trunc(x, it) if it.width < 64 else x
        one = builder.insert_element(ir.Constant(vt, None), x, ir.Constant(i32, 0))
        return builder.shuffle_vector(one, ir.Constant(vt, None),
                                      ir.Constant(ir.VectorType(i32, n), [0] * n))

    return builder.bitcast(ptr, vt.as_pointer()), it, vt, splat


def _make_find(n: int):
    """An intrinsic that looks a whole set of ``n`` ways up at once with vector instructions
    (the host's SIMD compares, no branch per way).

    ``find(way, j, tag, keep)`` reads the ``n`` way words from ``way[j]`` (int32 or int64: a
    tag above the sector mask, 0 for an invalid way) and returns ``f | e << 8``: ``f`` the
    first valid way whose ``word & keep`` (``keep`` clears the mask bits) is ``tag``, ``e``
    the first invalid way; either is ``n`` when there is none, as the one-way-at-a-time scan
    of the model finds them.
    """

    @intrinsic
    def find(typingctx, arr, j, tag, keep):
        sig = types.int64(arr, types.intp, types.int64, types.int64)

        def codegen(context, builder, signature, args):
            vptr, it, vt, splat = _vector_parts(context, builder, signature.args[0], args[0],
                                                args[1], n)
            i1, i64 = ir.IntType(1), ir.IntType(64)
            rec = builder.load(vptr, align=it.width // 8)
            zero = ir.Constant(vt, [0] * n)
            cttz = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [i64, i1]), "llvm.cttz.i64")

            def first(mask):  # index of the first true lane, n if none
                bits = builder.zext(builder.bitcast(mask, ir.IntType(n)), i64)
                bits = builder.or_(bits, ir.Constant(i64, 1 << n))
                return builder.call(cttz, [bits, ir.Constant(i1, 1)])

            valid = builder.icmp_unsigned("!=", rec, zero)
            same = builder.icmp_unsigned("==", builder.and_(rec, splat(args[3])), splat(args[2]))
            f = first(builder.and_(same, valid))
            e = first(builder.icmp_unsigned("==", rec, zero))
            return builder.or_(f, builder.shl(e, ir.Constant(i64, 8)))

        return sig, codegen

    return find


def _make_front(n: int):
    """An intrinsic that moves way ``f`` of a set of ``n`` to the front: ``front(way, j, f,
    word)`` writes ``word`` to way 0 and shifts ways ``0 .. f - 1`` one place back (way ``f``'s
    old word is dropped: a hit moving to the front, or with ``f = n - 1`` a fill pushing the
    last way out), in one vector load, shuffle, blend and store."""

    @intrinsic
    def front(typingctx, arr, j, f, word):
        sig = types.void(arr, types.intp, types.int64, types.int64)

        def codegen(context, builder, signature, args):
            vptr, it, vt, splat = _vector_parts(context, builder, signature.args[0], args[0],
                                                args[1], n)
            i32 = ir.IntType(32)
            rec = builder.load(vptr, align=it.width // 8)
            # [word, way 0, ..., way n - 2]: the word comes in from a splat by the same
            # shuffle (inserting an element into a 512-bit vector takes two more)
            back = builder.shuffle_vector(rec, splat(args[3]), ir.Constant(
                ir.VectorType(i32, n), [n] + list(range(n - 1))))
            moved = builder.icmp_unsigned("<=", ir.Constant(vt, list(range(n))), splat(args[2]))
            out = builder.select(moved, back, rec)
            builder.store(out, vptr, align=it.width // 8)
            return context.get_dummy_value()

        return sig, codegen

    return front


_find4, _find8, _find16 = _make_find(4), _make_find(8), _make_find(16)
_front4, _front8, _front16 = _make_front(4), _make_front(8), _make_front(16)


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Ask the host CPU to bring ``arr[idx]``'s cache line in (llvm.prefetch, read, high
    locality); no effect on results."""
    sig = types.void(arr, types.intp)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _parity1(typingctx, x):
    """Parity of an int64's 64 bits (llvm.ctpop & 1)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = builder.module.declare_intrinsic("llvm.ctpop", [i64])
        return builder.and_(builder.call(fn, [args[0]]), ir.Constant(i64, 1))

    return sig, codegen


@nb.njit(inline="always")  # inlined: nothing to cache (see specialise)
def _mix(z):
    """SplitMix64 output function."""
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


@nb.njit(inline="always")  # inlined: nothing to cache (see specialise)
def _permute_step(v, mask, sh, k0, k1, k2, k3):
    """One step of :func:`_permute` (uint64 arguments: the value, ``2**bits - 1``, the
    xor-shift, the keys): the chase kernels walk the cycles of a whole chunk of values a step
    at a time, so no branch depends on how many steps a value needs."""
    v = (v ^ k0) & mask
    v = (v * k1) & mask
    v ^= v >> sh
    v = (v * k2) & mask
    v ^= v >> sh
    return (v + k3) & mask


@nb.njit(inline="always")  # inlined: nothing to cache (see specialise)
def _permute(x, bits, k0, k1, k2, k3, n):
    """The permutation of :func:`gpumem.contracts.chains.permute_vec`, one value at a time."""
    mask = (_U(1) << _U(bits)) - _U(1)
    sh = _U((bits + 1) // 2)
    v = _U(x)
    while True:
        v = (v ^ _U(k0)) & mask
        v = (v * _U(k1)) & mask
        v ^= v >> sh
        v = (v * _U(k2)) & mask
        v ^= v >> sh
        v = (v + _U(k3)) & mask
        if v < _U(n):
            return np.int64(v)


# ---------------------------------------------------------------------------------------------
# Timer noise: the libm Box-Muller jitter, made cheap where it cannot change the result
# ---------------------------------------------------------------------------------------------

_GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment: one draw per step of the noise stream
_TO_UNIT = 1.0 / 9007199254740992.0  # a 53-bit draw times this: a double in [0, 1)
_TWO_PI = 6.283185307179586
#: A bound on |approximate cosine - libm's cosine| (the approximation below is within 1e-9
#: of the exact value, libm within an ulp): 1e-7 leaves two orders of magnitude to spare
#: (tests/test_sim_speed_noise.py measures the error).
COS_SLACK = 1e-7
#: ... and on the rounding of the sums around it, per cycle of latency (ulps are 1e-16).
SUM_SLACK = 1e-9


@nb.njit(inline="always")  # inlined: nothing to cache (see specialise)
def _box_muller_angle(u2):
    """cos(2 pi u2) for u2 in [0, 1), to 1e-9: -sin(2 pi t), t = 1/4 - |u2 - 1/2| in
    [-1/4, 1/4] (both subtractions exact), Taylor series of sin to y**13 (truncation below
    (pi/2)**15 / 15! = 7e-10)."""
    y = _TWO_PI * (0.25 - abs(u2 - 0.5))
    y2 = y * y
    return -y * ((((((y2 * (-1.0 / 6227020800.0) + 1.0 / 39916800.0) * y2 - 1.0 / 362880.0)
                    * y2 + 1.0 / 5040.0) * y2 - 1.0 / 120.0) * y2 + 1.0 / 6.0) * -y2 + 1.0)


@nb.njit(inline="always")  # inlined: nothing to cache (see specialise)
def _timer_noise(out_lat, overhead, jitter, outlier_rate, outlier_cycles, noise_seed, exact):
    """Each recorded latency plus the timer overhead, Gaussian jitter (Box-Muller on libm's
    log and cos) and exponential outliers, rounded to whole cycles, in place.

    libm's cos costs most of a recorded access, and the result needs it only where the sum
    is close to a rounding boundary. So the cosine is approximated
    (:func:`_box_muller_angle`) and, where the approximate sum lies further than its error
    bound (:data:`COS_SLACK`, :data:`SUM_SLACK`) from any ``n + 1/2``, that rounding is the
    result (rounding is monotone: the exact sum rounds the same way). Elsewhere, for
    outliers, and with ``exact``, libm's cos is used, as it always was: bit-identical results
    either way. The stream's draws do not depend on their values, so they are taken first."""
    noise = _U(noise_seed)
    radius = 0.0
    u2 = 0.0
    for i in range(out_lat.shape[0]):
        tm = out_lat[i] + overhead
        if jitter > 0.0:
            noise += _U(_GOLDEN)
            u1 = (_mix(noise) >> _U(11)) * _TO_UNIT
            noise += _U(_GOLDEN)
            u2 = (_mix(noise) >> _U(11)) * _TO_UNIT
            radius = jitter * np.sqrt(-2.0 * np.log(u1 + 1e-300))
        u_out = -1.0  # an outlier's draw, if this access is one
        if outlier_rate > 0.0:
            noise += _U(_GOLDEN)
            if (_mix(noise) >> _U(11)) * _TO_UNIT < outlier_rate:
                noise += _U(_GOLDEN)
                u_out = (_mix(noise) >> _U(11)) * _TO_UNIT
        if jitter > 0.0 and u_out < 0.0 and not exact:
            x = tm + radius * _box_muller_angle(u2) + 0.5
            n = np.floor(x)
            slack = abs(radius) * COS_SLACK + SUM_SLACK * (1.0 + abs(x))
            if x - n > slack and n + 1.0 - x > slack:
                out_lat[i] = n
                continue
        if jitter > 0.0:
            tm += radius * np.cos(_TWO_PI * u2)
        if u_out >= 0.0:
            tm += -outlier_cycles * np.log(1.0 - u_out)
        out_lat[i] = np.floor(tm + 0.5)
