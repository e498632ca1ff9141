"""The text of every compile-time error: what is unsupported and what to write instead."""

from __future__ import annotations

import ast
import sys
import types

ASYNC_DEF = "async functions cannot be differentiated; write a plain `def`"
NON_POSITIONAL_PARAMS = (
    "only positional parameters are supported (no *args, **kwargs or keyword-only "
    "parameters); list the inputs as ordinary parameters"
)
MISSING_RETURN = "the function must end with `return <expression>` (the value to differentiate)"
EARLY_RETURN = (
    "`return` before the end of the function is not supported in straight-line code; "
    "compute the result in a variable and return it on the last line"
)


def falls_off_end(last: ast.stmt) -> str:
    """The function can end without ``return``; ``last`` is its last statement."""
    if isinstance(last, ast.If):
        fix = "give the `if` an `else:` that returns, or add a `return` after it"
    elif isinstance(last, ast.For | ast.While):
        fix = "the loop can finish without returning: add a `return` after it"
    else:
        fix = "add a `return` at the end"
    return (
        "some path through the function reaches its end without `return` (Python returns "
        f"None there, which has no derivative); {fix}"
    )


TOO_DEEP = (
    "an expression in this function nests too deeply for adcompile (a sum of thousands of "
    "terms?); split it into several statements, e.g. `s = s + ...` in steps"
)
TOO_NESTED = (
    "the generated code would nest its blocks deeper than Python's limit of 100 levels "
    "(a conditional expression nested about a hundred times?); compute the cases in "
    "separate statements, or as an if/elif chain"
)
TOO_MANY_LOOPS = (
    "the generated code would nest loops deeper than Python's limit of 20 (\"too many "
    "statically nested blocks\"); nest fewer loops (a helper's loops count: it is inlined)"
)
RETURN_NOTHING = "`return` needs a value: grad differentiates the returned number"
RETURN_NONE = (
    "`None` may be returned here, but the returned value is differentiated (its derivative "
    "would be silently 0); return a number, or raise where there is no value"
)


def call_returns_none(callee: str) -> str:
    """A call of the user's function, returned, that may return None."""
    return (
        f"`{callee}(...)` may return None (on some path it does), and its result is returned "
        "here, but the returned value is differentiated (its derivative would be silently "
        "0); make it return a number on every path"
    )


def none_default_returned(name: str) -> str:
    """A parameter whose default is None, returned where it may still hold it."""
    return (
        f"`{name}` defaults to None and may still hold it when it is returned here, but the "
        "returned value is differentiated (its derivative would be silently 0); give it a "
        "number on every path, or a number as its default"
    )


def none_returned(name: str, line: int) -> str:
    """A returned local that may still hold the None given to it."""
    return (
        f"`{name}` may still hold the None given to it on line {line} when it is returned "
        "here, but the returned value is differentiated (its derivative would be silently "
        f"0); start `{name}` at a number (0.0, or -math.inf for a running maximum), or "
        "give it a value on every path"
    )


EARLY_RETURN_TUPLE = (
    "several values are returned only by the function's last statement: an early `return` "
    "(in an `if` or a loop) gives one value; set variables on each path and return them once, "
    "at the end"
)
RETURN_TUPLE = (
    "the function returns several values; grad needs one scalar output "
    "(return a single expression, e.g. their sum)"
)
EXPRESSION_STATEMENT = (
    "an expression statement has no effect on the result and is not supported "
    "(calls such as print() cannot be differentiated); remove it or assign its value"
)
CHAINED_UNPACKING = "chained tuple assignment is not supported; unpack on its own line"
UNPACK_NON_LITERAL = (
    "tuple unpacking is supported only from a literal tuple (`a, b = e1, e2`); "
    "assign each name on its own line"
)
UNPACK_CALL = (
    "tuple unpacking is supported from a literal tuple (`a, b = e1, e2`) and from a call of "
    "your own function that ends in `return a, b` (not one with a rule of its own), not from "
    "this call"
)


def other_library_function(shown: str, module: str) -> str:
    """A call of another autodiff or array library's function (``autograd.numpy.sin``)."""
    return (
        f"`{shown}` is a function of {module}, which adcompile does not differentiate: "
        "write it with `math` (or NumPy in array code)"
    )


def rule_reads_rebound_name(rule: str, name: str, value: object) -> str:
    """A rule reading ``max`` (or ``math``...) that its module binds to something else."""
    meant = {"math": "Python's math module", "np": "NumPy"}.get(name, f"the builtin {name}")
    if isinstance(value, types.ModuleType):
        shown = f"the module {value.__name__}"
    elif hasattr(value, "__qualname__"):
        shown = f"{getattr(value, '__module__', None) or '?'}.{value.__qualname__}"
    else:
        shown = f"a {type(value).__name__}"
    return (
        f"the rule for {rule} reads `{name}`, which its module binds to {shown}; a rule is "
        f"inlined into generated code, where `{name}` is {meant}: rename your `{name}` (or "
        "write the rule in a module where it is the standard one)"
    )


def tuple_held_whole(name: str) -> str:
    """The values of a call ending in ``return a, b`` kept in one name (``p = f(x)``)."""
    return (
        f"{name} returns several values, and a tuple held whole carries no derivative: unpack "
        f"it (`a, b = {name}(...)`) or take one value (`{name}(...)[0]`)"
    )


def unpack_call_count(name: str, count: int, names: int) -> str:
    """``a, b, c = f(x)`` where ``f`` returns two values."""
    return f"{name} returns {count} values, and this assignment has {names} names"


def tuple_index_out_of_range(name: str, count: int, index: int) -> str:
    """``f(x)[k]`` past the values ``f`` returns (Python raises IndexError)."""
    return f"{name} returns {count} values: index {index} is out of range"


UNPACK_LENGTH = "the number of names and values in this tuple assignment differ"
CALL_KEYWORDS = "keyword arguments are not supported in calls here; pass them positionally"
CALL_STARRED = "`*args` in a call is not supported; pass each argument explicitly"
COMPLEX_CALLEE = "only calls to named functions (`f(x)`, `math.f(x)`) are supported"
LOCAL_CALLEE = "calling a local variable is not supported; call a module-level function"
ATTRIBUTE_ACCESS = (
    "attribute access is supported only on modules (`math.pi`, `math.sin`); "
    "pass the value as a parameter instead"
)
CALL_IN_WHILE_TEST = (
    "a call to your own function, or a `sum`/`min`/`max` of a generator (a loop of its own), "
    "in a `while` condition is not supported; compute the condition into a variable before "
    "the loop and at the end of its body"
)
CALL_IN_CHAINED_COMPARISON = (
    "a call to your own function, or a `sum`/`min`/`max` of a generator, after the first "
    "comparison of a chain (`a < b < h(x)`) "
    "runs only if the comparisons before it hold, which adcompile does not follow here; "
    "write the comparisons joined by `and` (`a < b and b < h(x)`)"
)
NESTED_DECORATOR = "decorators on nested functions are not supported"
BOOLOP_VALUE = (
    "`and`/`or` used as a value has no derivative; use them only in tests, "
    "and choose a value with `a if cond else b`"
)

FOR_TARGET = "the loop variable must be a single name (`for i in range(n)`)"
SEQUENCE_TARGET = (
    "a loop over a sequence binds names, or tuples of names (`for x in xs`, "
    "`for a, (b, c) in pairs`); starred names, attributes and items are not supported"
)
FOR_ITERABLE = (
    "only `for i in range(...)` loops are supported; iterate over indices "
    "(`for i in range(len(xs))`) and read `xs[i]`"
)
NESTED_ITERATION = (
    "zip() and enumerate() take sequences here, or reversed(sequence); zip or enumerate "
    "inside them is not supported (write enumerate(zip(a, b)) as the outermost call)"
)
ITERATION_ARGUMENTS = (
    "enumerate() takes a sequence and a start here, reversed() one sequence, zip() "
    "sequences (no keywords)"
)
SEQUENCE_VALUE = (
    "tuples and lists of differentiated values are not supported yet: they carry no "
    "derivative; keep the values in separate variables (or iterate over constants)"
)
INDEX_ON_PATH = (
    "indexing a sequence gives its items no derivative: the sequence must not depend on a "
    "differentiated input (exclude sequence parameters with wrt=...; jvp and vjp, which "
    "take every parameter, differentiate a function closing over the sequence, as in "
    "`jvp(lambda x: f(x, ws), (x,), (t,))`); NumPy arrays are indexed with derivatives in "
    "functions that use NumPy (`np.sum(x[i] ** 2)`)"
)
APPEND_METHOD = (
    "calling methods (such as list.append) is not supported: lists of differentiated values "
    "are not supported yet"
)


def call_statement(call: ast.Call) -> str:
    """A call whose result is dropped: it acts only by changing something in place."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "extend", "insert"):
        return APPEND_METHOD
    shown = ast.unparse(call.func)
    return (
        f"`{shown}(...)` as a statement acts only by changing an array in place (like "
        "`b.sort()` or `np.sin(b, out=b)`), which is not supported; assign the new value "
        "instead (`b = np.sort(b)`, `b = np.sin(b)`)"
    )


def mutating_call(call: ast.Call) -> str:
    """A call that changes an argument in place, its result kept or tested."""
    shown = ast.unparse(call.func)
    return (
        f"`{shown}(...)` changes an array (or list) in place, which is not supported: the "
        "gradient would not see the change; assign the new value instead "
        "(`b = np.sort(b)`, `b = np.where(mask, 0.0, b)`)"
    )


def unpack_count(count: int) -> str:
    """A loop target that does not match the iteration's arity."""
    return f"the loop target must be {count} names here (`for a, b in ...`)"


RANGE_ARGUMENTS = "range() takes 1 to 3 positional arguments here"

UNSUPPORTED_STATEMENTS: dict[type[ast.stmt], str] = {
    ast.AsyncFor: "`async for` cannot be differentiated",
    ast.Try: "`try` is not supported: a derivative cannot pass through exception handling",
    ast.TryStar: "`try` is not supported: a derivative cannot pass through exception handling",
    ast.With: "`with` blocks are not supported; move the context manager outside the function",
    ast.AsyncWith: "`async with` cannot be differentiated",
    ast.Global: "`global` is not supported: pass the value in as a parameter",
    ast.Nonlocal: "`nonlocal` is not supported: pass the value in as a parameter",
    ast.AsyncFunctionDef: "nested `async def` is not supported",
    ast.ClassDef: "class definitions inside the function are not supported",
    ast.Delete: "`del` is not supported; simply stop using the name",
    ast.Raise: "`raise` is not supported; check inputs before calling the gradient",
    ast.Assert: "`assert` is not supported; check inputs before calling the gradient",
    ast.Import: "imports inside the function are not supported; import at module level",
    ast.ImportFrom: "imports inside the function are not supported; import at module level",
    ast.Break: "`break` outside a loop",
    ast.Continue: "`continue` outside a loop",
    ast.Match: "`match` is not supported; write the cases as `if`/`elif`/`else`",
}
if sys.version_info >= (3, 12):  # the `type X = ...` statement is new in 3.12
    UNSUPPORTED_STATEMENTS[ast.TypeAlias] = (
        "a `type` alias inside the function is not supported; define it at module level"
    )
UNSUPPORTED_EXPRESSIONS: dict[type[ast.expr], str] = {
    ast.Lambda: "`lambda` inside the function is not supported yet; define a module-level def",
    ast.ListComp: (
        "a list comprehension is supported only inside sum(), min() or max(); lists of "
        "differentiated values are not supported yet"
    ),
    ast.SetComp: "set comprehensions are not supported",
    ast.DictComp: "dict comprehensions are not supported",
    ast.GeneratorExp: "a generator expression is supported only inside sum(), min() or max()",
    ast.Yield: (
        "`yield` makes a generator, which cannot be differentiated; compute one number "
        "(say, add the values up in a loop) and return it"
    ),
    ast.YieldFrom: (
        "`yield from` makes a generator, which cannot be differentiated; compute one number "
        "and return it"
    ),
    ast.Await: "`await` cannot be differentiated",
    ast.NamedExpr: "the walrus operator `:=` is not supported; assign on a separate line",
    ast.Subscript: (
        "indexing (`x[i]`) is not supported in scalar code; pass the items as parameters"
    ),
    ast.List: "lists are not supported as values in scalar code",
    ast.Tuple: "tuples are supported only in `a, b = e1, e2` assignments",
    ast.Set: "sets are not supported as values",
    ast.Dict: "dicts are not supported as values",
    ast.JoinedStr: "f-strings are not supported: strings have no derivative",
    ast.Starred: "`*` unpacking is not supported here",
    ast.Slice: "slices are not supported in scalar code",
}
UNSUPPORTED_TARGETS: dict[type[ast.expr], str] = {
    ast.Subscript: (
        "assigning to an item (`x[i] = ...`) is not supported; use a new name, and build "
        "arrays from their parts (`np.array([a, b])`, `np.concatenate`, `np.where`)"
    ),
    ast.Attribute: "assigning to an attribute (`obj.a = ...`) is not supported; use a new name",
    ast.Starred: "starred assignment (`a, *rest = ...`) is not supported",
    ast.Tuple: "nested tuple assignment is not supported; unpack one level at a time",
    ast.List: "nested list assignment is not supported; unpack one level at a time",
}

_OPERATOR_SYMBOLS = {
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}


def operator_symbol(op: ast.operator) -> str:
    """The source symbol of a binary operator node."""
    return _OPERATOR_SYMBOLS.get(type(op), type(op).__name__)


def unsupported_operator(symbol: str) -> str:
    """An operator with no derivative on scalars."""
    return f"the operator `{symbol}` is not supported on scalars; use + - * / ** // % and unary -"


def non_numeric_constant(value: object) -> str:
    """A literal that is not a number."""
    said = f"the constant {value!r} is not a number; only int and float literals are supported"
    spelled = {"inf": "math.inf", "-inf": "-math.inf", "nan": "math.nan"}
    if isinstance(value, str) and value.strip().lower() in spelled:  # float("inf")
        return f"{said}; write {spelled[value.strip().lower()]} instead of float({value!r})"
    return said


def literal_loop_too_long(count: int, limit: int) -> str:
    """A loop over a literal tuple of the function's values, too long to pick items by tests."""
    return (
        f"a loop over a literal tuple of {count} values is not supported (at most {limit}: "
        "each iteration picks its item by a chain of tests); split it into several loops, "
        "or use a NumPy array"
    )


def unbound_local(name: str) -> str:
    """A local variable read before it is assigned."""
    return f"local variable `{name}` is used before it is assigned"


def undefined_name(name: str) -> str:
    """A name that is neither local nor visible from the function."""
    return (
        f"name `{name}` is not defined (not a parameter, a local, a global or a builtin) when "
        "the function is compiled; `@grad` compiles when the `def` runs, so if it is defined "
        "further down the module, define it above, or call `grad(f)` after it is defined"
    )


def unbound_closure_variable(name: str) -> str:
    """A closure variable the enclosing function has not assigned yet."""
    return (
        f"`{name}` is a variable of the enclosing function that has no value yet when this "
        "function is compiled (it is assigned after the `def`); assign it before the `def`, "
        "or call `grad` after it is assigned"
    )


def global_not_number(name: str, value: object) -> str:
    """A global used as a value that is not a number."""
    if type(value).__name__ == "ComputedGlobal":
        return computed_global(name, value)
    if isinstance(value, list):
        return (
            f"`{name}` is a list, which may change after the gradient is compiled; make it a "
            "tuple (read once, at compile time) or pass it as a parameter"
        )
    return (
        f"`{name}` is a {type(value).__name__}; a module-level or closure name used as a value "
        "must be a number or a tuple of numbers (a constant) -- pass anything else as a "
        "parameter"
    )


def missing_attribute(module: object, attr: str) -> str:
    """A module attribute that does not exist."""
    return f"module `{getattr(module, '__name__', module)}` has no attribute `{attr}`"


def unknown_module(name: str) -> str:
    """A module adcompile does not know how to name in generated code."""
    return f"module `{name}` is not supported; adcompile knows `math` (and the builtins)"


def too_many_arguments(name: str, params: list[str]) -> str:
    """A call with more positional arguments than parameters."""
    return f"`{name}` takes {len(params)} argument(s) ({', '.join(params)}); too many given"


def unknown_keyword(name: str, keyword: str, params: list[str]) -> str:
    """A keyword argument that names no parameter."""
    return f"`{name}` has no parameter `{keyword}` (parameters: {', '.join(params)})"


def positional_only_keyword(name: str, param: str) -> str:
    """A positional-only parameter given by keyword (Python raises TypeError)."""
    return f"`{name}` takes `{param}` by position only (it comes before `/`); pass it positionally"


def duplicate_argument(name: str, param: str) -> str:
    """A parameter given both positionally and by keyword."""
    return f"`{name}` got two values for parameter `{param}`"


def missing_argument(name: str, param: str) -> str:
    """A parameter without argument or default."""
    return f"the call to `{name}` gives no value for parameter `{param}`"


def recursion(cycle: list[str]) -> str:
    """A recursive call chain."""
    return (
        f"recursive call {' -> '.join(cycle)}: adcompile inlines calls, so recursion is not "
        "supported; rewrite it as a loop"
    )


def default_not_number(param: str, value: object) -> str:
    """A default value that cannot be used in differentiated code."""
    return (
        f"the default of `{param}` is {value!r}; only numbers, tuples of numbers and None "
        "can be passed here"
    )


def wrong_arity(name: str, given: int, arities: list[int]) -> str:
    """A known function called with an argument count that has no rule."""
    if name in ("min", "max") and given == 1:  # nested: 3 and more work too
        return (
            f"`{name}` of one argument (a sequence) is not differentiated here: give it two "
            f"or more (`{name}(a, b, c)`) or a generator (`{name}(w * x for w in ws)`)"
        )
    counts = " or ".join(str(a) for a in arities)
    return f"`{name}` is differentiable here with {counts} argument(s), not {given}"


SEQUENCE_BUILTINS = frozenset({"sum", "min", "max", "len", "sorted", "any", "all"})


def user_rule_in_forward_mode(name: str) -> str:
    """Forward mode through a user rule on arrays."""
    return (
        f"forward mode (grad(..., mode='forward'), jvp, jacobian(..., mode='forward')) cannot "
        f"use the rule registered for `{name}` on arrays: a rule gives the vector-Jacobian "
        "product, and the Jacobian-vector product follows from it only for numbers or "
        "elementwise functions, which adcompile cannot tell apart; use reverse mode (grad, "
        "vjp, jacobian)"
    )


def user_rule_differentiated_again(name: str) -> str:
    """A gradient that inlined the body of a Python function with a user rule, compiled again."""
    return (
        f"second derivatives through `{name}`, which has your own derivative rule, are not "
        f"supported yet: the gradient computes `{name}`'s value with its inlined body, and "
        "differentiating that again would follow the body's derivative, not your rule's "
        "(first derivatives, grad, jvp, vjp and jacobian, use the rule)"
    )


def rule_on_tuple_output(name: str) -> str:
    """A user rule on a function that returns a tuple."""
    return (
        f"`{name}` returns a tuple, and a rule on a function returning several values is not "
        "supported yet (its `g` would be a tuple of adjoints); leave the rule out, so that "
        f"adcompile differentiates the source of `{name}`, or give each value a function "
        "and a rule of its own"
    )


def user_rule_forward_over_gradient(name: str) -> str:
    """Forward mode over a gradient (hessian) through a user rule on a library function."""
    return (
        f"second derivatives in forward mode (hessian; jvp or jacobian(..., mode='forward') "
        f"of a gradient) cannot use the rule registered for `{name}` on arrays: a rule gives "
        "the vector-Jacobian product only; jacobian(grad(f)) takes the second derivatives "
        "in reverse mode, through the rule"
    )


def user_rule_in_looped_hessian(name: str) -> str:
    """``hessian`` of NumPy code with loops through a user rule on arrays."""
    return (
        f"hessian of NumPy code with loops takes derivatives of the forward-mode (jvp) code, "
        f"which cannot use the rule registered for `{name}` on arrays (a rule gives the "
        "vector-Jacobian product only); call it outside the loop, or let adcompile "
        "differentiate the function itself (no rule)"
    )


def computed_global(name: str, value: object) -> str:
    """A module-level name assigned from an expression, in a file read without running it."""
    code = value.statement.startswith(("@", "import ", "from "))  # no literal can replace it
    return (
        f"`{name}` comes from `{value.statement}` {value.where}, which does not run when "
        "the file is given as PATH.py (it is read, so only literal constants and imports of "
        f"math and numpy are known); {'' if code else 'write a literal instead, or '}name the "
        "module (`package.module:FUNC`) so that it is imported"
    )


def static_decorator(decorator: str, function: str) -> str:
    """A decorator, other than adcompile's, on a function read from a file without running it."""
    return (
        f"`@{decorator}` on {function} is not applied when the file is given as PATH.py (it is "
        f"read, not run), and the function it makes of {function} may compute something else: "
        "name the module (`package.module:FUNC`) so that it is imported, and what the name "
        "stands for is differentiated"
    )


def static_decorators(function: str) -> str:
    """Two or more decorators on a function read from a file without running it."""
    return (
        f"{function} has more than one decorator, which are not applied when the file is given "
        "as PATH.py (it is read, not run): name the module (`package.module:FUNC`) so that it "
        "is imported"
    )


STATIC_DECORATOR_WRT = (
    "a `wrt=` known only by running the file (PATH.py is read, not run): write a literal "
    "(`wrt='x'`, `wrt=('x', 'z')`), pass --wrt, or name the module (`package.module:FUNC`)"
)


def static_decorator_option(keyword: str) -> str:
    """A decorator's ``mode=``/``optimize=`` that only running the file would give."""
    return (
        f"a `{keyword}=` known only by running the file (PATH.py is read, not run): write a "
        f"literal (`mode='forward'`, `optimize=False`), or name the module "
        f"(`package.module:FUNC`)"
    )


def no_rule(name: str, value: object) -> str:
    """A call to something that has neither a rule nor supported source."""
    if type(value).__name__ == "ComputedGlobal":
        return computed_global(name, value)
    if isinstance(value, types.BuiltinFunctionType):
        hint = (
            "it takes a sequence, which carries no derivative; write `a + b + c`, add up in "
            "a `for` loop, or use np.sum on a NumPy array"
            if name in SEQUENCE_BUILTINS
            else "use a supported math function"
        )
        if name in SEQUENCE_BUILTINS:  # a rule would get the sequence, which has none
            return f"`{name}` is a builtin with no derivative rule here; {hint}"
        return (
            f"`{name}` is a builtin with no derivative rule here; {hint} "
            f"(or register one with @adcompile.derivative({name}))"
        )
    if isinstance(value, types.FunctionType):
        return (
            f"no derivative rule for `{name}` (a Python function); calls to user functions "
            "are not supported yet -- inline the computation"
        )
    return (
        f"no derivative rule for `{name}` (a {type(value).__name__}); register one with "
        f"@adcompile.derivative({name})"
    )


def not_callable_from_generated_code(name: str, value: object) -> str:
    """A call of something the standalone generated module has no name for."""
    module = getattr(value, "__module__", None)
    what = (
        f"`{module}.{value.__name__}`, from a module other than math"
        if module and hasattr(value, "__name__") and module != "builtins"
        else f"an object of type `{type(value).__module__}.{type(value).__qualname__}`"
    )
    return (
        f"`{name}` is {what}: generated code needs only math (and NumPy) and cannot call it, "
        "with or without a derivative rule; call a function of math or your own `def` "
        "(inlined; a rule on it is used), or compute the value outside and pass it in"
    )


# Functions that are piecewise constant (their derivative is 0 or undefined everywhere):
# others without a rule (math.cbrt, math.exp2, ...) do have derivatives adcompile lacks.
STEP_FUNCTIONS = frozenset(
    {"floor", "ceil", "trunc", "round", "int", "bool", "isnan", "isinf", "isfinite"}
    | {"isclose", "isqrt", "factorial", "comb", "perm", "gcd", "lcm", "sign", "argmax"}
    | {"argmin", "argsort", "nonzero", "searchsorted", "digitize"}
)


def array_by_keyword(shown: str, keyword: str, example: list[str]) -> str:
    """An array a NumPy function differentiates, passed by keyword."""
    listed = ", ".join(example)
    return (
        f"pass `{keyword}` to {shown} by position, as in {shown}({listed}): adcompile reads "
        "the arrays a function differentiates from its positional arguments"
    )


def no_rule_on_path(name: str) -> str:
    """A function without a rule whose result the derivative depends on."""
    if name.rsplit(".", 1)[-1] not in STEP_FUNCTIONS:
        return (
            f"adcompile has no derivative rule for `{name}`, and the result depends on it "
            f"through a differentiated input; register one with adcompile.derivative({name}), "
            "or use it only in conditions or on values that are not differentiated"
        )
    return (
        f"`{name}` has no derivative, but the result depends on it through a "
        "differentiated input; use it only in conditions, or on values that are not "
        "differentiated"
    )


def extra_arguments(name: str, params: tuple[str, ...], statics: tuple) -> str:
    """A NumPy call with more positional arguments than its rule takes."""
    keywords = "".join(f", {k}=" for k, _ in statics)
    return f"{name} takes ({', '.join(params)}{keywords}) here; other arguments are not supported"


def local_function_rebound(name: str) -> str:
    """A name bound to a nested function and bound again."""
    return (
        f"`{name}` is bound to a local function and bound again; adcompile inlines each call "
        "with one definition and does not follow which one ran: give each function its own "
        "name"
    )


def local_function_used_outside(name: str) -> str:
    """A nested function defined in a branch or loop and called where it may not be."""
    return (
        f"the local function `{name}` is defined inside an `if` or a loop and used outside "
        "the statements that follow its definition there; define it at the top of the "
        "function body"
    )


def numpy_rule_in_scalar_code(name: str) -> str:
    """A user rule naming NumPy, used in a function compiled as scalar (math) code."""
    return (
        f"the rule for `{name}` uses NumPy (`np`), but this function is compiled as scalar "
        "code, whose generated module imports only math; write the rule with math, or use "
        "NumPy in the function"
    )


def too_many_inlined(limit: int) -> str:
    """Inlining the user's function calls has no end in sight."""
    return (
        f"adcompile inlines each call of your own functions, and this function's calls expand "
        f"to more than {limit:,} inlined bodies (a helper that calls another twice, nested, "
        "doubles them at each level); compute a repeated call once into a variable, or turn "
        "the recursion of calls into a loop"
    )


def reduction_keyword(name: str, keyword: str | None) -> str:
    """``max(gen, default=0.0)``, ``min(xs, key=f)``: keywords of the builtin reductions."""
    if keyword == "default":
        return (
            f"`{name}()` with `default=` is not supported; compute the case it covers "
            f"separately (e.g. `{name}(...) if n > 0 else 0.0`)"
        )
    if keyword == "key" and name in ("min", "max"):
        return (
            f"`{name}()` with `key=` is not supported; compare the keys yourself, e.g. "
            f"`a if abs(a) {'<' if name == 'min' else '>'}= abs(b) else b` for "
            f"`{name}(a, b, key=abs)`"
        )
    return f"`{name}()` with `{keyword}=` is not supported"


def function_value(name: str) -> str:
    """A local function used as a value (returned, stored) rather than called."""
    return (
        f"`{name}` is a function here, not a number: local functions can only be called "
        f"(`{name}(...)`); the result to differentiate must be a number"
    )


def changed_in_place(name: str, stmt: ast.AugAssign) -> str:
    """An augmented assignment to an array that another name may hold too."""
    target, rest = ast.Name(id=name), ast.Constant(value=...)
    update = ast.unparse(ast.AugAssign(target=target, op=stmt.op, value=rest))
    rebinding = ast.unparse(ast.BinOp(left=target, op=stmt.op, right=rest))
    return (
        f"`{update}` would change in place an array that another name may hold too (NumPy "
        f"updates it where it is); adcompile computes a new array, so write "
        f"`{name} = {rebinding}`"
    )


CLIP_WITHOUT_BOUNDS = "np.clip needs a lower or an upper bound that is not None"


EINSUM_ARGUMENTS = (
    'np.einsum takes its subscripts and then the operands here, e.g. np.einsum("ij,jk->ik", A, B)'
)
EINSUM_SUBSCRIPTS = (
    "np.einsum's subscripts must be a string literal (or a module-level string constant) "
    'here, e.g. np.einsum("ij,jk->ik", A, B): they are read when the gradient is compiled, '
    "to write the derivative; the form with lists of axis numbers is not supported either"
)
EINSUM_OPTIMIZE = (
    "np.einsum's optimize= takes a literal True, False, 'greedy' or 'optimal' here, which "
    "its derivative uses too (a contraction path from np.einsum_path fits one call only)"
)


def einsum_operands(count: int) -> str:
    """An einsum call with more operands than its rules take."""
    return (
        f"with {count} operands it has no derivative rule (1 to 3 here); contract them in steps, "
        'e.g. np.einsum("ij,jk,kl,lm->im", A, B, C, D) as '
        'np.einsum("ij,jk,km->im", A, B, np.einsum("kl,lm->km", C, D))'
    )


def unsupported_keyword(name: str, keyword: str, accepted: list[str]) -> str:
    """A keyword argument an array rule does not take."""
    known = ", ".join(f"`{k}`" for k in accepted) or "no keyword arguments"
    return f"{name}: the keyword `{keyword}` is not supported here (it takes {known})"


def unsupported_argument(name: str, param: str, accepted: list[str]) -> str:
    """A positional argument of a NumPy call that its array rule does not take."""
    known = ", ".join(f"`{k}`" for k in accepted)
    return (
        f"{name}: this argument is its `{param}`, which is not supported here except as "
        f"None (it takes {known}); leave it out"
    )


def unsupported_method(method: str, supported: tuple[str, ...]) -> str:
    """A method call on an array that has no rule."""
    listed = ", ".join(f".{m}()" for m in supported)
    return f"the method `.{method}()` has no derivative rule; supported on arrays: {listed}"


def unsupported_attribute(expression: str) -> str:
    """An attribute of a local value that is neither ``.T`` nor a shape attribute."""
    return (
        f"reading `{expression}` is not supported: of a local value (a NumPy array) only "
        ".T, and .shape/.size/.ndim/.dtype where no derivative flows, can be read; "
        "pass any other value in as a parameter"
    )


EXPLAIN_ARRAYS = (
    "explain walks through functions of numbers; this one uses NumPy arrays "
    "(adcompile dump shows its gradient)"
)


# What a generated gradient's helper computes, for the helpers with no derivative rule.
_HELPER_ORIGINS = {
    "prod_pairs": "np.prod's second derivative (a third derivative of np.prod)",
    "cofactors_tangent": (
        "np.linalg.det's second derivative (a third derivative of np.linalg.det)"
    ),
    "cumprod_pairs": "np.cumprod's second derivative (a third derivative of np.cumprod)",
    "cumprod_second": "np.cumprod's second derivative (a third derivative of np.cumprod)",
    "split_adjoint": "the list of np.concatenate's adjoints used whole",
    "gradient_like": "a gradient assembled from parts whose keys are not constants",
    "forward_gradient": "a forward-mode gradient of NumPy code (use reverse mode, the default)",
}


def no_second_derivative(helper: str) -> str:
    """A generated gradient differentiated again through a helper that has no rule."""
    origin = _HELPER_ORIGINS.get(helper, f"the helper `{helper}`")
    return (
        f"second derivatives through {origin} are not supported yet "
        "(hessian and grad of grad differentiate the generated gradient, which calls "
        f"`{helper}` here)"
    )
