"""``python -m rffkern``: demo and fit commands, option checks, and their error messages."""
import gzip
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rffkern
from rffkern.cli import main, read_csv
from rffkern.datasets import make_jse3

FAST = ["--n-components", "40", "--max-iter", "5", "--n-jobs", "1"]
DATASETS = Path(os.environ.get("RFFKERN_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


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


def _assert_one_line_error(tmp_path, capsys, content, message, *options):
    """``fit`` on a CSV of ``content`` with ``options``: exit status 2 and ``message`` in one line of stderr."""
    path = tmp_path / "data.csv"
    path.write_text(content)
    assert main(["fit", str(path), *options]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "rffkern", *args], capture_output=True, text=True,
                          timeout=timeout)


# ------------------------------------------------------------------------------- happy paths
def test_demo_runs_as_a_module():
    out = _run("demo", "--dataset", "jse3", "--n-samples", "1500", "--max-iter", "30", "--n-jobs", "1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "test MSE" in text and "true support: x1, x2" in text and "fit:" in text
    ranking = [ln.split()[1] for ln in text.splitlines() if ln.strip()[:2] in ("1.", "2.")]
    assert set(ranking) == {"x1", "x2"}


def test_fit_regression_held_out_and_save(regression_csv, tmp_path, capsys):
    model_path = tmp_path / "model.pkl"
    assert main(["fit", regression_csv, "--target", "target", "--save", str(model_path), *FAST]) == 0
    text = capsys.readouterr().out
    assert "-> regression (real values)" in text and "mse" in text and "r2" in text
    assert "relevance ranking" in text
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
    assert "-> classification (text labels)" in text and "2-fold cross-validation" in text
    assert "accuracy" in text and "roc_auc" in text and "log_loss" in text


def test_fit_auto_is_rffkern_fit_and_passes_only_the_options_given(tmp_path, capsys):
    """``--model auto`` fits what ``rffkern.fit`` fits on the same training rows: the RFFNet options
    left out are not passed (the command's learning rate 1e-3 overrode the sparse variant's own
    3e-3, which runs from 50 inputs on); those given are."""
    from sklearn.model_selection import train_test_split

    X, y, _ = make_jse3(300, random_state=3)
    X = np.column_stack([X, np.random.default_rng(3).normal(size=(300, 45))]).round(6)  # 55 inputs
    path = _write_csv(tmp_path / "wide.csv", [f"f{j}" for j in range(55)] + ["target"],
                      np.column_stack([X, y.round(6)]).tolist())
    X, y, _ = read_csv(path, "target")
    X_tr, _, y_tr, _ = train_test_split(X, y, test_size=0.2, random_state=0)
    for extra, params in (([], {}), (["--learning-rate", "0.01", "--max-iter", "7"],
                                     {"learning_rate": 0.01, "max_iter": 7})):
        saved_path = tmp_path / "auto.pkl"
        assert main(["fit", path, "--target", "target", "--n-jobs", "1", "--save", str(saved_path), *extra]) == 0
        capsys.readouterr()
        with open(saved_path, "rb") as fh:
            saved = pickle.load(fh)
        direct = rffkern.fit(X_tr, y_tr, task="regression", random_state=0, n_jobs=1, **params)
        assert saved.selection_report_["rffnet_variant_scores"] == direct.selection_report_["rffnet_variant_scores"]
        assert set(direct.selection_report_["rffnet_variant_scores"]) == {"sparse", "dense"}
        np.testing.assert_array_equal(saved.predict(X), direct.predict(X))


@pytest.mark.parametrize("model", ["auto", "rffnet"])
def test_fit_with_a_weight_column(tmp_path, capsys, model):
    """``--weight COLUMN``: the column weighs the rows of the fit and of the metrics and is no
    feature. Rows corrupted with weight 0: the weighted held-out metrics are those of a clean fit."""
    rng = np.random.default_rng(0)
    X, y, _ = make_jse3(600, random_state=4)
    bad = rng.random(600) < 0.3
    y_bad = y + np.where(bad, 30.0 * rng.standard_normal(600), 0.0)
    rows = np.column_stack([X[:, :3], np.where(bad, 0.0, 1.0), y_bad]).round(6).tolist()
    path = _write_csv(tmp_path / "w.csv", ["a", "b", "c", "w", "target"], rows)
    out = {}
    for extra in ([], ["--weight", "w"]):
        assert main(["fit", path, "--target", "target", "--model", model, "--max-iter", "30", "--n-jobs", "1",
                     *extra]) == 0
        out[bool(extra)] = capsys.readouterr().out
    text = out[True]
    assert "3 features, target 'target', rows weighted by 'w' -> regression" in text
    assert "test samples, weighted):" in text
    ranking = text.split("relevance ranking")[1]
    assert "'w'" not in ranking and " w " not in ranking  # the weights are no feature
    r2 = {k: float(v.split("r2")[1].split()[0]) for k, v in out.items()}
    assert r2[True] > 0.8 > r2[False]
    assert main(["fit", path, "--target", "target", "--weight", "w", "--cv", "2", *FAST]) == 0
    assert "2-fold cross-validation (weighted metrics):" in capsys.readouterr().out


@pytest.mark.parametrize("content, weight, message", [
    ("a,b,w,y\n1,2,1,3\n4,5,1,6\n", "v", "--weight column 'v' not found in"),
    ("a,b,w,y\n1,2,1,3\n4,5,1,6\n", "y", "--weight 'y' is the target column"),
    ("a,b,w,y\n1,2,1,3\n4,5,-2,6\n", "w", "holds a negative weight (-2 on data row 2)"),
    ("a,b,w,y\n1,2,0,3\n4,5,0,6\n", "w", "is 0 on every row"),
    ("w,y\n1,3\n1,6\n", "w", "no feature columns besides the target 'y' and the weights 'w'"),
    ("a,w,y\n1,nan,3\n4,1,6\n", "w", "the --weight column 'w' of"),
    ("a,w,y\n1,inf,3\n4,1,6\n", "w", "contains NaN or infinite values; give every row a weight"),
    ("a,w,y\nnan,1,3\n4,1,6\n", "w", "feature column(s) 'a' of"),
])
def test_weight_column_errors(tmp_path, capsys, content, weight, message):
    _assert_one_line_error(tmp_path, capsys, content, message, "--target", "y", "--weight", weight)


def test_held_out_rows_all_of_weight_zero_are_a_clear_error(tmp_path, capsys):
    from sklearn.model_selection import train_test_split

    X, y, _ = make_jse3(60, random_state=2)
    _, test = train_test_split(np.arange(60), test_size=0.2, random_state=0)  # the command's split
    w = np.ones(60)
    w[test] = 0.0
    path = tmp_path / "data.csv"
    path.write_text("a,b,w,y\n" + "".join(f"{a:.5f},{b:.5f},{wi:g},{yi:.5f}\n"
                                          for a, b, wi, yi in zip(X[:, 0], X[:, 1], w, y)))
    assert main(["fit", str(path), "--target", "y", "--weight", "w", *FAST]) == 2
    captured = capsys.readouterr()
    assert "every one of the 12 test rows has weight 0 in --weight 'w'" in captured.err
    assert captured.err.count("\n") == 1 and "metrics" not in captured.out  # (refused before the fit)


def test_fit_names_the_columns_it_ignores(tmp_path, capsys):
    """A column that holds one value on every row carries nothing; the command says so, and the
    model gives it importance 0."""
    X, y, _ = make_jse3(200, random_state=2)
    rows = [[*np.round(x[:3], 5), 0.3, round(t, 5)] for x, t in zip(X, y)]
    path = _write_csv(tmp_path / "const.csv", ["a", "b", "c", "flat", "y"], rows)
    model_path = tmp_path / "m.pkl"
    assert main(["fit", path, "--target", "y", "--save", str(model_path), *FAST]) == 0
    out = capsys.readouterr().out
    assert "1 column(s) hold one value on every row and are ignored: flat" in out
    with open(model_path, "rb") as fh:
        assert pickle.load(fh).feature_importances_[3] == 0
    assert main(["fit", _write_csv(tmp_path / "plain.csv", ["a", "y"], [[1, 2], [2, 3], [3, 5], [4, 4]] * 5),
                 "--target", "y", *FAST]) == 0
    assert "ignored" not in capsys.readouterr().out


@pytest.mark.parametrize("values, task, reason", [
    ([0, 1, 1, 0, 2, 1, 0, 2, 2, 1] * 3, "classification", "class codes 0..2, 3 distinct values"),
    (list(range(30)), "regression", "integer values, 30 distinct (> 20)"),
    ([0.5, 1.25, 3.0] * 10, "regression", "real values"),
])
def test_prints_the_task_and_the_rule(tmp_path, capsys, values, task, reason):
    rng = np.random.default_rng(0)
    rows = [[round(float(v), 4), t] for v, t in zip(rng.normal(size=len(values)), values)]
    path = _write_csv(tmp_path / "d.csv", ["x", "y"], rows)
    assert main(["fit", path, "--target", "y", "--max-iter", "1", "--n-components", "8", "--top", "1"]) == 0
    assert f"-> {task} ({reason})" in capsys.readouterr().out


def test_a_guessed_task_names_the_flag(tmp_path, capsys):
    counts = [0] * 20 + [1] * 6 + [2] * 3 + [5]  # arrests per year: counts, regressed
    rng = np.random.default_rng(0)
    path = _write_csv(tmp_path / "d.csv", ["x", "y"], [[round(float(v), 4), t] for v, t in
                                                       zip(rng.normal(size=len(counts)), counts)])
    assert main(["fit", path, "--target", "y", "--max-iter", "1", "--n-components", "8", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "fitting regression; pass --task classification if its values are class labels" in out
    assert "task=" not in out


def test_task_override_is_named(regression_csv, capsys):
    assert main(["fit", regression_csv, "--target", "target", "--task", "regression", *FAST]) == 0
    assert "-> regression (set by --task)" in capsys.readouterr().out


def test_read_csv_values_and_types(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('\n a , "b" ,y\n\n1, 2.5 ,3\n-4,5e-1,6\n\n')  # blank lines, spaces, quotes
    X, y, names = read_csv(str(path), "y")
    assert names == ["a", "b"]
    np.testing.assert_array_equal(X, [[1.0, 2.5], [-4.0, 0.5]])
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert y.dtype == np.int64 and y.tolist() == [3, 6]
    path.write_text("y,a\ncat,1\n\"dog, big\",2\ncat,3\n")
    X, y, names = read_csv(str(path), "y")
    assert names == ["a"] and y.tolist() == ["cat", "dog, big", "cat"] and X[:, 0].tolist() == [1, 2, 3]


def test_reads_gzip_bom_and_quoted_fields(tmp_path, capsys):
    # every data set we ship is gzipped; spreadsheets write a UTF-8 BOM and quote fields
    X, y, _ = make_jse3(200, random_state=2)
    lines = ['"feature, one",b,' + ",".join(f"x{j}" for j in range(2, X.shape[1])) + ",y"]
    lines += [",".join(f"{v:.6g}" for v in row) + f",{t:.6g}" for row, t in zip(X, y)]
    path = tmp_path / "data.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8-sig") as fh:
        fh.write("\n".join(lines) + "\n")
    assert main(["fit", str(path), "--target", "y", "--max-iter", "2", "--n-components", "20"]) == 0
    out = capsys.readouterr().out
    assert "200 samples, 10 features" in out and "feature, one" in out
    X_read, y_read, _ = read_csv(str(path), "y")
    np.testing.assert_allclose(X_read, X, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not (DATASETS / "abalone.csv.gz").exists(), reason="shared/datasets not found")
def test_real_gzipped_dataset_as_a_new_user_would(tmp_path):
    model = tmp_path / "abalone.pkl"
    out = _run("fit", str(DATASETS / "abalone.csv.gz"), "--target", "target", "--max-iter", "3",
               "--n-components", "50", "--n-jobs", "1", "--top", "3", "--save", str(model))
    assert out.returncode == 0, out.stderr
    assert "4177 samples, 10 features, target 'target' -> regression (integer values, 28 distinct" in out.stdout
    assert len([ln for ln in out.stdout.splitlines() if ln.strip()[:2] in ("1.", "2.", "3.", "4.")]) == 3
    assert "Traceback" not in out.stderr and model.stat().st_size > 0


def test_plot(regression_csv, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "rel.png"
    assert main(["fit", regression_csv, "--target", "target", "--plot", str(out), *FAST]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip().endswith(rffkern.__version__)


# ---------------------------------------------------------------- option values, before any work
BAD_OPTIONS = [
    ("fit", "--top", "0"), ("fit", "--top", "ten"), ("fit", "--top", "2.5"),
    ("fit", "--n-jobs", "0"), ("fit", "--n-jobs", "two"),
    ("fit", "--max-iter", "0"), ("fit", "--max-iter", "-3"),
    ("fit", "--n-components", "0"), ("fit", "--batch-size", "0"),
    ("fit", "--alpha", "-1"), ("fit", "--alpha", "nan"), ("fit", "--alpha", "inf"),
    ("fit", "--learning-rate", "0"), ("fit", "--learning-rate", "1e400"),
    ("fit", "--random-state", "-1"), ("fit", "--random-state", str(2**32)),
    ("fit", "--test-size", "0"), ("fit", "--test-size", "1"), ("fit", "--test-size", "1.5"),
    ("fit", "--cv", "1"), ("fit", "--cv", "-2"),
    ("demo", "--n-samples", "5"), ("demo", "--n-samples", "1e4"), ("demo", "--n-jobs", "0"),
    ("demo", "--max-iter", "0"), ("demo", "--n-components", "-5"),
]


@pytest.mark.parametrize("command, option, value", BAD_OPTIONS)
def test_bad_option_values_are_one_line_usage_errors(regression_csv, capsys, command, option, value):
    args = [command, option, value]
    if command == "fit":
        args = ["fit", regression_csv, "--target", "target", option, value]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was read or fitted
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert f"argument {option}: expected" in lines[0] and repr(value) in lines[0]
    assert "--help" in lines[0]


def test_good_boundary_values_are_accepted(regression_csv, capsys):
    assert main(["fit", regression_csv, "--target", "target", "--top", "1", "--n-jobs", "-1", "--alpha", "0",
                 "--cv", "2", "--random-state", str(2**32 - 1), "--max-iter", "1", "--n-components", "8"]) == 0


def test_usage_error_from_a_subprocess_is_one_line_with_status_2(regression_csv):
    out = _run("fit", regression_csv, "--target", "target", "--n-jobs", "0")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "argument --n-jobs: expected a non-zero integer, got '0'" in out.stderr
    out = _run("fit", "/nonexistent/file.csv", "--target", "y")
    assert out.returncode == 2 and out.stderr == "error: no such file: /nonexistent/file.csv\n"


# ------------------------------------------------------------------------- file problems
@pytest.mark.parametrize("content, target, message", [
    ("a,b,y\n1,2,3\n4,5,6\n", "z", "column 'z' not found in"),
    ("a,b,y\n1,x,3\n4,5,6\n", "y", "non-numeric values in feature column(s) of"),
    ("a,b,y\n1,x,3\n4,5,6\n", "y", "line 2, column 'b': 'x'"),
    ("a,b,y\n1,2,3\n4,,6\n", "y", "line 3, column 'b': ''; impute or drop the missing values"),
    ("a,b,y\n1,2,u\n4,NA,v\n", "y", "line 3, column 'b': 'NA'"),
    ("a,b,y\n1,2\n4,5,6\n", "y", "line 2 of"),
    ("a,b,y\n1,2,3\n   \n4,5,6\n", "y", "line 3 of"),
    ("a,b,y\n1,2,3\n   \n4,5,6\n", "y", "(a line of spaces)"),
    ("a,b,y\n1,2,3\n4,5,6,7\n", "y", "has 4 fields but the header has 3 columns"),
    ("a,b,y\n1,2,u\n4,5,v,7\n", "y", "has 4 fields but the header has 3 columns"),
    ("a,b\n1,2,3\n4,5,6\n", "b", "have 3 fields but the header has 2 columns"),
    ("a,b,y\n", "y", "has a header row but no data rows"),
    ("", "y", "is empty"),
    ("\n\n", "y", "is empty"),
    ("a,b,y\n1,nan,3\n4,5,6\n", "y", "feature column(s) 'b' of"),
    ("a,b,y\n1,inf,3\n4,5,6\n", "y", "NaN or infinite"),
    ("a,b,y\n1,2,nan\n4,5,6\n", "y", "target column 'y' contains NaN"),
    ("a,b,y\n1,2,u\n4,5,\n", "y", "target column 'y' has empty cells"),
    ("y\n1\n2\n", "y", "no feature columns"),
    ("a,b,a,y\n1,2,3,4\n", "y", "duplicate column names in"),
    ("a,b,a,y\n1,2,3,4\n", "y", "'a' (columns 1 and 3)"),
    ("a, y ,y\n1,2,3\n", "y", "'y' (columns 2 and 3)"),
    ("a,,y\n1,2,3\n", "y", "empty column name at position(s) 2"),
    ("a;b;y\n1;2;3\n", "y", "separated by ';'"),
    ("1,2,3\n4,5,6\n", "y", "needs a header row naming the columns"),
])
def test_clear_errors(tmp_path, capsys, content, target, message):
    _assert_one_line_error(tmp_path, capsys, content, message, "--target", target)


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no such file"),
    (lambda p: p.mkdir(), "is a directory, not a CSV file"),
    (lambda p: p.write_bytes("a,b,y\n1,2,3\n4,\xe9,6\n".encode("latin-1")), "not UTF-8 text"),
    (lambda p: p.write_bytes("a,\xe9,y\n1,2,3\n".encode("latin-1")), "not UTF-8 text"),
])
def test_unreadable_files(tmp_path, capsys, make, message):
    path = tmp_path / "data.csv"
    make(path)
    assert main(["fit", str(path), "--target", "y"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compression_is_told_by_content_not_name(tmp_path, capsys):
    text = "a,y\n" + "".join(f"{i},{i % 3}\n" for i in range(30))
    plain_named_gz = tmp_path / "plain.csv.gz"
    plain_named_gz.write_text(text)
    gzipped_named_csv = tmp_path / "gzipped.csv"
    gzipped_named_csv.write_bytes(gzip.compress(text.encode()))
    for path in (plain_named_gz, gzipped_named_csv):
        X, y, names = read_csv(str(path), "y")
        assert names == ["a"] and X[:, 0].tolist() == list(range(30)) and y.tolist() == [i % 3 for i in range(30)]


def test_truncated_gzip_is_a_clear_error(tmp_path, capsys):
    data = gzip.compress(("a,y\n" + "".join(f"{i}.5,{i}\n" for i in range(5000))).encode())
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    assert main(["fit", str(path), "--target", "y"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot read {path}:") and err.count("\n") == 1


def test_regression_task_needs_numeric_target(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "y"], [[1, "u"], [2, "v"], [3, "u"], [4, "v"]])
    assert main(["fit", path, "--target", "y", "--task", "regression"]) == 2
    assert "numeric target" in capsys.readouterr().err


def test_too_few_samples_is_a_clear_error(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "y"], [[1, 0.5], [2, 0.1], [3, 0.7]])
    assert main(["fit", path, "--target", "y", "--test-size", "0.34"]) == 2
    assert "too small" in capsys.readouterr().err


def test_more_folds_than_samples(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "y"], [[1, 0.5], [2, 0.1], [3, 0.7]])
    assert main(["fit", path, "--target", "y", "--cv", "5"]) == 2
    assert "--cv 5 needs at least 5 samples" in capsys.readouterr().err


# ------------------------------------------------------------- outputs checked before the fit
@pytest.mark.parametrize("option", ["--save", "--plot"])
@pytest.mark.parametrize("where, message", [
    ("missing_dir/out.png", "does not exist"),
    ("a_file/out.png", "does not exist"),
    ("a_dir", "is a directory"),
])
def test_output_paths_are_checked_before_reading_or_fitting(regression_csv, tmp_path, capsys, option,
                                                            where, message):
    if option == "--plot":
        pytest.importorskip("matplotlib")
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_dir").mkdir()
    assert main(["fit", regression_csv, "--target", "target", option, str(tmp_path / where), *FAST]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # failed before reading the data or fitting
    assert message in captured.err and option in captured.err


def test_output_check_leaves_no_file_behind(regression_csv, tmp_path, capsys):
    save = tmp_path / "model.pkl"
    # the fit fails (bad target) after the output check: the probe file must not stay
    assert main(["fit", regression_csv, "--target", "nope", "--save", str(save)]) == 2
    assert not save.exists()
    save.write_bytes(b"keep me")
    assert main(["fit", regression_csv, "--target", "nope", "--save", str(save)]) == 2
    assert save.read_bytes() == b"keep me"  # an existing file is not truncated by the check


def test_plot_format_is_checked_before_the_fit(regression_csv, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    for name, got in (("rel.xyz", "'.xyz'"), ("rel", "no suffix")):
        assert main(["fit", regression_csv, "--target", "target", "--plot", str(tmp_path / name)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and "must end in an image format" in captured.err and got in captured.err
        assert ".png" in captured.err


def test_plot_without_matplotlib_fails_early_with_the_install_hint(regression_csv, tmp_path, capsys,
                                                                   monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main(["fit", regression_csv, "--target", "target", "--plot", str(tmp_path / "r.png")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert 'pip install "rffkern[plot]"' in captured.err


def test_plot_and_save_must_differ(regression_csv, tmp_path, capsys):
    same = str(tmp_path / "out.png")
    assert main(["fit", regression_csv, "--target", "target", "--plot", same, "--save", same]) == 2
    assert "same file" in capsys.readouterr().err


def test_warnings_are_one_line(tmp_path, capsys):
    # a class with one member and 2 folds: scikit-learn's StratifiedKFold warns
    rng = np.random.default_rng(0)
    rows = [[round(float(v), 3), lab] for v, lab in zip(rng.normal(size=21), ["a"] * 10 + ["b"] * 10 + ["c"])]
    path = _write_csv(tmp_path / "w.csv", ["x", "y"], rows)
    assert main(["fit", path, "--target", "y", "--cv", "2", "--max-iter", "2", "--n-components", "8"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: The least populated class") and err.count("\n") == 1, err


def _start_demo(n_samples, max_iter):
    # unbuffered, so that the first line (printed before the fit) arrives at once
    proc = subprocess.Popen([sys.executable, "-m", "rffkern", "demo", "--dataset", "jse3", "--n-samples",
                             str(n_samples), "--max-iter", str(max_iter), "--n-jobs", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout.readline().startswith("rffkern demo:")
    return proc


def test_ctrl_c_stops_with_one_line_and_status_130():
    import signal

    proc = _start_demo(200_000, 100)  # long enough to be stopped while it runs
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip() == "interrupted", err


def test_closed_output_pipe_is_not_a_traceback():
    # The read end is closed before the child can print anything (its import alone takes far
    # longer), so its first write meets a closed pipe whatever the machine's load; reading a first
    # line and then closing raced with a fast fit finishing all its writes into the pipe buffer.
    proc = subprocess.Popen([sys.executable, "-m", "rffkern", "demo", "--dataset", "jse3", "--n-samples",
                             "500", "--max-iter", "2", "--n-jobs", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    proc.stdout.close()  # as `| head` does once it has what it wants
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("args, option", [
    (["demo", "--n-samples", str(10**13)], "--n-samples"),
    (["demo", "--n-components", str(10**12)], "--n-components"),
])
def test_sizes_beyond_the_memory_are_refused_before_allocating(args, option, capsys):
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "GiB" in captured.err and f"lower {option}" in captured.err


def test_fit_n_components_beyond_the_memory(regression_csv, capsys):
    assert main(["fit", regression_csv, "--target", "target", "--n-components", str(10**12)]) == 2
    assert "lower --n-components" in capsys.readouterr().err


@pytest.mark.parametrize("model, shown", [
    ("auto", "RFFNet's lead in held-out loss"),  # the default: the tuned one-call API
    ("rffnet", "model: RFFNetRegressor"),   # RFFNet alone, with the command's RFFNet options
])
def test_fit_model_choice(regression_csv, capsys, model, shown):
    assert main(["fit", regression_csv, "--target", "target", "--model", model, *FAST]) == 0
    out = capsys.readouterr().out
    assert shown in out and "relevance ranking" in out and "r2" in out
    # every model's ranking is the RMS of its slopes (RFFNet's too, not its |theta|)
    assert "relevance ranking (RMS of df/dx_j per unit of x_j's deviation" in out and "|theta|" not in out


def test_fit_model_choice_is_validated(regression_csv, capsys):
    assert main(["fit", regression_csv, "--target", "target", "--model", "svm"]) == 2
    assert "--model" in capsys.readouterr().err


def test_a_header_line_too_long_is_a_malformed_file_not_out_of_memory(tmp_path, capsys, monkeypatch):
    """A file of one 1 GB line (no line breaks) was split into fields in memory and reported as
    "out of memory; lower --n-components" (here the cap is lowered to keep the file small)."""
    from rffkern import cli

    monkeypatch.setattr(cli, "MAX_HEADER_CHARS", 1000)
    _assert_one_line_error(tmp_path, capsys, ",".join(["1"] * 2000),
                           "the header line of", "--target", "y")
    path = tmp_path / "data.csv"
    assert main(["fit", str(path), "--target", "y"]) == 2
    assert "is longer than 1,000 characters" in capsys.readouterr().err
    # a header within the cap, then a table that does not fit in memory: said as such
    path.write_text("a,y\n1,2\n3,4\n")

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cli.np, "loadtxt", no_memory)
    assert main(["fit", str(path), "--target", "y"]) == 2
    err = capsys.readouterr().err
    assert f"out of memory reading {path}" in err and "a line is malformed" in err and "--n-components" not in err


def test_a_single_class_is_named_with_the_command_s_own_flag(tmp_path, capsys):
    """The models' advice "pass task='regression'" is rffkern.fit's keyword; the command says --task."""
    rows = [[i, i % 3, 1] for i in range(20)]
    for model in ("auto", "rffnet"):
        _assert_one_line_error(tmp_path, capsys, "a,b,y\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows),
                               "holds a single value (1): as a class label", "--target", "y", "--model", model)
    path = tmp_path / "data.csv"
    assert main(["fit", str(path), "--target", "y"]) == 2
    err = capsys.readouterr().err
    assert "pass --task regression to fit a constant" in err and "task=" not in err
    assert main(["fit", str(path), "--target", "y", "--weight", "b", "--task", "classification"]) == 2
    err = capsys.readouterr().err
    assert "single value (1) on the rows of positive --weight: as a class label (set by --task)" in err


@pytest.mark.parametrize("model", ["auto", "rffnet"])
def test_fit_kernel_options_reach_the_model(regression_csv, tmp_path, capsys, model):
    """``--kernel matern --nu 2.5``: the kernel of every stage of rffkern.fit (named in the model
    line), or of RFFNet alone."""
    saved_path = tmp_path / "m.pkl"
    assert main(["fit", regression_csv, "--target", "target", "--model", model, "--kernel", "matern",
                 "--nu", "2.5", "--save", str(saved_path), *FAST]) == 0
    with open(saved_path, "rb") as fh:
        saved = pickle.load(fh)
    if model == "auto":
        assert ", matern (nu=2.5) kernel (rffkern.fit chose" in capsys.readouterr().out
        assert (saved.selection_report_["kernel"], saved.selection_report_["nu"]) == ("matern", 2.5)
    kernel, nu = (saved.kernel_, saved.nu_) if hasattr(saved, "kernel_") else (saved.kernel, saved.nu)
    assert (kernel, nu) == ("matern", 2.5)
    assert main(["fit", regression_csv, "--target", "target", "--nu", "0", *FAST]) == 2
