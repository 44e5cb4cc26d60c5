"""The declared sim.toml schema (issue 28, item 4): the committed JSON Schema and docs page
are what the declarations generate, every packaged sim.toml validates against them, a
partitioned L2 with a near copy is one level that means the hopper config's two, and
``SimConfig.unmodelled()`` names the findings an unset field leaves without a model.

No ``jsonschema`` package is installed here, so the JSON Schema is checked by the small
validator below, which knows exactly the keywords the generator writes (it fails on any
other), and the declarations are read a second way by pydantic's own validation."""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from pathlib import Path

import pytest
from gpumem.sim import (
    CacheLevel,
    Dram,
    Interconnect,
    Neighbour,
    SharedMemory,
    SimConfig,
    SimConfigError,
    Throughput,
    Timer,
    TlbLevel,
    engine,
    schema,
)
from gpumem.sim.config import default_partition_masks
from pydantic import TypeAdapter, ValidationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = sorted([*ROOT.glob("plugins/*/src/*/sim.toml"),
                   *ROOT.glob("examples/*/src/*/sim.toml")])
HOPPER = ROOT / "plugins/hopper/src/gpumem_hopper/sim.toml"


# ---------------------------------------------------------------------------------------------
# The generated files
# ---------------------------------------------------------------------------------------------


def test_the_committed_json_schema_is_what_the_declarations_generate():
    assert schema.SCHEMA_PATH.read_text(encoding="utf-8") == schema.schema_text(), \
        "python -m gpumem.sim.schema rewrites it"


def test_the_docs_page_is_what_the_declarations_generate():
    page = (ROOT / "docs" / "sim-config.md").read_text(encoding="utf-8")
    assert page == schema.markdown(), "python -m gpumem.sim.schema rewrites it"


def test_every_declared_field_is_documented_with_a_meaning():
    page = schema.markdown()
    for key, _f, d, _hint in [r for cls in _classes() for r in schema._toml_fields(cls)]:
        assert d.meaning, key
        assert f"| `{key}` |" in page, key


def _classes() -> list[type]:
    return [SimConfig, CacheLevel, TlbLevel, Dram, Timer, SharedMemory, Throughput,
            Interconnect, Neighbour]


# ---------------------------------------------------------------------------------------------
# Validating TOML documents against the JSON Schema (the keywords the generator writes)
# ---------------------------------------------------------------------------------------------

KNOWN = {"$schema", "$defs", "$ref", "title", "description", "default", "type", "properties",
         "required", "additionalProperties", "items", "anyOf", "enum", "minimum", "maximum",
         "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems"}
TYPES = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
         "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
         "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
         "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict)}


def schema_errors(node: dict, value, root: dict, where: str = "") -> list[str]:
    """What JSON Schema validation reports for ``value``, for this subset of draft 2020-12."""
    assert set(node) <= KNOWN, f"{where}: keywords this checker does not know {set(node) - KNOWN}"
    if "$ref" in node:
        return schema_errors(root["$defs"][node["$ref"].split("/")[-1]], value, root, where)
    if "anyOf" in node:
        ok = any(not schema_errors(n, value, root, where) for n in node["anyOf"])
        return [] if ok else [f"{where}: matches none of anyOf"]
    if "type" in node and not TYPES[node["type"]](value):
        return [f"{where}: not {node['type']}"]
    errors = []
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{where}: not in enum")
    checks = {"minimum": lambda b: value >= b, "maximum": lambda b: value <= b,
              "exclusiveMinimum": lambda b: value > b, "exclusiveMaximum": lambda b: value < b,
              "multipleOf": lambda b: value % b == 0,
              "minItems": lambda b: len(value) >= b, "maxItems": lambda b: len(value) <= b}
    errors += [f"{where}: {k}" for k, ok in checks.items() if k in node and not ok(node[k])]
    for i, item in enumerate(value if "items" in node else ()):
        errors += schema_errors(node["items"], item, root, f"{where}[{i}]")
    if isinstance(value, dict) and node.get("type") == "object":
        props = node.get("properties", {})
        errors += [f"{where}.{k}: required" for k in node.get("required", ()) if k not in value]
        for k, v in value.items():
            sub = props.get(k, node.get("additionalProperties", True))
            if sub is False:
                errors.append(f"{where}.{k}: unknown key")
            elif sub is not True:
                errors += schema_errors(sub, v, root, f"{where}.{k}")
    return errors


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(schema.SCHEMA_PATH.read_text(encoding="utf-8"))


def test_the_schema_is_draft_2020_12_and_closed(committed):
    assert committed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert committed["additionalProperties"] is False
    assert set(committed["required"]) == {"name", "arch", "compute_capability", "sm_count",
                                          "clock_mhz", "cache", "paths", "dram"}
    level = committed["$defs"]["CacheLevel"]["properties"]
    assert {"index", "index_bits", "xor_masks", "index_table", "index_seed", "near_size",
            "home_latency"} <= set(level)  # the TOML's keys, the set index flattened
    assert committed["properties"]["cache"]["items"] == {"$ref": "#/$defs/CacheLevel"}


@pytest.mark.parametrize("path", PACKAGED, ids=lambda p: p.parts[-2])
def test_every_packaged_sim_toml_validates_against_the_schema(path, committed):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert schema_errors(committed, data, committed) == []
    cfg = SimConfig.load(path)  # and what it writes validates too
    assert schema_errors(committed, tomllib.loads(cfg.to_toml()), committed) == []


def test_every_config_the_writer_writes_validates_against_the_schema(committed):
    """Planted caches and TLBs of every kind (index functions, unequal sets, partitions)."""
    from gpumem import testing

    for seed in range(12):
        for planted in (testing.random_cache(seed), testing.random_tlb(seed, seed % 2 == 1)):
            data = tomllib.loads(planted.config.to_toml())
            assert schema_errors(committed, data, committed) == [], planted.description


@pytest.mark.parametrize("path", PACKAGED, ids=lambda p: p.parts[-2])
def test_pydantic_reads_the_declarations_as_the_loader_does(path):
    """pydantic's own validation of the same classes (its reading of the declared limits)
    accepts every packaged config and rebuilds it equal."""
    cfg = SimConfig.load(path)
    assert TypeAdapter(SimConfig).validate_python(dataclasses.asdict(cfg)) == cfg


def test_pydantic_and_the_loader_refuse_the_same_out_of_range_value(tmp_path):
    data = tomllib.loads(HOPPER.read_text())
    data["throughput"]["max_threads_per_cta"] = 100
    with pytest.raises(SimConfigError, match=r"^throughput\.max_threads_per_cta: must be "
                                             r">= 32, a multiple of 32"):
        SimConfig.from_dict(copy.deepcopy(data))
    raw = dataclasses.asdict(SimConfig.load(HOPPER))
    raw["throughput"]["max_threads_per_cta"] = 100
    with pytest.raises(ValidationError, match="multiple of 32"):
        TypeAdapter(SimConfig).validate_python(raw)


@pytest.mark.parametrize("edit, error", [
    (lambda d: d.update(colour=3), ".colour: unknown key"),
    (lambda d: d["cache"][0].update(ways="four"), ".cache[0].ways: matches none of anyOf"),
    (lambda d: d["cache"][0].update(bandwidth=-1.0), ".cache[0].bandwidth: minimum"),
    (lambda d: d["cache"][0].update(policy="mru"), ".cache[0].policy: not in enum"),
    (lambda d: d["dram"].update(efficiency=0), ".dram.efficiency: exclusiveMinimum"),
    (lambda d: d["smem"].update(remote_rate_by_cluster=[1.0, 2.0, 3.0, 4.0]),
     ".smem.remote_rate_by_cluster: maxItems"),
    (lambda d: d.pop("dram"), ".dram: required"),
])
def test_the_schema_refuses_what_the_loader_refuses(edit, error, committed):
    data = tomllib.loads(HOPPER.read_text())
    edit(data)
    assert error in schema_errors(committed, data, committed)
    with pytest.raises(SimConfigError):
        SimConfig.from_dict(data)


# ---------------------------------------------------------------------------------------------
# Declared ranges: the loader's messages
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("section, key, value, message", [
    ("cache", "bandwidth", -1.0,
     "cache[l1d].bandwidth: must be >= 0 (byte/cycle; 0: no limit), got -1"),
    ("cache", "line", 96, "cache[l1d].line: must be a power of two, got 96"),
    ("dram", "efficiency", 1.5, "dram.efficiency: must be in (0, 1] (1: the whole peak"),
    ("timer", "spread", "h100", "timer.spread: must be one of '', h200"),
])
def test_a_declared_range_is_checked_with_the_fields_path(section, key, value, message):
    data = tomllib.loads(HOPPER.read_text())
    (data["cache"][0] if section == "cache" else data[section])[key] = value
    with pytest.raises(SimConfigError) as e:
        SimConfig.from_dict(data)
    assert str(e.value).startswith(message), str(e.value)


# ---------------------------------------------------------------------------------------------
# A partitioned L2 as one level
# ---------------------------------------------------------------------------------------------


def _hopper_without_slices() -> dict:
    """The packaged hopper config's data without its L2 slice map. The near copy written as
    one level carries the far partition's slow hits (``far_slow_share``), which a sliced
    level may not have (its slice latencies are every hit's): these tests are of the near
    copy's form, on an L2 with one near latency."""
    data = tomllib.loads(HOPPER.read_text())
    near = next(c for c in data["cache"] if c["name"] == "l2")
    for key in ("slices", "slice_kernel", "slice_table", "slice_footprint", "slice_latency",
                "slice_bandwidth"):
        near.pop(key, None)
    return data


def _one_level(data: dict, **extra) -> dict:
    """The hopper config with its near and far L2 written as one level."""
    data = copy.deepcopy(data)
    near = next(c for c in data["cache"] if c["name"] == "l2")
    far = next(c for c in data["cache"] if c["name"] == "l2_far")
    one = {**near, "size": far["size"], "near_size": near["size"], "sector": far["sector"],
           "partitions": 2, "home_latency": far["hit_latency"],
           "far_latency": far["far_latency"], "partition_masks": far["partition_masks"],
           "sm_partition": far["sm_partition"], "far_slow_share": far["far_slow_share"],
           "far_slow_latency": far["far_slow_latency"], **extra}
    data["cache"] = [c if c["name"] != "l2" else one for c in data["cache"]
                     if c["name"] != "l2_far"]
    data["paths"] = {k: [x for x in v if x != "l2_far"] for k, v in data["paths"].items()}
    return data


def test_a_near_copy_on_one_level_means_the_hopper_configs_two_levels():
    data = _hopper_without_slices()
    two = SimConfig.from_dict(copy.deepcopy(data))
    two.level("l2").sector = two.level("l2_far").sector  # one level has one sector
    two.level("l2_far").index = two.level("l2").index  # and one index
    one = SimConfig.from_dict(_one_level(data))
    assert one == two
    assert one.paths["cg"] == ["l2", "l2_far"]


def test_a_near_copy_takes_balanced_masks_and_far_latency_by_default():
    data = _one_level(_hopper_without_slices(), home_latency=0.0)
    for key in ("partition_masks", "sm_partition"):
        del data["cache"][1][key]
    cfg = SimConfig.from_dict(data)
    far = cfg.level("l2_far")
    assert far.home_masks == [0x421000] == default_partition_masks(2)
    assert far.partition_masks == []  # left to the default, as written: said
    assert cfg.assumptions() == [
        "cache[l2_far].partition_masks: not given; the balanced default "
        "[0x421000] decides each line's home partition"]
    assert far.hit_latency == far.far_latency == 530.0
    assert far.bandwidth == far.requests_per_cycle == 0.0  # the copy caps every stream
    assert cfg.level("l2").bandwidth > 0 and cfg.level("l2").size == 27949056
    again = SimConfig.from_toml(cfg.to_toml())  # the split form round-trips as it is
    assert again == cfg and again.validate() == cfg


def test_the_default_partition_masks_share_every_aligned_span_equally():
    for parts in (2, 4, 8):
        masks = default_partition_masks(parts)
        homes = [sum(((a & m).bit_count() & 1) << i for i, m in enumerate(masks))
                 for a in range(0, 1 << 24, 1 << 12)]
        assert {homes.count(p) for p in range(parts)} == {len(homes) // parts}


@pytest.mark.parametrize("edit, where", [
    ({"partitions": 1, "partition_masks": [], "sm_partition": []}, "cache[l2].near_size"),
    ({"near_size": 1000}, "cache[l2].near_size"),
    ({"near_size": 59277312}, "cache[l2].near_size"),  # the whole level's size
    ({"home_latency": 600.0}, "cache[l2].home_latency"),
    ({"far_latency": 100.0}, "cache[l2].far_latency"),
    ({"index": "bits", "index_bits": [7, 8]}, "cache[l2].index"),
])
def test_a_near_copy_is_checked_on_the_level_as_written(edit, where):
    data = _one_level(tomllib.loads(HOPPER.read_text()), **edit)
    with pytest.raises(SimConfigError) as e:
        SimConfig.from_dict(data)
    assert str(e.value).startswith(where), str(e.value)


def test_home_latency_needs_a_near_copy():
    lv = CacheLevel("l2", 1 << 20, 128, 16, 200.0, scope="gpu", partitions=2,
                    far_latency=300.0, home_latency=250.0)
    with pytest.raises(SimConfigError, match=r"^cache\[l2\]\.home_latency: only with near_size"):
        _config([lv]).validate()


def test_a_name_taken_by_the_whole_level_is_refused():
    caches = [CacheLevel("l2", 1 << 20, 128, 16, 200.0, scope="gpu", partitions=2,
                         far_latency=300.0, near_size=1 << 19),
              CacheLevel("l2_far", 1 << 20, 128, 16, 200.0, scope="gpu")]
    with pytest.raises(SimConfigError, match=r"^cache\[l2\]\.near_size: .*'l2_far'"):
        _config(caches).validate()


def test_the_engine_refuses_a_near_copy_that_was_not_split():
    cfg = _config([CacheLevel("l2", 1 << 20, 128, 16, 200.0, scope="gpu", partitions=2,
                              far_latency=300.0, near_size=1 << 19)])
    with pytest.raises(SimConfigError, match=r"cache\[l2\]\.near_size: .*validate"):
        engine.compile_hierarchy(cfg, 0)
    shared = dataclasses.replace(cfg)
    cfg.validate()  # splits its own lists, not those it shares
    assert [c.name for c in cfg.caches] == ["l2", "l2_far"]
    assert [c.name for c in shared.caches] == ["l2"]
    engine.compile_hierarchy(cfg, 0)


def test_a_config_without_the_new_keys_writes_the_same_toml():
    """near_size and home_latency stay out of the TOML while unset: every config written
    before them keeps its text and its digest."""
    text = SimConfig.load(HOPPER).to_toml()
    assert "near_size" not in text and "home_latency" not in text


def _config(caches: list[CacheLevel], **kw) -> SimConfig:
    return SimConfig(name="t", arch="t", compute_capability="9.0", sm_count=4,
                     clock_mhz=1000.0, caches=caches, paths={"cg": [caches[0].name]},
                     dram=Dram(600.0), memory_bytes=1 << 30, **kw)


SMALL = """
name = "small"
arch = "t"
compute_capability = "9.0"
sm_count = 4
clock_mhz = 1000.0
memory_bytes = 1073741824
[dram]
latency = 600.0
[paths]
ca = ["l1d", "l2"]
cg = ["l2"]
[[cache]]
name = "l1d"
size = 16384
line = 128
ways = 4
hit_latency = 30.0
[[cache]]
name = "l2"
scope = "gpu"
size = 4194304
line = 128
ways = 16
hit_latency = 200.0
translate = true
partitions = 2
far_latency = 400.0
[[tlb]]
name = "tlb_l1"
page = 2097152
entries = 64
ways = 64
miss_penalty = 10.0
"""


def test_a_latency_ladder_sees_the_two_plateaus_of_a_near_copy(cli, tmp_path):
    """One level with a near copy: the near plateau, then the far one (l2.partitions = 2).
    The same level without near_size gives one plateau of mixed near and far hits, whose
    medians fall on either or between (docs/sim-config.md)."""
    cfg = tmp_path / "sim.toml"
    cfg.write_text(SMALL.replace("far_latency = 400.0\n",
                                 "far_latency = 400.0\nnear_size = 2097152\n"))
    res = cli("run", "--arch", "maxwell", "latency", "--device", "sim", "--sim-config",
              str(cfg), "--quick", "--out", str(tmp_path / "out"))
    assert res.code == 0, res.err
    from gpumem.interop.compare import load_source

    found = {name: f.value for (_e, name), f in load_source(tmp_path / "out").findings.items()}
    assert found["l2.partitions"] == 2
    assert found["lat.l2"] == pytest.approx(200, abs=2)
    assert found["lat.l2_far"] == pytest.approx(400, abs=2)
    assert found["l2.near_size"] == pytest.approx(2 << 20, rel=0.05)
    assert found["l2.size"] == pytest.approx(4 << 20, rel=0.05)


# ---------------------------------------------------------------------------------------------
# unmodelled()
# ---------------------------------------------------------------------------------------------


def _bare() -> SimConfig:
    """A config with every optional section unset: no bandwidths, TLBs or ILP limits."""
    return SimConfig(name="bare", arch="t", compute_capability="9.0", sm_count=8,
                     clock_mhz=1000.0,
                     caches=[CacheLevel("l1d", 16384, 128, 4, 30.0),
                             CacheLevel("l2", 1 << 20, 128, 16, 200.0, scope="gpu")],
                     paths={"ca": ["l1d", "l2"], "cg": ["l2"]}, dram=Dram(600.0)).validate()


def test_unset_sections_leave_their_findings_not_modelled():
    gaps = _bare().unmodelled()
    assert {"bw.l1", "bw.l2", "bw.dram_*", "bw.dram_read_fraction", "ilp.*", "cpasync.*",
            "tlb.*", "tlb_l1.*", "lat.dram_tlb_miss", "bulk.latency_estimate", "lat.dsmem*",
            "p2p.*"} <= set(gaps)
    assert gaps["bw.l2"] == ("not modelled: the config sets none of cache[l2].bandwidth "
                             "(0: no limit), cache[l2].requests_per_cycle (0: no limit)")
    assert all(why.startswith("not modelled: the config ") for why in gaps.values())


def test_a_set_field_models_its_findings():
    cfg = _bare()
    cfg.level("l1d").bandwidth = 64.0  # an SM-scope level: bw.l1, not bw.l2
    cfg.throughput = Throughput(async_latency=150.0)
    cfg.dram.bandwidth_gbs = 900.0
    cfg.tlbs = [TlbLevel("tlb_l1", 2 << 20, 16, 16, 10.0)]
    gaps = cfg.unmodelled()
    assert not {"bw.l1", "cpasync.*", "bw.dram_*", "tlb.*", "lat.dram_tlb_miss"} & set(gaps)
    assert {"bw.l2", "ilp.*", "bw.dram_read_fraction"} <= set(gaps)  # still unset
    cfg.dram.efficiency = 0.9
    assert "bw.dram_read_fraction" not in cfg.unmodelled()


def test_the_hopper_config_models_all_but_a_node():
    assert SimConfig.load(HOPPER).unmodelled().keys() == {"p2p.*"}


def test_a_partitioned_l2s_caps_on_its_near_copy_model_bw_l2():
    """The whole L2 behind a near copy has no caps of its own; the copy's count."""
    gaps = SimConfig.from_dict(_one_level(_hopper_without_slices())).unmodelled()
    assert "bw.l2" not in gaps and "ilp.*" not in gaps
