"""adcompile: reverse-mode automatic differentiation by source transformation.

``grad(f)`` reads ``f``'s source and generates a plain Python function that runs the forward
pass and then the adjoint sweep, one readable line per chain-rule step.
"""

from .api import dump, grad, value_and_grad
from .errors import AdcompileError, NoDerivativeError, UnsupportedSyntaxError

__all__ = [
    "AdcompileError",
    "NoDerivativeError",
    "UnsupportedSyntaxError",
    "dump",
    "grad",
    "value_and_grad",
]
__version__ = "0.1.0"
