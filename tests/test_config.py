"""SimConfig: validated, TOML both ways, errors that name the field and the rule."""

from __future__ import annotations

import pytest
from gpumem.plugin.registry import get_plugins
from gpumem.sim import SimConfig, SimConfigError

ARCHS = ("fermi", "kepler", "maxwell", "hopper")


@pytest.mark.parametrize("arch", ARCHS)
def test_plugin_configs_round_trip_through_toml(arch, tmp_path):
    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    cfg.save(tmp_path / "c.toml")
    again = SimConfig.load(tmp_path / "c.toml")
    assert again == cfg and again.digest() == cfg.digest()


BASE = """
name = "x"
arch = "a"
compute_capability = "9.0"
sm_count = 1
clock_mhz = 1000
[dram]
latency = 100
[paths]
ca = ["l1d"]
[[cache]]
name = "l1d"
size = 4096
line = 64
ways = 4
hit_latency = 10
"""


@pytest.mark.parametrize("edit, field", [
    (("line = 64", "line = 48"), "cache[l1d].line"),
    (("ways = 4", "ways = 3"), "cache[l1d].ways"),
    (("hit_latency = 10", "hit_latency = 10\npolicy = \"mru\""), "cache[l1d].policy"),
    (("ca = [\"l1d\"]", "ca = [\"l9\"]"), "paths.ca"),
    (("sm_count = 1", "sm_count = \"one\""), "sm_count"),
    (("hit_latency = 10", "hit_latency = 10\nindex = \"bits\"\nindex_bits = [7]"),
     "cache[l1d].index_bits"),
    (("hit_latency = 10", "hit_latency = 10\ncolour = 3"), "cache[l1d].colour"),
    (("[dram]\nlatency = 100", "[dram]"), "dram.latency"),
    (("[dram]", "[smem]\nremote_latency = 200.0\n[dram]"), "smem.remote_bytes_per_cycle"),
    (("[dram]", "[smem]\nremote_latency = -1.0\n[dram]"), "smem.remote_latency"),
])
def test_validation_names_field_and_rule(edit, field):
    text = BASE.replace(*edit)
    with pytest.raises(SimConfigError) as e:
        SimConfig.from_toml(text)
    assert str(e.value).startswith(field), str(e.value)


def test_not_toml_is_a_clear_error():
    with pytest.raises(SimConfigError, match="not valid TOML"):
        SimConfig.from_toml("name = ")


def test_unequal_sets_and_tables_are_expressible():
    text = BASE + """
[[tlb]]
name = "tlb_l2"
page = 2097152
entries = 65
ways = [17, 8, 8, 8, 8, 8, 8]
miss_penalty = 50
index = "table"
index_table = [0, 1, 2, 3, 4, 5, 6]
"""
    cfg = SimConfig.from_toml(text)
    assert cfg.tlbs[0].sets == 7 and cfg.tlbs[0].way_list[0] == 17
