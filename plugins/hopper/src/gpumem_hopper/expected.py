"""Expected values for Hopper, per product, every band from one model.

* **H200** (a CUDA device named "H200", or a simulated H200, :func:`models_reference_card`):
  every measured finding gpumem's multi-card data have (:func:`gpumem.api.fleet_expected`):
  the median of the healthy H200s' medians (today up to seventeen cards a finding,
  core/src/gpumem/contracts/allowances.json, re-derived from the committed runs by
  benchmarks/card_allowances.py), its band Z standard deviations of a run of another card
  about that median (Z learned for the finding's class on cards left out of the fleet,
  2.0-2.9) and at least as far as
  every healthy card seen strayed, the card-to-card and run-to-run spreads learned from the
  same runs; the figures others published for the H200 or its GH100 die (RRZE gpu-benches,
  Luo et al.) kept beside each in its source. Plus the structural values every healthy H200 gave
  (the TLB's geometry, the L2 fill unit) and the L2 slices ``l2_hash`` counted on three (94):
  exact.
* **H100 SXM** (a CUDA device named "NVIDIA H100 80GB HBM3"): as the H200, from gpumem's
  runs on seventeen healthy H100s (allowances-nvidia-h100-80gb-hbm3.json), the figures below kept
  beside each in its source and taken where the fleet is silent.
* **Another H100** (a CUDA device named "H100"): the figures Manjunath & Ramachandra, "Concurrency
  Response of Plain Global Loads on the NVIDIA H100" (2026), published (the latency ladder in
  ns, the K = 8 over K = 2 drop, the share of the datasheet bandwidth streaming reads reach)
  and MT4G's H100 L1 capacity, each band from the same model
  (:func:`gpumem.api.published_expected`): the figure's own published spread + a card
  against another (the H200's learned spreads) + how far another tool's figure lies from
  gpumem's: the largest such difference gpumem's H200s show against gpu-benches' published
  GH200 latencies (:func:`tool_allowance`). Plus the L2 slices ``l2_hash`` counted on six
  H100s (80): exact.
* **GH200**: gpu-benches' published GH200 latencies, the same way.
* Every Hopper device: the structural values the GH100 die's documents and MT4G give (lines,
  sectors, banks, partitions), exact; and what the device's own properties say.

No published figure of the H100 study is taken for cp.async: its occupancy for the 2.1-2.9x
figure is not stated, and gpumem's two occupancies give 1.03x and 2.07x at 16 groups on the
H200. ``l2.sm_partition`` is not expected (which SMs sit at which partition depends on the
card's disabled SMs).
"""

from __future__ import annotations

from dataclasses import replace

from gpumem.api import DeviceInfo, Expected, fleet_expected, published_expected

GPU_BENCHES = ("RRZE gpu-benches gpu-latency, GH200 at 1980 MHz "
               "(github.com/RRZE-HPC/gpu-benches, gpu-latency/gh200.txt)")
MT4G_H100 = ("MT4G on an H100 SXM (github.com/caps-tum/mt4g, sample_results/"
             "NVIDIA H100 80GB HBM3.json)")
H100_STUDY = ("Manjunath & Ramachandra, \"Concurrency Response of Plain Global Loads on the "
              "NVIDIA H100\" (2026)")
H200_SLICES = ("gpumem on three H200 SXM cards, every line of one 2 MB page each (l2_slices over "
               "a whole page, what gpumem run l2_hash is; tests/data/h200-s23/dense, "
               "h200-s24/dense and h200-s37/gpucdafb-job1/hash): 94 slices on each, in 86, 88 "
               "and 88 groups (the pairs of slices their SMs split; the L2 reports 60 MB, 96 "
               "slices of 640 KB); exact")
H100_SLICES = ("gpumem on six H100 SXM cards, every line of one 2 MB page each (gpumem run "
               "l2_hash; tests/data/h100-s29, 2026-12-06): 80 slices on each (in the same 72 "
               "groups on the four whose pages are kept), the 50 MB L2 in 640 KB slices; "
               "exact")
REFERENCE = ("REFERENCE: gpumem on every healthy H200 SXM card it ran on (the committed "
             "runs of tests/data: the same on each), exact")

#: Structural values every healthy H200 gave: exact (their measured findings come from the
#: fleet, :func:`gpumem.api.fleet_expected`).
_REFERENCE: tuple[tuple[str, object, str], ...] = (
    ("l2.fill_unit", 64, "byte"),
    # tlb_structure (docs/h200-tlb.md)
    ("tlb.page", 16 << 20, "byte"),
    ("tlb_l1.entries", 16, "1"),
    ("tlb_l1.ways", 16, "1"),
    ("tlb_l1.sets", 1, "1"),
    ("tlb_l1.reach", 256 << 20, "byte"),
    ("tlb_l2.no_level_below", 17163222912, "byte"),
)

#: What others published for the H200 or its GH100 die, kept beside the fleet's values.
PUBLISHED_H200: dict[str, str] = {
    "lat.l1": GPU_BENCHES + ": 32.0-32.4 cycles (on a GH200)",
    "lat.l1_ns": GPU_BENCHES + ": 16.2-16.4 ns (on a GH200)",
    "lat.l2": GPU_BENCHES + ": 280.3 cycles, near partition (on a GH200)",
    "lat.l2_ns": GPU_BENCHES + ": 141.6 ns (on a GH200)",
    "lat.l2_far": GPU_BENCHES + ": 458-522 cycles at 34-58 MB (on a GH200)",
    "lat.l2_far_ns": GPU_BENCHES + ": 231-264 ns (on a GH200)",
    "lat.dram": GPU_BENCHES + ": 610-625 cycles at 64-100 MB (on a GH200)",
    "lat.dram_ns": GPU_BENCHES + ": about 310 ns at 64-100 MB (on a GH200)",
    "lat.dram_tlb_miss": GPU_BENCHES + ": 680-689 cycles at >= 160 MB (on a GH200)",
    "lat.dram_tlb_miss_ns": GPU_BENCHES + ": 345-348 ns at >= 160 MB (on a GH200)",
    "l1d.size": MT4G_H100 + ": 233 KiB at maximum L1 (on an H100)",
    "bw.l1_bytes_per_clk": "RRZE gpu-benches gpu-strides: 126 B/clk/SM on an H200 "
                           "(gpu-strides/h200.txt); Luo et al., Benchmarking and Dissecting "
                           "the Nvidia Hopper GPU Architecture: 125.7 on an H800",
    "bw.l1_width_fraction": "RRZE gpu-benches gpu-strides: 126 of the L1's 128 B/clk/SM",
    "bw.l2_bytes_per_clk": "H100 SXM 4207-4808 B/clk (Johnsonms' summary of Luo et al.'s "
                           "code), H800 4472 (Luo et al.)",
    "bw.dram_read_fraction": H100_STUDY + ": 91-94 % of the datasheet on an H100",
    "ilp.k8_vs_k2": H100_STUDY + ": 0.648 (-35.2 %) on an H100 (gpumem sees the drop in "
                    "its per-thread contiguous ordering)",
    "cpasync.speedup_low_occupancy": H100_STUDY + ": 2.1-2.9x at 16 groups on two H100s",
}

#: gpu-benches' GH200 latencies (cycles at 1980 MHz), against which gpumem's H200 fleet
#: measures how far another tool's figure may lie (:func:`tool_allowance`).
GPU_BENCHES_CYCLES = {"lat.l1": 32.0, "lat.l2": 280.3, "lat.l2_far": 490.0,
                      "lat.dram": 617.5, "lat.dram_tlb_miss": 684.5}


def tool_allowance() -> tuple[float, str]:
    """How far another tool's published figure may lie from what gpumem measures (relative),
    and why: the largest difference between gpumem's H200 fleet and gpu-benches' published
    GH200 latency of the same level (a GH200's memory is not an H200's, so this also holds
    a product's difference: an upper estimate)."""
    fleet = {e.name: e.value for e in fleet_expected("")}
    diffs = {n: abs(float(fleet[n]) / v - 1) for n, v in GPU_BENCHES_CYCLES.items()
             if isinstance(fleet.get(n), (int, float))}
    if not diffs:
        return 0.15, "no fleet data: 15 %, as published Hopper latencies differ by tool"
    worst = max(diffs, key=lambda n: diffs[n])
    return diffs[worst], (f"the largest difference between gpumem's H200 fleet and "
                          f"gpu-benches' GH200 figure: {worst} {fleet[worst]:g} against "
                          f"{GPU_BENCHES_CYCLES[worst]:g} cycles")


def is_reference_card(device: DeviceInfo) -> bool:
    """A real H200 (not a GH200, another product): the cards the REFERENCE values were
    measured on are of this model."""
    name = device.name.upper()
    return device.kind == "cuda" and "H200" in name and "GH200" not in name


#: the name of a built-in simulator config that models an H200: the packaged one, or one
#: derived from it (``h200-calibrated``, what ``gpumem export sim`` writes from an H200 run)
SIM_H200 = "h200"


def is_simulated_h200(device: DeviceInfo) -> bool:
    """A built-in simulator device whose config models an H200 (named ``h200``, or
    ``h200-...``; the device's name is ``sim CONFIG``)."""
    if device.kind != "sim":
        return False
    config = device.name.strip().lower().removeprefix("sim ").strip()
    return config == SIM_H200 or config.startswith(SIM_H200 + "-")


def models_reference_card(device: DeviceInfo) -> bool:
    """Does ``device`` get the REFERENCE values: a real H200, or a simulated one."""
    return is_reference_card(device) or is_simulated_h200(device)


#: Measured values the packaged simulator does not reproduce (in a full run, or in the quick
#: run ``gpumem plugin check`` makes), each with what it gives instead and why: a simulated H200
#: is judged by every other one (tests/test_h200_reference.py keeps this list true).
NOT_SIMULATED: dict[str, str] = {
    "l1d.half_miss_size": "the model gives 240 KB: its L1 is indexed modulo the sets (the "
                          "H200's is hashed), so half its accesses miss only past the capacity",
    "ro.half_miss_size": "the model gives 240 KB (the read-only path shares the modulo L1)",
    "l2.near_size_at_half": "the model gives 28.0 MB, at its knee: its near level overflows "
                            "at one footprint; the cards' near L2 loses half its accesses "
                            "from 29.3 to 33.6 MB, 15 % past its knee; spread as the whole "
                            "L2 is, the model's crossing lies 5 % past its knee (28.7 MB "
                            "sized at the knee; sized at the cards' 32.1 MB crossing, its "
                            "knee moves to 31.4 against the cards' 28.0)",
    "ilp.l2_best_k": "the model gives [1, 1, 1]: it has no mechanism for the H200's "
                     "warp-contiguous loads climbing to K = 5 from the L2",
    "bulk.inflight_per_sm": "a quick run's grid (2 chunks x 2 stages x 2 blocks) puts the "
                            "model's plateau at 128 KB in flight per SM; the full grid's 64 KB "
                            "is the H200's",
}

FLEET = "gpumem on healthy H200 SXM cards"
FLEET_H100 = "gpumem on healthy H100 SXM cards"


def _die_values() -> list[Expected]:
    """Structural values of the GH100 die every Hopper product shares: exact."""
    return [
        Expected("l2.partitions", 2, "NVIDIA H100 Tensor Core GPU Architecture whitepaper: "
                 "two L2 partitions; MT4G's L2 'segment' is half the L2", "1", rel_tol=0.0),
        Expected("l1d.line", 128, MT4G_H100 + ": L1 line 128 B", "byte", rel_tol=0.0),
        Expected("l1d.sector", 32, MT4G_H100 + ": L1 fetch granularity 32 B", "byte",
                 rel_tol=0.0),
        Expected("ro.line", 128, MT4G_H100 + ": one unified L1 (read-only and texture share "
                 "it), line 128 B", "byte", rel_tol=0.0),
        Expected("ro.sector", 32, MT4G_H100 + ": one unified L1, fetch granularity 32 B",
                 "byte", rel_tol=0.0),
        Expected("l2.line", 128, MT4G_H100 + ": L2 line 128 B", "byte", rel_tol=0.0),
        Expected("smem.banks", 32, "NVIDIA CUDA C++ Programming Guide, compute capability 9.0: "
                 "32 banks of 4 bytes", "1", rel_tol=0.0),
        Expected("smem.bank_width", 4, "NVIDIA CUDA C++ Programming Guide, compute "
                 "capability 9.0: successive 32-bit words in successive banks", "byte",
                 rel_tol=0.0),
        Expected("l2.sm_groups", 2, "NVIDIA H100 Tensor Core GPU Architecture whitepaper: two "
                 "L2 partitions, each SM attached to one", "1", rel_tol=0.0),
    ]


def _property_values(device: DeviceInfo) -> list[Expected]:
    """What a Hopper device's own properties say where nothing measured it: limits and sizes
    no model of the product's spread covers (a product gpumem has not run on)."""
    out = []
    if device.clock_mhz:
        # 32 banks x 4 bytes per cycle per SM, at the clock the device reports
        out.append(Expected("bw.smem", round(128 * device.clock_mhz / 1e3, 1),
                            f"32 banks x 4 B per cycle per SM x {device.clock_mhz:g} MHz "
                            f"(device property clock rate)", "GB/s", rel_tol=0.05))
    if device.peak_bandwidth_gbs:
        out.append(Expected("bw.dram_read", round(device.peak_bandwidth_gbs, 1),
                            f"at most the theoretical peak {device.peak_bandwidth_gbs:.0f} GB/s "
                            f"(device memory clock x bus width x 2)", "GB/s", rel_tol=0.0,
                            bound="max"))
    if device.l2_bytes:
        out.append(Expected("l2.size", device.l2_bytes, f"device property L2CacheSize of "
                            f"{device.name}; band 15 %: no gpumem runs of this product", "byte",
                            rel_tol=0.15))
    return out


def _h100_values(device: DeviceInfo) -> list[Expected]:
    """:func:`_h100_published`, the share of the datasheet's bandwidth where the device
    states one."""
    return [e for e in _h100_published()
            if device.peak_bandwidth_gbs or e.name != "bw.dram_read_fraction"]


def _h100_published() -> list[Expected]:
    """The H100 study's published figures (and MT4G's L1), bands from the model."""
    tool, why = tool_allowance()
    study = H100_STUDY
    out = [
        published_expected("lat.l1_ns", 17.0, "ns", study + ": L1 hit about 17 ns",
                           tool=tool, tool_why=why),
        published_expected("lat.l2_ns", 145.0, "ns", study + ": L2-resident about 145 ns",
                           tool=tool, tool_why=why),
        published_expected("lat.l2_far_ns", 269.0, "ns", study + ": the middle plateau "
                           "about 269 ns", tool=tool, tool_why=why),
        published_expected("lat.dram_ns", 353.0, "ns", study + ": HBM-resident about 353 ns",
                           tool=tool, tool_why=why),
        # -35.0 % to -36.1 % over four runs of two dies: 0.639-0.650. Judged on the
        # per-thread contiguous ordering: gpumem finds the drop there and only there (three
        # H100s, 2026-12-06: thread 0.627-0.634, coalesced and warp 0.999-1.09; the study
        # saw its L2 hit rate climb to 56 % at K = 8, which a thread's K loads to lines its
        # neighbours also read give, and one coalesced load per line does not)
        published_expected("ilp.k8_vs_k2", [0.6445], "1", study + ": K = 8 over K = 2 at "
                           "fixed work, 16-B loads, 132 CTAs x 32 warps: -35.0 % to -36.1 % "
                           "(0.639-0.650) over four runs; judged on the per-thread "
                           "contiguous ordering, the one that shows the drop",
                           spread=0.0085, tool=tool, tool_why=why,
                           index=("order", ("thread",))),
        published_expected("l1d.size", 233 << 10, "byte", MT4G_H100 + ": 233 KiB of the "
                           "256 KB L1 + shared memory at maximum L1", tool=tool, tool_why=why),
    ]
    out.append(Expected("l2_slices.slices", 80, H100_SLICES, "1", rel_tol=0.0))
    out.append(published_expected("bw.dram_read_fraction", 0.925, "1", study + ": "
                                  "streaming reads reach 91-94 % of the datasheet",
                                  spread=0.016, tool=tool, tool_why=why))
    return out


def _published_h100() -> dict[str, str]:
    """The H100 figures others published, by finding, kept beside the H100 fleet's values."""
    return {e.name: e.source.split(" (band", 1)[0] for e in _h100_published()}


def _gh200_values() -> list[Expected]:
    """gpu-benches' published GH200 latencies, bands from the model."""
    tool, why = tool_allowance()
    return [published_expected(name, cycles, "cycle", GPU_BENCHES + f": {cycles:g} cycles",
                               tool=tool, tool_why=why)
            for name, cycles in GPU_BENCHES_CYCLES.items()]


def expected_values(device: DeviceInfo) -> list[Expected]:
    out = _die_values()
    if models_reference_card(device):
        out += fleet_expected(FLEET, beside=PUBLISHED_H200)
        out += [Expected(name, value, REFERENCE, units, rel_tol=0.0)
                for name, value, units in _REFERENCE]
        out.append(Expected("l2_slices.slices", 94, H200_SLICES, "1", rel_tol=0.0))
        have = {e.name for e in out}  # the device's properties only where the fleet is silent
        out += [e for e in _property_values(device) if e.name not in have]
    elif "H100" in device.name.upper():
        # a real card of the model gpumem measured on several: its fleet's values, the
        # published figures where the fleet is silent
        fleet = fleet_expected(FLEET_H100, beside=_published_h100(),
                               product=device.product) if device.kind == "cuda" else []
        out += fleet
        have = {e.name for e in out}
        out += [e for e in _h100_values(device) + _property_values(device)
                if e.name not in have]
    elif "GH200" in device.name.upper():
        out += _gh200_values()
        out += _property_values(device)
    else:
        out += _property_values(device)
    if is_simulated_h200(device):  # what the model is known not to reproduce: not judged,
        # with what it gives instead as the finding's reason
        out = [replace(e, not_judged=f"not simulated: {NOT_SIMULATED[e.name]}")
               if e.name in NOT_SIMULATED else e for e in out]
    return out
