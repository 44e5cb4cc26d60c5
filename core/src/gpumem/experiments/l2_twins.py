"""``l2_twins``: the L2 slices latency cannot tell apart, told apart by contention.

``l2_hash`` groups every line of a page by its L2 hit latency from many SMs and counts the
slices each group holds from its size; a group of two slices at one latency from every SM
(an H100 page's 8, an H200's 6-8) stays one group however many SMs measure it. A slice
serves a limited rate: SMs that load the lines of one slice over and over fill its queue,
and a line homed there waits behind them while a line of its twin does not.

The measurement: first the page's latency map from the first rounds of ``l2_hash``'s SMs
(its chases, its repeats), grouped by class; then for each group of several slices, tests:
one block on every other SM (but the chasing SM's pair) loads the lines of one class of the
group (one slice: the hash never tells a class's lines apart) through the L2 only while one SM
chases one line of every class of the group, the hammered class's own line among them,
and a line of each of ``CONTROLS`` other groups; each probe's delay is its latency
hammered minus its latency alone, both taken in each repeat. The next test hammers a class
no earlier test slowed, until the group's slices are found
(:mod:`gpumem.analysis.twins`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from gpumem.analysis import twins as T
from gpumem.analysis.slices import share_interval
from gpumem.contracts.device import HAMMER_INFLIGHT, HAMMER_MAX_LINES, ChaseRequest, Device
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.estimates import MIN_RUNS_95, order_interval
from gpumem.contracts.experiment import (
    Plan,
    RunContext,
    measure_point,
    repeat_count,
    repeat_seed,
)
from gpumem.contracts.findings import Finding
from gpumem.contracts.presentation import Presentation
from gpumem.experiments.figures import LATENCY
from gpumem.experiments.l2_slices import (
    ACCESSES,
    CHASE_LINES,
    LINE,
    L2Hash,
    SliceMap,
    batches,
    sample_lines,
    slice_map,
    split_by,
)

#: Rounds of ``l2_hash``'s SMs the map is measured from (8 + 8: as many groups as 32 SMs
#: give on the H100 pages kept in tests/data), and its timed runs.
MAP_ROUNDS, MAP_REPEATS = 2, 6
#: Lines of other groups timed as controls, most groups tested, and the timed runs of each
#: test (each a chase alone and one hammered). Every SM but the chasing SM's pair hammers:
#: what a hammered slice delays a chase by depends on where the hammering SMs sit against
#: the chasing one, not only on how many there are (an H100, benchmarks/twins_placement.py:
#: 16 SMs delayed it 6, 19 or 269 cycles by which 16, and the same 16 delayed a chase from
#: another SM 260; every SM, 1,436-1,488 from any order), and nothing tells a card's places
#: before it is measured.
CONTROLS, MAX_GROUPS, TWIN_REPEATS = 8, 16, 6
#: Map variables (sm, line, repeat), as ``l2_hash`` keeps them, and the tests'.
MAP_VARS = ("latency", "timer_overhead", "ran_on", "point_status")


def map_of(raw: xr.Dataset) -> SliceMap | None:
    """The page's slice map from a run's map variables alone (the tests' are not the map's)."""
    return slice_map(raw[[v for v in MAP_VARS if v in raw]])


def littles_rate(hammer_sms: float, delay: float, trip: float) -> float:
    """Bytes a cycle a slice answered (Little's law): each of ``hammer_sms`` SMs kept
    HAMMER_INFLIGHT lines in flight, each back in ``delay`` plus one round trip ``trip``."""
    return hammer_sms * HAMMER_INFLIGHT * LINE / (delay + trip)


class L2Twins(L2Hash):
    """``l2_hash``'s map, then the groups of several slices told apart by contention."""

    name = "l2_twins"
    summary = "L2 slices at one latency from every SM, told apart by loading one of them"
    in_all = False
    probes = ("pointer_chase", "slice_contention")
    version = "2"  # 2: every SM hammers (1: 16, whose delay was where they sat)
    #: its own, and ``l2_slices``' of the map with the groups it split cut (``export sim``
    #: takes that map first)
    findings = ("l2_twins.groups_tested", "l2_twins.groups_split", "l2_twins.slices_seen",
                "l2_twins.delay", "l2_twins.separation", "l2_twins.agreement",
                "l2_twins.slice_bandwidth", *L2Hash.findings)

    def presentation(self) -> Presentation:
        return Presentation(LATENCY, (), rank=5)  # its findings under the L2 map's, no figure

    def _lines(self, ctx: RunContext) -> np.ndarray:
        """Every line of the page, with ``--quick`` too: the tests need every class."""
        return sample_lines(ctx.seed, self.pages, self.page // LINE, self.page)

    def plan(self, ctx: RunContext) -> Plan:
        return Plan(axes=[], variables=[], attrs={
            "footprint": self.page * self.pages, "page": self.page, "accesses": ACCESSES,
            "path": "cg", "chase_lines": CHASE_LINES,
            "controls": CONTROLS, "max_groups": MAX_GROUPS})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        sms = [s for r in batches(max(1, device.info.sm_count))[:MAP_ROUNDS] for s in r]
        raw = self._map(device, ctx, sorted(sms), progress)
        m = slice_map(raw)
        tests = self._tests(device, ctx, m, progress) if m is not None else []
        return raw.merge(_tests_dataset(tests), combine_attrs="override") if tests else raw

    def _map(self, device: Device, ctx: RunContext, sms: list[int],
             progress: Callable[[int], None]) -> xr.Dataset:
        """The page's latency map, as ``l2_hash`` keeps it (sm x line x repeat)."""
        reps = repeat_count(ctx, MAP_REPEATS)
        lines = self._lines(ctx)
        lat = np.full((len(sms), lines.size, reps), np.nan, np.float32)
        ovh = np.full((len(sms), reps), np.nan)
        ran = np.full((len(sms), reps), -1, np.int64)
        status = np.zeros(len(sms), np.int8)
        for i, sm in enumerate(sms):
            try:  # the grid runner's repeats: its seeds, its stopping rule
                out = measure_point(self, device, {"sm": sm}, replace(ctx, repeats=reps))
            except PointSkipped:
                status[i] = 1
            else:
                lat[i], ovh[i], ran[i] = out["latency"], out["timer_overhead"], out["ran_on"]
            progress(1)
        return xr.Dataset(
            {"latency": (("sm", "line", "repeat"), lat,
                         {"units": "cycle", "long_name": f"median of the line's {ACCESSES} "
                          "timed visits, timer overhead included"}),
             "timer_overhead": (("sm", "repeat"), ovh, {"units": "cycle"}),
             "ran_on": (("sm", "repeat"), ran, {"units": "1"}),
             "point_status": (("sm",), status, {"units": "1", "long_name": "outcome"})},
            coords={"sm": np.array(sms, np.int64), "line": lines,
                    "repeat": np.arange(reps)},
            attrs={"plan_page": self.page, "plan_footprint": self.page * self.pages})

    def _tests(self, device: Device, ctx: RunContext, m: SliceMap,
               progress: Callable[[int], None]) -> list[dict[str, Any]]:
        """Every group of several slices (at most MAX_GROUPS), tested until its slices are
        found or a test does not split it."""
        g = m.grouping
        if g.slices is None or m.classes is None:
            return []
        per = g.slices.per_group
        singles = [k for k in range(g.count) if per[k] == 1]
        controls = [_first_line(m, k) for k in singles[:: max(1, len(singles) // CONTROLS)]]
        controls = controls[:CONTROLS]
        chase_sm = m.sms[0]
        hammer_sms = [s for s in range(max(1, device.info.sm_count))
                      if s not in (chase_sm, chase_sm ^ 1)]
        out: list[dict[str, Any]] = []
        for k in [k for k in range(g.count) if per[k] > 1][:MAX_GROUPS]:
            classes = np.unique(m.classes[g.labels == k])
            done: list[T.TwinTest] = []
            while len(done) < per[k] and (h := T.next_hammer(classes, done)) is not None:
                test = self._test(device, ctx, m, k, classes, h, controls, chase_sm,
                                  hammer_sms)
                out.append(test)
                done.append(T.judge_test(k, h, test["probe_class"], test["probe_role"],
                                         T.delays(test["base"], test["hammered"])))
                progress(1)
        return out

    def _test(self, device: Device, ctx: RunContext, m: SliceMap, group: int,
              classes: np.ndarray, hammered: int, controls: list[int], chase_sm: int,
              hammer_sms: list[int]) -> dict[str, Any]:
        """One test: the group's classes (a line each) and the controls timed alone and
        beside the hammered class's other lines, TWIN_REPEATS times."""
        assert m.classes is not None
        own = np.sort(m.offsets[m.classes == hammered])
        hammer = tuple(int(x) for x in own[1:1 + HAMMER_MAX_LINES])
        if not hammer:
            raise PointSkipped(f"class {hammered} has one line: nothing to hammer beside it")
        probes = [int(own[0]) if c == hammered else _class_line(m, int(c)) for c in classes]
        roles = [T.HAMMERED if c == hammered else T.GROUP for c in classes]
        probes += controls
        roles += [T.CONTROL] * len(controls)
        probe_class = [int(c) for c in classes] + [-1] * len(controls)
        reps = repeat_count(ctx, TWIN_REPEATS)
        base = np.full((len(probes), reps), np.nan, np.float32)
        hit = np.full((len(probes), reps), np.nan, np.float32)
        came = np.zeros(reps, np.int64)
        for r in range(reps):  # seeds of their own: two measurements, not one twice
            base[:, r], _ = self.chase_probes(device, probes, repeat_seed(ctx, 2 * r), chase_sm,
                                        (), ())
            hit[:, r], came[r] = self.chase_probes(device, probes, repeat_seed(ctx, 2 * r + 1),
                                             chase_sm, hammer, tuple(hammer_sms))
        return {"group": group, "hammer_class": hammered, "probe_line": probes,
                "probe_class": np.array(probe_class), "probe_role": np.array(roles),
                "base": base, "hammered": hit, "hammer_started": came, "chase_sm": chase_sm,
                "hammer_lines": len(hammer), "hammer_sms": len(hammer_sms)}

    def chase_probes(self, device: Device, probes: list[int], seed: int, sm: int,
               hammer: tuple[int, ...], hammer_sms: tuple[int, ...]
               ) -> tuple[np.ndarray, int]:
        """Each probe line's median over its ACCESSES visits (cycles, timer overhead
        included), and how many hammering SMs had started."""
        lines = np.asarray(probes, np.int64)
        pattern = (lines[:, None] + 4 * np.arange(ACCESSES)).reshape(-1)
        res = device.pointer_chase(ChaseRequest(
            footprint=self.page * self.pages, stride=LINE, record=pattern.size,
            warmup=pattern.size, order="pattern", path="cg", seed=seed, sm=sm,
            pattern=tuple(pattern.tolist()), hammer=hammer, hammer_sms=hammer_sms))
        if res.index.size and not np.array_equal(res.index * 4, pattern):
            raise PointSkipped("the chase did not visit the lines in the pattern's order")
        lat = np.median(np.asarray(res.latency, float).reshape(lines.size, ACCESSES), axis=1)
        return lat, res.hammered

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        m = map_of(raw)
        if m is None:
            return []
        out, splits = self._twin_findings(raw, m)
        cut = {s.group: s.slice_of for s in splits if s.split}
        return out + self.map_findings(raw, split_by(m, cut), how=(
            f"; {len(cut)} group{'s' if len(cut) != 1 else ''} of several slices cut in "
            "theirs by contention (l2_twins)") if cut else "")

    def _twin_findings(self, raw: xr.Dataset, m: SliceMap
                       ) -> tuple[list[Finding], list[T.GroupSplit]]:
        g = m.grouping
        counts = sorted({int(x) for x in np.asarray(raw["test_hammer_sms"].values, float)
                         if np.isfinite(x)}) if "test_hammer_sms" in raw else []
        method = (f"a line of every class of each group of several slices (l2_hash's map "
                  f"from {len(m.sms)} SMs) timed by one SM alone and while "
                  f"{'/'.join(map(str, counts)) + ' other' if counts else 'other'} SMs load "
                  "one class's lines through the L2 (.cg)")
        if g.slices is None:
            return [Finding("l2_twins.groups_tested", 0, "1", 0.9, method, kind="structural",
                            note="the map counts no slices (every line of the page, "
                                 "grouped by class, is needed)")], []
        per = g.slices.per_group
        several = int((per > 1).sum())
        tests = tests_from(raw, g.count)
        by_group: dict[int, list[T.TwinTest]] = {}
        for t in tests:
            by_group.setdefault(t.group, []).append(t)
        splits = [T.group_split(k, int(per[k]), ts) for k, ts in sorted(by_group.items())]
        seen = int((per == 1).sum()) + sum(s.found for s in splits if s.split)
        placed = sum(s.placed for s in splits)
        total = sum(s.classes for s in splits)
        ids = list(range(len(tests)))
        out = [
            Finding("l2_twins.groups_tested", len(by_group), "1", 0.9, method,
                    kind="structural", note=f"{several} of the map's {g.count} groups hold "
                    f"several slices (l2_slices.slices {g.slices.count})" + (
                        f"; {several - len(by_group)} not tested (at most {MAX_GROUPS})"
                        if several > len(by_group) else "")),
            Finding("l2_twins.groups_split", sum(s.split for s in splits), "1", 0.9,
                    method + ": groups whose tests found as many slices as their size says, "
                    "each class slowed by exactly one test", kind="structural",
                    note="; ".join(_group_note(s, [t for t in tests if t.group == s.group])
                                   for s in splits) or "none tested"),
            Finding("l2_twins.slices_seen", seen, "1", 0.9,
                    method + ": slices told apart from every other, by latency (groups of "
                    "one) or by contention (the groups split)", kind="structural",
                    note=f"l2_slices.slices counts {g.slices.count} from the groups' sizes"),
        ]
        if not tests:
            return out, splits
        out += [
            Finding("l2_twins.delay", [_r(t.delay) for t in tests], "cycle", 0.9,
                    method + ": per test, the median delay of the group's lines the hammer "
                    "slowed beyond the others' (a test that did not split: of the group's "
                    "lines beyond the other groups') (index: test)", index=("test", ids),
                    interval=([_r(t.delay_interval[0]) for t in tests],
                              [_r(t.delay_interval[1]) for t in tests]), kind="measured",
                    note="controls' median delay: " + ", ".join(
                        f"{t.control:.0f}" for t in tests)),
            Finding("l2_twins.separation", [_r(t.separation) for t in tests], "1", 0.9,
                    method + ": per test, how surely the classes a cut drawn on half the "
                    "repeats calls slowed rank above the others in the other half "
                    f"(Mann-Whitney's U as a z score; a split needs {T.SPLIT_Z:g})",
                    index=("test", ids), kind="measured",
                    interval=([_r(t.separation_interval[0]) for t in tests],
                              [_r(t.separation_interval[1]) for t in tests]),
                    note="interval: the classes of each side drawn again (bootstrap)"),
        ]
        rate = _slice_rate(raw, m, tests)
        if rate is not None:
            out.append(rate)
        share, (lo, hi) = placed / total, share_interval(placed, total)
        out.append(Finding("l2_twins.agreement", round(share, 4), "1", 0.9,
                           method + ": the share of the tested groups' classes exactly one "
                           "test slowed", interval=(round(lo, 4), round(hi, 4)),
                           kind="measured", note=f"{placed} of {total} classes"))
        return out, splits


def _slice_rate(raw: xr.Dataset, m: SliceMap, tests: list[T.TwinTest]) -> Finding | None:
    """What a slice answers, from the tests that split: the hammering SMs kept their lines in
    flight (HAMMER_INFLIGHT each) and each came back in the slowed lines' delay plus the
    group's latency, so by Little's law the slice answered that many lines in that time.
    With every SM loading it the slice is saturated (an H100: delays of 1,450-1,520 cycles,
    five round trips) and the rate is the slice's; a test whose delay is under one round
    trip may not have saturated it, and its rate is a lower bound (the note counts them)."""
    hammers = np.asarray(raw["test_hammer_sms"].values, float) if "test_hammer_sms" in raw \
        else np.zeros(0)
    vals, los, his, short = [], [], [], 0
    for i, t in enumerate(tests):
        n = int(hammers[i]) if i < len(hammers) and np.isfinite(hammers[i]) else 0
        if not t.split or not 0 < n <= 1024 or not np.isfinite(t.delay):
            continue
        trip = float(np.nanmean(m.profile[t.group]))
        short += t.delay < trip
        vals.append(littles_rate(n, t.delay, trip))
        his.append(littles_rate(n, t.delay_interval[0], trip))
        los.append(littles_rate(n, t.delay_interval[1], trip))
    if not vals or not all(np.isfinite(x) and x > 0 for x in vals + los + his):
        return None
    # the median's interval from the tests' spread (the slices differ a little: 595-616 on
    # an H100), where there are tests enough for one; else from the tests' own intervals
    lo, hi = order_interval(vals) if len(vals) >= MIN_RUNS_95 else (min(los), max(his))
    return Finding(
        "l2_twins.slice_bandwidth", round(float(np.median(vals)), 1), "byte/cycle", 0.7,
        f"the tests that split: the hammering SMs' lines ({HAMMER_INFLIGHT} in flight an SM, "
        f"{LINE} B) over the slowed lines' delay plus the group's latency (Little's law): "
        "what one slice answers, saturated by every SM but the chasing one's pair (version "
        "2; version 1's 16 SMs saturated it or not by where they sat)",
        interval=(round(lo, 1), round(hi, 1)), kind="measured",
        note=(f"{short} of {len(vals)} tests waited less than a round trip: the slice may not "
              "have been saturated, their rates are lower bounds; " if short else "") +
        "per test: " + ", ".join(f"{x:.1f}" for x in vals))


def _r(x: float) -> float | None:
    return round(float(x), 1) if np.isfinite(x) else None


def _group_note(s: T.GroupSplit, tests: list[T.TwinTest]) -> str:
    sizes = np.bincount([v for v in s.slice_of.values() if v >= 0], minlength=s.found)
    head = f"group {s.group} ({s.held} slices): "
    if s.split:
        return head + "split " + " + ".join(str(int(n)) for n in sizes) + " classes"
    why = next((t.why for t in tests if not t.split), "")
    return head + (f"not split: {why}" if why else
                   f"{s.found} slices found, {s.placed} of {s.classes} classes placed")


def _first_line(m: SliceMap, group: int) -> int:
    return int(m.offsets[np.flatnonzero(m.grouping.labels == group)[0]])


def _class_line(m: SliceMap, cls: int) -> int:
    assert m.classes is not None
    return int(m.offsets[np.flatnonzero(m.classes == cls)[0]])


def _tests_dataset(tests: list[dict[str, Any]]) -> xr.Dataset:
    """The tests as variables over (test, probe, twin_repeat), probes padded with -1 / NaN."""
    n = max(len(t["probe_line"]) for t in tests)
    reps = tests[0]["base"].shape[1]

    def pad(key: str, fill: Any, dtype: Any) -> np.ndarray:
        out = np.full((len(tests), n) + np.shape(tests[0][key])[1:], fill, dtype)
        for i, t in enumerate(tests):
            v = np.asarray(t[key])
            out[i, :v.shape[0]] = v
        return out

    one = {k: np.array([t[k] for t in tests], np.int64)
           for k in ("group", "hammer_class", "chase_sm", "hammer_lines", "hammer_sms")}
    return xr.Dataset({
        "twin_base": (("test", "probe", "twin_repeat"), pad("base", np.nan, np.float32),
                      {"units": "cycle", "long_name": "probe line's median latency, chased "
                       "alone (timer overhead included)"}),
        "twin_hammered": (("test", "probe", "twin_repeat"),
                          pad("hammered", np.nan, np.float32),
                          {"units": "cycle", "long_name": "the same while other SMs hammer "
                           "one class's lines"}),
        "probe_line": (("test", "probe"), pad("probe_line", -1, np.int64),
                       {"units": "byte", "long_name": "probe line's offset in the page"}),
        "probe_class": (("test", "probe"), pad("probe_class", -1, np.int64), {"units": "1"}),
        "probe_role": (("test", "probe"), pad("probe_role", T.PAD, np.int8),
                       {"units": "1", "long_name": "0 group class, 1 hammered class, "
                        "2 control, -1 none"}),
        "hammer_started": (("test", "twin_repeat"),
                           np.array([t["hammer_started"] for t in tests], np.int64),
                           {"units": "1", "long_name": "hammering SMs started before the "
                            "chase"}),
        **{f"test_{k}": (("test",), v, {"units": "1"}) for k, v in one.items()},
    }, coords={"test": np.arange(len(tests)), "twin_repeat": np.arange(reps)})


def tests_from(raw: xr.Dataset, groups: int | None = None) -> list[T.TwinTest]:
    """The tests a raw file holds, judged again (a file's values are checked, not trusted:
    the roles must be known codes, the groups the map's ``groups``)."""
    if "twin_base" not in raw:
        return []
    roles = raw["probe_role"].values
    if not np.isin(roles, (T.GROUP, T.HAMMERED, T.CONTROL, T.PAD)).all():
        raise ValueError("l2_twins: probe_role holds codes other than -1, 0, 1, 2")
    tested = raw["test_group"].values
    if groups is not None and tested.size and not (0 <= tested.min() and
                                                   tested.max() < groups):
        raise ValueError(f"l2_twins: test_group names groups the map does not have (it has "
                         f"{groups})")
    out = []
    for i in range(raw.sizes["test"]):
        keep = roles[i] != T.PAD
        out.append(T.judge_test(
            int(raw["test_group"].values[i]), int(raw["test_hammer_class"].values[i]),
            raw["probe_class"].values[i][keep], roles[i][keep],
            T.delays(raw["twin_base"].values[i][keep], raw["twin_hammered"].values[i][keep])))
    return out

