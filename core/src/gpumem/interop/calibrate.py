"""A built-in simulator config calibrated from a measured run (``gpumem export sim``).

Measure a GPU, get a simulator config of it: the architecture's packaged config is the base,
and every parameter a finding of the run measures is set from it, with the finding named in
a comment on that line of the TOML. Parameters no finding measures keep the base's value and
are listed as such in the header (the base config's own comments say where those came from).
``gpumem run --device sim --sim-config GPU.toml`` then runs the same experiments on it, and
``gpumem compare HW_RUN SIM_RUN`` says, finding by finding, how far the simulation is.

Where the model's rate at a measured point depends on more than the parameter (DRAM
efficiencies under the DRAM's knee, the L2's look-ups per cycle behind the ILP sweep's
ratio, the bulk copies' ceiling), the parameter is solved through the model at that point
rather than read off: the calibrated simulator then gives the measured value there. The
mechanisms the model fits once to an H200's raw data (the knee's sharpness, loads in flight
per thread, cp.async's extra cycles, the copy engine's rate and issue interval) are the
base config's, each with its source there.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpumem.contracts.device import LARGEST_CLUSTER, BulkRequest, StreamRequest
from gpumem.contracts.errors import PointSkipped, UsageError
from gpumem.contracts.formats import Converted, Format, FormatError
from gpumem.interop.sim_from_run import positive
from gpumem.sim.config import SimConfig, SimConfigError
from gpumem.sim.throughput import WARP, bulk_model, stream_model

if TYPE_CHECKING:
    from gpumem.contracts.formats import PluginSet, Source


@dataclass
class Calibrated:
    """The calibrated config and, per parameter path (``cache.l1d.hit_latency``), where its
    value came from."""

    config: SimConfig
    sources: dict[str, str] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)  # measured findings the model cannot take
    config_device_known: bool = True  # the run described its device (not a bare manifest)
    used: set[tuple[str, str]] = field(default_factory=set)


#: A share of slow far hits below this is the timer's own mis-timings (0.1 % on the
#: packaged simulator, whose far hits are never slow), not a slow path.
SLOW_FAR_MIN = 0.01


def _fit_slow_far(cfg: SimConfig, src: Source, put: Callable[..., None], far: Any,
                  far_lat: float) -> None:
    """The share of hits in another partition that are slow, and their latency
    (``l2.far_slow_share``, ``l2.far_slow_latency``), read off: the model draws them per
    access, so its chase gives the measured share back (plus the timer's mis-timings)."""
    share = src.value("l2_sm_map", "l2.far_slow_share")
    slow = positive(src.value("l2_sm_map", "l2.far_slow_latency"))
    if far.slices > 1 or not isinstance(share, (int, float)) or not 0 <= share < 1:
        return
    if share < SLOW_FAR_MIN or slow is None or slow < far_lat:
        put(f"cache:{far.name}.far_slow_share", 0.0, "l2_sm_map", "l2.far_slow_share",
            f"{share:.4f}: below {SLOW_FAR_MIN:.0%}, the timer's mis-timings; none slow")
        put(f"cache:{far.name}.far_slow_latency", 0.0, "l2_sm_map", "l2.far_slow_share",
            "no slow far hits")
        return
    put(f"cache:{far.name}.far_slow_share", round(float(share), 4), "l2_sm_map",
        "l2.far_slow_share", "far hits slower than the L2 hits' body")
    put(f"cache:{far.name}.far_slow_latency", slow, "l2_sm_map", "l2.far_slow_latency",
        "their median latency")


def calibrate(base: SimConfig, src: Source) -> Calibrated:
    """``base`` with every parameter the run ``src`` measures set from its finding."""
    cfg = copy.deepcopy(base)
    out = Calibrated(cfg)

    def put(path: str, value: Any, experiment: str, name: str, how: str = "") -> None:
        obj, _, attr = path.rpartition(".")
        target: Any = cfg
        for part in obj.split(".") if obj else ():
            if part.startswith("cache:"):
                target = cfg.level(part[6:])
            elif part.startswith("tlb:"):
                target = next(t for t in cfg.tlbs if t.name == part[4:])
            else:
                target = getattr(target, part)
        if isinstance(target, dict):
            target[attr] = value
        else:
            setattr(target, attr, value)
        out.sources[path] = f"{experiment}/{name}" + (f" ({how})" if how else "")
        out.used.add((experiment, name))

    dev = src.device
    out.config_device_known = dev is not None
    if dev is not None:
        if dev.clock_mhz:
            cfg.clock_mhz = float(dev.clock_mhz)
            out.sources["clock_mhz"] = f"the run's device ({dev.name}): SM clock"
        if dev.sm_count:
            cfg.sm_count = int(dev.sm_count)
            out.sources["sm_count"] = f"the run's device ({dev.name}): SMs"
        if dev.peak_bandwidth_gbs and cfg.dram.bandwidth_gbs:
            cfg.dram.bandwidth_gbs = round(float(dev.peak_bandwidth_gbs), 1)
            out.sources["dram.bandwidth_gbs"] = (f"the run's device ({dev.name}): memory clock "
                                                 f"x bus width")
    names = {lv.name for lv in cfg.caches}
    for level, finding in (("l1d", "lat.l1"), ("l2", "lat.l2")):
        v = positive(src.value("latency", finding))
        if v is not None and level in names:
            put(f"cache:{level}.hit_latency", v, "latency", finding)
    far = next((lv for lv in cfg.caches if lv.partitions > 1), None)
    near_lat = positive(src.value("l2_sm_map", "l2.sm_map_near_latency"))
    far_lat = positive(src.value("l2_sm_map", "l2.sm_map_far_latency"))
    if far is not None and near_lat is not None and far_lat is not None and far_lat >= near_lat:
        put(f"cache:{far.name}.hit_latency", near_lat, "l2_sm_map", "l2.sm_map_near_latency",
            "a hit in the SM's own partition")
        put(f"cache:{far.name}.far_latency", far_lat, "l2_sm_map", "l2.sm_map_far_latency",
            "a hit in the other partition")
        _fit_slow_far(cfg, src, put, far, far_lat)
    # capacities the ladder measured: a set-associative level holds whole sets of whole
    # lines, and its first miss (the knee) is where they are full, modulo or spread (whose
    # misses then ramp over about a page, as a hashed L2's do)
    partitioned = far.name if far is not None else None
    for level, name in (("l1d", "l1d.size"), ("l2", "l2.near_size"),
                        (partitioned or "", "l2.size")):
        v = positive(src.value("latency", name))
        if v is None or level not in names:
            continue
        lv = cfg.level(level)
        if isinstance(lv.ways, list) or lv.index.function not in ("modulo", "spread"):
            continue  # an unequal or hashed geometry: its size is not one number to scale
        unit = lv.line * lv.ways
        put(f"cache:{level}.size", max(unit, int(round(v / unit)) * unit), "latency", name,
            f"rounded to whole sets of {lv.ways} x {lv.line} B")
    homes = src.value("l2_sm_map", "l2.sm_partition")
    if (far is not None and isinstance(homes, (list, tuple)) and len(homes) == cfg.sm_count
            and all(isinstance(h, (int, float)) and 0 <= h < far.partitions for h in homes)):
        put(f"cache:{far.name}.sm_partition", [int(h) for h in homes], "l2_sm_map",
            "l2.sm_partition", "each SM's near partition")
    v = positive(src.value("latency", "lat.dram"))
    if v is not None:
        put("dram.latency", v, "latency", "lat.dram")
    l1 = positive(src.value("cache_structure", "l1d.hit_latency"))
    ro = positive(src.value("cache_structure", "ro.hit_latency"))
    if l1 is not None and ro is not None and ro > l1 and "nc" in cfg.paths:
        cfg.path_latency["nc"] = ro - l1
        out.sources["path_latency.nc"] = ("cache_structure/ro.hit_latency - "
                                          "cache_structure/l1d.hit_latency")
        out.used |= {("cache_structure", "ro.hit_latency"), ("cache_structure", "l1d.hit_latency")}
    _fit_dram(cfg, src, put)
    ghz = cfg.clock_mhz / 1e3
    _fit_cache_bandwidths(cfg, src, put)
    v = positive(src.value("bulk_copy", "bulk.latency_estimate"))
    if v is not None:
        put("throughput.bulk_latency", v, "bulk_copy", "bulk.latency_estimate")
    _fit_bulk(cfg, src, put)
    for level, name in (("l1d", "l1d.sector"), ("l2", "l2.fill_unit")):
        v = positive(src.value("cache_structure", name))
        if v is not None and level in names and cfg.level(level).line % int(v) == 0:
            put(f"cache:{level}.sector", int(v), "cache_structure", name)
    page = positive(src.value("tlb_structure", "tlb.page"))
    for t in cfg.tlbs:  # levels named as the findings are: tlb_l1, tlb_l2
        if page is not None:
            put(f"tlb:{t.name}.page", int(page), "tlb_structure", "tlb.page")
        v = positive(src.value("tlb_structure", f"{t.name}.miss_penalty"))
        if v is not None:
            put(f"tlb:{t.name}.miss_penalty", v, "tlb_structure", f"{t.name}.miss_penalty")
    _fit_page_walk(cfg, src, put)
    v = positive(src.value("smem_latency", "lat.smem"))
    if v is not None:
        put("smem.latency", v, "smem_latency", "lat.smem")
    conflicts = src.value("smem_latency", "smem.conflict_latency")
    if isinstance(conflicts, (list, tuple)) and conflicts and all(positive(c) for c in conflicts):
        put("smem.conflict_latencies", [float(c) for c in conflicts], "smem_latency",
            "smem.conflict_latency")
    _fit_warp_issue(cfg, src, put)
    if cfg.smem.remote_latency > 0:  # the model has clusters: distributed shared memory
        for attr, name in (("cluster_latency", "lat.dsmem_local"), ("remote_latency", "lat.dsmem")):
            v = positive(src.value("dsmem_latency", name))
            if v is not None:
                put(f"smem.{attr}", v, "dsmem_latency", name)
        for attr, name in (("remote_bytes_per_cycle", "bw.dsmem"),
                           ("cluster_bytes_per_cycle", "bw.dsmem_local")):
            v = positive(src.value("dsmem_bandwidth", name))
            if v is not None and ghz > 0:
                put(f"smem.{attr}", round(v / ghz, 2), "dsmem_bandwidth", name,
                    f"GB/s per SM / {cfg.clock_mhz:g} MHz")
        ranks = [_indexed(src, "dsmem_latency", "dsmem.latency_by_distance", str(d))
                 for d in range(1, LARGEST_CLUSTER)]
        if all(r is not None for r in ranks):
            put("smem.remote_latency_by_rank", ranks, "dsmem_latency",
                "dsmem.latency_by_distance", f"cycles at ranks 1-{LARGEST_CLUSTER - 1} of a "
                f"cluster of {LARGEST_CLUSTER}")
        by = [_indexed(src, "dsmem_bandwidth", "dsmem.bw_by_cluster", str(c)) for c in (2, 4, 8)]
        while by and by[-1] is None:
            by.pop()
        if by and all(r is not None for r in by):
            put("smem.remote_rate_by_cluster", by, "dsmem_bandwidth", "dsmem.bw_by_cluster",
                "B/cycle per SM for clusters of 2, 4, 8")
    for attr, name in (("banks", "smem.banks"), ("bank_width", "smem.bank_width")):
        v = positive(src.value("smem_latency", name))
        if v is not None:
            put(f"smem.{attr}", int(v), "smem_latency", name)
    _fit_l2_requests(cfg, src, put)
    _fit_shared_l2(cfg, src, put)
    # the DRAM's rates once more, through the L2 as now calibrated: solved before the L2's
    # bandwidth and look-ups were, they would rest on the base config's (a read 0.2 % off)
    _fit_dram(cfg, src, put)
    _fit_slices(cfg, src, put)
    _fit_slice_queue(cfg, src, put)
    _shift_base_slices(cfg, base, out.sources, put)
    out.left = [f"{exp}/{name}" for exp, name in sorted(src.findings)
                if (exp, name) not in out.used]
    try:
        cfg.validate()
    except SimConfigError as e:
        raise FormatError(f"the calibrated config is invalid: {e}") from None
    return out


#: Most slices a slice map from a run may declare (an H200 page: 86-88 groups).
MAX_SLICES = 1024


def _slice_rows(src: Source, n_codes: int, exp: str) -> dict[int, list[float]] | None:
    """``l2_slices.slice_latency`` as {measured SM: its latency to each code}, or None
    unless every row is whole and every latency a positive number (a file's content is not
    trusted: keys are ``SM/code``)."""
    f = src.findings.get((exp, "l2_slices.slice_latency"))
    if f is None or not f.resolved or f.index is None or not isinstance(f.value, list):
        return None
    rows: dict[int, dict[int, float]] = {}
    for key, v in zip(f.index[1], f.value, strict=False):
        sm, _, code = str(key).partition("/")
        if not (sm.isdigit() and code.isdigit()) or positive(v) is None:
            return None
        rows.setdefault(int(sm), {})[int(code)] = float(v)
    if not rows or any(sorted(r) != list(range(n_codes)) for r in rows.values()):
        return None
    return {sm: [r[c] for c in range(n_codes)] for sm, r in rows.items()}


#: Where a run's slice map comes from, in order: every line of a page with the slices
#: contention told apart (l2_twins), every line of a page (its table whole), then the sparse
#: sample.
SLICE_MAPS = ("l2_twins", "l2_hash", "l2_slices")


def _fit_slices(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """The L2's slice map on the level that serves the L2-only path's hits, from the first
    of :data:`SLICE_MAPS` whose findings give one."""
    for exp in SLICE_MAPS:
        if _fit_slices_of(cfg, src, put, exp):
            return


def _fit_slice_queue(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """The sliced L2's queue (``slice_bandwidth``) from the rate l2_twins' tests give."""
    rate = positive(src.value("l2_twins", "l2_twins.slice_bandwidth"))
    level = cfg.level(cfg.paths["cg"][0]) if cfg.paths.get("cg") else None
    if rate is not None and rate < 1e6 and level is not None and level.slices > 1:
        put(f"cache:{level.name}.slice_bandwidth", rate, "l2_twins",
            "l2_twins.slice_bandwidth", "a slice's queue (the rate Little's law gives)")


def _fit_slices_of(cfg: SimConfig, src: Source, put: Callable[..., None], exp: str) -> bool:
    """The slice map ``exp``'s findings give (``l2_slices``' names): the hash's masks, or
    where no XOR hash holds its table over the invariant deltas, and each SM's latency to
    each slice; an SM the run did not measure takes the nearest measured SM's row (by SM
    number: neighbours share a TPC). False where they give none."""
    used = "l2_slices.hash_buffer_masks"
    masks = src.value(exp, used)
    if not masks:
        used = "l2_slices.hash_masks"
        masks = src.value(exp, used)
    if not cfg.paths.get("cg"):
        return False
    level = cfg.level(cfg.paths["cg"][0])
    if level.scope != "gpu":
        return False
    trial, where = copy.deepcopy(level), f"cache:{level.name}"
    if isinstance(masks, list) and masks:
        if (not all(isinstance(m, int) and 0 < m < 1 << 62 for m in masks)
                or 1 << len(masks) > MAX_SLICES):
            return False
        rows = _slice_rows(src, 1 << len(masks), exp)
        columns = list(range(1 << len(masks)))
        trial.slices, trial.slice_masks = 1 << len(masks), list(masks)
        how = [(f"{where}.slices", trial.slices, used, "2 ** masks"),
               (f"{where}.slice_masks", trial.slice_masks, used, "")]
    else:
        fitted = _slice_table(src, exp)
        if fitted is None:
            return False
        kernel, groups, by_class = fitted
        rows = _slice_rows(src, groups, exp)
        columns = sorted(set(by_class))  # groups no class holds are no slice
        slot = {g: i for i, g in enumerate(columns)}
        trial.slices, trial.slice_kernel = len(columns), kernel
        trial.slice_table = [slot[g] for g in by_class]
        buffer = src.value(exp, "l2_slices.table_buffer")
        trial.slice_footprint = buffer if isinstance(buffer, int) and not isinstance(
            buffer, bool) and 0 < buffer < 1 << 48 else 0
        how = [(f"{where}.slices", trial.slices, "l2_slices.hash_table",
                "the groups some class of the table holds"),
               (f"{where}.slice_kernel", kernel, "l2_slices.hash_invariants", ""),
               (f"{where}.slice_table", trial.slice_table, "l2_slices.hash_table",
                "each class's group, numbered as slices"),
               (f"{where}.slice_footprint", trial.slice_footprint, "l2_slices.table_buffer",
                "")]
    if rows is None:
        return False
    for attr in ("slice_masks", "slice_kernel", "slice_table", "slice_footprint"):
        if getattr(level, attr) and not any(k == f"{where}.{attr}" for k, *_ in how):
            empty: int | list[int] = 0 if attr == "slice_footprint" else []  # the base's other form
            setattr(trial, attr, empty)
            how.append((f"{where}.{attr}", empty, "l2_slices.slice_latency",
                        "the run's slice map replaces the base config's"))
    measured = sorted(rows)
    table = [[rows[min(measured, key=lambda m: (abs(m - sm), m))][g] for g in columns]
             for sm in range(cfg.sm_count)]
    trial.slice_latency, trial.sm_offsets = table, []
    try:
        trial.validate(f"cache[{level.name}]")
    except SimConfigError:
        return False  # a map the simulator cannot home lines by (dependent masks, a bad table)
    for key, value, finding, note in how:
        put(key, value, exp, finding, note)
    put(f"{where}.slice_latency", table, exp, "l2_slices.slice_latency",
        f"{len(measured)} SMs measured; each other SM takes the nearest measured one's row")
    if level.sm_offsets:
        put(f"{where}.sm_offsets", [], exp, "l2_slices.slice_latency",
            "the slice latencies hold each SM's distance")
    return True


def _shift_base_slices(cfg: SimConfig, base: SimConfig, sources: dict[str, str],
                       put: Callable[..., None]) -> None:
    """A run that measured its L2's hit latency (``lat.l2``) but no slice map of its own keeps
    the base config's map, its latencies moved by as much as the run's L2 hit differs from the
    base's: the lines and SMs keep their spread (an H200's 245-330 cycles), the level its
    measured latency (a run whose lat.l2 rose 17 cycles simulates 17 cycles slower)."""
    if not cfg.paths.get("cg"):
        return
    level = cfg.level(cfg.paths["cg"][0])
    where = f"cache:{level.name}"
    was = base.level(level.name).hit_latency
    if (not level.slice_latency or f"{where}.slice_latency" in sources
            or f"{where}.hit_latency" not in sources or not was):
        return
    shift = round(level.hit_latency - was, 2)
    table = [[round(x + shift, 2) for x in row] for row in level.slice_latency]
    if min(min(row) for row in table) <= 0:
        return
    put(f"{where}.slice_latency", table, "latency", "lat.l2",
        f"the base config's slice latencies {shift:+g} cycles: the run's L2 hit over the "
        f"base's {was:g}; the run measured no slice map")


def _slice_table(src: Source, exp: str) -> tuple[list[int], int, list[int]] | None:
    """A table slice map's parts, checked (a file's content is not trusted): the invariant
    deltas, the number of groups the slice latencies are over, and each class's group; None
    unless every class has a group and the deltas are address masks."""
    table = src.value(exp, "l2_slices.hash_table")
    kernel = src.value(exp, "l2_slices.hash_invariants")
    groups = src.value(exp, "l2_slices.groups")
    if (not isinstance(table, list) or not isinstance(kernel, list) or not table
            or not isinstance(groups, int) or not 1 < groups <= MAX_SLICES
            or len(table) & (len(table) - 1) or len(table) > 1 << 20
            or not all(isinstance(g, int) and not isinstance(g, bool) and 0 <= g < groups
                       for g in table)
            or not all(isinstance(k, int) and not isinstance(k, bool) and 0 < k < 1 << 40
                       for k in kernel) or len(kernel) > 20):
        return None
    return [int(k) for k in kernel], groups, [int(g) for g in table]


def _fit_warp_issue(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """A warp's shared-load issue from one warp's rate at each ILP
    (``smem_bandwidth/smem.warp_rate_by_ilp``): 128 B / rate = load_issue_cycles +
    iteration_cycles / ILP, fitted by least squares over the ILPs (an H200: 3.98 and 2.28
    cycles, every ILP's rate within 0.5 %). Set only where the fit is a warp that issues
    faster than ILP loads per latency allow (iterations overlap) and both cycles come out
    positive."""
    f = src.findings.get(("smem_bandwidth", "smem.warp_rate_by_ilp"))
    if f is None or not f.resolved or f.index is None or not isinstance(f.value, list):
        return
    pairs = [(int(i), positive(r)) for i, r in zip(f.index[1], f.value, strict=False)]
    pts = [(1.0 / i, WARP * 4 / r) for i, r in pairs if i > 0 and r is not None]
    if len(pts) < 2:
        return
    xs, ys = zip(*pts, strict=True)
    if len(set(xs)) < 2:
        return
    slope, issue = (float(c) for c in np.polyfit(xs, ys, 1))
    latency = cfg.smem.latency
    if issue <= 0 or slope < 0 or (latency > 0 and issue + slope >= latency):
        return  # not an overlapping warp: Little's law over the latency stands
    how = "least squares of 128 B / rate over 1 / ILP"
    put("smem.load_issue_cycles", round(issue, 3), "smem_bandwidth", "smem.warp_rate_by_ilp",
        how)
    put("smem.iteration_cycles", round(slope, 3), "smem_bandwidth", "smem.warp_rate_by_ilp",
        how)


def _indexed(src: Source, experiment: str, name: str, label: str) -> float | None:
    """Element ``label`` of a list finding indexed by labels (``ilp.k8_vs_k2`` by order)."""
    f = src.findings.get((experiment, name))
    if f is None or not f.resolved or f.index is None or not isinstance(f.value, list):
        return None
    labels = [str(v) for v in f.index[1]]
    return positive(f.value[labels.index(label)]) if label in labels else None


def _solve(model: Callable[[float], float], target: float, lo: float, hi: float) -> float | None:
    """The x in [lo, hi] where the increasing ``model(x)`` meets ``target`` (bisection, to
    0.1 %), or None where the target lies outside the model's range."""
    if not model(lo) <= target <= model(hi):
        return None
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if model(mid) < target else (lo, mid)
        if hi / lo < 1.001:
            break
    return (lo * hi) ** 0.5


def _busiest_stream(cfg: SimConfig, kind: str) -> StreamRequest:
    """The point of the bandwidth sweep's own plan (on a device of this config) with the most
    bytes in flight, every axis at its largest: where its best median is measured."""
    from gpumem.contracts.experiment import RunContext
    from gpumem.experiments.bandwidth import Bandwidth
    from gpumem.sim.device import sim_device_info

    plan = Bandwidth().plan(RunContext(cfg.arch, sim_device_info(cfg)))
    top = {a.name: max(a.values) for a in plan.axes if a.name != "kind"}
    return StreamRequest(footprint=int(plan.attrs["footprint"]), ctas=int(top["ctas"]),
                         threads=int(top["threads"]), ilp=int(top["ilp"]),
                         width=int(top["width"]), path=str(plan.attrs["path"]),
                         order=str(plan.attrs["order"]), kind=kind,
                         work=int(plan.attrs["work_bytes"]))


def _fit_cache_bandwidths(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """Each cache level's bandwidth, solved so that the model's best rate over the
    bandwidth_levels sweep's own points (on a device of this config) that the level serves is
    the measured best. Read off as GB/s per clock, the L1's would fall short: its cap and the
    SM's issue cap are nearly equal, and the model's smooth minimum of the two gives 7 % less
    than either (an H200's 125.1 B/cycle/SM came out as 116)."""
    from gpumem.contracts.experiment import RunContext
    from gpumem.experiments.bandwidth_levels import BandwidthLevels
    from gpumem.sim.device import sim_device_info

    ghz = cfg.clock_mhz / 1e3
    names = {lv.name for lv in cfg.caches}
    if ghz <= 0:
        return
    dev = sim_device_info(cfg)
    plan = BandwidthLevels().plan(RunContext(cfg.arch, dev))
    axes = {a.name: a.values for a in plan.axes}
    order = str(plan.attrs["order"])
    for level, name, path, per_sm in (("l1d", "bw.l1", "ca", True),
                                      ("l2", "bw.l2", "cg", False)):
        v = positive(src.value("bandwidth_levels", name))
        if v is None or level not in names or path not in cfg.paths:
            continue
        lv = cfg.level(level)
        per_cycle = v / ghz / (cfg.sm_count if per_sm else 1)
        # the footprints the analysis reads the level at: the L2's up to half of it
        biggest = dev.l2_bytes // 2 if lv.scope == "gpu" else lv.size * cfg.sm_count
        points = [StreamRequest(footprint=int(fp), ctas=int(c) * cfg.sm_count,
                                threads=int(t), ilp=int(k), width=int(plan.attrs["width"]),
                                path=path, kind="read", order=order, work=0)
                  for fp in axes["footprint"] if int(fp) <= biggest
                  for c in axes["ctas_per_sm"] for t in axes["threads"] for k in axes["ilp"]]

        best = _best_served(cfg, lv, "bandwidth", points, ghz)
        solved = _solve(best, v, per_cycle, 4 * per_cycle)
        unit = f" / {cfg.sm_count} SMs" if per_sm else ""
        if solved is None:
            lv.bandwidth = round(per_cycle, 1)
            put(f"cache:{level}.bandwidth", lv.bandwidth, "bandwidth_levels", name,
                f"GB/s / {cfg.clock_mhz:g} MHz{unit}")
            continue
        lv.bandwidth = round(solved, 1)
        put(f"cache:{level}.bandwidth", lv.bandwidth, "bandwidth_levels", name,
            f"the cap at which the model's best rate over the sweep's points this level "
            f"serves is the measured {per_cycle:.1f} B/cycle{' per SM' if per_sm else ''}")


def _best_served(cfg: SimConfig, level: Any, attr: str, points: list[StreamRequest],
                 ghz: float) -> Callable[[float], float]:
    """GB/s of the model's best rate over ``points`` that ``level`` serves, with its ``attr``
    (a bandwidth cap) set to the argument: what the fits solve for the measured best."""
    def best(x: float) -> float:
        setattr(level, attr, x)
        rates = [0.0]
        for req in points:
            try:
                m = stream_model(cfg, req)
            except PointSkipped:
                continue
            if m.serving == level.name:
                rates.append(m.rate)
        return max(rates) * ghz
    return best


def _fit_shared_l2(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """The L2's rates where blocks on several SMs read each line (``l2_bandwidth``), each
    solved as the level's own bandwidth is: the model's best rate over the sweep's points of
    that share the L2 serves is the measured best. The coalescer merges from the share the
    run measured merging at (:data:`~gpumem.experiments.l2_bandwidth.COALESCED`); where
    between 8 and 32 readers it starts, one run does not say (an H200's share sweep jumped
    between 8 and 16: tests/data/h200-s24/share.txt)."""
    from gpumem.contracts.experiment import RunContext
    from gpumem.experiments.l2_bandwidth import COALESCED, FINDINGS, L2Bandwidth
    from gpumem.sim.device import sim_device_info

    ghz = cfg.clock_mhz / 1e3
    level = next((lv for lv in cfg.caches if lv.scope == "gpu"), None)
    if ghz <= 0 or level is None or "cg" not in cfg.paths:
        return
    dev = sim_device_info(cfg)
    plan = L2Bandwidth().plan(RunContext(cfg.arch, dev))
    axes = {a.name: a.values for a in plan.axes}
    for share, (name, _how) in FINDINGS.items():
        v = positive(src.value("l2_bandwidth", name))
        if v is None:
            continue
        attr = "coalesced_bandwidth" if share == COALESCED else "shared_bandwidth"
        if share == COALESCED:
            put(f"cache:{level.name}.coalesced_share", COALESCED, "l2_bandwidth", name,
                "the readers of a line the run measured merging at")
        points = [StreamRequest(footprint=int(fp), ctas=int(c) * cfg.sm_count, threads=int(t),
                                ilp=int(k), width=int(plan.attrs["width"]), path="cg",
                                kind="read", order="block", share=share, work=0)
                  for fp in axes["footprint"] for c in axes["ctas_per_sm"]
                  for t in axes["threads"] for k in axes["ilp"]]

        per_cycle = v / ghz
        solved = _solve(_best_served(cfg, level, attr, points, ghz), v, per_cycle,
                        4 * per_cycle)
        put(f"cache:{level.name}.{attr}", round(solved or per_cycle, 1), "l2_bandwidth", name,
            f"the cap at which the model's best rate over the sweep's points of {share} "
            f"readers a line is the measured {per_cycle:.1f} B/cycle" if solved else
            f"GB/s / {cfg.clock_mhz:g} MHz")


def _fit_page_walk(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """What an access that misses every TLB level costs beyond the levels' own penalties,
    from Mei & Chu's P6 (a fresh page of a fresh region each access: a DRAM access that
    misses every level): P6 - the DRAM latency - every level's miss penalty, as the model adds
    them up. A level's penalty the run does not measure stays the base's (an assumption): the
    sum is what is measured, the split is not."""
    p6 = positive(src.value("patterns", "lat.pattern.P6"))
    if p6 is None or not cfg.tlbs:
        return
    walk = round(p6 - cfg.dram.latency - sum(t.miss_penalty for t in cfg.tlbs), 1)
    if walk > 0:
        put("page_walk_latency", walk, "patterns", "lat.pattern.P6",
            f"minus the DRAM latency and the {len(cfg.tlbs)} TLB level(s)' miss penalties")


def _fit_dram(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """DRAM efficiencies, each solved so that the model's rate at the bandwidth sweep's
    busiest point is the measured best: reads (the knee where the bytes in flight meet the
    DRAM keeps the model's rate under its cap), writes (posted: at the cap), and a copy's
    mix of the two."""
    peak = cfg.dram.bandwidth_gbs
    read = positive(src.value("bandwidth", "bw.dram_read"))
    if not peak or read is None or "cg" not in cfg.paths:
        return
    ghz = cfg.clock_mhz / 1e3
    d = cfg.dram

    def rate(kind: str) -> Callable[[float], float]:
        attr = {"read": "efficiency", "write": "write_efficiency", "copy": "mix_efficiency"}
        req = _busiest_stream(cfg, kind)

        def at(x: float) -> float:
            setattr(d, attr[kind], x)
            return stream_model(cfg, req).rate * ghz
        return at

    eff = _solve(rate("read"), read, 0.01, 1.0)
    d.efficiency = round(eff if eff is not None else min(1.0, read / peak), 4)
    put("dram.efficiency", d.efficiency, "bandwidth", "bw.dram_read",
        f"of the {peak:g} GB/s peak, solved through the model at the sweep's busiest point"
        if eff is not None else f"of the {peak:g} GB/s peak")
    write = positive(src.value("bandwidth", "bw.dram_write"))
    if write is not None:  # relative to a read stream's cap, as the model applies it
        wr = _solve(rate("write"), write, 0.01, 1.0)
        d.write_efficiency = round(wr if wr is not None else 1.0, 4)
        put("dram.write_efficiency", d.write_efficiency, "bandwidth", "bw.dram_write",
            "relative to the read cap, solved through the model at the sweep's busiest point")
    copied = positive(src.value("bandwidth", "bw.dram_copy"))
    if copied is not None:  # what a read/write mix loses beyond the two rates
        mix = _solve(rate("copy"), copied, 0.01, 1.0)
        d.mix_efficiency = round(mix if mix is not None else 1.0, 4)
        put("dram.mix_efficiency", d.mix_efficiency, "bandwidth", "bw.dram_copy",
            "solved through the model at the sweep's busiest point")


def _fit_bulk(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """What the DRAM sustains for bulk copies, solved so that the model's best rate over the
    bulk_copy sweep's grid is the measured best (the finding is the sweep's best point; the
    model's rate with shared memory full of 32 KB copies, solved for before, lay 1.7 % under
    its best over the grid)."""
    from gpumem.experiments.bulk import CHUNKS, CTAS_PER_SM, STAGES

    best = positive(src.value("bulk_copy", "bw.dram_read_bulk"))
    reqs = [BulkRequest(footprint=1 << 30, chunk=c, stages=s, ctas_per_sm=b)
            for c in CHUNKS for s in STAGES for b in CTAS_PER_SM
            if c * s * b <= cfg.smem.size]
    if best is None or not cfg.dram.bandwidth_gbs or not reqs:
        return
    ghz = cfg.clock_mhz / 1e3

    def at(x: float) -> float:
        cfg.dram.bulk_efficiency = x
        return max(bulk_model(cfg, req) for req in reqs) * ghz
    eff = _solve(at, best, 0.01, 1.0)
    cfg.dram.bulk_efficiency = 0.0
    if eff is not None:
        put("dram.bulk_efficiency", round(eff, 4), "bulk_copy", "bw.dram_read_bulk",
            "solved through the model: its best over the sweep's grid is the measured best")


def _fit_l2_requests(cfg: SimConfig, src: Source, put: Callable[..., None]) -> None:
    """The L2's look-ups from the ILP sweep's per-thread contiguous K = 8 / K = 2 ratios, each
    solved through the model: the rate per cycle from the L2-resident ratio (at K = 2 the
    L2's bandwidth limits, at K = 8 its look-ups: 16 useful bytes per request), then the
    look-ups a line filled from DRAM costs from the HBM-resident ratio (no fills at L2)."""
    level = next((lv for lv in cfg.caches if lv.scope == "gpu"), None)
    if level is None or "cg" not in cfg.paths:
        return
    from gpumem.experiments.loads import THREADS, WIDTH, WORK

    def ratio(footprint: int, attr: str) -> Callable[[float], float]:
        def at(x: float) -> float:
            setattr(level, attr, x)  # tried in place; solve() restores it

            def bw(k: int) -> float:
                return stream_model(cfg, StreamRequest(
                    footprint=footprint, ctas=cfg.sm_count, threads=THREADS, ilp=k,
                    width=WIDTH, path="cg", order="thread", kind="read", work=WORK)).rate
            return bw(8) / bw(2)
        return at

    def solve(attr: str, model: Callable[[float], float], target: float | None,
              lo: float, hi: float) -> float | None:
        kept = getattr(level, attr)
        try:
            return _solve(model, target, lo, hi) if target is not None else None
        finally:
            setattr(level, attr, kept)

    l2 = _indexed(src, "ilp", "ilp.l2_k8_vs_k2", "thread")
    rate = solve("requests_per_cycle", ratio(level.size // 2, "requests_per_cycle"), l2, 1.0,
                 1e5)
    if rate is None:
        return
    put(f"cache:{level.name}.requests_per_cycle", round(rate, 1), "ilp", "ilp.l2_k8_vs_k2",
        "the rate at which the model's L2-resident thread-ordered K=8/K=2 ratio is the "
        "measured one")
    hbm = _indexed(src, "ilp", "ilp.k8_vs_k2", "thread")
    beyond = 8 * sum(lv.size for lv in cfg.caches if lv.scope == "gpu")
    # more look-ups per fill lower the ratio (solved on its negative, which rises), up to one
    # per sector filled: beyond, K = 2's own fills cap it too and the ratio turns
    most = level.line / level.sector_size
    fill = solve("fill_lookups", lambda x: -ratio(beyond, "fill_lookups")(x),
                 -hbm if hbm is not None else None, 0.01, most)
    how = ("look-ups per line filled from DRAM at which the model's HBM-resident "
           "thread-ordered K=8/K=2 ratio is the measured one")
    if fill is None and hbm is not None:
        # a ratio below what one look-up per sector filled gives: the model's closest is there
        at_most = _at(level, "fill_lookups", most, lambda: ratio(beyond, "fill_lookups")(most))
        if hbm < at_most:
            fill = most
            how = (f"one look-up per sector filled, the most the model takes: its HBM-resident "
                   f"thread-ordered K=8/K=2 ratio is then {at_most:.3f}, the closest it "
                   f"comes to the measured {hbm:.3f}")
    if fill is not None:
        put(f"cache:{level.name}.fill_lookups", round(fill, 2), "ilp", "ilp.k8_vs_k2", how)


def _at(obj: Any, attr: str, value: float, model: Callable[[], float]) -> float:
    """``model()`` with ``obj.attr`` set to ``value`` for the call, then restored."""
    kept = getattr(obj, attr)
    setattr(obj, attr, value)
    try:
        return model()
    finally:
        setattr(obj, attr, kept)


_TABLE = re.compile(r"^\[\[?([\w.]+)\]\]?\s*$")
_KEY = re.compile(r"^([\w]+)\s*=")


def _comment(text: object) -> str:
    """Text from a run (its folder's name, a device's, a finding's) as one comment line of
    TOML: a newline in it would end the comment, and what follows would be read as
    configuration (a folder named ``a\nsm_count = 7``), so control characters are written
    out (:func:`gpumem.printable.escape_controls`)."""
    from gpumem.printable import escape_controls

    return escape_controls(text)


def commented_toml(cal: Calibrated, run: Path | str, base_name: str,
                   assumed: dict[str, str] | None = None, pooled: bool = False) -> str:
    """The config as TOML, each calibrated parameter's line commented with its finding.
    ``assumed``: a base built from the run itself (:mod:`gpumem.interop.sim_from_run`), whose
    assumptions are commented on their lines instead of the packaged base's. ``run``: how the
    header names the run; a Path is named by its base name only (the file is shared)."""
    if isinstance(run, Path):
        run = Format.shareable(run)
    text = cal.config.to_toml()
    assumed = assumed or {}
    table, names = "", {}
    lines = []
    for line in text.splitlines():
        m = _TABLE.match(line)
        if m:
            table = m.group(1)
            names[table] = ""
            lines.append(line)
            if table in assumed:
                lines.append(f"# {_comment(assumed[table])}")
            continue
        k = _KEY.match(line)
        if k and k.group(1) == "name" and table in ("cache", "tlb"):
            names[table] = line.split("=", 1)[1].strip().strip('"')
        path = None
        if k:
            key = k.group(1)
            if table in ("cache", "tlb"):
                path = f"{table}:{names.get(table, '')}.{key}"
            elif table:
                path = f"{table}.{key}"
            else:
                path = key
        if path in cal.sources:
            line = f"{line}  # measured: {_comment(cal.sources[path])}"
        elif path in assumed:
            line = f"{line}  # {_comment(assumed[path])}"
        lines.append(line)
    if assumed:
        base = ["# every other parameter is the run's device's own property, a geometry the",
                "# run decided, or ASSUMED where commented so (no architecture plugin's base",
                "# config: the model was built from the run, gpumem.interop.sim_from_run)."]
    else:
        base = [f"# every other parameter is ASSUMED: the packaged "
                f"'{_comment(base_name)}' config's value (its own",
                "# file says where each came from)."]
    header = [
        f"# gpumem built-in simulator config calibrated from "
        f"{'the measured runs' if pooled else 'the measured run'} {_comment(run)}",
        "# (gpumem export sim). A parameter commented 'measured' is set from the finding named;",
        *base,
        *(["# The findings are this gpumem's analyses of the run's raw data, as its simulated",
           "# runs will get."] if cal.config_device_known else
          ["# The findings are those the run's manifest recorded (its raw data not kept); the",
           "# SM clock, SM count and DRAM peak are the base's (a manifest names no device)."]),
        "# Findings of the run not used to set a parameter (the model cannot express them",
        "# yet, or they follow from those set):",
    ]
    left = cal.left
    for i in range(0, len(left), 4):
        header.append("#   " + _comment(", ".join(left[i:i + 4])))
    return "\n".join(header) + "\n" + "\n".join(lines) + "\n"


def calibrated(plugins: PluginSet, src: Source, arch: str
               ) -> tuple[Calibrated, str, dict[str, str]]:
    """``src`` calibrated onto ``arch``'s packaged config, or, for an architecture that ships
    none (the generic ``sm_XY`` of a GPU no plugin describes), onto a base built from the
    run itself: (the calibration, the base's name, the base's assumptions by parameter)."""
    from gpumem.interop.sim_from_run import base_config

    base = plugins.first_result("gpumem_simulator_config", arch=arch, simulator="sim")
    assumed: dict[str, str] = {}
    if not isinstance(base, SimConfig):
        try:
            base, assumed = base_config(src)
        except (ValueError, SimConfigError) as e:
            raise FormatError(f"architecture '{arch}' ships no built-in simulator config, "
                              f"and none can be built from the run: {e}") from None
    name = base.name
    cal = calibrate(base, src)
    device = src.device.name if src.device is not None else ""
    model = config_name(device)
    cal.config.name = f"{model or name}-calibrated"
    if model and model != name:
        # the base modelled another GPU: its description would name that one
        cal.config.description = (f"{device} calibrated from a gpumem run; every "
                                  f"parameter not measured is the '{name}' config's")
    return cal, name, assumed


def config_name(device: str) -> str:
    """A simulator config's name for a GPU named ``device`` (a run's, so anything): lower
    case letters, digits and single hyphens, the vendor's word dropped, at most 40
    characters; ``NVIDIA H200`` gives ``h200``, as the packaged H200's config is named, and
    ``NVIDIA H100 80GB HBM3`` gives ``h100-80gb-hbm3``; "" where nothing is left. The
    name becomes a file's, and plugins read it (``sim h200-...`` gets an H200's values), so
    an H100's export must not keep the H200 base's name."""
    words = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    return words.removeprefix("nvidia-").removeprefix("nvidia")[:40].strip("-")


class SimFormat(Format):
    """``gpumem export sim RUN --out GPU.toml``: a calibrated built-in simulator config."""

    name = "sim"
    summary = "gpumem's built-in simulator config (TOML), calibrated from a measured run"
    exports = "GPU.toml"

    def export_run(self, run: Path, out: Path, *, arch: str | None = None,
                   target: str | None = None, plugins: PluginSet) -> Converted:
        return self.export_runs([run], out, arch=arch, target=target, plugins=plugins)

    def export_runs(self, runs: list[Path], out: Path, *, arch: str | None = None,
                    target: str | None = None, plugins: PluginSet) -> Converted:
        """One run calibrates the config; several runs of one GPU model are pooled first,
        each finding the median run's (:mod:`gpumem.interop.pool`): one run's noise (a TLB
        miss penalty read 8 cycles where the others read 10-11) sets no parameter."""
        from gpumem.interop.compare import changed_findings, changed_summary
        from gpumem.interop.pool import median_source
        from gpumem.safe_write import write_text

        if target:
            raise UsageError("export sim takes no --target (one simulator, this gpumem)")
        if not runs:
            raise UsageError("export sim needs a run")
        out = Path(out)
        if out.suffix == ".toml":
            self.refuse_existing(out)  # before the work; again before the write
        # today's analyses, as the sim's runs will get; a damaged run is refused, not filled in
        sources = [self.load_run(run, reanalyze_with=plugins) for run in runs]
        stale = changed_findings(plugins, sources)
        archs = sorted({s.arch for s in sources if s.arch})
        if len(archs) > 1 and not arch:
            raise UsageError(f"the runs were measured as different architectures "
                             f"({', '.join(archs)}): pool runs of one GPU model, or give --arch")
        names = [self.shareable(run) for run in runs]  # shared: the runs' names, not paths
        src = sources[0] if len(sources) == 1 else median_source(sources, "+".join(names))
        arch = arch or src.arch
        if not arch:
            raise UsageError(f"{runs[0]}: the run records no architecture (give --arch)")
        from gpumem.contracts.generic import is_generic

        if arch not in plugins.architectures() and not is_generic(arch):
            raise UsageError(f"unknown architecture '{arch}' (choose from: "
                             f"{', '.join(sorted(plugins.architectures())) or 'none'}); or "
                             f"sm_XY, the generic architecture of compute capability X.Y")
        cal, base_name, assumed = calibrated(plugins, src, arch)
        name = (names[0] if len(names) == 1 else
                f"{', '.join(names)} pooled (each finding the median run's)")
        cal.config.source = (f"calibrated from the run{'s' if len(names) > 1 else ''} {name} "
                             f"by gpumem export sim; base: "
                             f"{'built from the run' if assumed else base_name}")
        path = out if out.suffix == ".toml" else out / f"{cal.config.name}.toml"
        if path.parent.exists() and not path.parent.is_dir():
            raise UsageError(f"--out {out}: not a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.refuse_existing(path)
        write_text(path, commented_toml(cal, name, base_name, assumed, pooled=len(runs) > 1))
        warnings = [f"{len(cal.sources)} parameter(s) set from the run"
                    f"{f's ({len(runs)} pooled)' if len(runs) > 1 else ''}; {len(cal.left)} "
                    f"finding(s) not used (listed in the file's header)"]
        if stale:
            warnings.append(f"{changed_summary(stale)}: the parameters set from them describe "
                            f"that version's measurement; run those experiments again for "
                            f"today's")
        gpus = sorted({s.device.name for s in sources if s.device is not None})
        if len(gpus) > 1:
            warnings.append(f"the runs were measured on GPUs named {', '.join(gpus)}: the "
                            f"pool describes none of them alone")
        for n, s in zip(names, sources, strict=True):
            if s.device is None:
                warnings.append(f"{n}: no device description (a run kept as its manifest "
                                f"alone): the findings as recorded, not re-analysed; the SM "
                                f"clock, SM count and DRAM peak are "
                                f"{'the base config' if src.device is None else 'another run'}"
                                f"'s")
        return Converted([path], warnings)
