"""``python -m rffkern``: demo and fit commands, and their error messages."""
import importlib.util
import pickle
import subprocess
import sys

import numpy as np
import pytest

from rffkern.cli import main
from rffkern.datasets import make_jse3

FAST = ["--n-components", "40", "--max-iter", "5", "--n-jobs", "1"]


def _write_csv(path, header, rows):
    with open(path, "w") as fh:
        fh.write(",".join(header) + "\n")
        for r in rows:
            fh.write(",".join(str(v) for v in r) + "\n")
    return str(path)


@pytest.fixture
def regression_csv(tmp_path):
    X, y, _ = make_jse3(300, random_state=0)
    return _write_csv(tmp_path / "reg.csv", [f"f{j}" for j in range(10)] + ["target"],
                      np.column_stack([X, y]).round(6).tolist())


def test_demo_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "rffkern", "demo", "--dataset", "jse3", "--n-samples",
                          "1500", "--max-iter", "30", "--n-jobs", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "test MSE" in text and "true support: x1, x2" in text and "fit:" in text
    ranking = [ln.split()[1] for ln in text.splitlines() if ln.strip()[:2] in ("1.", "2.")]
    assert set(ranking) == {"x1", "x2"}


def test_fit_regression_held_out_and_save(regression_csv, tmp_path, capsys):
    model_path = tmp_path / "model.pkl"
    assert main(["fit", regression_csv, "--target", "target", "--save", str(model_path), *FAST]) == 0
    text = capsys.readouterr().out
    assert "-> regression" in text and "mse" in text and "r2" in text and "relevance ranking" in text
    with open(model_path, "rb") as fh:
        model = pickle.load(fh)
    assert model.n_features_in_ == 10
    assert model.predict(np.zeros((2, 10))).shape == (2,)


def test_fit_classification_with_text_labels_and_cv(tmp_path, capsys):
    X, y, _ = make_jse3(200, random_state=1)
    labels = np.where(y > 0, "yes", "no")
    rows = [[*np.round(x, 5), lab] for x, lab in zip(X[:, :3], labels)]
    path = _write_csv(tmp_path / "clf.csv", ["a", "b", "c", "label"], rows)
    assert main(["fit", path, "--target", "label", "--cv", "2", *FAST]) == 0
    text = capsys.readouterr().out
    assert "-> classification" in text and "2-fold cross-validation" in text
    assert "accuracy" in text and "roc_auc" in text


def test_plot(regression_csv, tmp_path, capsys):
    out = tmp_path / "rel.png"
    code = main(["fit", regression_csv, "--target", "target", "--plot", str(out), *FAST])
    if importlib.util.find_spec("matplotlib") is None:
        assert code == 2 and "matplotlib" in capsys.readouterr().err
    else:
        assert code == 0 and out.stat().st_size > 0


@pytest.mark.parametrize("content, target, message", [
    (None, "y", "no such file"),
    ("a,b,y\n1,2,3\n4,5,6\n", "z", "column 'z' not found"),
    ("a,b,y\n1,x,3\n4,5,6\n", "y", "non-numeric values in feature column(s): 'b'"),
    ("a,b,y\n1,2\n4,5,6\n", "y", "number of columns changed from 3 to 2"),
    ("a,b,y\n", "y", "at least one data row"),
    ("a,b,y\n1,nan,3\n4,5,6\n", "y", "NaN"),
    ("y\n1\n2\n", "y", "no feature columns"),
])
def test_clear_errors(tmp_path, capsys, content, target, message):
    path = tmp_path / "data.csv"
    if content is not None:
        path.write_text(content)
    assert main(["fit", str(path), "--target", target]) == 2
    assert message in capsys.readouterr().err


def test_regression_task_needs_numeric_target(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "y"], [[1, "u"], [2, "v"], [3, "u"], [4, "v"]])
    assert main(["fit", path, "--target", "y", "--task", "regression"]) == 2
    assert "numeric target" in capsys.readouterr().err


def test_too_few_samples_is_a_clear_error(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "y"], [[1, 0.5], [2, 0.1], [3, 0.7]])
    assert main(["fit", path, "--target", "y", "--test-size", "0.34"]) == 2
    assert "too small" in capsys.readouterr().err


def test_reads_gzip_bom_and_quoted_fields(tmp_path, capsys):
    # every data set we ship is gzipped; spreadsheets write a UTF-8 BOM and quote fields
    import gzip

    X, y, _ = make_jse3(200, random_state=2)
    lines = ['"feature, one",b,' + ",".join(f"x{j}" for j in range(2, X.shape[1])) + ",y"]
    lines += [",".join(f"{v:.6g}" for v in row) + f",{t:.6g}" for row, t in zip(X, y)]
    path = tmp_path / "data.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8-sig") as fh:
        fh.write("\n".join(lines) + "\n")
    assert main(["fit", str(path), "--target", "y", "--max-iter", "2", "--n-components", "20"]) == 0
    out = capsys.readouterr().out
    assert "200 samples, 10 features" in out and "feature, one" in out


def test_plot_module_draws_relevances(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from rffkern import RFFNetRegressor
    from rffkern.plot import relevances

    X, y, _ = make_jse3(200, random_state=0)
    model = RFFNetRegressor(n_components=20, max_iter=2, random_state=0).fit(X, y)
    ax = relevances(model, top=5, title="jse3")
    assert len(ax.patches) == 5 and ax.get_title() == "jse3"
    heights = [p.get_height() for p in ax.patches]
    assert heights == sorted(heights, reverse=True) and heights[0] == 1.0
