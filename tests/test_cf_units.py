"""Results files that CF and unit libraries read right (issue 17, item 3).

Every ``units`` attribute a run writes (variables, coordinates, findings) parses in
UDUNITS-2 (cf-units) and pint to the quantity gpumem means: a count of clock cycles is
dimensionless (not 2 pi radians), GB/s is 1e9 bytes per second. Every coordinate has a
``long_name`` and ``units``, every dimension a coordinate, integer findings are integers, and
gpumem still shows ``cycle`` and ``GB/s`` and reads the files written before.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.findings import Finding, from_dataset, to_dataset, unresolved
from gpumem.contracts.units import CF_UNITS, HUMAN_ATTR, cf_units, encode
from gpumem.results.io import open_findings, open_raw

cf = pytest.importorskip("cf_units")
pint = pytest.importorskip("pint")
UREG = pint.UnitRegistry()
DATA = Path(__file__).parent / "data"


def _cf(u: str):
    return cf.Unit(u)


def _pint(u: str):
    return UREG.Quantity(UREG.parse_expression(u))


@pytest.fixture(scope="module")
def kepler_run(sim_run) -> Path:
    """``gpumem run --arch kepler all --device sim --quick`` (made once per session:
    conftest's sim_run)."""
    res = sim_run("kepler", quick=True)
    assert res.ran, res.text[-3000:]
    return res.out


def _files(run: Path) -> list[Path]:
    files = sorted(run.rglob("*.nc"))
    assert files
    return files


def _groups(path: Path):
    for group in (None, "findings"):
        with xr.open_dataset(path, group=group, engine="netcdf4") as ds:
            yield group, ds.load()


# ---- the mapping itself ---------------------------------------------------------------------

@pytest.mark.parametrize("shown", sorted(CF_UNITS))
def test_every_stored_spelling_parses_in_both_libraries(shown):
    stored = cf_units(shown)
    _cf(stored)
    _pint(stored)


@pytest.mark.parametrize("shown, factor", [("GB/s", 1e9), ("MB/s", 1e6), ("GiB/s", 2**30),
                                           ("MiB/s", 2**20)])
def test_bandwidths_are_bytes_per_second(shown, factor):
    stored = cf_units(shown)
    assert _cf(stored).convert(1.0, "byte s-1") == pytest.approx(factor)
    assert _pint(stored).to("byte / second").magnitude == pytest.approx(factor)


@pytest.mark.parametrize("shown, factor", [("byte", 1), ("bytes", 1), ("B", 1), ("KiB", 1024),
                                           ("MiB", 2**20), ("kB", 1000)])
def test_sizes_are_bytes(shown, factor):
    stored = cf_units(shown)
    assert _cf(stored).convert(1.0, "byte") == pytest.approx(factor)
    assert _pint(stored).to("byte").magnitude == pytest.approx(factor)


def test_cycles_are_dimensionless_not_radians():
    for shown in ("cycle", "cycles"):
        stored = cf_units(shown)
        assert _cf(stored).is_dimensionless() and _cf(stored).convert(280, "1") == 280
        q = _pint(stored)
        assert q.dimensionless and q.to("dimensionless").magnitude == 1
        assert "radian" not in str(q.to_base_units().units)
    assert _cf("ns").convert(1.0, "s") == pytest.approx(1e-9)
    assert _pint("ns").to("s").magnitude == pytest.approx(1e-9)


# ---- a whole run ----------------------------------------------------------------------------

def test_every_units_attribute_of_a_run_parses_to_the_intended_quantity(kepler_run):
    seen = set()
    for path in _files(kepler_run):
        for group, ds in _groups(path):
            for name, var in ds.variables.items():
                where = f"{path.name}:{group or '/'}:{name}"
                assert "units" in var.attrs and "long_name" in var.attrs, where
                u = str(var.attrs["units"])
                cu, pq = _cf(u), _pint(u)  # both parse
                shown = str(var.attrs.get(HUMAN_ATTR, u))
                seen.add(shown)
                if shown in ("cycle", "cycles"):
                    assert u == "1" and cu.is_dimensionless() and pq.dimensionless, where
                    assert "cycle" in str(var.attrs["long_name"]).lower(), where
                if shown == "GB/s":
                    assert cu.convert(1.0, "byte s-1") == pytest.approx(1e9), where
                    assert pq.to("byte / second").magnitude == pytest.approx(1e9), where
                if shown == "byte":
                    assert cu.convert(1.0, "byte") == 1 and pq.to("byte").magnitude == 1
                assert "cycle" not in u, where  # UDUNITS and pint: 2 pi radians
    assert {"cycle", "GB/s", "byte", "1"} <= seen


def test_every_coordinate_and_dimension_is_described(kepler_run):
    for path in _files(kepler_run):
        for group, ds in _groups(path):
            for name, var in ds.variables.items():
                where = f"{path.name}:{group or '/'}:{name}"
                ln = str(var.attrs.get("long_name", ""))
                assert ln and ln != name, where
                assert ln.replace(" ", "_") != name and ln.replace(" ", "__") != name, where
            for dim in ds.dims:
                assert dim in ds.coords, f"{path.name}:{group}:{dim}"
                assert {"long_name", "units"} <= set(ds[dim].attrs), f"{path.name}:{dim}"
        with netCDF4.Dataset(path) as nc:  # as written, not only as xarray shows it
            for g in (nc, nc.groups["findings"]):
                for dim in g.dimensions:
                    assert dim in g.variables, f"{path.name}: dimension {dim}"
                    assert {"long_name", "units"} <= set(g.variables[dim].ncattrs())
    chases = next(kepler_run.rglob("cache_structure-*.nc"))
    with xr.open_dataset(chases) as ds:
        for dim in ("chase", "event", "pattern_pos"):
            assert ds[dim].attrs["units"] == "1" and ds[dim].attrs["long_name"] != dim


def test_integer_findings_are_stored_as_integers(kepler_run):
    n_int = 0
    for path in _files(kepler_run):
        with xr.open_dataset(path, group="findings") as ds:
            for name, var in ds.data_vars.items():
                vt = var.attrs.get("value_type")
                if vt in ("int", "list_int"):
                    if int(var.attrs.get("resolved", 1)):
                        assert var.dtype.kind == "i", name
                        n_int += 1
                    else:  # no value: stored as int64 fill, read as NaN (CF masking)
                        assert var.encoding["dtype"].kind == "i", name
                        assert "_FillValue" in var.encoding and np.isnan(var.values), name
    assert n_int > 5


def test_gpumem_still_shows_cycle_and_gb_per_s(kepler_run):
    units = {}
    for path in _files(kepler_run):
        for f in from_dataset(open_findings(path)):
            units[f.name] = f.units
        raw = open_raw(path)  # gpumem's reader: the shown units
        for var in raw.variables.values():
            if HUMAN_ATTR in var.attrs:
                assert var.attrs["units"] == var.attrs[HUMAN_ATTR]
    assert units["lat.l2"] == "cycle" and units["bw.dram_read"] == "GB/s"
    assert "byte" in units.values() and "1" in units.values()


# ---- findings round trip ----------------------------------------------------------------------

def test_unresolved_and_integer_findings_round_trip(tmp_path):
    fs = [Finding("l1d.size", 262144, "byte"), Finding("lat.l2", 230.5, "cycle"),
          unresolved("l2.line", "byte", [64, 128], "m", "two answers"),
          unresolved("lat.l1", "cycle", [30.5], "m", "one"),
          Finding("l2.sm_partition", [0, 1, -1], "1", index=("sm", [0, 1, 2])),
          Finding("bw.dram_read", 4000.25, "GB/s"), Finding("l1d.policy", "lru", "")]
    path = tmp_path / "f.nc"
    encode(to_dataset(fs)).to_netcdf(path, engine="netcdf4")
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_mask(False)
        assert nc["l1d__size"].dtype == np.int64 and nc["l2__line"].dtype == np.int64
        assert nc["l2__line"]._FillValue == nc["l2__line"][...]
        assert nc["lat__l2"].units == "1" and nc["lat__l2"].gpumem_units == "cycle"
        assert nc["bw__dram_read"].units == "Gbyte/s"
        assert nc["l2__sm_partition__sm"].gpumem_index == "sm"
    with xr.open_dataset(path) as ds:
        assert from_dataset(ds.load()) == fs


# ---- files written before ---------------------------------------------------------------------

@pytest.mark.parametrize("run", [
    "h200-run",
    # the five runs' 70 files, read and encoded again: 9 s of CPU (h200-run's 14 stay)
    pytest.param("h200-reruns", marks=pytest.mark.slow)])
def test_files_written_before_read_as_before(run):
    files = sorted((DATA / run).rglob("*.nc"))
    assert files
    for path in files:
        fs = from_dataset(open_findings(path))
        with xr.open_dataset(path, group="findings") as ds:
            for f in fs:
                stored = ds[f.name.replace(".", "__")].attrs["units"]
                assert f.units == stored  # old files: units held what gpumem shows
                assert HUMAN_ATTR not in ds[f.name.replace(".", "__")].attrs
            for f in fs:
                if f.index is not None:
                    dim = f"{f.name.replace('.', '__')}__{f.index[0]}"
                    assert ds[dim].attrs["long_name"] == f.index[0]
        # written again (a re-analysis), they carry CF units and read back the same
        raw, fds = open_raw(path), open_findings(path)
        assert from_dataset(encode(to_dataset(fs))) == fs
        for var in encode(raw).variables.values():
            _cf(str(var.attrs["units"]))
            _pint(str(var.attrs["units"]))
        assert from_dataset(fds) == fs
