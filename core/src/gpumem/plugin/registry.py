"""Plugin loading and the registry of what each plugin contributes.

We load entry points ourselves, one at a time, instead of pluggy's
``load_setuptools_entrypoints``: that one stops at the first plugin that fails to import, and
one broken third-party package must not take the command down. The loop, per entry point of
the group ``gpumem`` (sorted by name, after core's built-in plugin and gpumem's own):

0. gpumem's own plugins (:func:`first_party`, read from gpumem's metadata) come first, so a
   name clash rejects the
   third-party plugin, never the one that ships with gpumem;
1. skip it when ``GPUMEM_DISABLE_PLUGINS`` names it, or when ``GPUMEM_LOAD_PLUGINS`` is set and
   does not name it (both comma-separated entry-point names; core's built-in is always loaded);
2. import it and register it with pluggy, inside try/except;
3. collect what it registers (architectures, experiments, devices, simulators, formats); a name
   another plugin already holds is a conflict: the later plugin is unregistered as a whole;
4. on any failure record (name, distribution, version, error), warn once on stderr, go on.

``strict=True`` (``--strict`` or ``GPUMEM_STRICT_PLUGINS=1``) turns any failure into a
:class:`~gpumem.contracts.errors.PluginError` after everything was tried.

A plugin that hangs must not hang every command (``list-plugins`` included): its import, its
registration hooks and every later hook call (:meth:`Plugins.answers`: expected values,
simulator configs, kernel sources) run on a daemon worker thread and are given
``GPUMEM_PLUGIN_TIMEOUT`` seconds (default :data:`DEFAULT_TIMEOUT`; 0 = no time limit, still on
the worker). An import or registration that does not finish in time makes the plugin broken
("did not load within N s"); a later hook that does not answer in time is named in one
warning, the plugin is left out of every later hook call of the command, and the next plugin
answers. The worker is abandoned, not killed (Python cannot): a daemon thread, it never keeps
the process alive, and a plugin that finishes later changes nothing. What a run calls on the
objects plugins registered (an experiment's ``measure``, a device's or simulator's methods) is
the run itself and is not timed.

Each plugin call runs in a copy of the caller's :mod:`contextvars` context, taken on the
caller's thread when the call is made (:func:`call_bounded`), as :func:`asyncio.to_thread`
does: a ``ContextVar`` the caller set is seen inside the plugin, and what the plugin sets stays
in its call (never seen by the caller, nor by the next plugin the reused worker runs).

Order (:meth:`Plugins.answers`). A ``firstresult`` hook (``gpumem_simulator_config``,
``gpumem_kernel_source``) asks the plugins in pluggy's call order, ``tryfirst`` and ``trylast``
included: the answer pluggy would return is the one gpumem returns. Every other hook (the
registration hooks, ``gpumem_expected_values``) asks them in registration order, and the first
registered plugin's answer of a name wins (core, gpumem's own, then the others by entry-point
name): the reverse of pluggy's last-registered-first, so that no plugin installed later
silently overrides the ones that ship with gpumem. ``tryfirst``/``trylast`` on such a hook are
refused at load, as hook wrappers are (:func:`_order_problem`): honoured in pluggy's sense
they would put a ``tryfirst`` plugin before core, against that rule, and ignored they would
let a ``trylast`` answer beat a ``tryfirst`` one; a plugin author is told so in one line.

Plugin code runs off the main thread, where no signal is ever delivered: a KeyboardInterrupt
(or SystemExit) raised there is the plugin's own raise, reported as its error
(:class:`PluginAborted`), while the user's Ctrl-C interrupts the main thread's wait at once.
A non-daemon thread a plugin starts during its import or a hook is remembered with the
plugin's name (the threads alive before and after each call, compared):
:func:`lingering_threads` tells ``gpumem`` which ones would keep the process from exiting.
What a plugin registers is checked when it registers (an experiment must be an
:class:`~gpumem.contracts.experiment.Experiment` subclass, ...), and its expected values when they
are
collected: a bad answer is dropped with one warning naming the plugin.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import functools
import os
import queue
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy
from packaging.utils import canonicalize_name

from gpumem.contracts import hookspecs
from gpumem.contracts.errors import GpumemWarning, PluginError, PluginWarning

GROUP = "gpumem"
BUILTIN = "core"
KINDS = ("architectures", "experiments", "devices", "simulators", "formats")
_REGISTER_HOOKS = {
    "architectures": "gpumem_register_architectures",
    "experiments": "gpumem_register_experiments",
    "devices": "gpumem_register_devices",
    "simulators": "gpumem_register_simulators",
    "formats": "gpumem_register_formats",
}


DEFAULT_TIMEOUT = 15.0  # seconds a plugin may take to import or register (GPUMEM_PLUGIN_TIMEOUT)


class PluginTimeout(Exception):
    """A plugin's import or hook did not return within the watchdog's limit. ``again``: the
    plugin had already timed out in this command and was not asked (no second warning)."""

    def __init__(self, message: str, again: bool = False) -> None:
        super().__init__(message)
        self.again = again


class PluginAborted(Exception):
    """Plugin code raised KeyboardInterrupt, SystemExit or another BaseException. It ran on
    the worker thread, and Python runs signal handlers on the main thread only, so this is
    the plugin's own raise, never the user's Ctrl-C: it is reported like any plugin error."""


def plugin_timeout(warn: Callable[[str], None] | None = None) -> float | None:
    """Seconds from ``GPUMEM_PLUGIN_TIMEOUT`` (``None``: no limit, for 0 or inf; a negative
    value or no number warns and takes the default: -5 once meant no limit, and a hanging
    hook hung every run again)."""
    raw = os.environ.get("GPUMEM_PLUGIN_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if value != value or value < 0:  # NaN, not a number, or negative
        (warn or _stderr_warn)(f"GPUMEM_PLUGIN_TIMEOUT={raw!r} is not a number of seconds >= 0 "
                               f"(0: no limit); using {DEFAULT_TIMEOUT:g}")
        return DEFAULT_TIMEOUT
    return value if 0 < value < float("inf") else None


class _Job:
    """One call handed to a worker; ``done`` is released when it returned or raised."""

    __slots__ = ("fn", "done", "value", "error")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.value: Any = None
        self.error: BaseException | None = None


class _Worker:
    """A daemon thread running the plugin calls handed to it, one at a time: a bounded call
    costs a hand-off to a waiting thread, not a thread start (hooks asked per probe). A call
    that times out leaves its worker inside the plugin: the worker is dropped and ends when
    (if ever) the plugin returns."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="gpumem-plugin worker", daemon=True).start()

    def _loop(self) -> None:
        while (job := self.jobs.get()) is not None:  # None: end (dropped, or one too many)
            try:
                job.value = job.fn()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                job.error = e
            finally:
                job.done.release()


_idle: list[_Worker] = []   # workers waiting for a call (more than one only under nesting)
_idle_lock = threading.Lock()
_MAX_IDLE = 4


def _forget_workers() -> None:
    """In a forked child (the runner's worker processes) the workers' threads do not exist:
    handing them a call would wait for nothing. The child starts its own."""
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)

_SLICE = 0.1  # seconds: how late a Ctrl-C may be seen while a plugin call is waited for


def _wait(done: Any, timeout: float | None) -> bool:
    """Acquire ``done`` within ``timeout`` seconds (``None``: no limit), in slices: a SIGINT
    that lands just before the wait blocks would only be seen when the wait ends (the
    interpreter runs its handler between bytecodes), so each slice returns to Python."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = _SLICE if deadline is None else min(_SLICE, deadline - time.monotonic())
        if done.acquire(timeout=max(left, 0.0)):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def call_bounded(fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
    """``fn()`` on a worker thread, waiting at most ``timeout`` seconds (``None``: as long as
    it takes; the main thread's wait still yields to Ctrl-C at once): its result, or its
    exception re-raised here (a KeyboardInterrupt or SystemExit as :class:`PluginAborted`),
    or :class:`PluginTimeout` if it is still running. A call made from inside a plugin call
    (a hook that asks the plugins itself) takes another worker, never queues behind itself.
    ``fn`` runs in a copy of the caller's context (:func:`contextvars.copy_context`, taken
    here, on the caller's thread): it sees the caller's ``ContextVar`` values, and what it sets
    stays in that copy, neither the caller's nor the next call's on the reused worker."""
    context = contextvars.copy_context()
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    worker = worker or _Worker()
    job = _Job(functools.partial(context.run, fn))
    worker.jobs.put(job)
    if not _wait(job.done, timeout):
        worker.jobs.put(None)  # it stays with the plugin and ends if that ever returns
        raise PluginTimeout(f"did not {what} within {timeout:g} s")
    with _idle_lock:
        if len(_idle) < _MAX_IDLE:
            _idle.append(worker)
        else:
            worker.jobs.put(None)
    if job.error is not None:
        if not isinstance(job.error, Exception):
            raise PluginAborted(f"raised {_describe(job.error)}") from job.error
        raise job.error
    return job.value


# ---- threads a plugin leaves running ----------------------------------------------------
#: non-daemon threads started during a plugin's import or hook call -> the plugin's name
_thread_owners: weakref.WeakKeyDictionary[threading.Thread, str] = weakref.WeakKeyDictionary()


def _foreground_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not t.daemon}


def _attribute(before: set[threading.Thread], plugin: str) -> None:
    """Remember the non-daemon threads started since ``before`` as ``plugin``'s."""
    for t in _foreground_threads() - before:
        _thread_owners.setdefault(t, plugin)


def lingering_threads() -> list[tuple[threading.Thread, str | None]]:
    """Non-daemon threads other than the main one (and the caller) still alive, each with
    the plugin whose import or hook started it (``None`` where none is known): what would
    keep the interpreter from exiting after the command is done."""
    skip = {threading.main_thread(), threading.current_thread()}
    return [(t, _thread_owners.get(t)) for t in threading.enumerate()
            if not t.daemon and t.is_alive() and t not in skip]


@dataclass
class PluginRecord:
    """What ``gpumem list-plugins`` shows for one plugin."""

    name: str
    distribution: str
    version: str
    status: str = "ok"
    error: str = ""
    contributes: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "contributes": {k: sorted(v) for k, v in self.contributes.items()},
        }


@dataclass
class Contribution:
    obj: Any
    plugin: PluginRecord


class Plugins:
    """A loaded plugin set: the pluggy manager, the records and the registry."""

    def __init__(self, timeout: float | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        self.timeout = timeout  # seconds for a plugin's import or hook; None: no limit
        self.warn = warn or _stderr_warn  # where a later hook call's warnings go
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.records: list[PluginRecord] = []
        self.registry: dict[str, dict[str, Contribution]] = {k: {} for k in KINDS}
        self.hung: dict[str, str] = {}  # plugin -> what it did not do in time (left out)

    @property
    def hook(self) -> Any:
        return self.pm.hook

    @property
    def failures(self) -> list[PluginRecord]:
        return [r for r in self.records if r.status != "ok"]

    def architectures(self) -> dict[str, Any]:
        return {n: c.obj for n, c in sorted(self.registry["architectures"].items())}

    def experiments(self) -> dict[str, Any]:
        return {n: c.obj for n, c in sorted(self.registry["experiments"].items())}

    def devices(self) -> dict[str, Any]:
        return {n: c.obj for n, c in sorted(self.registry["devices"].items())}

    def simulators(self) -> dict[str, Any]:
        return {n: c.obj for n, c in sorted(self.registry["simulators"].items())}

    def formats(self) -> dict[str, Any]:
        return {n: c.obj for n, c in sorted(self.registry["formats"].items())}

    def call(self, plugin: str, fn: Callable[[], Any], what: str) -> Any:
        """``fn()``, plugin code of ``plugin``, bounded by the watchdog (:func:`call_bounded`);
        the non-daemon threads it starts are remembered as the plugin's."""
        before = _foreground_threads()
        try:
            return call_bounded(fn, self.timeout, what)
        finally:
            _attribute(before, plugin)

    def answers(self, hook: str, *, newest_first: bool | None = None, bounded: str = "",
                **kwargs: Any) -> Iterator[tuple[str, Any, BaseException | None]]:
        """The one path every hook call takes: ``hook`` called on each plugin on its own,
        yielding (plugin name, result, error) — the error the plugin raised, or ``None``. So
        one plugin's bug never stops the others' answers, and the caller names the plugin.
        The order (:func:`call_order`): for a ``firstresult`` hook, or with ``newest_first``,
        pluggy's own call order (``tryfirst`` ones, then the last registered first, then
        ``trylast`` ones), so the first answer taken is the one pluggy would return; for any
        other hook registration order (core, then gpumem's own, then the others by
        entry-point name), the first registered plugin's answer first. Each call
        is given the watchdog's ``timeout`` seconds (``bounded``: what the call does, for the
        message; "answer HOOK" by default), after which its :class:`PluginTimeout` is
        yielded and the plugin is left out of every later call (a :class:`PluginTimeout`
        with ``again`` set, at no wait). Each implementation gets the arguments it names
        (pluggy lets it take any subset of the spec's), and with ``GPUMEM_TRACE_PLUGINS=1``
        each call is traced on stderr (:func:`trace`)."""
        caller = getattr(self.pm.hook, hook)
        if newest_first is None:
            newest_first = _firstresult(caller)
        what = bounded or f"answer {hook}"
        for impl in call_order(caller, newest_first=newest_first):
            name = impl.plugin_name
            if name in self.hung:
                yield name, None, PluginTimeout(self.hung[name], again=True)
                continue
            start = time.perf_counter()
            try:
                result = self.call(name, functools.partial(impl.function, **own_args(impl,
                                                                                   kwargs)),
                                   what)
            except PluginTimeout as e:
                self.hung[name] = f"{e} (GPUMEM_PLUGIN_TIMEOUT)"
                trace(hook, name, start, error=e)
                yield name, None, PluginTimeout(self.hung[name])
                continue
            except Exception as e:  # noqa: BLE001 - the plugin's bug, handed to the caller
                trace(hook, name, start, error=e)
                yield name, None, e
                continue
            trace(hook, name, start, result=result)
            yield name, result, None

    def expected_values(self, arch: str, device: Any,
                        warn: Callable[[str], None] | None = None) -> list[Any]:
        """Every plugin's expected values for ``arch`` on ``device``. Each plugin's hook is
        called on its own: one that raises or hangs is reported (once per call, on stderr)
        and the others' values still count, so a plugin's bug cannot stop a run or a
        comparison. An answer that is no list of valid :class:`~gpumem.contracts.findings.Expected`
        (strings, objects, a value that is no number, text or list of them) is dropped, the
        valid entries of a list kept, with one warning naming the plugin."""
        from gpumem.contracts.findings import expected_problem

        out: list[Any] = []
        warn = warn or _stderr_warn
        for name, result, err in self.answers("gpumem_expected_values", arch=arch,
                                               device=device, bounded="give expected values"):
            if isinstance(err, PluginTimeout):
                if not err.again:
                    warn(f"plugin '{name}' {err}; its values for '{arch}' are left out")
            elif err is not None:
                warn(f"plugin '{name}' failed to give expected values for '{arch}': "
                     f"{_describe(err)}")
            elif result is None:
                continue
            elif not isinstance(result, (list, tuple)):
                warn(f"plugin '{name}' gave expected values for '{arch}' as a "
                     f"{type(result).__name__}, not a list of Expected; left out")
            else:
                problems = [expected_problem(e) for e in result]
                out.extend(e for e, p in zip(result, problems, strict=True) if not p)
                bad = [p for p in problems if p]
                if bad:
                    warn(f"plugin '{name}' gave expected values for '{arch}' that are not "
                         f"valid, {len(bad)} of its {len(result)} (first: {bad[0]}); "
                         f"those are left out")
        return out

    def first_result(self, hook: str, warn: Callable[[str], None] | None = None,
                     accept: Callable[[Any], str] | None = None, **kwargs: Any) -> Any:
        """A ``firstresult`` hook called plugin by plugin, in pluggy's order (the last
        registered first): the first non-``None`` result that ``accept`` (the caller's
        check: what is wrong with an answer, "" when nothing) takes. A plugin that raises,
        hangs past the time limit or answers what ``accept`` refuses is named in a warning
        and the next one is asked, so another plugin's bug cannot break a run for an
        architecture it does not own; only when no plugin answers are the failures raised
        (one-line PluginError naming each plugin and what went wrong)."""
        warn = warn or self.warn
        failures: list[tuple[str, bool]] = []  # (text, warned already)
        for name, result, err in self.answers(hook, newest_first=True, **kwargs):
            if isinstance(err, PluginTimeout):
                failures.append((f"plugin '{name}' {err}", err.again))
            elif err is not None:
                failures.append((f"plugin '{name}': {_describe(err)} (in {hook})", False))
            elif result is not None:
                problem = accept(result) if accept is not None else ""
                if problem:
                    failures.append((f"plugin '{name}' answered {hook} with {problem}", False))
                    continue
                for text, said in failures:
                    if not said:
                        warn(f"{text}; left out, another plugin answered")
                return result
        if failures:
            raise PluginError("; ".join(text for text, _said in failures))
        return None

    def kernel_lookup(self, arch: str) -> Callable[[str], Any]:
        """``kernel_source(probe)`` for a device measuring ``arch``: the first plugin's
        ``gpumem_kernel_source`` answer, each plugin asked on its own (:meth:`first_result`),
        ``None`` when none has one (the backend's own kernel then)."""
        return lambda probe: self.first_result("gpumem_kernel_source", arch=arch, probe=probe)

    def owner(self, kind: str, name: str) -> PluginRecord:
        return self.registry[kind][name].plugin

    # ---- loading ---------------------------------------------------------------------
    def add(self, obj: Any, record: PluginRecord, warn: Callable[[str], None]) -> bool:
        """Register one plugin object and collect its contributions; False on failure."""
        self.records.append(record)
        try:
            self.pm.register(obj, name=record.name)
        except Exception as e:  # noqa: BLE001 - any failure is the plugin's, reported
            return self._fail(record, f"cannot register: {_describe(e)}", warn)
        try:  # the hooks it adds (gpumem_addhooks) first: its other hooks may be of them
            self.call(record.name, functools.partial(self._add_hooks, obj, record.name),
                      "add its hooks")
        except Exception as e:  # noqa: BLE001 - a timeout, or the plugin's bug
            self.pm.unregister(obj)
            return self._fail(record, f"gpumem_addhooks raised {_describe(e)}"
                              if not isinstance(e, PluginTimeout) else str(e), warn)
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as e:
            self.pm.unregister(obj)
            return self._fail(record, _describe(e), warn)
        wrapped = _wrapper_problem(self.pm, obj) or _order_problem(self.pm, obj)
        if wrapped:
            self.pm.unregister(obj)
            return self._fail(record, wrapped, warn)
        pending: list[tuple[str, str, Any]] = []

        def register_all() -> list[tuple[str, str, Any]]:
            got: list[tuple[str, str, Any]] = []  # not shared: a late thread changes nothing
            for kind, hookname in _REGISTER_HOOKS.items():
                for impl in getattr(self.pm.hook, hookname).get_hookimpls():
                    if impl.plugin is not obj:
                        continue
                    start = time.perf_counter()
                    impl.function(**own_args(impl, {"register": lambda o, _k=kind: got.append(
                        (_k, _name_of(o, _k), o))}))
                    trace(hookname, record.name, start, result=None)
            return got

        try:
            pending = self.call(record.name, register_all, "register")
        except PluginTimeout as e:
            self.pm.unregister(obj)
            return self._fail(record, str(e), warn)
        except Exception as e:  # noqa: BLE001
            self.pm.unregister(obj)
            return self._fail(record, f"registration raised {_describe(e)}", warn)
        seen: set[tuple[str, str]] = set()
        for kind, name, o in pending:
            if not name:
                self.pm.unregister(obj)
                return self._fail(record, f"registered {kind[:-1]} without a name", warn)
            problem = _registration_problem(kind, o)
            if problem:  # what the run would call on it later: refused now, in one line
                self.pm.unregister(obj)
                return self._fail(record, f"cannot register {kind[:-1]} '{name}': {problem}",
                                  warn)
            holder = self.registry[kind].get(name)
            if holder is not None or (kind, name) in seen:
                other = holder.plugin if holder else record
                self.pm.unregister(obj)
                return self._fail(
                    record, f"{kind[:-1]} '{name}' is already registered by plugin "
                    f"'{other.name}' ({other.distribution} {other.version})", warn)
            seen.add((kind, name))
        for kind, name, o in pending:
            self.registry[kind][name] = Contribution(o, record)
            record.contributes[kind].append(name)
        for names in record.contributes.values():
            names.sort()
        return True

    def _add_hooks(self, obj: Any, name: str) -> None:
        """Call ``obj``'s own ``gpumem_addhooks`` (the specs it brings, as pytest's
        ``pytest_addhooks``), once, as it registers."""
        for impl in self.pm.hook.gpumem_addhooks.get_hookimpls():
            if impl.plugin is obj:
                start = time.perf_counter()
                impl.function(**own_args(impl, {"pluginmanager": self.pm}))
                trace("gpumem_addhooks", name, start)

    def _fail(self, record: PluginRecord, error: str, warn: Callable[[str], None]) -> bool:
        record.status = "error"
        record.error = error
        record.contributes = {k: [] for k in KINDS}
        warn(f"plugin '{record.name}' ({record.distribution} {record.version}) "
             f"failed to load: {error}")
        return False


def own_args(impl: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments a hook implementation names (pluggy lets it take any subset of its
    spec's: ``def gpumem_expected_values(arch)`` is a valid one), from the call's."""
    return {a: kwargs[a] for a in impl.argnames if a in kwargs}


def _wrapper_problem(pm: pluggy.PluginManager, obj: Any) -> str:
    """Why a plugin's hook wrapper cannot be taken ("" if it has none). gpumem calls each
    plugin's implementation on its own (:meth:`Plugins.answers`), so that one plugin's error
    or hang cannot stop another's answer; a wrapper, which runs around the other plugins'
    calls, would then be called as if it answered the hook (a generator for a result)."""
    for caller in pm.get_hookcallers(obj) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is obj and (impl.wrapper or impl.hookwrapper):
                return (f"{caller.name} is a hook wrapper, which gpumem does not run: it asks "
                        f"each plugin on its own so that one plugin's failure cannot stop "
                        f"another's answer; implement {caller.name} as a plain hookimpl")
    return ""


def _firstresult(caller: Any) -> bool:
    spec = getattr(caller, "spec", None)
    return bool(spec is not None and spec.opts.get("firstresult"))


def call_order(caller: Any, *, newest_first: bool) -> list[Any]:
    """The hook implementations of ``caller`` (a pluggy hook caller, wrappers left out: they
    are refused at load) in the order gpumem asks them. ``newest_first``: pluggy's call
    order exactly (its list is kept for calling in reverse: ``trylast`` ones, the others by
    registration, ``tryfirst`` ones). Otherwise registration order; a ``tryfirst``/``trylast``
    implementation, refused at load on such hooks (:func:`_order_problem`), still comes
    before/after the others should one reach it (registered on ``pm`` directly), so a
    ``trylast`` answer never beats a ``tryfirst`` one."""
    impls = [i for i in caller.get_hookimpls() if not (i.wrapper or i.hookwrapper)]
    if newest_first:
        return impls[::-1]
    first = [i for i in impls if i.tryfirst]
    last = [i for i in impls if i.trylast]
    return (first[::-1] + [i for i in impls if not (i.tryfirst or i.trylast)]
            + last[::-1])


def _order_problem(pm: pluggy.PluginManager, obj: Any) -> str:
    """Why a plugin's ``tryfirst``/``trylast`` cannot be taken ("" if it has none that
    matters). On a ``firstresult`` hook they are honoured as pluggy does. On every other hook
    gpumem asks the plugins in registration order and the first registered plugin's answer
    of a name wins (a registration hook is even called once per plugin, as it loads, and a
    name already held rejects the later plugin as a whole): pluggy's ``tryfirst`` there would
    have to put a third-party plugin ahead of core, and ignoring it would let a ``trylast``
    answer beat a ``tryfirst`` one. Refusing it is what a plugin author can see and act on."""
    for caller in pm.get_hookcallers(obj) or []:
        if _firstresult(caller):
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is obj and (impl.tryfirst or impl.trylast):
                mark = "tryfirst" if impl.tryfirst else "trylast"
                return (f"{caller.name} is marked {mark}, which gpumem does not honour on a "
                        f"hook every plugin answers: it asks plugins in registration order "
                        f"(core, gpumem's own, then by entry-point name) and the first "
                        f"registered one's answer wins; drop {mark} (it is honoured, as in "
                        f"pluggy, on firstresult hooks such as gpumem_simulator_config)")
    return ""


#: ``GPUMEM_TRACE_PLUGINS=1``: every hook call gpumem makes is traced on stderr.
TRACE_ENV = "GPUMEM_TRACE_PLUGINS"


def trace(hook: str, plugin: str, start: float, *, result: Any = None,
          error: BaseException | None = None) -> None:
    """One stderr line per hook call when ``GPUMEM_TRACE_PLUGINS`` is set: the hook, the
    plugin, how long it took and what it gave (a short description) or raised."""
    if os.environ.get(TRACE_ENV, "").strip() in ("", "0"):
        return
    ms = (time.perf_counter() - start) * 1e3
    if error is not None:
        what = f"raised {_describe(error)}"
    elif isinstance(result, (list, tuple)):
        what = f"{type(result).__name__} of {len(result)}"
    else:
        what = "None" if result is None else type(result).__name__
    from gpumem.printable import escape_controls

    print(f"gpumem: trace: {hook} {plugin} {ms:.1f} ms -> {escape_controls(what)}",
          file=sys.stderr)


def _describe(e: BaseException) -> str:
    if isinstance(e, PluginAborted):
        return str(e)
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _name_of(obj: Any, kind: str) -> str:
    name = getattr(obj, "name", "")
    return name if isinstance(name, str) else ""


def _registration_problem(kind: str, obj: Any) -> str:
    """What is wrong with ``obj`` registered as one of ``kind`` ("" when nothing): each kind
    must be what core calls it as (hookspecs say which): an :class:`Architecture`, an
    :class:`Experiment` subclass (core instantiates it per run), a :class:`DeviceBackend`,
    a :class:`Simulator` or a :class:`Format` instance. Checked when the plugin registers, so
    a bad object is one line about its plugin, not a traceback in a later command."""
    from gpumem.contracts.architecture import Architecture
    from gpumem.contracts.device import DeviceBackend
    from gpumem.contracts.experiment import Experiment
    from gpumem.contracts.simulator import Simulator
    from gpumem.interop.formats import Format

    if kind == "experiments":
        if isinstance(obj, type) and issubclass(obj, Experiment):
            return ""
        return (f"a {type(obj).__name__}, not a subclass of gpumem.Experiment"
                + (" (register the class, not an instance)" if isinstance(obj, Experiment)
                   else ""))
    want = {"architectures": Architecture, "devices": DeviceBackend,
            "simulators": Simulator, "formats": Format}[kind]
    if isinstance(obj, want):
        return ""
    what = obj.__name__ if isinstance(obj, type) else type(obj).__name__
    return f"a {what}, not a gpumem.{want.__name__} instance"


def _env_list(var: str) -> list[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return [x.strip() for x in raw.split(",") if x.strip()]


def entry_points() -> list[metadata.EntryPoint]:
    """Entry points of the ``gpumem`` group (tests replace this to control discovery)."""
    return list(metadata.entry_points(group=GROUP))


def _stderr_warn(message: str) -> None:
    """The default ``warn``: a :class:`~gpumem.contracts.errors.PluginWarning` (one line on stderr
    under
    the ``gpumem`` command, :func:`warnings_as_lines`)."""
    warnings.warn(PluginWarning(message), stacklevel=2)


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Within: each :class:`~gpumem.contracts.errors.GpumemWarning` (a plugin's, a simulator
    config's) shown as ``gpumem: warning: ...``, one line on stderr, every time (unless the
    user set warning filters: ``-W``, ``PYTHONWARNINGS``); other warnings as Python shows
    them."""
    from gpumem.printable import escape_controls

    with warnings.catch_warnings():
        if not sys.warnoptions:
            warnings.simplefilter("always", GpumemWarning)
        previous = warnings.showwarning

        def show(message: Any, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
            if issubclass(category, GpumemWarning):
                print(f"gpumem: warning: {escape_controls(str(message))}", file=sys.stderr)
            else:
                previous(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def strict_from_env() -> bool:
    return os.environ.get("GPUMEM_STRICT_PLUGINS", "").strip().lower() in ("1", "true", "yes")


#: The extra of gpumem's own distribution that lists the plugins released with it.
FIRST_PARTY_EXTRA = "plugins"


def first_party() -> frozenset[str]:
    """The distributions released with gpumem, from its installed metadata (the ``plugins``
    extra of ``gpumem-dissect``). They load before any third-party plugin, so a third-party
    package that claims one of their names (an architecture "hopper", say) is the one
    rejected, whatever its entry-point name sorts as. Empty when gpumem's metadata is not
    installed (a source tree on ``sys.path``): then name order alone decides."""
    from packaging.requirements import Requirement

    from gpumem import DISTRIBUTION

    try:
        requires = [Requirement(r) for r in metadata.requires(DISTRIBUTION) or []]
    except metadata.PackageNotFoundError:
        return frozenset()
    return frozenset(canonicalize_name(r.name) for r in requires
                     if r.marker is not None and r.marker.evaluate({"extra": FIRST_PARTY_EXTRA}))


def _load_order(ep: metadata.EntryPoint, ours: frozenset[str]) -> tuple[int, str, str]:
    dist = ep.dist.name if ep.dist else ""
    return (0 if canonicalize_name(dist) in ours else 1, ep.name, dist)


def load_plugins(*, strict: bool = False, warn: Callable[[str], None] | None = None,
                 eps: Iterable[metadata.EntryPoint] | None = None) -> Plugins:
    """Build a fresh :class:`Plugins`: core's built-in plugin, then every entry point."""
    from gpumem import DISTRIBUTION, __version__
    from gpumem.plugin import builtin

    warn = warn or _stderr_warn
    plugins = Plugins(plugin_timeout(warn), warn)
    plugins.add(builtin, PluginRecord(BUILTIN, DISTRIBUTION, __version__), warn)
    allow = _env_list("GPUMEM_LOAD_PLUGINS")
    block = set(_env_list("GPUMEM_DISABLE_PLUGINS") or [])
    ours = first_party()
    found = sorted(entry_points() if eps is None else eps, key=lambda ep: _load_order(ep, ours))
    names = {ep.name for ep in found}
    for unknown in sorted(set(allow or []) - names) + sorted(block - names):
        if unknown == BUILTIN:  # listed by list-plugins, yet no entry point to skip
            warn(f"'{BUILTIN}' is gpumem's own plugin (its experiments and the built-in "
                 f"simulator): it always loads (GPUMEM_LOAD_PLUGINS / "
                 f"GPUMEM_DISABLE_PLUGINS)")
            continue
        warn(f"no plugin named '{unknown}' is installed "
             f"(GPUMEM_LOAD_PLUGINS / GPUMEM_DISABLE_PLUGINS)")
    loaded: dict[str, PluginRecord] = {}
    for ep in found:
        if ep.name in block or (allow is not None and ep.name not in allow):
            continue
        dist = ep.dist.name if ep.dist else "?"
        version = ep.dist.version if ep.dist else "?"
        record = PluginRecord(ep.name, dist, version)
        if ep.name in loaded or ep.name == BUILTIN:
            other = loaded.get(ep.name) or PluginRecord(BUILTIN, DISTRIBUTION, __version__)
            plugins.records.append(record)
            plugins._fail(record, f"plugin name '{ep.name}' is already taken by "
                                  f"{other.distribution} {other.version}", warn)
            continue
        loaded[ep.name] = record
        try:  # on the worker: a KeyboardInterrupt the plugin raises is a PluginAborted; the
            obj = plugins.call(ep.name, ep.load, "load")  # user's Ctrl-C arrives here
        except PluginTimeout as e:
            plugins.records.append(record)
            plugins._fail(record, str(e), warn)
            continue
        except Exception as e:  # noqa: BLE001 - any failure is the plugin's, reported
            plugins.records.append(record)
            plugins._fail(record, f"import failed: {_describe(e)}", warn)
            continue
        plugins.add(obj, record, warn)
    if strict and plugins.failures:
        names_ = ", ".join(f"{r.name} ({r.error})" for r in plugins.failures)
        raise PluginError(f"plugin errors (strict mode): {names_}")
    return plugins


_cached: Plugins | None = None


def get_plugins(*, strict: bool = False) -> Plugins:
    """The process-wide plugin set, loaded on first use."""
    global _cached
    if _cached is None:
        _cached = load_plugins(strict=strict or strict_from_env())
    elif (strict or strict_from_env()) and _cached.failures:
        names_ = ", ".join(f"{r.name} ({r.error})" for r in _cached.failures)
        raise PluginError(f"plugin errors (strict mode): {names_}")
    return _cached


def reset_plugins() -> None:
    """Forget the loaded plugin set (tests; a changed environment)."""
    global _cached
    _cached = None
