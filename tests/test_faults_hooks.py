"""Plugins that misbehave after loading (issue 29, items 2, 3, 6 and two low ones).

A plugin's hook called after loading is bounded in time like its import; a thread a plugin
leaves running never keeps the command from exiting; a plugin's bad answer (expected values,
a registration, a simulator config) is dropped with one warning naming the plugin; a plugin
raising KeyboardInterrupt at import is a broken plugin, while the user's Ctrl-C still
interrupts; a simulator config of another architecture is refused under ``--arch``.

The plugins are modules written to ``tmp_path`` and loaded through real entry points, in
process where a real exit does not matter (fast), in a child process where it does.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.errors import GpumemError, PluginError
from gpumem.plugin import registry as plugins_mod
from gpumem.plugin.registry import load_plugins
from helpers import GPUMEM_ENV

ROOT = Path(__file__).resolve().parents[1]
HOPPER_TOML = ROOT / "plugins" / "hopper" / "src" / "gpumem_hopper" / "sim.toml"
HEAD = "import threading, time, types\nfrom gpumem import hookimpl\n"
_SERIAL = itertools.count()
TIMEOUT = "0.5"  # GPUMEM_PLUGIN_TIMEOUT in these tests: a hang costs half a second


def _plugin(tmp_path: Path, monkeypatch, name: str, body: str) -> EntryPoint:
    """An entry point ``name`` for a module of ``body`` written under ``tmp_path``."""
    module = f"faults_hooks_{name}_{next(_SERIAL)}"  # a fresh module: none is reused
    (tmp_path / f"{module}.py").write_text(HEAD + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return EntryPoint(name, module, "gpumem")


def _installed(*names: str) -> list[EntryPoint]:
    """The real entry points of gpumem's own plugins ``names`` (kepler, hopper...)."""
    return [ep for ep in plugins_mod.entry_points() if ep.name in names]


def _discover(monkeypatch, *extra: EntryPoint) -> None:
    """Make the CLI find the installed plugins and ``extra``."""
    real = plugins_mod.entry_points
    found = real()
    monkeypatch.setattr(plugins_mod, "entry_points", lambda: [*found, *extra])


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def _kepler_info() -> DeviceInfo:
    return DeviceInfo(kind="sim", name="gtx780", compute_capability="3.5", sm_count=12,
                      l2_bytes=1536 * 1024, memory_bytes=3 << 30, clock_mhz=863.0)


# ---------------------------------------------------------------------------------------------
# Item 2: hooks called after loading are bounded by GPUMEM_PLUGIN_TIMEOUT
# ---------------------------------------------------------------------------------------------

HANG_CONFIG = ("@hookimpl\ndef gpumem_simulator_config(arch, simulator):\n"
               "    time.sleep(20)\n")
HANG_KERNEL = ("@hookimpl\ndef gpumem_kernel_source(arch, probe):\n    time.sleep(20)\n")


def test_a_sim_config_hook_that_hangs_does_not_hang_a_run(cli, tmp_path, monkeypatch):
    """A plugin that contributes no architecture hangs in gpumem_simulator_config: a kepler
    run on the simulator goes on after the time limit, the plugin named in one warning."""
    _discover(monkeypatch, _plugin(tmp_path, monkeypatch, "zhang", HANG_CONFIG))
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", TIMEOUT)
    t0 = time.monotonic()
    res = cli("run", "--arch", "kepler", "smem_latency", "--device", "sim", "--quick",
              "--out", str(tmp_path / "run"))
    assert time.monotonic() - t0 < 10, "the run waited for the hung hook"
    assert res.code == 0, res.err
    warned = [line for line in _lines(res.err) if "zhang" in line]
    assert len(warned) == 1 and "Traceback" not in res.err, res.err
    assert f"within {TIMEOUT} s" in warned[0] and "gpumem_simulator_config" in warned[0]


def test_no_plugin_answering_in_time_is_one_error_naming_it(tmp_path, monkeypatch):
    from gpumem.run.resolve import simulator_config

    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", TIMEOUT)
    plugins = load_plugins(eps=[_plugin(tmp_path, monkeypatch, "zhang", HANG_CONFIG)],
                           warn=lambda _m: None)
    t0 = time.monotonic()
    with pytest.raises(GpumemError) as err:
        simulator_config(plugins, "kepler", plugins.simulators()["sim"], None)
    assert time.monotonic() - t0 < 5
    msg = str(err.value)
    assert "\n" not in msg and "plugin 'zhang'" in msg and f"within {TIMEOUT} s" in msg, msg


def test_a_kernel_source_hook_that_hangs_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", TIMEOUT)
    warnings: list[str] = []
    plugins = load_plugins(eps=[*_installed("kepler"),
                                _plugin(tmp_path, monkeypatch, "zhang", HANG_KERNEL)],
                           warn=warnings.append)
    t0 = time.monotonic()
    src = plugins.kernel_lookup("kepler")("pointer_chase")
    assert time.monotonic() - t0 < 5
    assert "pointer_chase_tex" in src.code  # kepler's own kernel: the next plugin answered
    assert len(warnings) == 1 and "plugin 'zhang'" in warnings[0], warnings
    with pytest.raises(PluginError, match=f"plugin 'zhang' did not answer "
                                          f"gpumem_kernel_source within {TIMEOUT} s"):
        plugins.kernel_lookup("kepler")("no-such-probe")  # nobody else answers


def test_bounded_hook_calls_stay_cheap(monkeypatch):
    """Hooks asked per probe (kernel_source) pay one hand-off to a reused worker thread per
    plugin, not a thread each: well under a millisecond (the overhead is in the report)."""
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", "5")
    plugins = load_plugins(eps=_installed("kepler", "hopper", "maxwell"), warn=lambda _m: None)
    lookup = plugins.kernel_lookup("nobody")
    lookup("pointer_chase")
    started = threading.active_count()
    n = 300
    t0 = time.perf_counter()
    for _ in range(n):
        assert lookup("pointer_chase") is None
    per_call = (time.perf_counter() - t0) / n
    assert per_call < 2e-3, f"{per_call * 1e6:.0f} us per bounded first_result"
    assert threading.active_count() == started  # the worker is reused, no thread per call


def test_a_hook_calling_another_hook_does_not_deadlock(tmp_path, monkeypatch):
    """A hook that asks the plugins itself (on the worker) is not queued behind itself."""
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", "3")
    ep = _plugin(tmp_path, monkeypatch, "nested",
                 "@hookimpl\ndef gpumem_simulator_config(arch, simulator):\n"
                 "    from gpumem.plugin.registry import get_plugins\n"
                 "    if arch != 'nested':\n        return None\n"
                 "    return get_plugins().first_result('gpumem_simulator_config',\n"
                 "                                      arch='kepler', simulator=simulator)\n")
    plugins = load_plugins(eps=[*_installed("kepler"), ep], warn=lambda _m: None)
    monkeypatch.setattr(plugins_mod, "_cached", plugins)
    t0 = time.monotonic()
    cfg = plugins.first_result("gpumem_simulator_config", arch="nested", simulator="sim")
    assert time.monotonic() - t0 < 2
    assert cfg.arch == "kepler"


# ---------------------------------------------------------------------------------------------
# Item 3: a thread a plugin leaves running never keeps the process from exiting
# ---------------------------------------------------------------------------------------------

def test_a_thread_started_at_import_is_attributed_to_its_plugin(tmp_path, monkeypatch):
    ep = _plugin(tmp_path, monkeypatch, "spinner",
                 "STOP = threading.Event()\n"
                 "threading.Thread(target=STOP.wait, name='spin', daemon=False).start()\n")
    plugins = load_plugins(eps=[ep], warn=lambda _m: None)
    module = sys.modules[ep.value]
    try:
        left = plugins_mod.lingering_threads()
        assert [(t.name, owner) for t, owner in left] == [("spin", "spinner")]
        assert plugins is not None
    finally:
        module.STOP.set()
    for t, _owner in left:
        t.join(5)
    assert plugins_mod.lingering_threads() == []


def test_cli_main_in_process_returns_with_a_thread_left(cli, tmp_path, monkeypatch):
    """main(argv) (tests, embedding) returns its code; only the console entry exits hard."""
    ep = _plugin(tmp_path, monkeypatch, "spinner2",
                 "STOP = threading.Event()\n"
                 "threading.Thread(target=STOP.wait, name='spin2', daemon=False).start()\n")
    _discover(monkeypatch, ep)
    try:
        res = cli("list-plugins", "--json")
        assert res.code == 0, res.err
    finally:
        sys.modules[ep.value].STOP.set()


def _site(tmp_path: Path) -> Path:
    """An installed distribution whose plugin starts a non-daemon thread at import, and
    another whose gpumem_simulator_config hook starts one."""
    site = tmp_path / "site"
    for dist, module, body in (
            ("spinner", "gpumem_spinner",
             "import threading\nthreading.Thread(target=threading.Event().wait, "
             "name='spin-forever', daemon=False).start()\n"),
            ("hookspinner", "gpumem_hookspinner",
             "import threading\nfrom gpumem import hookimpl\n\n"
             "@hookimpl\ndef gpumem_simulator_config(arch, simulator):\n"
             "    threading.Thread(target=threading.Event().wait, name='hook-spin',\n"
             "                     daemon=False).start()\n")):
        info = site / f"gpumem_{dist}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gpumem-{dist}\n"
                                       f"Version: 0.1\n")
        (info / "entry_points.txt").write_text(f"[gpumem]\n{dist} = {module}\n")
        (site / f"{module}.py").write_text(body)
    return site


def test_commands_exit_with_their_code_although_a_plugin_left_a_thread(tmp_path):
    """A real ``python -m gpumem``: list-plugins (0), a quick simulated run (0) and a usage
    error (2) each exit when done, with one warning naming the plugin(s) whose thread is
    still running; before, each waited for the thread forever. A thread no plugin started
    (here: the embedding script's) is given the grace period, then not waited for either."""
    site = _site(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    gpumem = [sys.executable, "-m", "gpumem"]
    commands = {
        "list-plugins": ([*gpumem, "list-plugins", "--json"], 0, "plugin 'spinner'"),
        "run": ([*gpumem, "run", "--arch", "kepler", "smem_latency", "--device", "sim",
                 "--quick", "--out", str(tmp_path / "run")], 0, "plugin 'hookspinner'"),
        "usage": ([*gpumem, "run", "--arch", "no-such-arch", "--device", "sim"], 2,
                  "plugin 'spinner'"),
        "foreign": ([sys.executable, "-c",
                     "import sys, threading\nfrom gpumem.cli import main\n"
                     "threading.Thread(target=threading.Event().wait, name='mine',\n"
                     "                 daemon=False).start()\n"
                     "sys.argv = ['gpumem', '--version']\nmain()\n"],
                    0, "'mine' (started outside any plugin call gpumem made)"),
    }
    procs = {k: subprocess.Popen(argv, env={**env, "GPUMEM_DISABLE_PLUGINS": "spinner,"
                                            "hookspinner"} if k == "foreign" else env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
             for k, (argv, _code, _named) in commands.items()}
    results = {}
    deadline = time.monotonic() + 90
    for k, p in procs.items():
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs.values():
                if q.poll() is None:
                    os.killpg(q.pid, signal.SIGKILL)
                    q.communicate()
            pytest.fail(f"gpumem {k} did not exit (a thread kept it alive)")
        results[k] = (p.returncode, out, err)
    for k, (code, _out, err) in results.items():
        assert code == commands[k][1], (k, err)
        assert "Traceback" not in err, (k, err)
        warned = [line for line in _lines(err) if "still running" in line]
        assert len(warned) == 1 and commands[k][2] in warned[0], (k, err)
    assert "plugin 'spinner'" in results["run"][2]  # both plugins' threads, in one line
    assert any(r["name"] == "spinner" for r in json.loads(results["list-plugins"][1]))
    assert results["foreign"][1].startswith("gpumem ")  # --version was printed
    assert (tmp_path / "run" / "manifest.json").is_file()


# ---------------------------------------------------------------------------------------------
# Item 6: a plugin's bad answer is dropped with one warning naming it
# ---------------------------------------------------------------------------------------------

GARBAGE_EXPECTED = {
    "a string": "'lat.l1'",
    "strings": "['lat.l1', 'lat.l2']",
    "objects": "[object(), types.SimpleNamespace(name='lat.l1', value=1)]",
    "a dict": "{'lat.l1': 30}",
    "a non-numeric value": "[Expected('lat.smem', object(), 'src')]",
    "a dict value": "[Expected('lat.smem', {'a': 1}, 'src')]",
    "a text tolerance": "[Expected('lat.smem', 47.0, 'src', rel_tol='5%')]",
    "no name": "[Expected('', 47.0, 'src')]",
}


def _garbage_expected(tmp_path, monkeypatch, answer: str) -> EntryPoint:
    return _plugin(tmp_path, monkeypatch, "zgarbage",
                   "from gpumem.api import Expected\n\n"
                   "@hookimpl\ndef gpumem_expected_values(arch, device):\n"
                   f"    return {answer}\n")


@pytest.mark.parametrize("case", list(GARBAGE_EXPECTED))
def test_garbage_expected_values_are_dropped_with_one_warning(tmp_path, monkeypatch, case):
    eps = [*_installed("kepler"), _garbage_expected(tmp_path, monkeypatch,
                                                    GARBAGE_EXPECTED[case])]
    plugins = load_plugins(eps=eps, warn=lambda _m: None)
    warnings: list[str] = []
    got = plugins.expected_values("kepler", _kepler_info(), warn=warnings.append)
    own = load_plugins(eps=_installed("kepler"), warn=lambda _m: None).expected_values(
        "kepler", _kepler_info())
    assert got == own  # kepler's own values, none of the garbage
    assert len(warnings) == 1 and "plugin 'zgarbage'" in warnings[0], warnings


def test_the_valid_values_of_a_partly_bad_answer_are_kept(tmp_path, monkeypatch):
    ep = _garbage_expected(tmp_path, monkeypatch,
                           "[Expected('lat.smem', 47.0, 'src'), 'junk', "
                           "Expected('lat.l1', object(), 'src')] if arch == 'x' else None")
    plugins = load_plugins(eps=[ep], warn=lambda _m: None)
    warnings: list[str] = []
    got = plugins.expected_values("x", None, warn=warnings.append)
    assert [e.name for e in got] == ["lat.smem"]
    assert len(warnings) == 1 and "2 of its 3" in warnings[0], warnings


@pytest.fixture(scope="module")
def kepler_run(tmp_path_factory) -> Path:
    from gpumem.cli import main

    out = tmp_path_factory.mktemp("kr") / "run"
    assert main(["run", "--arch", "kepler", "smem_latency", "--device", "sim", "--quick",
                 "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("case", ["strings", "a non-numeric value"])
def test_compare_expected_and_run_survive_garbage_expected_values(cli, tmp_path, monkeypatch,
                                                                   kepler_run, case):
    _discover(monkeypatch, _garbage_expected(tmp_path, monkeypatch, GARBAGE_EXPECTED[case]))
    res = cli("compare", str(kepler_run), "--expected", "--json")
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert len(_lines(res.err)) == 1 and "plugin 'zgarbage'" in res.err, res.err
    data = json.loads(res.out)
    assert data["runs"][0]["expected_values"] > 0  # kepler's values still judge the run
    res = cli("run", "--arch", "kepler", "smem_latency", "--device", "sim", "--quick",
              "--out", str(tmp_path / "again"))
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert len([line for line in _lines(res.err) if "zgarbage" in line]) == 1, res.err


REGISTER_HOOK = {"experiments": "gpumem_register_experiments",
                 "architectures": "gpumem_register_architectures",
                 "devices": "gpumem_register_devices",
                 "simulators": "gpumem_register_simulators",
                 "formats": "gpumem_register_formats"}


@pytest.mark.parametrize("kind", list(REGISTER_HOOK))
def test_a_garbage_registration_is_refused_naming_the_plugin(tmp_path, monkeypatch, kind):
    ep = _plugin(tmp_path, monkeypatch, "zjunk",
                 f"@hookimpl\ndef {REGISTER_HOOK[kind]}(register):\n"
                 f"    register(types.SimpleNamespace(name='x'))\n")
    warnings: list[str] = []
    plugins = load_plugins(eps=[ep], warn=warnings.append)
    rec = next(r for r in plugins.records if r.name == "zjunk")
    assert rec.status == "error" and "SimpleNamespace" in rec.error, rec.error
    assert "x" not in plugins.registry[kind]
    assert len(warnings) == 1 and "plugin 'zjunk'" in warnings[0], warnings


def test_run_goes_on_past_a_garbage_experiment(cli, tmp_path, monkeypatch):
    ep = _plugin(tmp_path, monkeypatch, "zjunk",
                 "@hookimpl\ndef gpumem_register_experiments(register):\n"
                 "    register(types.SimpleNamespace(name='x'))\n")
    _discover(monkeypatch, ep)
    res = cli("run", "--arch", "kepler", "smem_latency", "--device", "sim", "--quick",
              "--out", str(tmp_path / "run"))
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert len(_lines(res.err)) == 1 and "plugin 'zjunk'" in res.err, res.err


STRING_CONFIG = ("@hookimpl\ndef gpumem_simulator_config(arch, simulator):\n"
                 "    return 'not a config'\n")


def test_a_string_as_sim_config_is_dropped_and_the_next_plugin_answers(cli, tmp_path,
                                                                       monkeypatch):
    _discover(monkeypatch, _plugin(tmp_path, monkeypatch, "zstring", STRING_CONFIG))
    res = cli("run", "--arch", "kepler", "smem_latency", "--device", "sim", "--quick",
              "--out", str(tmp_path / "run"))
    assert res.code == 0 and "Traceback" not in res.err, res.err
    warned = [line for line in _lines(res.err) if "zstring" in line]
    assert len(warned) == 1 and "str" in warned[0], res.err


def test_a_string_as_the_only_sim_config_is_an_error_naming_the_plugin(tmp_path, monkeypatch):
    from gpumem.run.resolve import simulator_config

    plugins = load_plugins(eps=[_plugin(tmp_path, monkeypatch, "zstring", STRING_CONFIG)],
                           warn=lambda _m: None)
    with pytest.raises(GpumemError, match="plugin 'zstring'") as err:
        simulator_config(plugins, "kepler", plugins.simulators()["sim"], None)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------
# Low: KeyboardInterrupt at import; a config of another architecture
# ---------------------------------------------------------------------------------------------

def test_a_plugin_raising_keyboardinterrupt_at_import_is_a_broken_plugin(tmp_path, monkeypatch):
    ep = _plugin(tmp_path, monkeypatch, "zkbd", "raise KeyboardInterrupt\n")
    warnings: list[str] = []
    try:
        plugins = load_plugins(eps=[*_installed("kepler"), ep], warn=warnings.append)
    except KeyboardInterrupt:
        pytest.fail("the plugin's own KeyboardInterrupt interrupted gpumem (exit 130)")
    rec = next(r for r in plugins.records if r.name == "zkbd")
    assert rec.status == "error" and "KeyboardInterrupt" in rec.error
    assert "kepler" in plugins.architectures()
    assert len(warnings) == 1 and "plugin 'zkbd'" in warnings[0]


@pytest.mark.parametrize("timeout", ["5", "0"])
def test_a_real_ctrl_c_during_loading_still_interrupts(tmp_path, monkeypatch, timeout):
    """SIGINT sent to the main thread while a plugin imports: KeyboardInterrupt, at once,
    with or without a time limit."""
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", timeout)
    ep = _plugin(tmp_path, monkeypatch, f"zsig{timeout}",
                 "import signal\n"
                 "signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)\n"
                 "time.sleep(3)\n")
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        load_plugins(eps=[ep], warn=lambda _m: None)
    assert time.monotonic() - t0 < 2.5


def test_a_config_of_another_architecture_is_refused_under_arch(cli, tmp_path):
    out = tmp_path / "run"
    res = cli("run", "--arch", "kepler", "smem_latency", "--device", "sim", "--sim-config",
              str(HOPPER_TOML), "--quick", "--out", str(out))
    assert res.code == 2, res.err
    lines = _lines(res.err)
    assert len(lines) == 1 and "hopper" in lines[0] and "kepler" in lines[0], res.err
    assert not out.exists()


def test_a_config_of_a_claimed_compute_capability_is_accepted_under_arch():
    """The H200 config under the generic sm_90 (whose compute capability it has) is fine."""
    from gpumem.plugin.registry import get_plugins
    from gpumem.run.resolve import resolve_arch, resolve_device

    plugins = get_plugins()
    choice = resolve_device(plugins, resolve_arch(plugins, "sm_90"), "sim", HOPPER_TOML)
    assert choice.config.arch == "hopper"


def test_a_config_naming_an_unknown_architecture_is_taken_with_one_warning(tmp_path):
    from gpumem.run.resolve import resolve_arch, resolve_device

    text = HOPPER_TOML.read_text().replace('arch = "hopper"', 'arch = "my-gpu"')
    (tmp_path / "mine.toml").write_text(text)
    warnings: list[str] = []
    plugins = load_plugins(warn=warnings.append)
    choice = resolve_device(plugins, resolve_arch(plugins, "kepler"), "sim",
                            tmp_path / "mine.toml")
    assert choice.config.arch == "my-gpu"
    assert len(warnings) == 1 and "'my-gpu'" in warnings[0] and "kepler" in warnings[0]


def test_a_forked_child_gets_its_own_worker():
    """The runner forks its point workers: a bounded call there must not be handed to a
    worker thread that exists only in the parent (it would wait for nothing)."""
    plugins_mod.call_bounded(lambda: None, 5, "warm up")  # a worker waits, in this process
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the call is answered at once
        ok = False
        try:
            ok = plugins_mod.call_bounded(lambda: 42, 2, "answer") == 42
        finally:
            os._exit(0 if ok else 1)  # never back into pytest
    deadline = time.monotonic() + 10
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the child's plugin call hung")
    assert os.waitstatus_to_exitcode(done[1]) == 0


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_while_gpumem_exits_gives_the_interrupted_code(sig, code):
    """A signal during the interpreter's shutdown ended the process by the signal
    (rc -15/-2) instead of 143/130 (issue 43)."""
    import subprocess
    import sys

    prog = ("import os, signal, atexit, gpumem.cli as c\n"
            "atexit.register(lambda: os.kill(os.getpid(), signal." + sig + "))\n"
            "c.exit_signals()\n"
            "raise SystemExit(0)\n")
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == code, (r.returncode, r.stderr[-500:])
