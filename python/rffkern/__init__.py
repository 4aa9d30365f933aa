"""rffkern: fast random Fourier features and the learners built on them.

Layers: the compiled core (``rffkern._core``, private), the validated kernels
(:mod:`rffkern.kernels`) with their pure-NumPy reference (:mod:`rffkern.reference`), and the
scikit-learn estimators.
"""
import os as _os

# Idle OpenMP workers must not spin on shared cores (set before the core loads libgomp; a user's
# own setting wins).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from rffkern import kernels, reference  # noqa: E402
from rffkern.feature_maps import RandomFourierFeatures  # noqa: E402
from rffkern import datasets  # noqa: E402
from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor, TopKSelector, topk_selection  # noqa: E402
from rffkern._api import fit  # noqa: E402
from rffkern.structured import Fastfood, OrthogonalRandomFeatures, StructuredOrthogonalFeatures, fwht  # noqa: E402

__version__ = "0.1.0"

__all__ = ["kernels", "reference", "RandomFourierFeatures", "__version__", "datasets", "fit", "RFFNetRegressor", "RFFNetClassifier", "TopKSelector", "topk_selection", "fwht", "Fastfood", "StructuredOrthogonalFeatures", "OrthogonalRandomFeatures"]
