"""Repetition owned by the framework (issue 32, item 4): a plan declares its repeats, the
runner times each point that often with one seed per (point, repeat) from one formula and
adds the ``repeat`` dimension; analyses read medians through one helper."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.device import SmemRequest, SmemResult
from gpumem.contracts.experiment import (
    MIN_REPEATS,
    REPEATS,
    Axis,
    Experiment,
    FixedRepeats,
    Plan,
    RunContext,
    StdRel,
    Var,
    measure_point,
    point_medians,
    repeat_count,
    repeat_seed,
    repeated,
    runs_rel_error,
    stopping_rule,
)
from gpumem.contracts.findings import STOP_BUDGET, STOP_MAX, STOP_PRECISE
from gpumem.experiments.smem import SmemLatency
from gpumem.plugin.registry import load_plugins
from gpumem.results.io import open_raw
from gpumem.results.schema import POINT_FAILED, POINT_OK, assemble, points
from gpumem.results.store import RunStore
from gpumem.run.experiment import run_experiment
from gpumem.run.point import run_point
from gpumem.run.points import make_points
from gpumem.run.request import RunSetup
from gpumem.sim.device import SimDevice


@pytest.fixture(scope="module")
def plugins():
    return load_plugins(warn=lambda _m: None)


class Recording(SimDevice):
    """The hopper simulator, noting every shared-memory request it serves."""

    def __init__(self, plugins) -> None:
        cfg = plugins.hook.gpumem_simulator_config(arch="hopper", simulator="sim")
        super().__init__(cfg, "hopper")
        self.requests: list[SmemRequest] = []

    def smem(self, request: SmemRequest) -> SmemResult:
        self.requests.append(request)
        return super().smem(request)


class Toy(Experiment):
    """Declares its repeats; measure returns one run's values, nothing repeat-shaped."""

    name = "toy-repeats"
    probes = ("smem",)

    def __init__(self, repeats: int = 4, fail_at: int | None = None) -> None:
        self.repeats, self.fail_at = repeats, fail_at

    def plan(self, ctx):
        return Plan(axes=[Axis("stride", (1, 2, 3))],
                    variables=[Var("latency", (), "cycle"), Var("per_lane", ("lane",), "cycle"),
                               Var("once", (), "1", repeated=False)],
                    inner={"lane": np.arange(2)}, attrs={"width": 4}, repeats=self.repeats)

    def prepare(self, device, point, ctx):
        return {"once": 10.0 * point["stride"], "shared": "x"}

    def measure(self, device, point, ctx):
        assert point["shared"] == "x" and ctx.repeat is not None
        if point["stride"] == self.fail_at and ctx.repeat == 2:
            raise RuntimeError("the third run failed")
        lat = device.smem(SmemRequest(stride=int(point["stride"]), seed=ctx.run_seed)).latency
        return {"latency": lat, "per_lane": np.array([lat, ctx.repeat])}

    def analyze(self, raw):
        return []


class OldStyle(Toy):
    """Written before plans declared repeats: builds its own ``repeat`` dimension."""

    def plan(self, ctx):
        return Plan(axes=[Axis("stride", (1, 2, 3))],
                    variables=[Var("latency", ("repeat",), "cycle")],
                    inner={"repeat": np.arange(3)}, attrs={"repeats": 3})

    def measure(self, device, point, ctx):
        assert ctx.repeat is None
        return repeated(3, lambda r: device.smem(SmemRequest(
            stride=int(point["stride"]), seed=repeat_seed(ctx, r))), latency="latency")


def _measured(exp: Experiment, dev, ctx: RunContext) -> xr.Dataset:
    plan = exp.plan(ctx)
    results = make_points(dev, 1).run(exp, points(plan.axes), ctx.with_repeats(plan),
                                      lambda: None)
    return assemble(plan, list(plan.axes), results)


def test_one_formula_gives_the_seed_of_each_repeat():
    ctx = RunContext("hopper", None, seed=3)  # type: ignore[arg-type]
    assert [repeat_seed(ctx, r) for r in range(3)] == [3000, 3001, 3002]
    assert RunContext("x", None, seed=3, repeats=5, repeat=4).run_seed == 3004  # type: ignore
    with pytest.raises(RuntimeError, match="only set within a repeat"):
        _ = ctx.run_seed
    quick = RunContext("x", None, quick=True)  # type: ignore[arg-type]
    assert repeat_count(ctx) == REPEATS == 16 and repeat_count(quick) == 3
    assert repeat_count(ctx, 5) == 5


def test_the_runner_seeds_each_point_and_repeat_by_the_one_formula(plugins, tmp_path):
    """A core experiment through the runner: every (point, repeat) asked once, in order,
    with repeat_seed(ctx, r); the file holds the repeat dimension the plan declared."""
    dev = Recording(plugins)
    ctx = RunContext("hopper", dev.info, quick=True, seed=7)
    store = RunStore.open(tmp_path / "run")
    runner = make_points(dev, 1)
    try:
        out = run_experiment(RunSetup(plugins, store, dev, ctx, runner, argv=("test",)),
                             SmemLatency)
    finally:
        runner.close()
    assert out.status == "complete", out.error
    n = repeat_count(ctx)
    plan = SmemLatency().plan(ctx)
    want = [(int(p["bank_mode"]), int(p["stride"]), repeat_seed(ctx, r))
            for p in points(plan.axes) for r in range(n)]
    assert [(q.bank_mode, q.stride, q.seed) for q in dev.requests] == want
    raw = open_raw(out.file)
    assert raw["latency"].dims[-1] == "repeat" and raw.sizes["repeat"] == n
    assert raw.attrs["plan_repeats"] == n


def test_a_plan_that_declares_repeats_gets_the_dimension_without_building_it(plugins):
    dev = Recording(plugins)
    ctx = RunContext("hopper", dev.info, seed=2)
    plan = Toy(4).plan(ctx)
    assert plan.attrs == {"width": 4, "repeats": 4}
    assert [v.dims for v in plan.variables] == [("repeat",), ("lane", "repeat"), ()]
    assert list(plan.inner) == ["lane", "repeat"]
    raw = _measured(Toy(4), dev, ctx)
    assert raw["latency"].dims == ("stride", "repeat") and raw.sizes["repeat"] == 4
    assert raw["per_lane"].dims == ("stride", "lane", "repeat")
    assert raw["per_lane"].sel(lane=1, stride=2).values.tolist() == [0, 1, 2, 3]
    assert raw["once"].values.tolist() == [10.0, 20.0, 30.0]
    assert [q.seed for q in dev.requests] == [2000, 2001, 2002, 2003] * 3
    # the same as each run asked by hand
    by_hand = [dev.smem(SmemRequest(stride=2, seed=repeat_seed(ctx, r))).latency
               for r in range(4)]
    assert raw["latency"].sel(stride=2).values.tolist() == by_hand


def test_a_failed_run_fails_its_point_only(plugins):
    dev = Recording(plugins)
    raw = _measured(Toy(4, fail_at=2), dev, RunContext("hopper", dev.info))
    assert raw["point_status"].values.tolist() == [POINT_OK, POINT_FAILED, POINT_OK]
    assert np.isnan(raw["latency"].sel(stride=2).values).all()
    assert "the third run failed" in raw["point_status"].attrs["reasons"]


def test_an_old_style_experiment_that_repeats_by_itself_runs_as_before(plugins):
    dev = Recording(plugins)
    ctx = RunContext("hopper", dev.info, seed=1)
    exp = OldStyle()
    plan = exp.plan(ctx)
    assert plan.repeats == 0 and ctx.with_repeats(plan).repeats == 0
    raw = _measured(exp, dev, ctx)
    assert raw["latency"].dims == ("stride", "repeat") and raw.sizes["repeat"] == 3
    assert [q.seed for q in dev.requests] == [1000, 1001, 1002] * 3
    # what run_point gives is what measure returned, untouched
    status, _why, values = run_point(exp, dev, {"stride": 1}, ctx.with_repeats(plan))
    assert status == POINT_OK and set(values) == {"latency"}
    assert values["latency"].tolist() == raw["latency"].sel(stride=1).values.tolist()


def test_the_stopping_rule_is_stdrel_unless_the_repeats_are_fixed():
    assert stopping_rule(RunContext("x", None, repeats=3)) == FixedRepeats(3)  # type: ignore
    assert stopping_rule(RunContext("x", None, repeats=16)) == StdRel(max_runs=16)  # type: ignore
    quick = RunContext("x", None, quick=True, repeats=16)  # type: ignore[arg-type]
    assert stopping_rule(quick) == FixedRepeats(16)
    rule = FixedRepeats(3)
    assert [rule.done([{}] * k) for k in range(5)] == [False, False, False, True, True]


def _runs(values):
    return [{"gbs": v, "seconds": 1 / v} for v in values]


def test_stdrel_stops_a_quiet_point_at_its_fewest_runs_a_noisy_one_at_its_most():
    rule = StdRel(target=0.005, min_runs=6, max_runs=16, budget_s=1.0)
    quiet = _runs([100.0] * 16)
    assert [rule.decide(quiet[:k]) for k in (5, 6)] == ["", STOP_PRECISE]
    rng = np.random.default_rng(1)
    noisy = _runs(100 * (1 + 0.05 * rng.standard_normal(16)))  # 5 %: rse ~1.6 % at 16
    assert all(rule.decide(noisy[:k]) == "" for k in range(6, 16))
    assert rule.decide(noisy) == STOP_MAX
    assert runs_rel_error(noisy) > 0.005
    # a point whose runs take long stops on its budget, after at least three
    assert rule.decide(noisy[:2], elapsed=5.0) == "" and \
        rule.decide(noisy[:3], elapsed=5.0) == STOP_BUDGET


def test_the_rule_watches_the_least_precise_value_each_element_apart():
    rule = StdRel(target=0.005, min_runs=6, max_runs=8)
    runs = [{"a": 1.0, "b": np.array([5.0, 5.0 + 0.1 * (i % 3)])} for i in range(6)]
    assert runs_rel_error(runs) > 0.005 and rule.decide(runs) == ""


class Noisy(Toy):
    """A latency with planted relative noise ``sigma`` per run."""

    def __init__(self, sigma: float) -> None:
        super().__init__(REPEATS)
        self.sigma = sigma

    def measure(self, device, point, ctx):
        rng = np.random.default_rng(ctx.run_seed)
        lat = 100.0 * (1 + self.sigma * rng.standard_normal())
        return {"latency": lat, "per_lane": np.array([lat, 1.0])}


@pytest.mark.parametrize("sigma, runs, why", [(0.0, MIN_REPEATS, STOP_PRECISE),
                                               (0.001, MIN_REPEATS, STOP_PRECISE),
                                               (0.05, REPEATS, STOP_MAX)])
def test_points_stop_as_their_noise_allows_and_the_file_says_so(plugins, sigma, runs, why):
    """Planted noise: a quiet point takes the fewest runs, a noisy one the most; the raw
    dataset keeps every point's runs taken, precision reached and why it stopped, the runs
    not taken NaN; the finding's estimate carries them."""
    from gpumem.contracts.estimates import estimate_at
    from gpumem.contracts.findings import STOP_REASONS

    dev = Recording(plugins)
    raw = _measured(Noisy(sigma), dev, RunContext("hopper", dev.info, seed=5))
    assert raw.sizes["repeat"] == REPEATS
    assert (raw["point_repeats"] == runs).all()
    assert (raw["point_stopped"] == STOP_REASONS.index(why)).all()
    assert np.isfinite(raw["latency"].values[:, :runs]).all()
    assert np.isnan(raw["latency"].values[:, runs:]).all()
    est = estimate_at(raw, "latency", {"stride": 2})
    assert est.precision.repeats == runs and est.precision.stopped == why
    assert est.lo <= est.value <= est.hi
    if sigma:
        assert est.precision.rel_error == pytest.approx(
            float(raw["point_rel_error"].sel(stride=2)), rel=0.5)


def test_measure_point_stacks_runs_along_the_last_axis(plugins):
    dev = Recording(plugins)
    ctx = RunContext("hopper", dev.info).with_repeats(Toy(2).plan(
        RunContext("hopper", dev.info)))
    got = measure_point(Toy(2), dev, {"stride": 1}, ctx)
    assert got["per_lane"].shape == (2, 2) and got["latency"].shape == (2,)
    assert got["once"] == 10.0


def test_plans_refuse_repeats_they_contradict():
    with pytest.raises(ValueError, match="innermost"):
        Plan([Axis("a", (1,))], [Var("v", ("repeat", "lane"))], {"lane": np.arange(2)},
             repeats=2)
    with pytest.raises(ValueError, match="attrs say"):
        Plan([Axis("a", (1,))], [Var("v")], attrs={"repeats": 3}, repeats=2)
    with pytest.raises(ValueError, match="whole number"):
        Plan([Axis("a", (1,))], [Var("v")], repeats=-1)
    # a plan written with the dimension spelled out, and the same declared, key alike
    spelled = Plan([Axis("a", (1, 2))], [Var("v", ("repeat",))], {"repeat": np.arange(3)},
                   {"repeats": 3})
    declared = Plan([Axis("a", (1, 2))], [Var("v")], repeats=3)
    assert spelled.params_hash(Toy()) == declared.params_hash(Toy())
    assert declared.variables == spelled.variables


def test_point_medians_ignore_points_that_did_not_measure():
    raw = xr.Dataset(
        {"gbs": (("ctas", "repeat"), np.array([[1.0, 2.0, 9.0], [4.0, 5.0, 6.0],
                                               [7.0, np.nan, 8.0]])),
         "point_status": (("ctas",), np.array([0, 2, 0], dtype=np.int8)),
         "once": (("ctas",), np.array([1.0, 2.0, 3.0]))},
        coords={"ctas": [1, 2, 4], "repeat": np.arange(3)})
    med = point_medians(raw, "gbs")
    assert med.dims == ("ctas",)
    np.testing.assert_array_equal(med.values, [2.0, np.nan, 7.5])
    np.testing.assert_array_equal(point_medians(raw, "once").values, [1.0, np.nan, 3.0])
    # what the analyses wrote by hand before
    xr.testing.assert_identical(med, raw["gbs"].median("repeat").where(raw["point_status"] == 0))
    # a dataset without point_status (a converted file) is read whole
    np.testing.assert_array_equal(point_medians(raw.drop_vars("point_status"), "gbs").values,
                                  [2.0, 5.0, 7.5])



def test_the_rules_error_over_many_values_is_each_values_own_worst():
    """``runs_rel_error`` works out whole rows (every run finite) all at once: the same worst
    relative error as each value's ``rel_error`` in turn, NaN rows, zero medians and more
    runs than the exact binomial covers included."""
    import math

    import numpy as np
    from gpumem.contracts.estimates import rel_error

    rng = np.random.default_rng(7)
    for n in (2, 3, 6, 7, 16, 70):
        for trial in range(10):
            runs = [{"a": (300 + rng.normal(0, [0, 1, 5][trial % 3], 64)).round(trial % 2),
                     "b": float(rng.normal()), "c": np.array([0.0, float(trial % 2 * i)])}
                    for i in range(n)]
            if trial % 4 == 0:
                for r in runs:
                    r["a"][3] = np.nan
            each = max((e for key in ("a", "b", "c")
                        for row in np.stack([np.asarray(r[key], float) for r in runs],
                                            axis=-1).reshape(-1, n)
                        if not math.isnan(e := rel_error(row))), default=0.0)
            assert runs_rel_error(runs) == each, (n, trial)
