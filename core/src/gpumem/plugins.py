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
:class:`~gpumem.errors.PluginError` after everything was tried.

A plugin that hangs must not hang every command (``list-plugins`` included): its import and
its registration hooks run in a daemon thread that is given ``GPUMEM_PLUGIN_TIMEOUT`` seconds
(default :data:`DEFAULT_TIMEOUT`; 0 = no limit). One that does not finish in time is reported
as broken ("did not load within N s") and the command goes on without it; the thread is
abandoned, not killed (Python cannot), so a plugin that later finishes changes nothing.
``gpumem_expected_values`` is bounded the same way; the hooks a run calls on the plugins it
chose (experiments, devices, simulator configs, kernel sources) are not: they are the run.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy
from packaging.utils import canonicalize_name

from gpumem import hookspecs
from gpumem.errors import PluginError

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
    """A plugin's import or hook did not return within the watchdog's limit."""


def plugin_timeout(warn: Callable[[str], None] | None = None) -> float | None:
    """Seconds from ``GPUMEM_PLUGIN_TIMEOUT`` (``None``: no limit, for 0, less or inf)."""
    raw = os.environ.get("GPUMEM_PLUGIN_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if value != value:  # NaN or not a number
        (warn or _stderr_warn)(f"GPUMEM_PLUGIN_TIMEOUT={raw!r} is not a number of seconds; "
                               f"using {DEFAULT_TIMEOUT:g}")
        return DEFAULT_TIMEOUT
    return value if 0 < value < float("inf") else None


def call_bounded(fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
    """``fn()`` in a daemon thread, waiting at most ``timeout`` seconds: its result, or its
    exception re-raised here, or :class:`PluginTimeout` if it is still running."""
    if timeout is None:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=target, name=f"gpumem-plugin {what}", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise PluginTimeout(f"did not {what} within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


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
        self.warn = warn        # where a later hook call's warnings go (stderr by default)
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.records: list[PluginRecord] = []
        self.registry: dict[str, dict[str, Contribution]] = {k: {} for k in KINDS}

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

    def answers(self, hook: str, *, newest_first: bool = False, bounded: str = "",
                **kwargs: Any) -> Iterator[tuple[str, Any, BaseException | None]]:
        """The one path every hook call takes: ``hook`` called on each plugin on its own,
        yielding (plugin name, result, error) — the error the plugin raised, or ``None``. So
        one plugin's bug never stops the others' answers, and the caller names the plugin.
        Plugins come in registration order (core, then gpumem's own, then the others by
        entry-point name), or pluggy's ``firstresult`` order with ``newest_first``;
        ``bounded`` (what the call does, for the message) gives each plugin the watchdog's
        ``timeout`` seconds, after which its :class:`PluginTimeout` is yielded."""
        impls = getattr(self.pm.hook, hook).get_hookimpls()
        for impl in (reversed(impls) if newest_first else impls):
            call = functools.partial(impl.function, **kwargs)
            try:
                result = call_bounded(call, self.timeout, bounded) if bounded else call()
            except Exception as e:  # noqa: BLE001 - the plugin's bug, handed to the caller
                yield impl.plugin_name, None, e
                continue
            yield impl.plugin_name, result, None

    def expected_values(self, arch: str, device: Any,
                        warn: Callable[[str], None] | None = None) -> list[Any]:
        """Every plugin's expected values for ``arch`` on ``device``. Each plugin's hook is
        called on its own: one that raises is reported (once per call, on stderr) and the
        others' values still count, so a plugin's bug cannot stop a run or a comparison."""
        out: list[Any] = []
        warn = warn or _stderr_warn
        for name, result, err in self.answers("gpumem_expected_values", arch=arch,
                                               device=device, bounded="give expected values"):
            if isinstance(err, PluginTimeout):
                warn(f"plugin '{name}' {err} for '{arch}'; its values are left out")
            elif err is not None:
                warn(f"plugin '{name}' failed to give expected values for '{arch}': "
                     f"{_describe(err)}")
            elif result:
                out.extend(result)
        return out

    def first_result(self, hook: str, warn: Callable[[str], None] | None = None,
                     **kwargs: Any) -> Any:
        """A ``firstresult`` hook called plugin by plugin, in pluggy's order (the last
        registered first): the first non-``None`` result. A plugin that raises is named in a
        warning and the next one is asked, so another plugin's bug cannot break a run for an
        architecture it does not own; only when no plugin answers are the failures raised
        (PluginError naming each plugin and its error)."""
        warn = warn or self.warn or _stderr_warn
        failures: list[str] = []
        for name, result, err in self.answers(hook, newest_first=True, **kwargs):
            if err is not None:
                failures.append(f"plugin '{name}': {_describe(err)}")
            elif result is not None:
                for f in failures:
                    warn(f"{f} (in {hook}; another plugin answered)")
                return result
        if failures:
            raise PluginError("; ".join(failures))
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
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as e:
            self.pm.unregister(obj)
            return self._fail(record, _describe(e), warn)
        pending: list[tuple[str, str, Any]] = []

        def register_all() -> list[tuple[str, str, Any]]:
            got: list[tuple[str, str, Any]] = []  # not shared: a late thread changes nothing
            for kind, hookname in _REGISTER_HOOKS.items():
                for impl in getattr(self.pm.hook, hookname).get_hookimpls():
                    if impl.plugin is not obj:
                        continue
                    impl.function(register=lambda o, _k=kind: got.append(
                        (_k, _name_of(o, _k), o)))
            return got

        try:
            pending = call_bounded(register_all, self.timeout, "register")
        except PluginTimeout as e:
            self.pm.unregister(obj)
            return self._fail(record, str(e), warn)
        except Exception as e:  # noqa: BLE001
            self.pm.unregister(obj)
            return self._fail(record, f"registration raised {_describe(e)}", warn)
        seen: set[tuple[str, str]] = set()
        for kind, name, _o in pending:
            if not name:
                self.pm.unregister(obj)
                return self._fail(record, f"registered {kind[:-1]} without a name", warn)
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

    def _fail(self, record: PluginRecord, error: str, warn: Callable[[str], None]) -> bool:
        record.status = "error"
        record.error = error
        record.contributes = {k: [] for k in KINDS}
        warn(f"plugin '{record.name}' ({record.distribution} {record.version}) "
             f"failed to load: {error}")
        return False


def _describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _name_of(obj: Any, kind: str) -> str:
    return str(getattr(obj, "name", "") or "")


def _env_list(var: str) -> list[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return [x.strip() for x in raw.split(",") if x.strip()]


def entry_points() -> list[metadata.EntryPoint]:
    """Entry points of the ``gpumem`` group (tests replace this to control discovery)."""
    return list(metadata.entry_points(group=GROUP))


def _stderr_warn(message: str) -> None:
    from gpumem.printable import escape_controls

    print(f"gpumem: warning: {escape_controls(message)}", file=sys.stderr)


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
    from gpumem import DISTRIBUTION, __version__, builtin

    warn = warn or _stderr_warn
    plugins = Plugins(plugin_timeout(warn), warn)
    plugins.add(builtin, PluginRecord(BUILTIN, DISTRIBUTION, __version__), warn)
    allow = _env_list("GPUMEM_LOAD_PLUGINS")
    block = set(_env_list("GPUMEM_DISABLE_PLUGINS") or [])
    ours = first_party()
    found = sorted(entry_points() if eps is None else eps, key=lambda ep: _load_order(ep, ours))
    names = {ep.name for ep in found}
    for unknown in sorted(set(allow or []) - names) + sorted(block - names):
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
        try:
            obj = call_bounded(ep.load, plugins.timeout, "load")
        except PluginTimeout as e:
            plugins.records.append(record)
            plugins._fail(record, str(e), warn)
            continue
        except BaseException as e:  # noqa: BLE001 - even SystemExit from a plugin import
            if isinstance(e, KeyboardInterrupt):
                raise
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
