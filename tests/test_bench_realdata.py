"""The real-data bench: it refuses to run an installed rffkern other than the checkout's, and its
summary's ratios."""
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_realdata.py"

pytestmark = pytest.mark.skipif(not BENCH.is_file(), reason="no source tree (bench/ is not installed)")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_realdata_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stale_sources_names_the_files_that_differ(bench, tmp_path):
    checkout, installed = tmp_path / "checkout", tmp_path / "installed"
    checkout.mkdir()
    installed.mkdir()
    for name, text in {"a.py": "a = 1\n", "b.py": "b = 2\n", "c.py": "c = 3\n"}.items():
        (checkout / name).write_text(text)
    (installed / "a.py").write_text("a = 1\n")
    (installed / "b.py").write_text("b = 1\n")  # an older version; c.py is missing
    (installed / "old.py").write_text("")  # a file the checkout removed does not matter
    assert bench.stale_sources(installed, checkout) == ["b.py", "c.py"]
    (installed / "b.py").write_text("b = 2\n")
    (installed / "c.py").write_text("c = 3\n")
    assert bench.stale_sources(installed, checkout) == []
    assert bench.stale_sources(checkout, checkout) == []


def test_bench_refuses_a_stale_rffkern(bench, monkeypatch, tmp_path, capsys):
    checkout = tmp_path / "python" / "rffkern"
    checkout.mkdir(parents=True)
    (checkout / "__init__.py").write_text("# a newer checkout\n")
    monkeypatch.setattr(bench, "CHECKOUT_PACKAGE", checkout)
    with pytest.raises(SystemExit) as exc:
        bench.main(["--datasets", "diabetes", "--methods", "fit", "--seeds", "0",
                    "--out", str(tmp_path / "out.json")])
    assert exc.value.code == 2
    assert "__init__.py differ" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_summary_ratios_are_medians_over_data_sets_of_seed_means(bench):
    def rec(ds, seed, method, err, fit_s, predict_s):
        return dict(dataset=ds, seed=seed, method=method, status="ok", err=err, fit_s=fit_s, predict_s=predict_s)

    records = []
    for ds, scale in (("a", 1.0), ("b", 2.0), ("c", 4.0)):
        for seed in (0, 1):
            records += [rec(ds, seed, "nystroem", 0.2, 2.0 * scale, 0.1 * scale),
                        rec(ds, seed, "rbf_sampler", 0.25, 1.0, 0.05),
                        rec(ds, seed, "fit", 0.2 * (1 + 0.01 * (seed + 1)), 0.5 * scale * (seed + 1),
                            0.01 * scale * (seed + 1))]
    bench.add_relative(records)
    fit = [r for r in records if r["method"] == "fit"]
    assert [r["predict_ratio"] for r in fit] == pytest.approx([0.1, 0.2] * 3)
    header, rows = bench.summary_rows(records)
    row = dict(zip(header, next(r for r in rows if r[0] == "fit")))
    assert row["median fit/nys"] == "0.38" and row["median predict/nys"] == "0.150"  # (0.25 + 0.5) / 2, (0.1 + 0.2) / 2
    assert row["mean rel"] == "+0.015" and row["within 2%"] == 3
