"""Synthetic Accel-Sim traces: byte-exact against golden files, and true to the trace format.

The golden files under tests/data/accelsim/traces/ were written by the generator once and read
by eye against the format rules (shared reference, accelsim-format.md section 5); they were
also run on a real Accel-Sim build (tests/data/accelsim/logs/README.md). Any change to the
generator's output fails here. To rewrite them on purpose:
``python tests/test_accelsim_traces.py`` (then read the diff).
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from gpumem.contracts.chains import chain_offsets
from gpumem.contracts.device import ChaseRequest, StreamRequest
from gpumem.contracts.errors import ProbeUnsupported
from gpumem_accelsim.traces import (
    GLOBAL_BASE,
    GLOBAL_BASE_B,
    TraceTooLarge,
    chase_trace,
    chase_warp_insts,
    load_opcode,
    store_opcode,
    stream_elements,
    stream_shape,
    stream_trace,
)

GOLDEN = Path(__file__).parent / "data" / "accelsim" / "traces"

#: name -> (generator, request, keyword arguments). Small on purpose: a few hundred lines.
CASES = {
    "chase-ca-seq": (chase_trace, ChaseRequest(footprint=1024, stride=128, record=12,
                                               warmup=8, path="ca"), {}),
    "chase-cg-random-cold": (chase_trace, ChaseRequest(footprint=4096, stride=256, record=6,
                                                       order="random", path="cg", seed=3,
                                                       element=8), {}),
    "stream-coalesced": (stream_trace, StreamRequest(footprint=6144, ctas=2, threads=48, ilp=2,
                                                     width=16, order="coalesced"), {}),
    "stream-thread": (stream_trace, StreamRequest(footprint=6144, ctas=2, threads=48, ilp=2,
                                                  width=16, order="thread"), {}),
    "stream-warp": (stream_trace, StreamRequest(footprint=6144, ctas=2, threads=48, ilp=2,
                                                width=16, order="warp"), {}),
    "stream-copy-reverse": (stream_trace, StreamRequest(footprint=4096, ctas=1, threads=64,
                                                        ilp=1, width=8, kind="copy",
                                                        reverse=True, work=2048, path="ca"),
                            {"warmup": False}),
}


def _generate(name: str, directory: Path):
    fn, req, kw = CASES[name]
    return fn(directory, req, **kw)


# ---- golden files ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_golden(name, tmp_path):
    _generate(name, tmp_path)
    golden = GOLDEN / name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in golden.iterdir())
    for p in sorted(golden.iterdir()):
        assert (tmp_path / p.name).read_text() == p.read_text(), f"{name}/{p.name} differs"


def test_golden_cases_all_exist():
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == sorted(CASES)


# ---- a reader that applies the format rules of accelsim-format.md section 5 ----------------

def read_trace(path: Path) -> dict:
    """Header, and per CTA a list of warps, each a list of parsed instructions. Asserts the
    rules a synthetic trace must follow (header closed by '#', insts = n exact, EXIT last)."""
    lines = path.read_text().splitlines()
    header: dict[str, str] = {}
    i = 0
    while not lines[i].startswith("#"):  # rule 2: a '#' line ends the header
        if lines[i]:
            key, _, value = lines[i].lstrip("-").partition(" = ")
            header[key] = value
        i += 1
    assert lines[i].startswith("#traces format")
    ctas: list[list[list[dict]]] = []
    warps: list[list[dict]] = []
    want = 0
    for line in lines[i + 1:]:
        if not line:
            continue
        if line == "#BEGIN_TB":
            warps = []
        elif line == "#END_TB":
            ctas.append(warps)
        elif line.startswith("thread block = "):
            assert line == f"thread block = {len(ctas)},0,0"  # rule 3: file order
        elif line.startswith("warp = "):
            assert int(line.split("=")[1]) == len(warps)
            warps.append([])
        elif line.startswith("insts = "):
            want = int(line.split("=")[1])
        else:
            warps[-1].append(parse_inst(line))
            if len(warps[-1]) == want:
                assert warps[-1][-1]["op"] == "EXIT"  # rule 6
    for warps in ctas:
        for w in warps:
            assert sum(1 for x in w if x["op"] == "EXIT") == 1
    return {"header": header, "ctas": ctas}


def parse_inst(line: str) -> dict:
    """Rule 4: ``PC mask ndst [Rd] OPCODE nsrc [Rs] width [mode addrs] imm`` (tracer >= 3)."""
    tok = line.split()
    pc, mask = int(tok[0], 16), int(tok[1], 16)
    nd = int(tok[2])
    dst = [int(t[1:]) for t in tok[3:3 + nd]]
    op = tok[3 + nd]
    ns = int(tok[4 + nd])
    src = [int(t[1:]) for t in tok[5 + nd:5 + nd + ns]]
    rest = tok[5 + nd + ns:]
    width = int(rest[0])
    lanes = [b for b in range(32) if mask >> b & 1]
    addrs: list[int] = []
    if width:
        mode = int(rest[1])
        if mode == 1:
            base, stride = int(rest[2], 16), int(rest[3])
            assert lanes == list(range(lanes[0], lanes[0] + len(lanes)))  # one contiguous run
            addrs = [base + stride * j for j in range(len(lanes))]
            imm = rest[4:]
        else:
            assert mode == 0
            addrs = [int(a, 16) for a in rest[2:2 + len(lanes)]]
            imm = rest[2 + len(lanes):]
    else:
        imm = rest[1:]
    assert imm == ["0"], line
    return {"pc": pc, "mask": mask, "dst": dst, "op": op, "src": src, "width": width,
            "addrs": addrs}


def _kernels(directory: Path) -> list[dict]:
    names = (directory / "kernelslist.g").read_text().split()
    assert all(re.fullmatch(r"kernel-\d+\.traceg", n) for n in names)
    return [read_trace(directory / n) for n in names]


def _loads(warp: list[dict]) -> list[dict]:
    return [x for x in warp if x["op"].startswith("LDG")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_files_follow_the_format(name):
    for k in _kernels(GOLDEN / name):
        h = k["header"]
        assert h["accelsim tracer version"] == "5" and h["binary version"] == "70"
        grid = int(re.fullmatch(r"\((\d+),1,1\)", h["grid dim"]).group(1))
        block = int(re.fullmatch(r"\((\d+),1,1\)", h["block dim"]).group(1))
        assert len(k["ctas"]) == grid  # rule 3: one TB block per CTA
        for warps in k["ctas"]:
            assert len(warps) == -(-block // 32)
            for w, insts in enumerate(warps):
                live = (1 << min(32, block - 32 * w)) - 1
                assert insts[-1]["mask"] == live  # the EXIT covers every live thread


# ---- what the traces do ----------------------------------------------------------------------

def test_chase_is_a_dependent_chain_over_the_chain_offsets(tmp_path):
    req = ChaseRequest(footprint=8192, stride=64, record=40, warmup=24, order="random", seed=7)
    ts = chase_trace(tmp_path, req)
    assert [k.role for k in ts.kernels] == ["warmup", "base", "timed"]
    assert [ts.uid(r) for r in ("warmup", "base", "timed")] == [1, 2, 3]
    _warm, base, timed = _kernels(tmp_path)
    want = GLOBAL_BASE + chain_offsets(8192, 64, "random", 7, count=64)
    (warp,), = timed["ctas"]
    chase = _loads(warp)[1:]  # after the one warm-up load of 24 lanes
    assert [x["addrs"] for x in chase] == [[int(a)] * 32 for a in want[24:]]
    assert all(x["dst"] == x["src"] == [2] and x["mask"] == 0xFFFFFFFF for x in chase)
    assert all(x["op"] == "LDG.E" and x["width"] == 4 for x in chase)
    assert len(_loads(base["ctas"][0][0])) == 1  # base: the warm-up, no chase
    assert ts.accesses == 40


def _warm_addrs(kernel: dict) -> list[int]:
    """Addresses the warm-up loads of a kernel read (before any barrier), in slab order:
    the k-th load of every warp, warp by warp, then the (k+1)-th."""
    warps = [w for cta in kernel["ctas"] for w in cta]
    loads = [[x for x in w[:next((i for i, x in enumerate(w) if x["op"].startswith("BAR")),
                                 len(w))] if x["dst"] == [4]] for w in warps]
    return [a for k in range(max(map(len, loads))) for w in loads if k < len(w)
            for a in w[k]["addrs"]]


def test_warmup_loads_in_parallel_what_a_chase_would_leave(tmp_path):
    """The L2 warm-up kernel spreads over CTAs; base and timed warm L1 in one CTA and wait
    (MOV of the loaded register, BAR) before the first warp chases; windows keep the last
    positions only, in chain order."""
    req = ChaseRequest(footprint=1 << 20, stride=128, record=5, warmup=8192)
    ts = chase_trace(tmp_path, req, warm_ctas=4, l1_window=1000, l2_window=5000)
    assert [k.role for k in ts.kernels] == ["warmup", "base", "timed"]
    warm, base, timed = _kernels(tmp_path)
    want = GLOBAL_BASE + chain_offsets(1 << 20, 128, "sequential", 0, count=8197)
    assert len(warm["ctas"]) == 4 and _warm_addrs(warm) == want[8192 - 5000:8192].tolist()
    for k in (base, timed):
        assert len(k["ctas"]) == 1 and _warm_addrs(k) == want[8192 - 1000:8192].tolist()
        for w in k["ctas"][0]:
            ops = [x["op"] for x in w]
            i = ops.index("BAR.SYNC.DEFER_BLOCKING")
            assert ops[i - 1] == "MOV" and w[i - 1]["src"] == [4]
            assert all(x["dst"] == [4] for x in w[:i - 1])  # one load in flight per warp
    assert [x["addrs"][0] for x in _loads(timed["ctas"][0][0]) if x["dst"] == [2]] == \
        want[8192:].tolist()


def test_warmup_loads_the_recorded_lines_first_one_per_load(tmp_path):
    """Where the warm-up walks the lines the chase records next (a full cycle: the sequential
    chase of a cache-resident footprint), a kernel of its own loads them first, one line per
    load in chain order (a warp's lanes reach the L2 last lane first), and the parallel
    warm-up the rest: in every set they are then the oldest lines, as after one thread's
    chase. On Accel-Sim's TITAN X (lines spread over 24 L2 sub-partitions at random) the
    parallel warm-up left them among younger lines, and a set of 17-19 lines kept some: 3-4
    misses instead of 6-8 at 2.1-2.4 MB (tests/data/accelsim/runs/README.md)."""
    req = ChaseRequest(footprint=64 << 10, stride=128, record=40, warmup=512)
    ts = chase_trace(tmp_path, req, warm_ctas=4)
    assert [k.role for k in ts.kernels] == ["warmup_recorded", "warmup", "base", "timed"]
    assert ts.warp_insts == chase_warp_insts(req, warm_ctas=4)
    first, warm, _base, timed = _kernels(tmp_path)
    want = GLOBAL_BASE + chain_offsets(64 << 10, 128, "sequential", 0, count=552)
    (warp,), = first["ctas"]
    loads = _loads(warp)
    assert [x["addrs"] for x in loads] == [[int(a)] for a in want[:40]]
    assert all(x["mask"] == 1 and x["dst"] == [4] for x in loads)
    assert _warm_addrs(warm) == want[40:512].tolist()  # each line once
    assert [x["addrs"][0] for x in _loads(timed["ctas"][0][0]) if x["dst"] == [2]] == \
        want[512:].tolist() == want[:40].tolist()
    # a DRAM-resident chase (its warm-up short of the recorded lines) is as before
    far = ChaseRequest(footprint=16 << 20, stride=128, record=40, warmup=512)
    assert [k.role for k in chase_trace(tmp_path / "far", far).kernels] == \
        ["warmup", "base", "timed"]
    # and so is one whose window leaves the recorded lines out
    ts = chase_trace(tmp_path / "window", req, l2_window=400)
    assert [k.role for k in ts.kernels] == ["warmup", "base", "timed"]
    assert ts.warp_insts == chase_warp_insts(req, l2_window=400)


def test_placement_moves_the_chain(tmp_path):
    from gpumem.contracts.device import PLACEMENT_PADS

    chase_trace(tmp_path, ChaseRequest(footprint=4096, stride=128, record=2, placement=2))
    _base, timed = _kernels(tmp_path)
    assert _loads(timed["ctas"][0][0])[0]["addrs"] == [GLOBAL_BASE + PLACEMENT_PADS[2]]


def test_cold_chase_has_an_empty_base_kernel(tmp_path):
    ts = chase_trace(tmp_path, ChaseRequest(footprint=4096, stride=128, record=5))
    assert [k.role for k in ts.kernels] == ["base", "timed"]
    base, timed = _kernels(tmp_path)
    assert [x["op"] for x in base["ctas"][0][0]] == ["EXIT"]
    assert len(_loads(timed["ctas"][0][0])) == 5


def test_pattern_chase(tmp_path):
    pat = (0, 4096, 128, 8192)
    chase_trace(tmp_path, ChaseRequest(footprint=16384, stride=4, record=6, order="pattern",
                                       pattern=pat))
    _base, timed = _kernels(tmp_path)
    got = [x["addrs"][0] - GLOBAL_BASE for x in _loads(timed["ctas"][0][0])]
    assert got == [0, 4096, 128, 8192, 0, 4096]


@pytest.mark.parametrize("order", ["coalesced", "thread", "warp"])
def test_stream_reads_each_element_once_per_pass(order, tmp_path):
    req = StreamRequest(footprint=36864, ctas=3, threads=96, ilp=4, width=16, order=order)
    ts = stream_trace(tmp_path, req, warmup=False)
    chunk, chunks, iters = stream_shape(req)
    assert (chunk, iters) == (3 * 96 * 4, chunks)
    _empty, timed = _kernels(tmp_path)
    addrs = [a for warps in timed["ctas"] for w in warps for x in _loads(w) for a in x["addrs"]]
    elems = (np.array(addrs) - GLOBAL_BASE) // 16
    assert sorted(elems.tolist()) == list(range(chunk * iters))
    assert ts.bytes == chunk * iters * 16 == ts.accesses * 16


def test_stream_orders_follow_the_cuda_kernel():
    req = StreamRequest(footprint=1 << 16, ctas=2, threads=64, ilp=3, width=4)
    tid = np.arange(128)
    co = stream_elements(req, tid, 1, 2)
    assert co.tolist() == (1 * 384 + 2 * 128 + tid).tolist()
    th = stream_elements(replace(req, order="thread"), tid, 0, 1)
    assert th.tolist() == (tid * 3 + 1).tolist()
    wa = stream_elements(replace(req, order="warp"), tid, 0, 2)
    assert wa.tolist() == (((tid >> 5) * 3 + 2) * 32 + (tid & 31)).tolist()
    rev = replace(req, reverse=True)
    _chunk, chunks, _ = stream_shape(rev)
    assert stream_elements(rev, tid, 0, 0)[0] == (chunks - 1) * 384


def test_stream_copy_loads_then_stores_what_it_loaded(tmp_path):
    req = StreamRequest(footprint=8192, ctas=1, threads=32, ilp=2, width=8, kind="copy")
    stream_trace(tmp_path, req, warmup=False)
    _empty, timed = _kernels(tmp_path)
    warp = timed["ctas"][0][0]
    ops = [x["op"] for x in warp[:5]]
    assert ops == ["LDG.E.64.STRONG.GPU", "STG.E.64.STRONG.GPU"] * 2 + ["BRA"]
    ld, st = warp[0], warp[1]
    assert st["src"] == [2, ld["dst"][0]]
    assert [a - GLOBAL_BASE for a in ld["addrs"]] == [a - GLOBAL_BASE_B for a in st["addrs"]]


def test_stream_warps_keep_ilp_loads_in_flight(tmp_path):
    """Each iteration's loads write distinct registers, reused by the next iteration."""
    stream_trace(tmp_path, StreamRequest(footprint=1 << 15, ctas=1, threads=32, ilp=4,
                                         width=16), warmup=False)
    _empty, timed = _kernels(tmp_path)
    loads = _loads(timed["ctas"][0][0])
    assert [x["dst"][0] for x in loads[:8]] == [4, 8, 12, 16] * 2
    assert len({x["pc"] for x in loads}) == 4  # a loop body: the PCs repeat


def test_opcodes_by_path_and_width():
    assert load_opcode(8, "ca") == "LDG.E.64"
    assert load_opcode(16, "cg") == "LDG.E.128.STRONG.GPU"  # bypasses L1 in Accel-Sim
    assert load_opcode(4, "nc") == "LDG.E.CONSTANT.SYS"
    assert store_opcode(16) == "STG.E.128.STRONG.GPU"
    with pytest.raises(ProbeUnsupported):
        load_opcode(4, "tex")
    with pytest.raises(ValueError):
        load_opcode(2, "ca")


def test_refusals(tmp_path):
    req = ChaseRequest(footprint=4096, stride=128, record=5)
    with pytest.raises(ValueError, match="binary version"):
        chase_trace(tmp_path, req, binary_version=90)
    with pytest.raises(TraceTooLarge):
        chase_trace(tmp_path, ChaseRequest(footprint=4096, stride=128, record=1000),
                    max_warp_insts=500)
    with pytest.raises(ProbeUnsupported):
        chase_trace(tmp_path, ChaseRequest(footprint=4096, stride=128, record=5, path="tex"))
    with pytest.raises(ValueError, match="chunk"):
        stream_trace(tmp_path, StreamRequest(footprint=4096, ctas=8, threads=64, width=16))
    with pytest.raises(KeyError, match="roles"):
        chase_trace(tmp_path, req).uid("empty")


def regenerate() -> None:
    """Rewrite the golden files (run this file as a script)."""
    import shutil

    for name in CASES:
        target = GOLDEN / name
        shutil.rmtree(target, ignore_errors=True)
        _generate(name, target)
        print(f"wrote {target}")


if __name__ == "__main__":
    sys.exit(regenerate())
