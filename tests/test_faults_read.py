"""Reading a run that is damaged or hostile (issue 15): every command that reads a run
names damaged entries, one line each on stderr, and exits 1; strings from files and plugins
print as text, never markup or terminal control; analysing a file as another experiment is a
usage error; Ctrl-C says "interrupted" and exits 130."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import netCDF4
import pytest
from gpumem.plugin.registry import reset_plugins
from gpumem.results.verify import verify_run

EVIL = "x[/red] [link=https://evil.example]http://nvidia.com[/link] \x1b]8;;http://evil\x07y"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A small simulated run (latency and bandwidth), made once and copied per test."""
    from gpumem.cli import main

    out = tmp_path_factory.mktemp("faults") / "run"
    reset_plugins()
    assert main(["run", "--arch", "kepler", "latency", "bandwidth", "--device", "sim",
                 "--quick", "--out", str(out)]) == 0
    reset_plugins()
    return out


@pytest.fixture
def run(template, tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(template, dst)
    return dst


def nc(run: Path, exp: str) -> Path:
    return next(run.glob(f"*/{exp}-*.nc"))


def flip_to_nan(path: Path) -> None:
    """Overwrite a stored finding's value bytes with a NaN: the file still opens, only the
    checksum can tell. Its value's bytes may occur more than once (an interval's end equal
    to it, on a deterministic simulator): the occurrence that is the variable's data is the
    one whose replacement makes the finding read NaN."""
    import netCDF4

    def scalars() -> dict[str, float]:
        with netCDF4.Dataset(path) as ds:
            g = ds.groups["findings"]
            g.set_auto_mask(False)
            return {n: float(v[...]) for n, v in g.variables.items()
                    if not v.dimensions and v.dtype.kind == "f"}

    data = path.read_bytes()
    nan = struct.pack("<d", float("nan"))
    for name, value in scalars().items():
        packed = struct.pack("<d", value)
        at = -1
        while (at := data.find(packed, at + 1)) >= 0:
            path.write_bytes(data[:at] + nan + data[at + len(packed):])
            try:
                flipped = scalars()[name]
            except Exception:  # noqa: BLE001 - an attribute's bytes: try the next one
                continue
            if str(flipped) == "nan":
                return
    path.write_bytes(data)
    raise AssertionError("no finding's value could be turned to NaN")


def lines(err: str, needle: str) -> list[str]:
    return [ln for ln in err.splitlines() if needle in ln]


# ---- 1. damaged runs are named, intact parts still shown, exit 1 ----------------------------

def test_compare_names_a_truncated_file_and_prints_the_intact_rows(cli, run):
    bad = nc(run, "bandwidth")
    bad.write_bytes(bad.read_bytes()[:2000])
    res = cli("compare", str(run))
    assert res.code == 1, res.err
    assert len(lines(res.err, "gpumem: damaged:")) == 1 and str(bad) in res.err
    assert "size: 2000 bytes" in res.err and "Traceback" not in res.err
    assert "lat.dram" in res.out and "bw.dram_read" not in res.out


def test_compare_names_a_deleted_file(cli, run):
    bad = nc(run, "latency")
    bad.unlink()
    res = cli("compare", str(run), "--json")
    assert res.code == 1
    assert len(lines(res.err, "gpumem: damaged:")) == 1
    assert "missing" in res.err and str(bad) in res.err
    data = json.loads(res.out)
    assert [d["reason"] for d in data["damaged"]] == ["missing"]
    assert {r["experiment"] for r in data["rows"]} == {"bandwidth"}


def test_compare_of_a_wholly_damaged_run_is_an_error_after_naming_each_entry(cli, run):
    for exp in ("latency", "bandwidth"):
        nc(run, exp).unlink()
    res = cli("compare", str(run))
    assert res.code == 1 and len(lines(res.err, "gpumem: damaged:")) == 2
    assert res.err.count("\n") == 4 and "no findings to compare" in res.err
    # every file gone: perhaps a run kept as its manifest alone, which is read by naming it
    (note,) = lines(res.err, "gpumem: note:")
    assert str(run / "manifest.json") in note


@pytest.mark.parametrize("command", ["show", "compare", "analyze", "report"])
def test_bytes_turned_to_nan_are_caught_by_every_reading_command(cli, run, tmp_path, command):
    bad = nc(run, "bandwidth")
    flip_to_nan(bad)
    report = tmp_path / "report"
    args = {"show": [str(run)], "compare": [str(run)], "analyze": [str(bad)],
            "report": [str(run), "--out", str(report)]}[command]
    res = cli(command, *args)
    assert res.code == 1, (res.out, res.err)
    damaged = lines(res.err, "gpumem: damaged:")
    assert len(damaged) == 1 and str(bad) in damaged[0] and "checksum" in damaged[0]
    assert "Traceback" not in res.err and not re.search(r"\bnan\b", res.out, re.I)
    if command == "show":  # the intact file is still described, the damaged one is not
        assert nc(run, "latency").name in res.out and bad.name not in res.out.split("┘")[-1]
    if command == "report":
        assert not report.exists()


def test_show_json_lists_the_damage(cli, run):
    flip_to_nan(nc(run, "bandwidth"))
    res = cli("show", str(run), "--json")
    assert res.code == 1
    data = json.loads(res.out)
    assert [d["reason"] for d in data["damaged"]] == ["checksum"]
    assert [Path(f["path"]).name for f in data["files"]] == [nc(run, "latency").name]


def test_verify_run_gives_each_reason(run):
    manifest = run / "manifest.json"
    m = json.loads(manifest.read_text())
    keys = {e["experiment"]: k for k, e in m["entries"].items()}
    assert verify_run(run) == []
    lat, bw = nc(run, "latency"), nc(run, "bandwidth")
    # a run records each file's size and checksum when it writes it
    assert m["entries"][keys["latency"]]["size"] == lat.stat().st_size
    m["entries"][keys["latency"]]["size"] = lat.stat().st_size + 1
    manifest.write_text(json.dumps(m))
    assert [(d.key, d.reason) for d in verify_run(run)] == [(keys["latency"], "size")]
    del m["entries"][keys["latency"]]["size"]
    for field in ("sha256", "size"):  # unrecorded (an older run): it must at least open
        del m["entries"][keys["bandwidth"]][field]
    manifest.write_text(json.dumps(m))
    bw.write_bytes(bw.read_bytes()[:1000])
    lat.write_bytes(lat.read_bytes() + b"\0")
    assert [(d.key, d.reason) for d in verify_run(run)] == [
        (k, r) for k, r in sorted([(keys["latency"], "checksum"),
                                   (keys["bandwidth"], "unreadable")])]


def test_attributes_of_the_wrong_type_are_no_traceback(cli, tmp_path, template):
    f = tmp_path / "odd.nc"
    shutil.copy(nc(template, "latency"), f)
    with netCDF4.Dataset(f, "a") as ds:
        ds.setncattr("smem_bank_modes", "four")
    res = cli("compare", str(f), "--expected")
    assert res.code == 0, res.err
    assert "lat.dram" in res.out


def test_a_corrupt_file_given_to_compare_is_one_line_naming_it(cli, tmp_path):
    bad = tmp_path / "broken.nc"
    bad.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    res = cli("compare", str(bad))
    assert res.code == 1 and res.err.count("\n") == 1
    assert str(bad) in res.err and "cannot read results file" in res.err


# ---- 2. strings from files and plugins are text, never markup or terminal control -----------

def planted(tmp_path: Path, template: Path, value: str) -> Path:
    f = tmp_path / "imported.nc"
    shutil.copy(nc(template, "latency"), f)
    with netCDF4.Dataset(f, "a") as ds:
        ds.setncattr("device_name", value)
    return f


@pytest.mark.parametrize("command", ["show", "compare"])
def test_markup_and_escapes_in_a_device_name_print_as_text(cli, tmp_path, template, command):
    res = cli(command, str(planted(tmp_path, template, EVIL)))
    assert res.code == 0, res.err
    assert "\x1b" not in res.out and "\x07" not in res.out
    assert "x[/red] [link=https://evil.example]http://nvidia.com[/link] \\x1b]8;;" \
        "http://evil\\x07y" in res.out


def test_a_link_in_a_device_name_is_not_a_disguised_hyperlink(cli, tmp_path, template):
    f = planted(tmp_path, template, "[link=https://evil.example]http://nvidia.com[/link]")
    res = cli("compare", str(f))
    assert res.code == 0 and "[link=https://evil.example]http://nvidia.com[/link]" in res.out


def test_markup_in_a_manifest_prints_as_text_in_show(cli, run):
    manifest = run / "manifest.json"
    m = json.loads(manifest.read_text())
    m["entries"]["sim/evil/0"] = {"status": "skipped", "experiment": "evil",
                                  "error": "a[/red]\x1b]8;;u\x07b"}  # short: no cell wrap
    manifest.write_text(json.dumps(m))
    res = cli("show", str(run))
    assert res.code == 0, res.err
    assert "\x1b" not in res.out and "a[/red]\\x1b]8;;u\\x07b" in res.out


def test_markup_in_a_plugin_error_prints_as_text_in_list_plugins(cli, tmp_path, monkeypatch):
    (tmp_path / "evil_plugin_xyz.py").write_text(f"raise RuntimeError({EVIL!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("gpumem.plugin.registry.entry_points",
                        lambda: [EntryPoint(name="evil[/red]", value="evil_plugin_xyz",
                                            group="gpumem")])
    res = cli("list-plugins")
    assert res.code == 0, res.err
    assert "evil[/red]" in res.out and "x[/red] [link=https://evil.example]" in res.out
    assert "\x1b" not in res.out and "\\x1b]8;;http://evil\\x07y" in res.out


def test_a_plugin_load_warning_escapes_control_characters(cli, tmp_path, monkeypatch):
    """The core's own warning (``gpumem: warning: plugin ... failed to load``) too."""
    (tmp_path / "evil_plugin_xyz.py").write_text(f"raise RuntimeError({EVIL!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("gpumem.plugin.registry.entry_points",
                        lambda: [EntryPoint(name="evil", value="evil_plugin_xyz",
                                            group="gpumem")])
    res = cli("devices")
    assert "failed to load" in res.err, res.err
    assert "\x1b" not in res.err and "\\x1b]8;;http://evil\\x07y" in res.err


def test_control_characters_in_an_error_message_are_escaped(cli, tmp_path, template):
    f = tmp_path / "odd.nc"
    shutil.copy(nc(template, "latency"), f)
    with netCDF4.Dataset(f, "a") as ds:
        ds.setncattr("gpumem_experiment", "\x1b]8;;http://evil\x07lat")
    res = cli("analyze", str(f))
    assert res.code == 2 and res.err.count("\n") == 1
    assert "\x1b" not in res.err and "\\x1b]8;;http://evil\\x07lat" in res.err


# ---- 3. a file analysed as another experiment ------------------------------------------------

def test_analyze_a_file_as_another_experiment_is_a_usage_error(cli, template):
    res = cli("analyze", str(nc(template, "latency")), "--experiment", "bandwidth")
    assert res.code == 2, res.err
    assert res.err.count("\n") == 1 and "'latency'" in res.err and "'bandwidth'" in res.err


def test_analyze_a_file_recording_no_experiment_as_the_wrong_one_is_a_usage_error(
        cli, tmp_path, template):
    f = tmp_path / "anon.nc"
    shutil.copy(nc(template, "latency"), f)
    with netCDF4.Dataset(f, "a") as ds:
        ds.delncattr("gpumem_experiment")
    res = cli("analyze", str(f), "--experiment", "bandwidth")
    assert res.code == 2 and res.err.count("\n") == 1 and "as 'bandwidth'" in res.err
    assert cli("analyze", str(f), "--experiment", "latency").code == 0


# ---- 4. Ctrl-C outside a run -----------------------------------------------------------------

def _interrupt(*_a, **_k):
    raise KeyboardInterrupt


@pytest.mark.parametrize("command, target", [
    ("show", "gpumem.cli.show.describe"),
    ("compare", "gpumem.cli.compare.compare"),
    ("analyze", "gpumem.cli.analyze.analyze_file"),
    ("report", "gpumem.report.build_report"),
    ("list-plugins", "gpumem.cli.plugins.get_plugins"),
])
def test_ctrl_c_says_interrupted_and_exits_130(cli, run, tmp_path, monkeypatch, command,
                                               target):
    monkeypatch.setattr(target, _interrupt)
    args = {"show": [str(run)], "compare": [str(run)], "analyze": [str(nc(run, "latency"))],
            "report": [str(run), "--out", str(tmp_path / "r")], "list-plugins": []}[command]
    res = cli(command, *args)
    assert res.code == 130 and res.err == "gpumem: interrupted\n"


def test_sigint_during_show_says_interrupted(run):
    code = ("import os, signal, sys\n"
            "import gpumem.cli.show as show\n"
            "from gpumem.cli import main\n"
            "show.describe = lambda *a, **k: os.kill(os.getpid(), signal.SIGINT)\n"
            f"sys.exit(main(['show', {str(run)!r}]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode == 130 and res.stderr == "gpumem: interrupted\n"


def test_a_manifest_naming_a_file_outside_the_run_is_damage(tmp_path):
    from gpumem.results.verify import verify_run

    run = tmp_path / "run"
    (run / "dev").mkdir(parents=True)
    secret = tmp_path / "secret.nc"
    secret.write_bytes(b"not yours")
    manifest = {"entries": {"k": {"experiment": "latency", "status": "complete",
                                  "file": "../secret.nc", "sha256": "0" * 64}}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (d,) = verify_run(run)
    assert d.reason == "outside" and d.key == "k"


def test_markup_and_escapes_in_a_sim_config_name_print_as_text_in_run(cli, tmp_path):
    """``gpumem run``'s table title and messages: a config name is data too."""
    src = Path(__file__).parents[1] / "plugins" / "kepler" / "src" / "gpumem_kepler" / "sim.toml"
    text = src.read_text()
    evil = "x[/red] [link=https://evil.example]http://nvidia.com[/link] \\u001b]8;;u\\u0007y"
    text = re.sub(r'(?m)^name = ".*"$', lambda m: f'name = "{evil}"', text, count=1)
    cfg = tmp_path / "evil.toml"
    cfg.write_text(text)
    res = cli("run", "--arch", "kepler", "smem_latency", "--device", "sim", "--quick",
              "--sim-config", str(cfg), "--out", str(tmp_path / "run"))
    assert res.code == 0, res.err
    assert "\x1b" not in res.out + res.err
    assert "x[/red] [link=https://evil.example]http://nvidia.com[/link]" in res.out
