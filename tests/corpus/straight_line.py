"""A corpus of straight-line scalar functions for differential tests against SymPy.

Every function stays inside adcompile's supported subset: positional parameters, assignments
(reassignment, tuple unpacking, every augmented operator), conditional expressions and calls
of the math functions and builtins that have derivative rules. ``CORPUS`` pairs each function
with its sampling domain: a dict mapping parameters to ``(lo, hi)`` intervals (parameters it
leaves out use ``DEFAULT_INTERVAL``), or None to let ``adcompile.symbolic.sample_points``
choose. Domains keep samples inside each function's real domain and away from the points
where it is not differentiable (abs at 0, ties of min/max, jumps of // and %).

Some functions deliberately use local and parameter names that a code generator might also
want (``b_x``, ``dx``, ``x_bar``, ``grad``, ``math``, ``result``, ``t1``, ``f_grad``, ...):
agreement with SymPy proves the generated names never collide with them.
"""

import math
import math as m
from math import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cos,
    cosh,
    erf,
    erfc,
    exp,
    expm1,
    fabs,
    hypot,
    log,
    log1p,
    log2,
    log10,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
)
from math import pow as math_pow

Interval = tuple[float, float]
Domain = dict[str, Interval] | None

DEFAULT_INTERVAL: Interval = (-2.0, 2.0)

K = 3.0
SCALE = 0.5
COUNT = 4

POSITIVE: Interval = (0.1, 3.0)
UNIT: Interval = (-0.9, 0.9)
BASE: Interval = (0.2, 3.0)


# --- arithmetic ---------------------------------------------------------------------------------


def seed(x, y, z):
    q = x + y
    return q * z


def square(x):
    return x * x


def add_sub(x, y):
    return x + y - 2.0 * x


def product3(x, y, z):
    return x * y * z


def quotient(x, y):
    return x / y


def quotient_of_sums(x, y, z):
    return (x + y) / (z * z + 1.0) - x / (y * y + 2.0)


def cube_literal_power(x):
    return x**3


def negative_int_power(x):
    return x**-2


def float_power(x):
    return x**2.5


def variable_power(x, y):
    return x**y


def constant_base_power(x):
    return 2.0**x


def power_of_power(x, y):
    return (x**y) ** 1.5


def unary_ops(x, y):
    return -x + (+y) - (-(x * y))


def double_negation(x):
    return -(-(-x)) * x  # noqa: B002 -- nested negation is the point


def int_literal_arithmetic(x):
    return 3 * x + 2**3 - 7 // 2 + 7 % 3 + x / 4 - (-2) * x


def int_literal_power_chain(x):
    return 2**2**2 * x + 10 // 3 * x * x


def constant_function(x):
    return 42.0


def constant_int_function(x, y):
    return 7


def constant_expression(x, y):
    a = 2.0 * 3.0
    return a + K * SCALE


def identity(x):
    return x


def returns_second_param(x, y):
    return y


def unused_params(x, y, z):
    return x * z


def with_default(x, y=2.5):
    return x * y + y


def module_constants(x):
    return K * x * x + SCALE - COUNT * x


def math_constants(x):
    return math.pi * x + math.e * x * x + math.tau + m.pi / x


def floordiv_params(x, y):
    return (x // y) * x + y


def mod_params(x, y):
    return x % y + x * y


def floordiv_constant(x):
    return x // 0.7 + x * x


def mod_constant(x):
    return (x % 1.3) * x


def mod_negative_dividend(x, y):
    return x % y - y * 0.5


def floordiv_and_mod(x, y):
    q = x // y
    r = x % y
    return q * y + r + q * r


# --- reassignment, tuples, augmented assignment -----------------------------------------------


def reassign_param(x, y):
    x = x * y
    x = x + y
    return x * x


def reassign_local(x):
    a = x + 1.0
    a = a * a
    a = m.sin(a)
    return a * x


def reassign_param_from_itself_many_times(x):
    x = x + 1.0
    x = x * x
    x = x / (x + 1.0)
    x = m.exp(x)
    return x


def tuple_swap_params(x, y):
    x, y = y, x
    return x * 2.0 + y * y * y


def tuple_unpack(x, y):
    a, b = x * y, x - y
    return a * b


def tuple_swap_locals(x, y):
    a, b = x, y * 2.0
    a, b = b, a
    return a**2 * b


def tuple_rotate3(x, y, z):
    x, y, z = y, z, x
    return x * 1.5 + y * y + z**3


def tuple_uses_old_values(x, y):
    x, y = x + y, x * y
    x, y = x * y, x - y
    return x + y * y


def aug_add(x, y):
    s = x
    s += y
    s += s
    return s * x


def aug_sub(x, y):
    s = x * x
    s -= y
    s -= 3.0 * x
    return s * y


def aug_mul(x, y):
    s = x
    s *= y
    s *= s
    return s + x


def aug_div(x, y):
    s = x
    s /= y
    s /= y * y + 1.0
    return s * x


def aug_pow(x, y):
    s = x
    s **= 3
    s **= 0.5
    return s * y


def aug_pow_variable(x, y):
    s = x
    s **= y
    return s


def aug_every_kind_on_param(x, y):
    x += y
    x -= 0.5 * y
    x *= y
    x /= y * y + 1.0
    x **= 2
    return x


def docstring_and_pass(x, y):
    """A docstring and passes have no effect on the gradient."""
    pass
    z = x * y
    pass
    return z + x


# --- reuse and nesting ----------------------------------------------------------------------


def variable_used_many_times(x):
    return x * x * x + x * x + x + x / (x * x + 1.0) + m.sin(x) * x - x


def reuse_chain(x):
    a = x * x
    b = a * x + a
    c = a * b + b * a + a
    return c * a + b


def reuse_across_params(x, y):
    s = x + y
    return s * s + s * x + s * y + s / (s * s + 1.0)


def deep_nesting(x, y):
    return (
        (((x + y) * (x - y)) / (x * x + y * y + 1.0)) ** 2
        + m.sin(m.cos(m.tanh(x * y) + 0.5) * (x - 0.5 * y))
    ) * ((x * (y * (x * (y + 1.0) + 1.0) + 1.0)) - 2.0)


def deep_function_nesting(x):
    return sin(cos(tanh(atan(sin(exp(cos(x)) * 0.5)))))


def long_chain(x, y):
    a1 = x * y
    a2 = a1 + x
    a3 = a2 * a1
    a4 = m.sin(a3)
    a5 = a4 * a2 - a1
    a6 = a5 / (a4 * a4 + 1.0)
    a7 = m.tanh(a6 + a3)
    a8 = a7 * a7 * y
    a9 = a8 + a6 * a5
    a10 = a9 - a7 + a1
    return a10 * a2


# --- conditional expressions ----------------------------------------------------------------


def cond_simple(x):
    return x * x if x > 0.0 else -x


def cond_nested(x, y):
    return (x * y if x > y else x + y) if x > 0 else (x - y if y > 0 else x * x * y)


def cond_deeply_nested(x, y):
    return (
        x
        if x > 1.0
        else (
            x * y
            if x > 0.5
            else (x + y if x > 0.0 else (x * x if x > -0.5 else (y * y if x > -1.0 else -x)))
        )
    )


def cond_and_or(x, y):
    return x * y if x > 0 and y > 0 or x < -1.0 else x + y  # noqa: RUF021 -- precedence


def cond_not(x, y):
    return m.sin(x) if not x > y else m.cos(y)


def cond_chained_comparison(x):
    return x**3 if -1.0 < x < 1.0 else 2.0 * x


def cond_all_comparisons(x, y):
    a = x if x >= y else y
    b = a * a if a <= 1.0 else a
    c = b if b != 0.5 else -b
    d = c * x if not c == 0.25 else c  # noqa: SIM201 -- `not` is the point
    return d


def cond_in_assignments(x, y):
    a = x if x > y else y
    b = a * a if a > 0 else -a
    return a * b


def cond_condition_on_param_only(x, y):
    return y * y if x > 0 else y * 3.0


def cond_constant_branches(x):
    return 1.0 if x > 0 else 2.0


def cond_mixed_constant_branch(x, y):
    return x * y if x * y > 0.5 else 0.5


def cond_or_not_and(x, y, z):
    return x * y * z if (x > 0 or not y < 0) and z > -1.5 else x - z


def cond_with_calls(x, y):
    return m.exp(x) if m.sin(x) > m.cos(y) else m.log(y * y + 1.0)


# --- math functions, each in its safe domain -------------------------------------------------


def math_trig(x):
    return math.sin(x) + math.cos(x) * math.tan(x)


def math_inverse_trig(x):
    return math.asin(x) * math.acos(x) + math.atan(x)


def math_atan2(y, x):
    return math.atan2(y, x)


def math_hyperbolic(x):
    return math.sinh(x) - math.cosh(x) * math.tanh(x)


def math_inverse_hyperbolic(x, y, z):
    return math.asinh(x) + math.acosh(y) * math.atanh(z)


def math_exp_family(x):
    return math.exp(x) + math.expm1(x) * x


def math_log_family(x):
    return math.log(x) + math.log1p(x) + math.log2(x) * math.log10(x)


def math_log_two_args(x, base):
    return math.log(x, base)


def math_log_constant_base(x):
    return math.log(x, 3.0) + math.log(x, 2)


def math_sqrt(x):
    return math.sqrt(x) * x


def math_pow_variable(x, y):
    return math.pow(x, y)


def math_pow_constant(x):
    return math.pow(x, 3) + math.pow(2.0, x)


def math_hypot2(x, y):
    return math.hypot(x, y)


def math_hypot_nested(x, y, z):
    return math.hypot(math.hypot(x, y), z) * x


def math_fabs(x):
    return math.fabs(x) * x


def math_erf(x):
    return math.erf(x) * math.erfc(x)


def math_angles(lat, lon):
    return math.sin(math.radians(lat)) * math.cos(math.radians(lon)) + math.degrees(lat * lon)


def alias_trig(x, y):
    return m.sin(x * y) + m.cos(x) * m.tan(y)


def alias_inverse_and_hyperbolic(x, y):
    return m.asin(x) + m.acos(y) + m.atan(x * y) + m.sinh(x) * m.cosh(y) + m.tanh(x - y)


def alias_logs(x, y):
    return m.log(x) * m.log(x, y) + m.log1p(x) + m.log2(y) + m.log10(x * y)


def alias_misc(x, y):
    return m.sqrt(x) + m.pow(x, y) + m.hypot(x, y) + m.fabs(x - 4.0) + m.erf(y) + m.erfc(x)


def alias_exp(x, y):
    return m.exp(x * y) - m.expm1(x) + m.atan2(x, y)


def alias_inverse_hyperbolic(x):
    return m.asinh(x) + m.acosh(x + 2.5) + m.atanh(x * 0.5)


def from_import_trig(x):
    return sin(x) * cos(x) + tan(x) + asin(x) + acos(x) + atan(x)


def from_import_hyperbolic(x):
    return sinh(x) + cosh(x) + tanh(x) + asinh(x) + atanh(x) + acosh(x + 1.5)


def from_import_logs(x, y):
    return log(x) + log(x, y) + log1p(x) + log2(x) + log10(y) + sqrt(x * y)


def from_import_rest(x, y):
    return exp(x) + expm1(y) + atan2(y, x) + hypot(x, y) + fabs(y) + erf(x) + erfc(y)


def from_import_pow_alias(x, y):
    return math_pow(x, y) + math_pow(y, 2.0)


def builtin_abs(x):
    return abs(x) * abs(x - 3.0)


def builtin_min2(x, y):
    return min(x, y) * x


def builtin_min3(x, y, z):
    return min(x, y, z) + min(x * y, 0.5)


def builtin_max2(x, y):
    return max(x, y) * y


def builtin_max4(x, y, z):
    return max(x, y, z, 0.1) * max(x * z, y)


def builtin_min_max_nested(x, y):
    return max(min(x, y), min(x * x, 0.3))


def builtin_pow_variable(x, y):
    return pow(x, y)


def builtin_pow_constant(x):
    return pow(x, 2) + pow(3.0, x)


def builtin_float(x, y):
    return float(x) * float(y) + float(2)


def every_function_once(x):
    t = x * 0.4
    return (
        m.sin(t)
        + m.cos(t)
        + m.tan(t)
        + m.asin(t)
        + m.acos(t)
        + m.atan(t)
        + m.atan2(t, 1.0 + t * t)
        + m.sinh(t)
        + m.cosh(t)
        + m.tanh(t)
        + m.asinh(t)
        + m.acosh(t * t + 1.5)
        + m.atanh(t)
        + m.exp(t)
        + m.expm1(t)
        + m.log(t * t + 0.5)
        + m.log(t * t + 0.5, 2.5)
        + m.log1p(t * t)
        + m.log2(t * t + 0.5)
        + m.log10(t * t + 0.5)
        + m.sqrt(t * t + 0.5)
        + m.pow(t * t + 0.5, t)
        + m.hypot(t, 0.5)
        + m.fabs(t - 1.0)
        + m.erf(t)
        + m.erfc(t)
        + abs(t - 1.0)
        + min(t, 1.0)
        + max(t, -1.0)
        + pow(t * t + 0.5, 1.5)
        + float(t)
    )


# --- names a code generator might also want ---------------------------------------------------


def collide_b_x(x, b_x):
    b_y = x * b_x
    return b_y * b_x + x


def collide_dx(x, dx):
    dy = x * dx
    d_x = dy + dx
    return d_x * x


def collide_x_bar(x):
    x_bar = x * x
    bar_x = x_bar + x
    return x_bar * bar_x


def collide_grad(x, y):
    grad = x * y
    grad_x = grad + x
    return grad * grad_x


def collide_math_param(math, x):
    return sin(math) * x + m.exp(math) + exp(x * math)


def collide_math_local(x):
    math = x * x
    return sin(math) + m.cos(math) * math


def collide_result(x, y):
    result = x * y
    result = result + m.sin(result)
    return result


def collide_g(g, x):
    h = g * x
    return h * g


def collide_temporaries(x, t1):
    t2 = x * t1
    t3 = m.sin(t2) + t1
    v = t3 * t2
    tmp = v + x
    return tmp * t3


def collide_cond(x, y):
    cond1 = x > y
    cond = x * y
    return cond * x if cond1 else cond + y


def f(x, f_grad):
    b_f = x * f_grad
    q = b_f + x
    q_1 = q * q
    return q_1 + b_f


def collide_f_grad_local(x, y):
    f_grad = x * y
    collide_f_grad_local_grad = f_grad + x
    return f_grad * collide_f_grad_local_grad


def collide_q_1(q, q_1):
    q_2 = q * q_1
    return q_2 + q


def collide_b_f(x, b_f):
    b_b_f = x * b_f
    b_b_x = b_b_f + x
    return b_b_x * b_f


def collide_adjoint_prefixes(b_, bar_, adj_, d_, grad_):
    b_1 = b_ * bar_
    bar_1 = b_1 + adj_
    adj_1 = bar_1 * d_
    return adj_1 + grad_ * b_


def collide_m(x, y):
    b_m = x * y
    return m.sin(b_m) + b_m


def collide_builtin_names(x, y):
    abs_ = x * y
    sin_ = abs_ + x
    return abs(sin_) + abs_


def collide_everything(x, b_x, dx, x_bar, g, t1, result):
    grad = x * b_x + dx
    cond1 = grad > x_bar
    q_1 = grad if cond1 else x_bar * g
    f_grad = q_1 * t1 + result
    return f_grad * x


def condition_is_bool_variable(x, y):
    big = x > y
    small = not big
    return x * y if small else x - y


# --- edge cases of the arithmetic -------------------------------------------------------------


def powers_zero_and_one(x):
    return x**0 + x**1 + x**1.0 * 2.0 + x**0.0


def self_cancelling(x, y):
    return x - x + y * 0 + x / x + 0 * x


def negation_and_power_precedence(x):
    return -(x**2) + (-x) ** 3 - x**-1.0 * 0.5


def right_associative_power(x):
    return x**0.5**2 + 2**x**2


def negative_variable_exponent(x, y):
    return x**-y + x ** (-y * 0.5)


def int_base_power(x):
    return 2**x + math.e**x


def param_overwritten_by_constant(x, y):
    x = 3.0
    return x * y + x


def constant_condition(x):
    return x * x if K > 2 else -x


def chained_comparison_of_params(x, y):
    return x * y if -1.0 < x < y < 1.5 else x + y


def conditional_inside_call(x, y):
    return m.sin(x if x > y else y) * m.exp(y if y > 0.0 else -y)


def conditional_in_tuple(x, y):
    a, b = (x if x > 0 else -x), (y * x if y > x else y)
    return a * b


def unary_plus_chain(x):
    return +(+(+x)) * +x  # noqa: B002 -- nested unary plus is the point


def returns_constant_after_work(x):
    a = x * x
    a = a + 1.0
    return 2.5


def many_outputs_of_one_input(x, y, z, w):
    return x * y + m.sin(z) * w - w / (x * x + 1.0)


# --- non-differentiable helpers checked through a twin ----------------------------------------
# math.floor and round have no derivative rule (and no SymPy counterpart in the reference):
# each function below is compared with SymPy's partials of its twin, which is equal to it
# away from the jumps but spells floor and round with // and comparisons.


def floor_in_condition(x, y):
    return x * y if math.floor(x) % 2 == 0 else x - y


def floor_in_condition_twin(x, y):
    return x * y if (x // 1) % 2 == 0 else x - y


def round_in_condition(x):
    return x * x if round(x) > 0 else -x


def round_in_condition_twin(x):
    return x * x if x > 0.5 else -x


def floor_of_undifferentiated_param(x, n):
    return x * m.floor(n) + x**2


def floor_of_undifferentiated_param_twin(x, n):
    return x * (n // 1) + x**2


def floor_on_derivative_path(x):
    return math.floor(x) * x


def round_on_derivative_path(x, y):
    a = round(x) + y
    return a * y


# --- the registry ---------------------------------------------------------------------------

CORPUS: list[tuple[object, Domain]] = [
    (seed, None),
    (square, None),
    (add_sub, None),
    (product3, None),
    (quotient, {"y": (0.5, 3.0)}),
    (quotient_of_sums, None),
    (cube_literal_power, None),
    (negative_int_power, {"x": (0.5, 2.0)}),
    (float_power, {"x": BASE}),
    (variable_power, {"x": BASE}),
    (constant_base_power, None),
    (power_of_power, {"x": BASE, "y": (-1.0, 1.0)}),
    (unary_ops, None),
    (double_negation, None),
    (int_literal_arithmetic, None),
    (int_literal_power_chain, None),
    (constant_function, None),
    (constant_int_function, None),
    (constant_expression, None),
    (identity, None),
    (returns_second_param, None),
    (unused_params, None),
    (with_default, None),
    (module_constants, None),
    (math_constants, {"x": (0.3, 2.0)}),
    (floordiv_params, {"x": (0.1, 10.0), "y": (0.7, 3.0)}),
    (mod_params, {"x": (0.1, 10.0), "y": (0.7, 3.0)}),
    (floordiv_constant, {"x": (-4.0, 4.0)}),
    (mod_constant, {"x": (-4.0, 4.0)}),
    (mod_negative_dividend, {"x": (-5.0, -0.1), "y": (0.7, 3.0)}),
    (floordiv_and_mod, {"x": (-6.0, 6.0), "y": (0.7, 2.0)}),
    (reassign_param, None),
    (reassign_local, None),
    (reassign_param_from_itself_many_times, None),
    (tuple_swap_params, None),
    (tuple_unpack, None),
    (tuple_swap_locals, None),
    (tuple_rotate3, None),
    (tuple_uses_old_values, None),
    (aug_add, None),
    (aug_sub, None),
    (aug_mul, None),
    (aug_div, {"y": (0.5, 3.0)}),
    (aug_pow, {"x": BASE}),
    (aug_pow_variable, {"x": BASE}),
    (aug_every_kind_on_param, None),
    (docstring_and_pass, None),
    (variable_used_many_times, None),
    (reuse_chain, None),
    (reuse_across_params, None),
    (deep_nesting, None),
    (deep_function_nesting, None),
    (long_chain, {"x": (-1.0, 1.0), "y": (-1.0, 1.0)}),
    (cond_simple, None),
    (cond_nested, None),
    (cond_deeply_nested, {"x": (-1.5, 1.5)}),
    (cond_and_or, None),
    (cond_not, None),
    (cond_chained_comparison, None),
    (cond_all_comparisons, None),
    (cond_in_assignments, None),
    (cond_condition_on_param_only, None),
    (cond_constant_branches, None),
    (cond_mixed_constant_branch, None),
    (cond_or_not_and, None),
    (cond_with_calls, None),
    (math_trig, {"x": (-1.2, 1.2)}),
    (math_inverse_trig, {"x": UNIT}),
    (math_atan2, {"y": (-2.0, 2.0), "x": (0.2, 2.0)}),
    (math_hyperbolic, None),
    (math_inverse_hyperbolic, {"y": (1.1, 3.0), "z": UNIT}),
    (math_exp_family, None),
    (math_log_family, {"x": POSITIVE}),
    (math_log_two_args, {"x": POSITIVE, "base": (1.5, 5.0)}),
    (math_log_constant_base, {"x": POSITIVE}),
    (math_sqrt, {"x": POSITIVE}),
    (math_pow_variable, {"x": BASE}),
    (math_pow_constant, None),
    (math_hypot2, {"x": (0.2, 2.0)}),
    (math_hypot_nested, {"x": (0.2, 2.0)}),
    (math_fabs, {"x": (0.2, 2.0)}),
    (math_erf, None),
    (math_angles, None),
    (alias_trig, {"y": (-1.2, 1.2)}),
    (alias_inverse_and_hyperbolic, {"x": UNIT, "y": UNIT}),
    (alias_logs, {"x": POSITIVE, "y": (1.5, 4.0)}),
    (alias_misc, {"x": POSITIVE, "y": (-2.0, 2.0)}),
    (alias_exp, {"y": (0.3, 2.0)}),
    (alias_inverse_hyperbolic, {"x": (-1.3, 1.3)}),
    (from_import_trig, {"x": UNIT}),
    (from_import_hyperbolic, {"x": UNIT}),
    (from_import_logs, {"x": POSITIVE, "y": (1.5, 4.0)}),
    (from_import_rest, {"x": (0.2, 2.0), "y": (0.2, 2.0)}),
    (from_import_pow_alias, {"x": BASE, "y": (-2.0, 2.0)}),
    (builtin_abs, {"x": (0.2, 2.8)}),
    (builtin_min2, None),
    (builtin_min3, None),
    (builtin_max2, None),
    (builtin_max4, None),
    (builtin_min_max_nested, None),
    (builtin_pow_variable, {"x": BASE}),
    (builtin_pow_constant, None),
    (builtin_float, None),
    (every_function_once, {"x": (-2.0, 2.0)}),
    (collide_b_x, None),
    (collide_dx, None),
    (collide_x_bar, None),
    (collide_grad, None),
    (collide_math_param, None),
    (collide_math_local, None),
    (collide_result, None),
    (collide_g, None),
    (collide_temporaries, None),
    (collide_cond, None),
    (f, None),
    (collide_f_grad_local, None),
    (collide_q_1, None),
    (collide_b_f, None),
    (collide_adjoint_prefixes, None),
    (collide_m, None),
    (collide_builtin_names, None),
    (collide_everything, None),
    (condition_is_bool_variable, None),
    (powers_zero_and_one, {"x": (0.2, 3.0)}),
    (self_cancelling, {"x": (0.2, 3.0)}),
    (negation_and_power_precedence, {"x": (0.3, 2.0)}),
    (right_associative_power, {"x": (0.2, 1.5)}),
    (negative_variable_exponent, {"x": BASE}),
    (int_base_power, None),
    (param_overwritten_by_constant, None),
    (constant_condition, None),
    (chained_comparison_of_params, None),
    (conditional_inside_call, None),
    (conditional_in_tuple, None),
    (unary_plus_chain, None),
    (returns_constant_after_work, None),
    (many_outputs_of_one_input, None),
]

# (function, twin, domain, wrt): grad(function, wrt=wrt) must match SymPy's partials of twin.
TWINS: list[tuple[object, object, Domain, object]] = [
    (floor_in_condition, floor_in_condition_twin, {"x": (-3.0, 3.0)}, None),
    (round_in_condition, round_in_condition_twin, {"x": (-2.0, 2.0)}, None),
    (floor_of_undifferentiated_param, floor_of_undifferentiated_param_twin, {"n": (0.1, 4.9)}, "x"),
]

# Functions whose derivative would flow through floor or round: grad must refuse them.
NO_DERIVATIVE = [floor_on_derivative_path, round_on_derivative_path]
