"""rffkern: fast random Fourier features and the learners built on them.

Layers: the compiled core (``rffkern._core``, private), the validated kernels
(:mod:`rffkern.kernels`; their pure-NumPy oracle lives in the tests), and the
scikit-learn estimators.
"""
from rffkern import _openmp

_openmp.load_core()

from rffkern import kernels  # noqa: E402
from rffkern.feature_maps import RandomFourierFeatures  # noqa: E402
from rffkern import datasets  # noqa: E402
from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor  # noqa: E402
from rffkern.topk import TopKSelector, topk_selection  # noqa: E402
from rffkern._api import fit  # noqa: E402
from rffkern._config import config_context, get_config, set_config  # noqa: E402
from rffkern.structured import Fastfood, OrthogonalRandomFeatures, StructuredOrthogonalFeatures, fwht  # noqa: E402
from rffkern.ridge import RFFRidge, RFFRidgeClassifier  # noqa: E402
from rffkern.srff import SRFFRegressor  # noqa: E402
from rffkern.eerf import EERFClassifier, EERFRegressor  # noqa: E402
from rffkern.adaptive import AdaptiveRFFClassifier, AdaptiveRFFRegressor  # noqa: E402

from rffkern._version import __version__  # noqa: E402

__all__ = ["kernels", "RandomFourierFeatures", "__version__", "datasets", "fit", "set_config", "get_config", "config_context", "RFFNetRegressor", "RFFNetClassifier", "TopKSelector", "topk_selection", "fwht", "Fastfood", "StructuredOrthogonalFeatures", "OrthogonalRandomFeatures",
           "RFFRidge", "RFFRidgeClassifier", "SRFFRegressor", "EERFRegressor", "EERFClassifier",
           "AdaptiveRFFRegressor", "AdaptiveRFFClassifier"]
