"""How far another healthy card may stray: the band model of generated expected values.

An expected value taken from runs of one card must hold on every healthy card of its model and
still catch a real regression. A new run ``x`` of card B against the median ``m`` of ``n``
runs of card A differs by ``(c_B - c_A) + e_x - mean(e_A)``: the two cards' own values apart,
plus the runs' scatter about their card's value. Its band (:func:`model_band`) is therefore

    sqrt(I**2 + (Z x sqrt(2 sigma_card**2 + sigma_run**2 (1 + 1/n)))**2)

with ``Z`` learned (:func:`band_z`), each part named in the value's source:

* **the runs' own intervals** ``I``: how well each run knew its value (the 95 % interval's
  half-width, the largest over the runs). It adds in quadrature, not linearly: a run's own
  scatter is part of the run-to-run spread already, and a latency ladder's knee, whose
  interval spans where its four placements left the level (an H200's near L2: 9-57 % wide),
  made a band of +-47.7 % added linearly from two runs of one card (+-34.7 % in quadrature,
  tests/test_plugin_new.py). Learned held out as before,
  the Zs the quadrature needs: H200s ratio 2.6 (2.5), the rest unchanged, a 10 % slower DRAM
  read missed in 2 of 208 runs (9); H100s bandwidth 2.1, capacity 2.4, ratio 2.3 (2.0 each),
  a 10 % longer L2 latency missed in 18 of 119 (24);
* **card to card**, ``sigma_card``: the standard deviation of a card's value over healthy
  cards of one model, from gpumem's own runs on several cards (the range of their medians
  over ``d2(k)``, the expected range of k normal samples: with few cards the range
  underestimates the spread, and d2 corrects for it); where the runs given span cards, at
  least what they show;
* **run to run**, ``sigma_run``: a run's scatter about its card's value: the pooled
  standard deviation of runs about their card's median in gpumem's multi-card data (at
  least half their largest deviation, :data:`RUN_MAX_SIGMAS`: runs scatter with a heavy
  tail, one slow run in a dozen, which the standard deviation underestimates), pooled again
  with the runs given (each weighted by its degrees of freedom: two runs alone say little of
  a spread).

Each GPU model has its own spreads: H100 SXMs' L2 latencies lie 277-290 cycles over seventeen cards
(by where the chasing SM sits, as l2_twins found for contention) where fifteen H200s' lay
within 1.8 % (a sixteenth, 2.5 % out, has joined them), and plugins made from H100 runs with
the H200s' spreads failed other healthy H100s 135 times. A product gpumem has learned on its
cards has its own file (:data:`PRODUCT_FILE`, :func:`learned`); runs of any other take,
finding by finding, the widest any learned model shows (:func:`widest`), each named with its
model.

The learned numbers ship as data (:data:`ALLOWANCES_FILE`, written by
``benchmarks/card_allowances.py`` from the committed multi-card runs, listing which cards
and runs each number comes from), per finding where the data have it and per finding
*class* (latency, bandwidth, ratio, capacity, choice) for a finding they lack, so they are
re-derived as more cards are measured. A structural finding (a line size, a count of
entries) has no band: it must be the same on every healthy card; the data list the
structural findings that differed between cards of one model.

Why ``Z``, and what it cannot do. It is learned for each finding class, as the spreads are
(:func:`gpumem.authoring.held_out.learn_z`; H200s: latencies 2.4, bandwidths 2.5, ratios 2.6,
capacities and choices 2.0; H100s: latencies 4.0, the largest tried, capacities 2.4, ratios and
choices 2.3, bandwidths 2.1, with the intervals in quadrature; the fleet's values,
:func:`fleet_band`, their own: ``band_z.fleet_by_class``): one
class's tail (an H100's latencies by where the chasing SM sits) should not widen
another's bands. What follows is the single Z of 2026-12-04. Judged held out (each card's
plugin made from two of its runs with the spreads learned from the other cards only,
``tests/test_plugin_bands.py``), on the committed runs of 2026-12-04 (nine cards' whole
runs): at 2.6 no healthy run of another
card fails (0 of 8808 judgements; 3 fail at 2.4, all cp.async's low-occupancy speed-up, 21 at
2.0), and a run made 10 % worse fails in lat.l2, lat.dram, bw.l1 and bw.l2 under every card's
plugin. bw.dram_read is the exception: on one card gpumem read 4377-4546 GB/s in six
processes (each process's own interval 0.4-1.9 % wide), and over the cards 4377-4625, so a
plugin made from a card's two slowest runs (4397) cannot both hold the fastest card's runs
(5.2 % above it) and fail them made 10 % slower (5.3 % below it): 14 of 120 such pairs pass at
2.6, 8 at 2.4, 2 at 2.0, which fails 21 healthy ones. The spread is the cards', not the
method's (tests/data/h100-s28): on an H100 that held still five processes read 3105-3114
GB/s, while another's four read 3138-3176, one of them 2 % low at every point; nor is it
placement or the driver's clearing of freed memory (``bandwidth`` runs first; the clearing
lasts milliseconds). The fleet-centred values (hopper's, :func:`fleet_band`) catch the 10 %
either way. A 10 % *improvement* of the slowest card's run
can look like the fastest card: no band that holds healthy cards catches it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpumem.contracts.device import product_slug

#: The learned allowances, beside this module: of the product gpumem has measured on the most
#: cards (an H200), the default; and ``allowances-PRODUCT.json`` of each other
#: product it has measured on several cards (PRODUCT as
#: :func:`gpumem.contracts.device.product_slug` spells it): H100s' L2 latencies differ by
#: 4.6 % card to card where fifteen H200s' differed by 1.8 %, so spreads learned on H200s
#: failed healthy H100s (tests/test_h100_runs.py).
ALLOWANCES_FILE = "allowances.json"
PRODUCT_FILE = "allowances-{}.json"
#: d2(k): the expected range of k standard normal samples (k = 2 .. 15).
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970,
      10: 3.078, 11: 3.173, 12: 3.258, 13: 3.336, 14: 3.407, 15: 3.472}
#: Standard deviations of a new run's difference from the plugin's median the band covers,
#: where the learned data do not say (they learn it held out: ``band_z`` in
#: :data:`ALLOWANCES_FILE`, :func:`gpumem.authoring.held_out.learn_z`).
BAND_Z = 2.6


def band_z(data: dict[str, Any] | None = None, cls: str = "", fleet: bool = False) -> float:
    """The band's Z: the learned data's for finding class ``cls`` (``band_z.by_class``:
    each class's tails are its own; an H100's latencies need 4.0 where its bandwidths hold
    at 2.0; with ``fleet``, ``band_z.fleet_by_class``: the fleet's values judged on a card
    left out of them), else theirs for every class (``band_z.value``), else
    :data:`BAND_Z`."""
    data = learned() if data is None else data
    try:
        learnt = data.get("band_z") or {}
        table = (learnt.get("fleet_by_class") if fleet else None) or \
            learnt.get("by_class") or {}
        z = float(table.get(cls, learnt.get("value", BAND_Z)))
    except (TypeError, ValueError, AttributeError):
        return BAND_Z
    return z if math.isfinite(z) and z > 0 else BAND_Z
#: Standard deviations the largest deviation of a run from its card's median is taken to be
#: at most (the expected largest |z| of 12-20 normal runs is about 2): a floor under the
#: learned run-to-run sigma where one run strays further than the others' scatter says.
RUN_MAX_SIGMAS = 2.0
#: Narrowest band of a measured value (relative), and of a latency (cycles: the clock counts
#: whole cycles).
MIN_BAND, MIN_CYCLES = 0.01, 2.0
#: Finding classes, for a finding the learned data lack.
CLASSES = ("latency", "bandwidth", "ratio", "capacity", "choice")
#: Findings that pick one point of a grid (the fewest warps, K, bytes in flight reaching a
#: level): their spread is in grid steps, absolute, not relative.
CHOICES = ("ilp.best_k", "ilp.l2_best_k", "bulk.inflight_per_sm", "smem.peak_warps")


def finding_class(name: str, units: str) -> str:
    """The class of a measured finding, by what it is: a choice on a grid
    (:data:`CHOICES`), a latency (cycles, ns), a bandwidth (GB/s, bytes per cycle), a
    capacity (bytes), else a ratio (a dimensionless measured number)."""
    if name in CHOICES:
        return "choice"
    if units in ("cycle", "cycles", "ns"):
        return "latency"
    if units in ("GB/s", "byte/cycle") or "/s" in units:
        return "bandwidth"
    if units in ("byte", "bytes"):
        return "capacity"
    return "ratio"


def card_sigma(card_range: float, cards: int) -> float:
    """The standard deviation of a card's value from the range of ``cards`` cards' medians,
    ``range / d2(cards)``; NaN for fewer than two cards (no spread seen)."""
    if cards < 2:
        return math.nan
    return card_range / D2[min(cards, max(D2))]


@dataclass(frozen=True)
class Allowance:
    """What the learned data say of a finding: the standard deviations card to card and run
    to run (relative; in the finding's units for a choice), from how many cards and runs,
    and whether they are the finding's own (``basis`` "finding") or its class's."""

    card_sigma: float
    run_sigma: float
    cards: int
    runs: int
    basis: str
    product: str
    absolute: bool = False

    @property
    def run_dof(self) -> int:
        """Degrees of freedom of ``run_sigma``: runs less cards (each card's median)."""
        return max(1, self.runs - self.cards)

    def text(self, name: str) -> str:
        of = f"{name}'s" if self.basis == "finding" else f"its class's ({self.basis})"
        unit, scale = ("", 1) if self.absolute else (" %", 100)
        return (f"sigma card to card {self.card_sigma * scale:.3g}{unit}, run to run "
                f"{self.run_sigma * scale:.3g}{unit}: {of} over {self.cards} {self.product} "
                f"cards, {self.runs} runs (gpumem's multi-card data, {file_of(self.product)})")


def file_of(product: str) -> str:
    """The shipped file that holds ``product``'s learned allowances."""
    default = learned().get("product")
    return ALLOWANCES_FILE if not product or product == default else PRODUCT_FILE.format(product)


@cache
def learned(product: str = "") -> dict[str, Any]:
    """The shipped allowances of ``product`` (a :func:`~gpumem.contracts.device.product_slug`):
    its own (:data:`PRODUCT_FILE`) where gpumem learned them on its cards, else the default
    (:data:`ALLOWANCES_FILE`, whose ``product`` says whose they are); empty where neither is
    there."""
    names = [ALLOWANCES_FILE]
    if product and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", product):
        names.insert(0, PRODUCT_FILE.format(product))
    for name in names:
        try:
            text = resources.files("gpumem.contracts").joinpath(name).read_text()
        except (FileNotFoundError, OSError):
            continue
        return json.loads(text)
    return {}


def learned_for(products: Iterable[str]) -> dict[str, Any]:
    """The allowances for runs of the GPUs named ``products``: their model's where they are
    of one model and gpumem learned it, else :func:`widest` (a model gpumem has not
    measured on several cards may stray as far as any it has)."""
    slugs = {product_slug(p) for p in products}
    if len(slugs) == 1:
        (slug,) = slugs
        data = learned(slug)
        if data.get("product") == slug:
            return data
    return widest()


def learned_products() -> list[str]:
    """The GPU models gpumem learned allowances of: the default's first."""
    names = [f.name for f in resources.files("gpumem.contracts").iterdir()]
    others = sorted(n[len("allowances-"):-len(".json")] for n in names
                    if n.startswith("allowances-") and n.endswith(".json"))
    default = str(learned().get("product", ""))
    return [p for p in [default, *others] if p]


@cache
def widest() -> dict[str, Any]:
    """Every learned model's allowances merged, each the widest any model shows (each
    finding's and class's spreads, card to card and run to run as that model's runs gave
    them, naming it; each class's Z; the card-specific findings of all): for runs of a model
    gpumem has not learned, whose cards may stray as far as an H100's do where an H200's
    stayed within 1.8 % over fifteen cards."""
    datas = [learned(p) for p in learned_products()]
    if len(datas) < 2:
        return learned()
    out: dict[str, Any] = {"product": " / ".join(str(d.get("product")) for d in datas),
                           "widest": [str(d.get("product")) for d in datas],
                           "cards": sorted({c for d in datas for c in d.get("cards", [])}),
                           "findings": {}, "classes": {}, "card_specific": {}}

    def wider(entries: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """The entry whose run of another card strays furthest: 2 card**2 + run**2."""
        def spread(pe: tuple[str, dict[str, Any]]) -> float:
            e = pe[1]
            x = e.get("card_sigma")
            card = -1.0 if x is None else float(x)
            run = max(float(e.get("run_sigma") or 0.0),
                      float(e.get("run_max") or 0.0) / RUN_MAX_SIGMAS)
            return 2 * card ** 2 + run ** 2 if math.isfinite(card) and card >= 0 else -1.0
        product, best = max(entries, key=spread)
        return {**best, "product": product}

    for part in ("findings", "classes"):
        for name in sorted({n for d in datas for n in d.get(part, {})}):
            out[part][name] = wider([(str(d.get("product")), d[part][name]) for d in datas
                                     if name in d.get(part, {})])
    for d in datas:
        out["card_specific"].update(d.get("card_specific", {}))
    zs = [d.get("band_z") or {} for d in datas]
    classes = {c for z in zs for c in (z.get("by_class") or {})}
    out["band_z"] = {"value": max(band_z(d) for d in datas),
                     "by_class": {c: max(band_z(d, c) for d in datas) for c in classes}}
    return out


def allowance(name: str, units: str, data: dict[str, Any] | None = None,
              experiment: str = "") -> Allowance | None:
    """The learned allowance of finding ``name``: its own where the data measured it on at
    least two cards (by ``experiment``, where given and the data say which experiments
    measured it: l2_hash reports l2_slices' findings from every line of a page, not from
    random lines, so l2_slices' spread says nothing of its own), else its class's; ``None``
    where the data know neither."""
    data = learned() if data is None else data
    own = data.get("findings", {}).get(name)
    if own and experiment and own.get("experiments") and \
            experiment not in own["experiments"]:
        own = None
    cls = finding_class(name, units)
    absolute = cls == "choice"
    c = data.get("classes", {}).get(cls) or {}
    if own and own.get("card_sigma") is not None:
        run = own.get("run_sigma")
        run = float(run if run is not None else c.get("run_sigma", 0.0))
        # a heavy tail (one slow run in a dozen) the standard deviation underestimates: the
        # largest deviation of a dozen or more runs is at least two of it
        run = max(run, float(own.get("run_max", 0.0) or 0.0) / RUN_MAX_SIGMAS)
        return Allowance(float(own["card_sigma"]), run, int(own["cards"]), int(own["runs"]),
                         "finding", _product(own, data), absolute)
    if c:
        return Allowance(float(c["card_sigma"]), float(c["run_sigma"]),
                         int(c["cards"]), int(c["runs"]), cls, _product(c, data), absolute)
    return None


def _product(entry: dict[str, Any], data: dict[str, Any]) -> str:
    """The model whose runs a learned spread is from (:func:`widest` names each its own)."""
    return str(entry.get("product") or data.get("product", ""))


#: Findings indexed by labels a run's analysis gives (the L2 slice groups, numbered by size
#: and then as found, and the tests made of them): element k of one run is not element k of
#: another, so neither their spread (the learned data leave them out) nor one run's element
#: k as another's expected value says anything. Two H200 pages grouped into 70 groups each
#: gave l2_slices.slice_latency a "card to card" spread of 17 %, which became every latency
#: finding's class allowance.
LABELLED = {
    "l2_slices.slice_latency": "indexed by the run's slice groups, and which slice a group "
    "is the page the run drew decides: two runs of one H100 (GPU-b2cae46c, "
    "tests/data/h100-s31) differ by up to 14.5 % at one index, two cards by 26.5 %",
    "l2_twins.separation": "indexed by the run's tests, made of its slice groups (the "
    "split they give is l2_twins.groups_split)",
    "l2_twins.delay": "indexed by the run's tests, made of its slice groups (their rate is "
    "l2_twins.slice_bandwidth); l2_twins version 1, 16 SMs hammering, delayed 9-13 cycles on "
    "one H100 (GPU-b2cae46c) and 70-97 on another (GPU-a02e8aa4), by where they sat",
}
#: Findings of one card that another card of the same product need not share, known
#: without measuring several (besides those the learned data saw differ).
CARD_SPECIFIC = {
    "l2.sm_partition": "which SMs sit near which L2 partition follows the card's disabled SMs",
}


def card_specific(data: dict[str, Any] | None = None) -> dict[str, str]:
    """Findings no card's value is expected of another: the structural ones the learned data
    saw differ between healthy cards of one model (each with the values seen),
    :data:`LABELLED` and :data:`CARD_SPECIFIC`."""
    data = learned() if data is None else data
    return {**data.get("card_specific", {}), **LABELLED, **CARD_SPECIFIC}


@dataclass(frozen=True)
class Band:
    """A generated expected value's band and the parts it is made of."""

    rel_tol: float
    abs_tol: float
    text: str


def _numbers(v: Any) -> list[float]:
    items = v if isinstance(v, (list, tuple)) else [v]
    out = []
    for x in items:
        try:
            out.append(float(x))
        except (TypeError, ValueError):
            out.append(math.nan)
    return out


def _sd(values: list[Any], center: Any, absolute: bool) -> float:
    """The runs' standard deviation about ``center`` (relative, or in units), the worst
    element of a list; 0 for one run."""
    c = _numbers(center)
    if len(values) < 2:
        return 0.0
    worst = 0.0
    for i, y in enumerate(c):
        xs = [_numbers(v)[i] for v in values]
        if not all(math.isfinite(x) for x in xs) or not math.isfinite(y):
            continue
        sd = math.sqrt(sum((x - y) ** 2 for x in xs) / (len(xs) - 1))
        worst = max(worst, sd if absolute else (sd / abs(y) if y else 0.0))
    return worst


def _card_range(values: list[Any], center: Any, absolute: bool) -> float:
    """The runs' range (relative, or in units), the worst element: what runs on several
    cards show of the card-to-card spread."""
    c = _numbers(center)
    worst = 0.0
    for i, y in enumerate(c):
        xs = [_numbers(v)[i] for v in values]
        if not all(math.isfinite(x) for x in xs):
            continue
        r = max(xs) - min(xs)
        worst = max(worst, r if absolute else (r / abs(y) if y else 0.0))
    return worst


def _interval_part(intervals: list[Any], center: Any, absolute: bool) -> float:
    """The largest half-width of the runs' 95 % intervals (relative to ``center``, or in
    units), every element of a list."""
    c = _numbers(center)
    worst = 0.0
    for iv in intervals:
        if iv is None:
            continue
        lo, hi = iv
        los, his = _numbers(lo), _numbers(hi)
        for a, b, y in zip(los, his, c, strict=False):
            if not (math.isfinite(a) and math.isfinite(b)):
                continue
            half = (b - a) / 2
            worst = max(worst, half if absolute else (half / abs(y) if y else 0.0))
    return worst


def model_band(name: str, units: str, center: Any, runs: list[Any],
               intervals: list[Any], cards: int, data: dict[str, Any] | None = None,
               experiment: str = "") -> Band:
    """The band of an expected value ``center``, the median of ``runs`` (each run's value,
    its 95 % interval in ``intervals``) on ``cards`` cards: the runs' own intervals in
    quadrature with Z x sqrt(2 sigma_card**2 + sigma_run**2 (1 + 1/n)) (see the module
    docstring), each part named in ``text``; at least :data:`MIN_BAND` (relative), and
    :data:`MIN_CYCLES` for a latency in cycles. A choice (:data:`CHOICES`) gets an absolute
    band in its units (grid steps). ``experiment``: the one that measured the runs
    (:func:`allowance`)."""
    learnt = allowance(name, units, data, experiment)
    z = band_z(data, finding_class(name, units))
    absolute = finding_class(name, units) == "choice"
    n = max(1, len(runs))
    own_sd = _sd(runs, center, absolute)
    if learnt:  # the runs given are more runs of the model: pooled with the learned ones
        dof = learnt.run_dof
        sigma_run = math.sqrt((dof * learnt.run_sigma ** 2 + (n - 1) * own_sd ** 2)
                              / (dof + n - 1))
    else:
        sigma_run = own_sd
    sigma_card = learnt.card_sigma if learnt and math.isfinite(learnt.card_sigma) else 0.0
    own_card = 0.0
    if cards > 1:  # the runs span cards: at least the spread they show
        own_card = card_sigma(_card_range(runs, center, absolute), cards)
        sigma_card = max(sigma_card, own_card)
    spread = z * math.sqrt(2 * sigma_card ** 2 + sigma_run ** 2 * (1 + 1 / n))
    interval = _interval_part(intervals, center, absolute)
    total = math.hypot(interval, spread)
    pct = (lambda x: f"{x:.3g}") if absolute else (lambda x: f"{x:.2%}")
    head = (f"sqrt((the runs' own 95 % intervals {pct(interval)})^2 + ({z:g} x sqrt(2 x (card "
            f"to card {pct(sigma_card)})^2 + (run to run {pct(sigma_run)})^2 x (1 + 1/{n})) "
            f"= {pct(spread)})^2) = {pct(total)}")
    notes = []
    if own_sd:
        notes.append(f"run to run pooled with the {n} runs' own standard deviation "
                     f"({pct(own_sd)})")
    if own_card and (not learnt or own_card >= learnt.card_sigma):
        notes.append(f"card to card: what the runs' {cards} cards show")
    notes.append(learnt.text(name) if learnt else
                 "no multi-card data for it or its class: no card-to-card allowance")
    return _band(total, units, absolute, head, notes)


def _band(total: float, units: str, absolute: bool, head: str, notes: list[str]) -> Band:
    """A band of ``total`` (in units where ``absolute``, else relative: at least
    :data:`MIN_BAND`, and :data:`MIN_CYCLES` for a latency in cycles), its text saying how
    (``head``) and from what (``notes``)."""
    if absolute:
        return Band(0.0, round(total, 4), f"band +-{total:.3g} = {head}; " + "; ".join(notes))
    rel = max(total, MIN_BAND)
    abs_tol = MIN_CYCLES if units == "cycle" else 0.0
    floor = f"; at least {MIN_BAND:.0%}" if rel > total else ""
    return Band(round(rel, 5), abs_tol, f"band {rel:.2%}"
                + (f" or {abs_tol:g} cycles" if abs_tol else "") + f" = {head}{floor}; "
                + "; ".join(notes))


def fleet_band(name: str, units: str, data: dict[str, Any] | None = None) -> Band | None:
    """The band of the learned fleet's own value of ``name`` (the median of its cards'
    medians, ``center``): a run of another healthy card of the model differs from it by
    ``BAND_Z x sqrt(sigma_card**2 (1 + 1/k) + sigma_run**2 (1 + 1/N))`` (k cards, N runs),
    and by at least as much as every healthy card seen did (the farthest card median's
    distance plus a run's largest deviation); ``None`` where the data do not have the
    finding on two cards or more."""
    data = learned() if data is None else data
    own = data.get("findings", {}).get(name)
    learnt = allowance(name, units, data)
    if not own or learnt is None or learnt.basis != "finding":
        return None
    k, n, z = learnt.cards, learnt.runs, band_z(data, finding_class(name, units), fleet=True)
    model = z * math.sqrt(learnt.card_sigma ** 2 * (1 + 1 / k)
                               + learnt.run_sigma ** 2 * (1 + 1 / n))
    # at least every healthy card seen: its median's distance from the center plus a run's
    # largest deviation from its card's (a model's tails can be thinner than the cards':
    # the H200s' DRAM latencies fall in two groups, 678-685 and 703-705 cycles)
    seen = float(own.get("card_max", 0.0) or 0.0) + float(own.get("run_max", 0.0) or 0.0)
    spread = max(model, seen)
    pct = (lambda x: f"{x:.3g}") if learnt.absolute else (lambda x: f"{x:.2%}")
    head = (f"{z:g} x sqrt((card to card {pct(learnt.card_sigma)})^2 x (1 + 1/{k}) + "
            f"(run to run {pct(learnt.run_sigma)})^2 x (1 + 1/{n})) = {pct(model)}")
    if seen > model:
        head += (f", widened to {pct(seen)}: the farthest healthy card's median plus a "
                 f"run's largest deviation")
    return _band(spread, units, learnt.absolute, head, [learnt.text(name)])


def fleet_values(data: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every finding the learned fleet measured on two cards or more: ``name``, ``value``
    (the median of the cards' medians; a list where the finding is one), ``units``,
    ``index`` (a list's sweep coordinates), ``band`` (:func:`fleet_band`), ``cards``,
    ``runs``, ``experiments`` (those whose runs measured it)."""
    data = learned() if data is None else data
    out = []
    for name, st in sorted(data.get("findings", {}).items()):
        band = fleet_band(name, str(st.get("units", "")), data)
        center = st.get("center")
        if band is None or not center:
            continue
        vals = [int(round(c)) for c in center] if st.get("integral") else \
            [round(float(c), 4) for c in center]
        index = st.get("index")
        value: Any = vals if index is not None or len(vals) > 1 else vals[0]
        out.append({"name": name, "value": value, "units": str(st.get("units", "")),
                    "index": (str(index[0]), tuple(index[1])) if index else None,
                    "band": band, "cards": int(st["cards"]), "runs": int(st["runs"]),
                    "product": str(data.get("product", "")),
                    "experiments": [str(x) for x in st.get("experiments", [])]})
    return out


def fleet_expected(source: str, beside: dict[str, str] | None = None,
                   data: dict[str, Any] | None = None, product: str = "") -> list[Any]:
    """Expected values of the product gpumem's multi-card data measured (:func:`fleet_values`,
    measured findings only: nothing card-specific): each the median of its cards' medians
    with :func:`fleet_band`'s band, ``source`` then the cards and runs and each part of the
    band in its source, and what others published for it (``beside``: finding -> text)
    after it. ``product`` (a :func:`~gpumem.contracts.device.product_slug`): that product's
    data, none where gpumem has not learned that product on its cards."""
    from gpumem.contracts.findings import Expected

    if product:
        data = learned(product)
        if data.get("product") != product:
            return []
    out = []
    for v in fleet_values(data):
        band: Band = v["band"]
        text = (f"{source}: the median of {v['cards']} healthy {v['product']} cards' medians "
                f"({v['runs']} runs); {band.text}")
        if beside and v["name"] in beside:
            text += f"; published beside it: {beside[v['name']]}"
        # measured by one experiment: its value (another reporting the finding measures
        # otherwise, as l2_hash does l2_slices')
        only = v["experiments"][0] if len(v["experiments"]) == 1 else ""
        out.append(Expected(v["name"], v["value"], text, v["units"], rel_tol=band.rel_tol,
                            abs_tol=band.abs_tol, index=v["index"], experiment=only))
    return out


def published_expected(name: str, value: Any, units: str, source: str, *,
                       spread: float = 0.0, tool: float = 0.0, tool_why: str = "",
                       index: tuple[str, tuple] | None = None,
                       data: dict[str, Any] | None = None) -> Any:
    """An expected value another tool or paper published, its band from the same model:
    its own published spread (``spread``, relative: half the range it gives) + the card it
    was measured on against another, ``BAND_Z x sqrt(2 sigma_card**2 + 2 sigma_run**2)`` (one
    run of each, the spreads learned from gpumem's multi-card data) + ``tool``: how far
    another tool's figure may lie from gpumem's (``tool_why`` says where that is learned),
    each part named in its source."""
    from gpumem.contracts.findings import Expected

    learnt = allowance(name, units, data)
    z = band_z(data, finding_class(name, units))
    sc = learnt.card_sigma if learnt else 0.0
    sr = learnt.run_sigma if learnt else 0.0
    cards = z * math.sqrt(2 * sc ** 2 + 2 * sr ** 2)
    rel = max(spread + cards + tool, MIN_BAND)
    text = (f"{source}; band {rel:.1%} = its published spread {spread:.1%} + card to card "
            f"{cards:.1%} ({z:g} x sqrt(2 x ({sc:.2%})^2 + 2 x ({sr:.2%})^2): "
            + (learnt.text(name) if learnt else "no multi-card data") + ")"
            + (f" + another tool's figure {tool:.1%} ({tool_why})" if tool else ""))
    abs_tol = MIN_CYCLES if units == "cycle" else 0.0
    return Expected(name, value, text, units, rel_tol=round(rel, 5), abs_tol=abs_tol,
                    index=index)
