"""adcompile: reverse-mode automatic differentiation by source transformation.

``grad(f)`` reads ``f``'s source and generates a plain Python function that runs the forward
pass and then the adjoint sweep, one readable line per chain-rule step.
"""

from .api import dump, grad, value_and_grad
from .compose import hessian, jacobian, jvp, vjp
from .errors import AdcompileError, NoDerivativeError, UnsupportedSyntaxError
from .explain import explain
from .rules.registry import RuleError
from .rules.user import derivative, rule_scope

__all__ = [
    "AdcompileError",
    "NoDerivativeError",
    "RuleError",
    "UnsupportedSyntaxError",
    "derivative",
    "dump",
    "explain",
    "grad",
    "hessian",
    "jacobian",
    "jvp",
    "rule_scope",
    "value_and_grad",
    "vjp",
]
__version__ = "0.1.0"
