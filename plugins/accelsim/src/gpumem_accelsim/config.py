"""An Accel-Sim configuration: the ``gpgpusim.config`` and ``trace.config`` pair, and the totals
they imply.

Accel-Sim reads two option files (``-config A -config B``, later values winning). The totals a
user thinks in are spread over several options and are easy to get wrong by hand: the L2 is
configured *per memory sub-partition* (size x channels x sub-partitions per channel), SMs are
clusters x cores per cluster, the core clock is the first of four clock domains, and the peak
DRAM bandwidth is channels x chips per channel x bus width x data rate x DRAM clock. They are
computed here, once, for the translator, the exporter and the device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpumem.api.formats import OutputError, write_text

from gpumem_accelsim.cachestring import CacheString
from gpumem_accelsim.options import OptionFile, OptionFileError

GPGPUSIM = "gpgpusim.config"
TRACE = "trace.config"

# compiled-in defaults of the options the totals use (gpu-sim.cc, A-GS @667834cf), for
# configs that leave them out
_DEFAULTS = {
    "-gpgpu_n_clusters": 10,
    "-gpgpu_n_cores_per_cluster": 3,
    "-gpgpu_n_mem": 8,
    "-gpgpu_n_sub_partition_per_mchannel": 1,
    "-gpgpu_n_mem_per_ctrlr": 1,
    "-gpgpu_dram_buswidth": 4,
    "-gpgpu_dram_burst_length": 4,
    "-dram_data_command_freq_ratio": 2,
    "-gpgpu_l1_latency": 1,
    "-gpgpu_smem_latency": 3,
    "-gpgpu_l2_rop_latency": 85,
    "-dram_latency": 30,
    "-gpgpu_shmem_num_banks": 16,
    "-gpgpu_shmem_size": 16384,
}


class AccelSimConfigError(ValueError):
    """A configuration gpumem cannot use (names the file or option and the rule)."""


@dataclass
class AccelSimConfig:
    """The two option files of one Accel-Sim configuration. ``source`` says where they came
    from (a path, or a plugin's base config), for provenance."""

    gpgpusim: OptionFile
    trace: OptionFile = field(default_factory=OptionFile)
    name: str = "accelsim"
    source: str = ""

    # ---- files -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> AccelSimConfig:
        """A ``gpgpusim.config`` file (with the ``trace.config`` beside it, when there is
        one), or a directory holding ``gpgpusim.config`` (and ``trace.config``)."""
        p = Path(path)
        if p.is_dir():
            main, trace = p / GPGPUSIM, p / TRACE
            name = p.name
        else:
            main, trace = p, p.with_name(TRACE)
            name = p.parent.name or p.stem
        if not main.is_file():
            raise AccelSimConfigError(f"{main}: no such Accel-Sim config file")
        try:
            gpgpusim = OptionFile.load(main)
            tr = OptionFile.load(trace) if trace.is_file() and trace != main else OptionFile()
        except (OSError, UnicodeDecodeError) as e:
            raise AccelSimConfigError(f"{main}: cannot read: {e}") from None
        return cls(gpgpusim, tr, name=name, source=str(p))

    def save(self, directory: str | Path, *, comments: dict[str, str] | None = None,
             header: str = "") -> list[Path]:
        """Write ``gpgpusim.config`` (and ``trace.config`` when it has options) into
        ``directory``; ``comments`` annotate options of either file.

        Each file is written whole and renamed into place (:mod:`gpumem.safe_write`), so a
        symlink planted at either name is replaced, never written through. ``directory``
        must be a folder or not exist: a file there is an ``OutputError`` (exit 2)."""
        d = Path(directory)
        if d.exists() and not d.is_dir():
            raise OutputError(f"--out {d}: exists and is not a directory")
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"--out {d}: cannot create it: {e.strerror or e}") from None
        out = [d / GPGPUSIM]
        kw = {"comments": comments or {}, "header": header}
        write_text(out[0], self.gpgpusim.dumps(**kw), errors="surrogateescape")
        if len(self.trace):
            out.append(d / TRACE)
            write_text(out[1], self.trace.dumps(**kw), errors="surrogateescape")
        return out

    def merged(self) -> OptionFile:
        """Both files as the simulator sees them: trace.config read after gpgpusim.config."""
        m = OptionFile()
        m.update(self.gpgpusim)
        m.update(self.trace)
        return m

    # ---- typed access ------------------------------------------------------------------
    def int(self, name: str) -> int:
        return self._get(name, int)

    def float(self, name: str) -> float:
        return self._get(name, float)

    def _get(self, name: str, kind: type):
        m = self.merged()
        try:
            if name in m:
                return m.int(name) if kind is int else m.float(name)
        except OptionFileError as e:
            raise AccelSimConfigError(str(e)) from None
        if name in _DEFAULTS:
            return kind(_DEFAULTS[name])
        raise AccelSimConfigError(f"{self.name}: option {name} is not set and has no "
                                  f"default gpumem knows")

    def cache(self, name: str) -> CacheString | None:
        """The cache string ``name``; None for ``none``. An option the files do not set is an
        ``AccelSimConfigError`` naming the file and option (not a ``KeyError``), so an empty
        or partial file is one clear line; gpumem does not guess cache geometries."""
        m = self.merged()
        if name not in m:
            raise AccelSimConfigError(f"{self.source or self.name}: option {name} is not set")
        try:
            return m.cache(name)
        except (OptionFileError, ValueError) as e:
            raise AccelSimConfigError(str(e)) from None

    # ---- totals ------------------------------------------------------------------------
    @property
    def compute_capability(self) -> str:
        """'major.minor' from ``-gpgpu_compute_capability_major/minor`` ('' where the config
        gives no major): what gpumem picks the generic architecture (``sm_XY``) by when no
        --arch names one."""
        m = self.merged()
        major = m.int("-gpgpu_compute_capability_major", 0)
        return f"{major}.{m.int('-gpgpu_compute_capability_minor', 0)}" if major > 0 else ""

    @property
    def sm_count(self) -> int:
        return self.int("-gpgpu_n_clusters") * self.int("-gpgpu_n_cores_per_cluster")

    @property
    def l2_slices(self) -> int:
        """Memory sub-partitions: each holds one ``dl2`` cache."""
        return self.int("-gpgpu_n_mem") * self.int("-gpgpu_n_sub_partition_per_mchannel")

    @property
    def l2_bytes(self) -> int:
        dl2 = self.cache("-gpgpu_cache:dl2")
        return dl2.size * self.l2_slices if dl2 is not None else 0

    @property
    def clocks_mhz(self) -> tuple[float, float, float, float]:
        """(core, interconnect, L2, DRAM) from ``-gpgpu_clock_domains``."""
        raw = self.merged().get("-gpgpu_clock_domains")
        if raw is None:
            raise AccelSimConfigError(f"{self.name}: -gpgpu_clock_domains is not set")
        try:
            parts = tuple(float(x) for x in raw.split(":"))
        except ValueError:
            parts = ()
        if len(parts) != 4 or min(parts) <= 0:
            raise AccelSimConfigError(f"{self.name}: -gpgpu_clock_domains must be "
                                      f"Core:ICNT:L2:DRAM in MHz, got {raw!r}")
        return parts  # type: ignore[return-value]

    @property
    def core_clock_mhz(self) -> float:
        return self.clocks_mhz[0]

    @property
    def dram_bandwidth_gbs(self) -> float:
        """Peak: channels x chips per channel x bus bytes x data rate x DRAM clock."""
        return (self.int("-gpgpu_n_mem") * self.int("-gpgpu_n_mem_per_ctrlr")
                * self.int("-gpgpu_dram_buswidth") * self.int("-dram_data_command_freq_ratio")
                * self.clocks_mhz[3] * 1e6 / 1e9)

    @property
    def sm_threads_and_warp(self) -> tuple[int, int]:
        """(threads per SM, warp size) from ``-gpgpu_shader_core_pipeline`` (default
        2048:32)."""
        pipe = self.merged().get("-gpgpu_shader_core_pipeline", "2048:32")
        try:
            threads, warp = (int(x) for x in str(pipe).split(":")[:2])
        except ValueError:
            raise AccelSimConfigError(f"{self.name}: -gpgpu_shader_core_pipeline must be "
                                      f"THREADS:WARP, got {pipe!r}") from None
        return threads, warp

    @property
    def unified_l1_bytes(self) -> int:
        """Unified L1 + shared memory per SM (``-gpgpu_unified_l1d_size`` KB), 0 if none."""
        try:
            return self.merged().int("-gpgpu_unified_l1d_size", 0) * 1024
        except OptionFileError as e:
            raise AccelSimConfigError(str(e)) from None

    @property
    def adaptive_l1(self) -> bool:
        try:
            return self.merged().int("-gpgpu_adaptive_cache_config", 0) != 0
        except OptionFileError as e:
            raise AccelSimConfigError(str(e)) from None
