"""Every status but pass says why, where a reader looks: the finding itself (stored in the
file and its JSON), the run's table with its tally, ``show``, ``compare`` and the report
(issue 45, item 1)."""

from __future__ import annotations

import json

from gpumem.contracts.contention import mark
from gpumem.contracts.findings import (
    Expected,
    Finding,
    from_dataset,
    not_modelled,
    to_dataset,
)


def _f(value, **kw):
    return Finding("lat.l2", value, "cycle", 0.9, "a chase", **kw)


def test_each_status_carries_its_reason_and_a_pass_none():
    exp = Expected("lat.l2", 280.0, "REFERENCE", "cycle", rel_tol=0.02)
    assert _f(281.0).with_expected(exp).reason == ""
    assert _f(320.0).with_expected(exp).reason == "outside the band"
    assert _f(290.0, interval=(284.0, 300.0)).with_expected(exp).reason == \
        "outside the band, its interval reaching in"
    assert _f(281.0).with_expected(None).reason == "no expected value"
    skipped = _f(320.0).with_expected(Expected("lat.l2", 280.0, "REFERENCE", "cycle",
                                               not_judged="not simulated: the model gives 320"))
    assert (skipped.status, skipped.reason) == ("n/a", "not simulated: the model gives 320")
    swept = Finding("cpasync.speedup", [1.0, 1.1], "1", 0.9, "", index=("groups", [1, 2]))
    got = swept.with_expected(Expected("cpasync.speedup", [1.0, 1.2], "REF", "1",
                                       index=("groups", (4, 8))))
    assert got.status == "n/a" and got.reason.startswith("sweep points differ: the run's groups")
    unresolved = Finding("l1d.ways", None, "1", 0.5, "", candidates=[4, 8]).with_expected(None)
    assert unresolved.reason == "the data fit 2 answers"
    (nm,) = not_modelled([_f(300.0)], {"lat.*": "the model has no L2"})
    assert (nm.status, nm.reason) == ("not modelled", "the model has no L2")
    (busy,) = mark([_f(281.0).with_expected(exp)], "pid 42 (python) on the GPU")
    assert busy.reason == "another process on the GPU: pid 42 (python) on the GPU"


def test_the_reason_survives_the_file_and_its_json():
    f = _f(320.0).with_expected(Expected("lat.l2", 280.0, "REFERENCE", "cycle"))
    (back,) = from_dataset(to_dataset([f]))
    assert back.reason == "outside the band"
    assert json.loads(json.dumps(back.as_dict()))["reason"] == "outside the band"


def test_run_show_and_compare_print_reasons_and_the_run_a_tally(cli, tmp_path):
    out = tmp_path / "run"
    res = cli("run", "--arch", "hopper", "l2_sm_map", "smem_latency", "--device", "sim",
              "--quick", "--out", str(out))
    assert res.code == 0, res.err
    tally = [ln for ln in res.out.splitlines() if " findings: " in ln]
    assert tally and tally[-1].split(":")[0].endswith("findings")
    assert "pass" in tally[-1]
    shown = cli("show", str(out), "--json")
    data = json.loads(shown.out)
    rows = [f for e in data["entries"].values() for f in (e.get("findings") or {}).values()]
    assert any(f["status"] != "pass" for f in rows)
    assert all(f.get("reason") for f in rows if f["status"] != "pass")
    cmp_ = cli("compare", str(out), "--expected", "--json")
    assert cmp_.code == 0, cmp_.err
    reasons = [r for row in json.loads(cmp_.out)["rows"] for r in row.get("reasons", {}).values()]
    assert "no expected value" in reasons
