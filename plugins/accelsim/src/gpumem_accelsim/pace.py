"""How fast Accel-Sim runs one config on this machine: declared, or measured once and kept.

Accel-Sim's cost has two parts that differ by orders of magnitude: while one thread waits on
memory every SM and partition is still ticked (an H200 config: about 2,000-2,500 cycles/s on
one core), and a busy grid costs per 32-byte sector it asks for (about 1,400 sectors/s when
they come from DRAM, the dearest kind) and per cycle of each resident warp, plus a second or
two to start and read the config. :class:`Pace` holds these rates (and a chase warm-up's);
the device prices a probe call with them (``AccelSimDevice.estimate_seconds``) and declares
the idle rate as its ``cycles_per_second``, which makes experiments size their plans for it.

``GPUMEM_ACCELSIM_PACE`` declares it (``CYCLES_PER_S,SECTORS_PER_S,START_S[,WARM_LINES_PER_S]``;
``0``: not slow, plans sized as for hardware). Otherwise the device measures it with four
short runs (about a minute with an H200 config) and keeps it in
``$XDG_CACHE_HOME/gpumem/accelsim-pace.json``, per machine, binary version and config (and
:data:`MODEL`: an entry measured for another cost model is measured again).
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

PACE_ENV = "GPUMEM_ACCELSIM_PACE"
#: The cost model the kept rates belong to: 2 counts a stream's resident warps' cycles in its
#: sector rate (``device.WARP_CYCLE_SECTORS``); 1 (no ``model`` in the entry) did not.
MODEL = 2


class PaceError(ValueError):
    """A declared pace that cannot be read."""


@dataclass(frozen=True)
class Pace:
    """Simulated cycles per second of one idle-waiting thread, 32-byte sectors per second of
    a busy grid streaming from DRAM (each resident warp's cycle counted as
    ``device.WARP_CYCLE_SECTORS`` sectors), seconds per simulator start, and the lines per second a
    chase's parallel warm-up loads (one sector each, about three times the stream's sectors
    per second with an H200 config; 0: the stream's rate); ``source`` says where they came
    from."""

    cycles_per_s: float
    requests_per_s: float
    run_s: float
    source: str = "declared"
    warm_lines_per_s: float = 0.0

    @property
    def slow(self) -> bool:
        return self.cycles_per_s > 0

    def seconds(self, runs: int, cycles: float, requests: float,
                warm_lines: float = 0.0) -> float:
        if not self.slow:
            return 0.0
        return (runs * self.run_s + cycles / self.cycles_per_s
                + requests / self.requests_per_s
                + warm_lines / (self.warm_lines_per_s or self.requests_per_s))


#: Not slow: what ``GPUMEM_ACCELSIM_PACE=0`` declares.
FAST = Pace(0.0, 0.0, 0.0, "declared fast")


def declared() -> Pace | None:
    """The pace ``GPUMEM_ACCELSIM_PACE`` declares, or ``None`` where it is unset."""
    text = os.environ.get(PACE_ENV, "").strip()
    if not text:
        return None
    if text == "0":
        return FAST
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) not in (3, 4) or min(parts) < 0 or parts[0] <= 0 or parts[1] <= 0:
        raise PaceError(f"{PACE_ENV}={text!r}: give CYCLES_PER_S,SECTORS_PER_S,START_S"
                        f"[,WARM_LINES_PER_S] (positive rates, e.g. 2000,1400,1.5,4400), or 0 "
                        f"for a fast simulator")
    return Pace(parts[0], parts[1], parts[2], f"declared by {PACE_ENV}",
                parts[3] if len(parts) == 4 else 0.0)


def cache_file() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "gpumem" / "accelsim-pace.json"


def cache_key(binary: str, config_sha256: str) -> str:
    """Machine, binary file version and config: what the pace depends on."""
    try:
        st = os.stat(binary)
        version = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        version = "?"
    return f"{platform.node()}|{os.path.realpath(binary)}|{version}|{config_sha256}"


def cached(key: str) -> Pace | None:
    try:
        entry = json.loads(cache_file().read_text())[key]
        if entry.get("model", 1) != MODEL:
            return None
        return Pace(float(entry["cycles_per_s"]), float(entry["requests_per_s"]),
                    float(entry["run_s"]), f"measured {entry.get('date', '')}".strip(),
                    float(entry.get("warm_lines_per_s", 0.0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep(key: str, pace: Pace, date: str) -> None:
    """Add ``pace`` to the cache; a cache that cannot be written only costs a re-measure."""
    path = cache_file()
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[key] = {**{k: v for k, v in asdict(pace).items() if k != "source"}, "date": date,
                 "model": MODEL}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass
