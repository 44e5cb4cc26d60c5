"""The run directory, read and written (issue 29, items 4, 5, 7 and the low ones): an export
of a damaged run writes nothing; only files inside the run are read (a manifest's ``file``
that leads elsewhere is damage: ``--resume`` redoes the entry, an export refuses); a ``file``
that is not a string, a seed beyond 64 bits and a full disk (netCDF's opaque "HDF error"
included) are one line each; a planted ``.gpumem-report`` removes none of the user's files.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr
from gpumem.plugin.registry import reset_plugins
from gpumem.results.store import MANIFEST, sha256_file
from helpers import GPUMEM_ENV

H200_RUN = Path(__file__).parent / "data" / "h200-run"
TOY = ("--arch", "toyarch", "--device", "sim")


# ---- helpers ---------------------------------------------------------------------------------


def manifest(run: Path) -> dict:
    return json.loads((run / MANIFEST).read_text())


def entry_of(run: Path, experiment: str) -> tuple[str, dict]:
    return next((k, e) for k, e in manifest(run)["entries"].items()
                if e.get("experiment", k.split("/")[1]) == experiment)


def set_entry(run: Path, experiment: str, **fields) -> None:
    data = manifest(run)
    key, _e = entry_of(run, experiment)
    data["entries"][key].update(fields)
    (run / MANIFEST).write_text(json.dumps(data))


def point_at(run: Path, experiment: str, target: Path, name: str) -> None:
    """Make ``experiment``'s entry name ``name`` as its file, with the checksum and size of
    ``target``: what a hostile or careless manifest edit looks like."""
    set_entry(run, experiment, file=name, sha256=sha256_file(target),
              size=target.stat().st_size)


def one_error_line(res) -> str:
    assert "Traceback" not in res.err, res.err
    lines = [ln for ln in res.err.strip().splitlines() if ln]
    assert len(lines) == 1, res.err
    return lines[0]


def temporaries(run: Path) -> list[Path]:
    return sorted(run.rglob(".*.tmp"))


@pytest.fixture
def toy(with_site, monkeypatch):
    """The sample plugin's ``toyarch`` (fast experiments), in this process."""
    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "broken,dup")


@pytest.fixture
def h200(tmp_path) -> Path:
    """A copy of the measured H200 run (every experiment of hopper)."""
    dst = tmp_path / "h200"
    shutil.copytree(H200_RUN, dst)
    return dst


# ---- item 4: an export of a damaged run ------------------------------------------------------


@pytest.mark.parametrize("fmt", ["sim", "accelsim"])
def test_export_of_a_damaged_run_writes_nothing_and_names_the_file(cli, tmp_path, h200, fmt):
    """Before: exit 0, silence, and the packaged values where the truncated latency file's
    findings belong."""
    lat = next(h200.glob("*/latency-*.nc"))
    lat.write_bytes(lat.read_bytes()[:5000])
    out = tmp_path / "out"
    res = cli("export", fmt, str(h200), "--out", str(out))
    assert res.code == 1, res.err
    assert "Traceback" not in res.err
    damaged = [ln for ln in res.err.splitlines() if ln.startswith("gpumem: damaged:")]
    assert len(damaged) == 1 and f"{lat}: checksum:" in damaged[0], res.err
    assert "nothing exported" in res.err.splitlines()[-1], res.err
    assert not out.exists()


def test_export_names_every_damaged_entry(cli, tmp_path, h200):
    for exp in ("latency", "cache_structure"):
        f = next(h200.glob(f"*/{exp}-*.nc"))
        f.write_bytes(f.read_bytes()[:-10])
    res = cli("export", "sim", str(h200), "--out", str(tmp_path / "out"))
    assert res.code == 1
    damaged = [ln for ln in res.err.splitlines() if ln.startswith("gpumem: damaged:")]
    assert len(damaged) == 2 and "latency-" in res.err and "cache_structure-" in res.err
    assert not (tmp_path / "out").exists()


# ---- item 5: a manifest's file outside the run -----------------------------------------------


@pytest.mark.parametrize("how", ["absolute", "dotdot", "passwd"])
def test_export_refuses_a_manifest_file_outside_the_run(cli, tmp_path, h200, how):
    """Before: an absolute path to another run's file was exported as this run's; a
    ``../victims/passwd`` was opened and the packaged values filled in."""
    other = tmp_path / "other"
    shutil.copytree(H200_RUN, other)
    lat = next(other.glob("*/latency-*.nc"))
    victims = tmp_path / "victims"
    victims.mkdir()
    (victims / "passwd").write_text("root:x:0:0\n")
    target, name = {"absolute": (lat, str(lat)),
                    "dotdot": (lat, os.path.relpath(lat, h200)),
                    "passwd": (victims / "passwd", "../victims/passwd")}[how]
    point_at(h200, "latency", target, name)
    (next(h200.glob("*/latency-*.nc"))).unlink()  # only the foreign file is left to read
    out = tmp_path / "out"
    res = cli("export", "sim", str(h200), "--out", str(out))
    assert res.code == 1, res.err
    assert "Traceback" not in res.err
    assert "outside: " in res.err and "nothing exported" in res.err, res.err
    assert not out.exists()


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink", "passwd"])
def test_resume_redoes_an_entry_whose_file_is_outside_the_run(cli, tmp_path, toy, how):
    """Before: ``--resume`` kept another run's result (same checksum as the manifest says)
    as this run's, and printed its findings; a ``passwd`` with a matching checksum failed
    the run."""
    run, other = tmp_path / "run", tmp_path / "other"
    assert cli("run", *TOY, "toy-chase", "--out", str(run)).code == 0
    assert cli("run", *TOY, "toy-chase", "--seed", "7", "--out", str(other)).code == 0
    foreign = next(other.glob("*/toy-chase-*.nc"))
    own = next(run.glob("*/toy-chase-*.nc"))
    passwd = tmp_path / "victims" / "passwd"
    passwd.parent.mkdir()
    passwd.write_text("root:x:0:0\n")
    if how == "symlink":
        own.unlink()
        own.symlink_to(foreign)
        point_at(run, "toy-chase", foreign, str(own.relative_to(run)))
    else:
        target, name = {"absolute": (foreign, str(foreign)),
                        "dotdot": (foreign, os.path.relpath(foreign, run)),
                        "passwd": (passwd, "../victims/passwd")}[how]
        point_at(run, "toy-chase", target, name)
        own.unlink()
    before = foreign.read_bytes()
    res = cli("run", *TOY, "toy-chase", "--resume", "--out", str(run))
    assert "Traceback" not in res.err
    assert foreign.read_bytes() == before and passwd.read_text() == "root:x:0:0\n"
    _key, e = entry_of(run, "toy-chase")
    if how == "symlink":  # redone, and the link is refused, as any link below --out
        assert res.code == 2 and "is a symlink; refusing" in one_error_line(res)
        assert e["status"] == "failed" and own.is_symlink()
        return
    assert res.code == 0, res.err
    assert "no complete experiment to keep" in res.out, res.out  # redone, not kept
    assert e["status"] == "complete" and e["file"] == str(own.relative_to(run))
    assert own.is_file() and not own.is_symlink() and sha256_file(own) == e["sha256"]
    res = cli("show", str(run))
    assert res.code == 0, res.err


def test_show_reads_no_results_file_through_a_link_out_of_the_run(cli, tmp_path, toy):
    """A device folder planted as a symlink to another run: before, ``show`` described that
    run's files as this run's."""
    run, other = tmp_path / "run", tmp_path / "other"
    assert cli("run", *TOY, "toy-chase", "--out", str(run)).code == 0
    assert cli("run", *TOY, "toy-slow", "--out", str(other)).code == 0
    device = next(p for p in other.iterdir() if p.is_dir())
    (run / "planted").symlink_to(device, target_is_directory=True)
    res = cli("show", str(run), "--json")
    assert res.code == 0, res.err
    files = [f["path"] for f in json.loads(res.out)["files"]]
    assert len(files) == 1 and "/toy-chase-" in files[0], files


# ---- low: a manifest file that is a number ---------------------------------------------------


@pytest.mark.parametrize("value", [42, ["a.nc"], "dev/a\u0000.nc"])
def test_a_manifest_file_that_is_not_a_name_is_one_line_everywhere(cli, tmp_path, toy, value):
    """Before: a TypeError traceback in compare and export; resume failed the experiment with
    the TypeError."""
    run = tmp_path / "run"
    assert cli("run", *TOY, "toy-chase", "--out", str(run)).code == 0
    set_entry(run, "toy-chase", file=value)
    text = (run / MANIFEST).read_text()
    for args in (["show", str(run)], ["compare", str(run)],
                 ["report", str(run), "--out", str(tmp_path / "rep")],
                 ["export", "sim", str(run), "--out", str(tmp_path / "exp")],
                 ["run", *TOY, "toy-chase", "--resume", "--out", str(run)]):
        res = cli(*args)
        assert res.code == 1, (args, res.err)
        line = one_error_line(res)
        assert str(run / MANIFEST) in line and "'file'" in line, (args, line)
    assert (run / MANIFEST).read_text() == text  # nothing rewrote it
    assert not (tmp_path / "rep").exists() and not (tmp_path / "exp").exists()


# ---- low: a seed beyond 64 bits --------------------------------------------------------------


@pytest.mark.parametrize("seed", [str(2**64), str(-(2**63) - 1), "9" * 40])
def test_a_seed_beyond_64_bits_is_refused_up_front(cli, tmp_path, toy, seed):
    """Before: accepted, measured, then every experiment failed writing its file."""
    out = tmp_path / "run"
    res = cli("run", *TOY, "toy-chase", "--seed", seed, "--out", str(out))
    assert res.code == 2, res.err
    line = one_error_line(res)
    assert "--seed" in line and "64" in line, line
    assert not out.exists()


@pytest.mark.parametrize("seed", [str(2**64 - 1), str(-(2**63))])
def test_a_seed_at_the_64_bit_limits_runs(cli, tmp_path, toy, seed):
    out = tmp_path / "run"
    res = cli("run", *TOY, "toy-chase", "--seed", seed, "--out", str(out))
    assert res.code == 0, res.err


# ---- item 7: a full disk while netCDF writes -------------------------------------------------


def test_netcdf_hdf_error_on_a_full_disk_names_file_experiment_and_enospc(
        cli, tmp_path, toy, monkeypatch):
    """netCDF does not raise OSError when the disk fills: it raises ``RuntimeError: NetCDF:
    HDF error`` (seen on a 2 MB tmpfs), and it leaves its file open. Before: the message was
    that RuntimeError, the run went on and the next experiment's manifest update failed
    under its name, and the entry stayed ``running``."""
    from gpumem.results import store

    out = tmp_path / "run"
    assert cli("run", *TOY, "toy-chase", "--out", str(out)).code == 0
    chase = entry_of(out, "toy-chase")[1]
    before = (out / chase["file"]).read_bytes()

    def full(self, path, *a, **k):
        Path(path).write_bytes(b"\x89HDF partial")
        raise RuntimeError("NetCDF: HDF error")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", full)
    monkeypatch.setattr(store, "free_bytes", lambda folder: 0, raising=False)  # full
    res = cli("run", *TOY, "toy-slow", "toy-badanalysis", "--out", str(out))
    assert res.code == 1, res.err
    line = one_error_line(res)
    assert f"{out / Path(chase['file']).parent}/toy-slow-" in line, line
    assert "No space left on device (ENOSPC)" in line and "toy-slow failed" in line, line
    assert "toy-badanalysis" not in line
    _k, e = entry_of(out, "toy-slow")
    assert e["status"] == "failed" and "ENOSPC" in e["error"], e
    assert "toy-badanalysis" not in {v.get("experiment") for v in
                                     manifest(out)["entries"].values()}
    assert entry_of(out, "toy-chase")[1] == chase and (out / chase["file"]).read_bytes() == before
    assert temporaries(out) == [] and not list(out.glob("*/toy-slow-*.nc"))


def test_netcdf_error_with_space_left_is_still_a_write_failure_naming_the_file(
        cli, tmp_path, toy, monkeypatch):
    """An HDF error that is not a full disk (an I/O error) stops the run the same way, and
    says what netCDF said."""
    from gpumem.results import store

    out = tmp_path / "run"

    def broken(self, path, *a, **k):
        Path(path).write_bytes(b"\x89HDF partial")
        raise RuntimeError("NetCDF: HDF error")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", broken)
    monkeypatch.setattr(store, "free_bytes", lambda folder: 1 << 40, raising=False)
    res = cli("run", *TOY, "toy-chase", "toy-slow", "--out", str(out))
    assert res.code == 1, res.err
    line = one_error_line(res)
    assert "/toy-chase-" in line and "NetCDF: HDF error" in line and "toy-chase failed" in line
    assert entry_of(out, "toy-chase")[1]["status"] == "failed"
    assert temporaries(out) == []


def _limit_file_size(limit: int):
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def test_a_real_netcdf_write_past_the_file_size_limit_fails_the_entry_with_one_line(
        tmp_path, plugin_site):
    """A real write that the OS refuses partway (RLIMIT_FSIZE: EFBIG, as a full disk refuses
    with ENOSPC): netCDF raises its opaque RuntimeError and keeps the file open. The entry
    must end ``failed``, the line must name the file and the cause, no temp file is left."""
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    env.update(PYTHONPATH=os.pathsep.join([str(plugin_site), env.get("PYTHONPATH", "")]),
               GPUMEM_DISABLE_PLUGINS="broken,dup", XDG_CACHE_HOME=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    proc = subprocess.run(
        [sys.executable, "-m", "gpumem", "run", *TOY, "toy-slow", "toy-chase", "--out",
         str(out)], capture_output=True, text=True, env=env, timeout=300,
        preexec_fn=_limit_file_size(12_000))
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "/toy-slow-" in lines[0] and "EFBIG" in lines[0] and "12000" in lines[0], lines
    assert "toy-slow failed" in lines[0], lines
    _k, e = entry_of(out, "toy-slow")
    assert e["status"] == "failed" and "EFBIG" in e["error"], e
    assert "toy-chase" not in {v.get("experiment") for v in manifest(out)["entries"].values()}
    assert temporaries(out) == [] and not list(out.glob("*/*.nc"))


# ---- low: report on a full disk; a planted report list ---------------------------------------


@pytest.fixture(scope="module")
def kepler_run(tmp_path_factory) -> Path:
    from gpumem.cli import main

    out = tmp_path_factory.mktemp("runs") / "kepler"
    reset_plugins()
    assert main(["run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
                 "--out", str(out)]) == 0
    reset_plugins()
    return out


@pytest.mark.parametrize("where", ["figure", "page", "list"])
def test_report_on_a_full_disk_is_one_line_and_keeps_the_previous_report(
        cli, tmp_path, kepler_run, monkeypatch, where):
    """Before: an OSError traceback (figure, page), or exit 2 as if the user had named a bad
    path (the list)."""
    rep = tmp_path / "rep"
    assert cli("report", str(kepler_run), "--out", str(rep)).code == 0
    before = {p.name: p.read_bytes() for p in rep.iterdir()}

    def enospc(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "figure":
        from matplotlib.figure import Figure

        def savefig(self, fname, *a, **k):
            Path(fname).write_bytes(b"partial")
            enospc()
        monkeypatch.setattr(Figure, "savefig", savefig)
        name = ".png"
    elif where == "page":
        real = Path.write_text

        def write_text(self, *a, **k):
            if self.name == "index.html":
                enospc()
            return real(self, *a, **k)
        monkeypatch.setattr(Path, "write_text", write_text)
        name = "index.html"
    else:
        import gpumem.safe_write as sw

        real_fsync = os.fsync

        def fsync(fd):
            if ".gpumem-report." in os.readlink(f"/proc/self/fd/{fd}").split("/")[-1]:
                enospc()
            return real_fsync(fd)
        monkeypatch.setattr(sw.os, "fsync", fsync)
        name = ".gpumem-report"
    res = cli("report", str(kepler_run), "--out", str(rep))
    assert res.code == 1, res.err
    line = one_error_line(res)
    assert "No space left on device (ENOSPC)" in line and str(rep) in line, line
    assert name in line, line
    assert not [p for p in rep.iterdir() if p.name.endswith(".tmp")]
    if where != "list":  # the list goes last: the new page and figures are in place then
        assert {p.name: p.read_bytes() for p in rep.iterdir()} == before


def test_a_planted_report_list_removes_none_of_the_users_files(cli, tmp_path, kepler_run):
    """Before: every file the planted ``.gpumem-report`` named (and the report did not
    write) was deleted."""
    rep = tmp_path / "rep"
    rep.mkdir()
    mine = {"thesis.tex": "chapter 1\n", "photo.png": "png", "plot.svg": "<svg/>",
            "index.html.bak": "old"}
    for name, text in mine.items():
        (rep / name).write_text(text)
    (rep / ".gpumem-report").write_text(
        "# files written by gpumem report (replaced by the next)\n" + "".join(
            f"{n}\n" for n in mine))
    res = cli("report", str(kepler_run), "--out", str(rep))
    assert res.code == 0, res.err
    for name, text in mine.items():
        assert (rep / name).read_text() == text, name


def test_a_rerun_removes_its_own_stale_figure_but_not_one_the_user_changed(cli, tmp_path,
                                                                        kepler_run):
    """What the list is for: a figure the previous report wrote and this one does not is
    removed, if it is still what that report wrote (its recorded SHA-256)."""
    from gpumem.report import listing, write_listing

    rep = tmp_path / "rep"
    assert cli("report", str(kepler_run), "--out", str(rep)).code == 0
    files = listing(rep)
    assert files["index.html"] == sha256_file(rep / "index.html")
    fig = next(n for n in files if n.endswith(".png"))
    for name in ("stale.png", "edited.png"):
        shutil.copy(rep / fig, rep / name)
        files[name] = sha256_file(rep / name)
    write_listing(rep, files)
    (rep / "edited.png").write_bytes(b"the user's own figure now")
    assert cli("report", str(kepler_run), "--out", str(rep)).code == 0
    assert not (rep / "stale.png").exists()
    assert (rep / "edited.png").read_bytes() == b"the user's own figure now"
    assert "stale.png" not in listing(rep) and "edited.png" not in listing(rep)
