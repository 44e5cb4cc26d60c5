"""``gpumem devices``: CUDA devices found, and the simulators available."""

from __future__ import annotations

import typer
from rich.table import Table

from gpumem.cli._app import app
from gpumem.cli._common import escape_controls, plugins, print_json, safe_text, stdout
from gpumem.run.resolve import list_devices


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n else "-"


@app.command("devices")
def devices(json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List GPUs (name, compute capability, the architecture `gpumem run all` measures each
    as, SMs, L2, memory, driver) and simulators."""
    data = list_devices(plugins())
    if json_:
        print_json(data)
        return
    out = stdout()
    for b in data["backends"]:
        if not b["devices"]:
            out.print(escape_controls(f"{b['name']}: no devices ({b['message']})"),
                      highlight=False, markup=False)
            continue
        t = Table(title=f"{b['name']} devices")
        for col in ("device", "name", "cc", "arch", "SMs", "L2", "memory", "SM clock",
                    "driver"):
            t.add_column(col)
        for d in b["devices"]:
            arch = d["arch"] + (" (generic)" if d["arch_generic"] else "")
            t.add_row(f"{b['name']}:{d['index']}", safe_text(d["name"]),
                      safe_text(d["compute_capability"]), safe_text(arch),
                      str(d["sm_count"]), _mib(d["l2_bytes"]), _mib(d["memory_bytes"]),
                      f"{d['clock_mhz']:.0f} MHz", safe_text(d["driver"]))
        out.print(t)
        if b["message"]:
            out.print(escape_controls(f"{b['name']}: {b['message']}"), highlight=False,
                      markup=False)
    t = Table(title="simulators")
    for col in ("device", "available", "plugin", "summary"):
        t.add_column(col)
    for s in data["simulators"]:
        t.add_row(safe_text(s["name"]),
                  safe_text((f"yes: {s['detail']}" if s.get("detail") else "yes")
                            if s["available"] else f"no: {s['reason']}"),
                  safe_text(s["plugin"]), safe_text(s["summary"]))
    out.print(t)
