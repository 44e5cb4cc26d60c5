"""``gpumem devices``: CUDA devices found, and the simulators available."""

from __future__ import annotations

import typer
from rich.table import Table

from gpumem.cli import app
from gpumem.cli._common import plugins, print_json, stdout
from gpumem.runner import list_devices


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n else "-"


@app.command("devices")
def devices(json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List GPUs (name, compute capability, SMs, L2, memory, driver) and simulators."""
    data = list_devices(plugins())
    if json_:
        print_json(data)
        return
    out = stdout()
    for b in data["backends"]:
        if not b["devices"]:
            out.print(f"{b['name']}: no devices ({b['message']})", highlight=False, markup=False)
            continue
        t = Table(title=f"{b['name']} devices")
        for col in ("device", "name", "cc", "SMs", "L2", "memory", "SM clock", "driver"):
            t.add_column(col)
        for d in b["devices"]:
            t.add_row(f"{b['name']}:{d['index']}", d["name"], d["compute_capability"],
                      str(d["sm_count"]), _mib(d["l2_bytes"]), _mib(d["memory_bytes"]),
                      f"{d['clock_mhz']:.0f} MHz", d["driver"])
        out.print(t)
        if b["message"]:
            out.print(f"{b['name']}: {b['message']}", highlight=False, markup=False)
    t = Table(title="simulators")
    for col in ("device", "available", "plugin", "summary"):
        t.add_column(col)
    for s in data["simulators"]:
        t.add_row(s["name"], "yes" if s["available"] else f"no: {s['reason']}", s["plugin"],
                  s["summary"])
    out.print(t)
