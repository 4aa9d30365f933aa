"""Sphinx configuration of the rffkern documentation (build: ``bash .ci/docs.sh``)."""
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A checkout without an installed rffkern documents python/ (the compiled _core must be there).
try:
    import rffkern  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))
    import rffkern  # noqa: F401

os.environ.setdefault("MPLBACKEND", "Agg")

project = "rffkern"
author = "the rffkern developers"
copyright = "the rffkern developers"
release = rffkern.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "**.zip", "**.md5"]
default_role = "literal"

# API reference: autosummary writes one page per object into generated/ from the docstrings.
autosummary_generate = True
autosummary_imported_members = True
autodoc_preserve_defaults = True  # signatures show `alpha=DEFAULT_ALPHAS`, not the 23 numbers
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

intersphinx_mapping = {}  # no network in CI: keep the build self-contained

# Formulas are typeset in the browser by MathJax (from its CDN by default). For reading the site
# offline, point RFFKERN_DOCS_MATHJAX2 at a local MathJax 2 (e.g. Debian's libjs-mathjax:
# /usr/share/javascript/mathjax/MathJax.js); the build copies nothing, the page links the file.
if os.environ.get("RFFKERN_DOCS_MATHJAX2"):
    mathjax_path = "file://" + os.environ["RFFKERN_DOCS_MATHJAX2"] + "?config=TeX-AMS-MML_HTMLorMML"
    mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                                   "processEscapes": True}}

html_theme = "pydata_sphinx_theme"
html_title = f"rffkern {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False

# The gallery: every examples/plot_*.py runs during the build; its figures go into the pages.
# RFFKERN_DOCS_FAST=1 (set by .ci/docs.sh, and implied by CI) makes the examples use smaller sizes.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "show_memory": False,
    "min_reported_time": 1,
}

# PyTorch is an optional extra. Without it the API pages of rffkern.torch are still built from
# its docstrings (torch mocked while autodoc imports the module), and the one gallery example that
# trains its layer, plot_torch_layer.py, is left out of the gallery (say so in the build log).
import importlib.util  # noqa: E402

if importlib.util.find_spec("torch") is None:
    autodoc_mock_imports = ["torch"]
    sphinx_gallery_conf["ignore_pattern"] = r"__init__\.py|plot_torch_layer\.py"
    print("conf.py: PyTorch is not installed: examples/plot_torch_layer.py is left out of the gallery")


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only what rffkern defines: members inherited from scikit-learn's mixins (``score``,
    ``set_params``, metadata-routing setters) are documented by scikit-learn."""
    if what != "class" or skip:
        return skip
    module = getattr(obj, "__module__", None) or getattr(getattr(obj, "fget", None), "__module__", None)
    if module is not None and not module.startswith("rffkern"):
        return True
    return None


_TYPE_LINE = re.compile(r"^(\s*[\w*]+(?:\s*,\s*[\w*]+)*) : (.+)$")
_TRAILING_UNDERSCORE = re.compile(r"(?<![`\\])\b([A-Za-z]\w*)_(?![\w`])")


def _escape_types(app, what, name, obj, options, lines):
    """Escape ``name_`` words in numpydoc type specifications (``ndarray of shape
    (n_features_in_,)``): numpydoc passes the type to reST as is, where ``word_`` is a reference
    to an undefined target."""
    for i, line in enumerate(lines):
        match = _TYPE_LINE.match(line)
        if match and "`" not in match.group(2):
            escaped = _TRAILING_UNDERSCORE.sub(r"\1\\_", match.group(2))
            lines[i] = match.group(1) + " : " + escaped


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("autodoc-process-docstring", _escape_types, priority=100)  # before numpydoc (500)
