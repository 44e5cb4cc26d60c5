"""Writers write only what they own (issue 15): ``gpumem report`` never deletes files it did
not write, planted symlinks are replaced rather than written through (report, ``export
accelsim``, ``import accelsim``), and bad ``--out`` or input files are one line, not a
traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gpumem.cli import main
from gpumem.plugin.registry import reset_plugins
from gpumem.results.store import sha256_file
from gpumem.safe_write import OutputError, write_text

H200_RUN = Path(__file__).parent / "data" / "h200-run"
H100_CFG = Path(__file__).parent / "data" / "accelsim" / "SM90_H100"


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "kepler-sim"
    reset_plugins()
    assert main(["run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
                 "--out", str(out)]) == 0
    return out


def _one_line(res) -> bool:
    return res.err.count("\n") == 1 and res.err.startswith("gpumem: error:")


def _outside(tmp_path: Path, name: str = "victim.txt") -> Path:
    victim = tmp_path / "elsewhere" / name
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("precious\n")
    return victim


def _tree(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): (p.read_text() if p.is_file() else "<dir>")
            for p in sorted(d.rglob("*"))}


# ---- gpumem report --------------------------------------------------------------------------


def test_report_into_a_folder_with_someone_elses_index_html_deletes_nothing(cli, tmp_path,
                                                                           sim_run):
    """mkdir -p site/sub; echo x>site/index.html; echo y>site/thesis.tex; report --out site."""
    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    (site / "index.html").write_text("x\n")
    (site / "thesis.tex").write_text("y\n")
    before = _tree(site)
    res = cli("report", str(sim_run), "--out", str(site))
    assert res.code == 2 and _one_line(res) and "holds no gpumem report" in res.err
    assert _tree(site) == before                       # thesis.tex, sub/ and index.html intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]   # no scratch left beside


def test_report_rerun_replaces_only_its_own_files(cli, tmp_path, sim_run):
    rep = tmp_path / "rep"
    assert cli("report", str(sim_run), "--out", str(rep)).code == 0
    own = set((rep / ".gpumem-report").read_text().splitlines()[1:])
    assert "index.html" in own and any(n.endswith(".png") for n in own)
    (rep / "notes.txt").write_text("mine")
    (rep / "drafts").mkdir()
    (rep / "drafts" / "a.tex").write_text("draft")
    from gpumem.report import listing, write_listing

    files = listing(rep)
    (rep / "old_figure.png").write_bytes(b"stale")     # a file an earlier report wrote,
    files["old_figure.png"] = sha256_file(rep / "old_figure.png")  # its checksum recorded
    victim = _outside(tmp_path)
    files.update({"../elsewhere/victim.txt": None, "drafts": None})  # ... and tampered lines
    write_listing(rep, files)
    res = cli("report", str(sim_run), "--out", str(rep))
    assert res.code == 0, res.err
    assert "gpumem report" in (rep / "index.html").read_text()
    assert not (rep / "old_figure.png").exists()       # its own stale file goes
    assert (rep / "notes.txt").read_text() == "mine"   # nothing else does
    assert (rep / "drafts" / "a.tex").read_text() == "draft"
    assert victim.read_text() == "precious\n"
    assert not [p for p in rep.iterdir() if p.name.endswith(".tmp")]


def test_report_replaces_symlinked_outputs_instead_of_following_them(cli, tmp_path, sim_run):
    rep = tmp_path / "rep"
    assert cli("report", str(sim_run), "--out", str(rep)).code == 0
    (rep / "notes.txt").write_text("mine")
    victims = {}
    for name in (rep / ".gpumem-report").read_text().splitlines()[1:]:  # page and figures
        victims[name] = _outside(tmp_path, f"victim-{name}")
        (rep / name).unlink()
        (rep / name).symlink_to(victims[name])
    res = cli("report", str(sim_run), "--out", str(rep))
    assert res.code == 0, res.err
    # the manifest itself as a link: not trusted, but the page is gpumem's, so it is rewritten
    victims[".gpumem-report"] = _outside(tmp_path, "victim-manifest")
    (rep / ".gpumem-report").unlink()
    (rep / ".gpumem-report").symlink_to(victims[".gpumem-report"])
    res = cli("report", str(sim_run), "--out", str(rep))
    assert res.code == 0, res.err
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n", name
        assert not (rep / name).is_symlink() and (rep / name).is_file(), name
    assert (rep / "notes.txt").read_text() == "mine"


def test_report_overwrites_an_older_gpumem_page_in_place_keeping_other_files(cli, tmp_path,
                                                                             sim_run):
    """A report from before the manifest: recognised by its generator tag, written over;
    files beside it are not the report's to delete."""
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "index.html").write_text('<html><head><meta name="generator" content="gpumem 0.0.9">')
    (rep / "readme.md").write_text("keep")
    res = cli("report", str(sim_run), "--out", str(rep))
    assert res.code == 0, res.err
    assert "latency" in (rep / "index.html").read_text()
    assert (rep / "readme.md").read_text() == "keep"


def test_report_out_that_is_a_file_or_a_dangling_link_is_one_line(cli, tmp_path, sim_run):
    f = tmp_path / "file"
    f.write_text("data")
    res = cli("report", str(sim_run), "--out", str(f))
    assert res.code == 2 and _one_line(res) and f.read_text() == "data"
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    res = cli("report", str(sim_run), "--out", str(link))
    assert res.code == 2 and _one_line(res) and not (tmp_path / "nowhere").exists()


# ---- gpumem export / import accelsim ----------------------------------------------------------


def test_export_replaces_planted_symlinks_instead_of_following_them(cli, tmp_path):
    out = tmp_path / "cfg"
    out.mkdir()
    victims = {}
    for name in ("gpgpusim.config", "trace.config"):
        victims[name] = _outside(tmp_path, f"victim-{name}")
        (out / name).symlink_to(victims[name])
    res = cli("export", "accelsim", str(H200_RUN), "--out", str(out))
    assert res.code == 0, res.err
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n", name
        assert not (out / name).is_symlink(), name
    assert (out / "gpgpusim.config").read_text().startswith("# Accel-Sim config written by")
    assert sorted(p.name for p in out.iterdir()) == ["gpgpusim.config", "trace.config"]


def test_import_replaces_a_symlinked_out_instead_of_following_it(cli, tmp_path):
    victim = _outside(tmp_path)
    link = tmp_path / "link.toml"
    link.symlink_to(victim)
    res = cli("import", "accelsim", str(H100_CFG), "--out", str(link), "--arch", "hopper")
    assert res.code == 0, res.err
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and "sm_count = 132" in link.read_text()


def test_export_out_that_is_a_file_is_a_one_line_usage_error(cli, tmp_path):
    f = tmp_path / "file"
    f.write_text("data")
    for out in (f, f / "sub"):
        res = cli("export", "accelsim", str(H200_RUN), "--out", str(out))
        assert res.code == 2 and _one_line(res) and "--out" in res.err, res.err
    assert f.read_text() == "data"


@pytest.mark.parametrize("text, needle", [
    ("", "no options"),
    ("# only a comment\n", "no options"),
    ("-gpgpu_n_clusters 4\n", "option -gpgpu_cache:dl1 is not set"),
])
def test_import_of_an_empty_or_partial_file_names_the_file_and_option(cli, tmp_path, text,
                                                                      needle):
    """A bad input file: exit 1 like the other unreadable configs (FormatError), one line."""
    src = tmp_path / "gpgpusim.config"
    src.write_text(text)
    out = tmp_path / "x.toml"
    res = cli("import", "accelsim", str(src), "--out", str(out))
    assert res.code == 1 and _one_line(res), res.err
    assert needle in res.err and str(src) in res.err
    assert not out.exists()


# ---- the shared helper ------------------------------------------------------------------------


def test_safe_write_replaces_a_link_and_refuses_a_directory(tmp_path):
    victim = _outside(tmp_path)
    link = tmp_path / "out.txt"
    link.symlink_to(victim)
    write_text(link, "new\n")
    assert victim.read_text() == "precious\n" and link.read_text() == "new\n"
    assert not link.is_symlink()
    umask = os.umask(0)
    os.umask(umask)
    assert link.stat().st_mode & 0o777 == 0o666 & ~umask       # the usual mode, not 0600
    (tmp_path / "adir").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        write_text(tmp_path / "adir", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "elsewhere", "out.txt"]


def test_config_writers_replace_a_symlink_instead_of_following_it(tmp_path):
    """SimConfig.save and an Accel-Sim OptionFile.save: the link is replaced, its target kept."""
    from gpumem.plugin.registry import get_plugins
    from gpumem_accelsim.options import OptionFile

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    cfg = get_plugins().hook.gpumem_simulator_config(arch="kepler", simulator="sim")
    for i, save in enumerate((cfg.save, OptionFile.parse("-gpgpu_n_clusters 15\n").save)):
        link = tmp_path / f"out{i}"
        link.symlink_to(target)
        save(link)
        assert target.read_text() == "keep me" and not link.is_symlink() and link.stat().st_size
