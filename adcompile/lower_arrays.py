"""Lowering of NumPy code: calls with static arguments, methods, attributes and indexing.

A function that names NumPy is lowered in *array mode*: its operators and NumPy calls take
the array rules (``rules/arrays.py``). This mixin of ``lower.Lowerer`` adds what only array
code has:

- static arguments (``axis=1``, ``keepdims=True``, an index): non-differentiable
  expressions that the forward code keeps in the user's spelling and the rule reads;
- methods and attributes of arrays (``x.sum(axis=0)``, ``x.T``, ``x.shape``);
- lists of arrays as arguments (``np.concatenate([a, b])``, ``np.array([x, y])``);
- indexing: a parameter indexed by constant keys (``params["W1"]``, ``layers[0][1]``) is a
  *leaf* of a structured parameter whose gradient is assembled in the parameter's shape;
  any other index is ``operator.getitem`` with the index as a static argument.
"""

from __future__ import annotations

import ast
import inspect
import operator
import types
from collections.abc import Mapping

from . import messages
from .astutil import walk
from .einsum import (
    EinsumError,
    Subscripts,
    adjoint_statics,
    parse_subscripts,
)
from .errors import AdcompileError, NoDerivativeError, UnsupportedSyntaxError
from .ir import ARG_PLACEHOLDER, Apply, Copy, Opaque, Var, helper_alias
from .recipes import recipe_of
from .rules import Rule
from .rules.registry import REQUIRED, array_rules, lookup_rule
from .source import FunctionSource, StaticFunction, UnreadDefault, load_function

# Array methods and the NumPy function whose rule each one takes (``x.sum()`` is np.sum(x)).
METHODS = (
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "reshape",
    "transpose",
    "dot",
    "copy",
    "cumsum",
    "cumprod",
    "ravel",
    "swapaxes",
)
# Methods taking their shape or axes as separate arguments: ``x.reshape(3, 4)``.
SPREAD_METHODS = frozenset({"reshape", "transpose"})
# np.einsum's optimize= values that suit its adjoints too (a path suits one call only).
EINSUM_OPTIMIZE = (True, False, "greedy", "optimal")
# Attributes that describe an array without depending on its values.
SHAPE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "dtype"})
# NumPy functions whose result depends only on shapes (or on nothing): exactly constant.
SHAPE_FUNCTIONS = frozenset(
    {"zeros_like", "ones_like", "empty_like", "zeros", "ones", "eye", "identity", "arange"}
    | {"shape", "size", "ndim"}
)


def is_numpy(value: object) -> bool:
    """True for the numpy module, its submodules, and NumPy's functions and ufuncs."""
    if value is None or isinstance(value, int | float | str):
        return False
    if isinstance(value, types.ModuleType):
        return value.__name__ == "numpy" or value.__name__.startswith("numpy.")
    module = getattr(value, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.")


def helper_name(value: object) -> str | None:
    """The name of a helper of ``array_helpers.py`` (or of a generated module's copy of one)."""
    return getattr(value, "adcompile_helper", None) if callable(value) else None


def canonical_helper(name: str) -> object:
    """The helper function itself: the object its rules are registered for."""
    from .rules.array_helpers import HELPERS

    return HELPERS[name]


def uses_numpy(fs: FunctionSource, local: set[str]) -> bool:
    """True if a function is array code: it names NumPy, or uses array-only syntax.

    Array-only syntax: ``a @ b``, an attribute or method of a local value (``x.T``,
    ``x.sum()``), or a local indexed by a constant key (``params["W1"]``, ``pair[0]``) other
    than an item of a module tuple of numbers (``for p in PTS: p[0]``).
    """
    return _array_code(fs, local, set())


def _array_code(fs: FunctionSource, local: set[str], seen: set[int]) -> bool:
    node, namespace = _parts_that_run(fs), fs.namespace
    if not _uses_numpy(node, namespace, local, seen):
        return False  # scalar code (the common case) pays for one walk only
    items = _items_of_number_tuples(node, namespace, local)
    return not items or _uses_numpy(node, namespace, local - items, seen)


_PLAIN_DEFAULTS = (int, float, str, tuple, type(None))


def _parts_that_run(fs: FunctionSource) -> ast.AST:
    """The body, and the defaults whose values are not plain numbers or tuples (an array
    default makes array code): annotations and decorators say nothing of what runs."""
    node = fs.node
    body = node.body if isinstance(node.body, list) else [ast.Expr(node.body)]
    values = [*fs.defaults, *[object()] * (len(node.args.defaults) - len(fs.defaults))]
    defaults = [
        ast.Expr(expr)
        for expr, value in zip(node.args.defaults, values, strict=False)
        if not isinstance(value, _PLAIN_DEFAULTS) or isinstance(value, UnreadDefault)
    ]
    return ast.Module(body=[*body, *defaults], type_ignores=[])


def _items_of_number_tuples(
    node: ast.AST, namespace: Mapping[str, object], local: set[str]
) -> set[str]:
    """Names bound only as ``for p in PTS`` over a module tuple of numbers (or of tuples of
    them): ``p[0]`` reads a number of a constant, scalar code as ``PTS[0][0]`` is."""
    stores: dict[str, int] = {}
    items: dict[str, int] = {}
    for child in walk(node):
        if child.__class__ is ast.Name and child.ctx.__class__ is ast.Store:
            stores[child.id] = stores.get(child.id, 0) + 1
        elif (
            child.__class__ is ast.For
            and child.target.__class__ is ast.Name
            and child.iter.__class__ is ast.Name
            and child.iter.id not in local
            and _numbers_in_tuples(namespace.get(child.iter.id))
        ):
            items[child.target.id] = items.get(child.target.id, 0) + 1
    return {name for name, count in items.items() if stores.get(name) == count}


def _numbers_in_tuples(value: object) -> bool:
    """A tuple of numbers, or of tuples of them (at any depth)."""
    return isinstance(value, tuple) and all(
        (isinstance(v, int | float) and not isinstance(v, bool)) or _numbers_in_tuples(v)
        for v in value
    )


def _uses_numpy(
    node: ast.AST, namespace: Mapping[str, object], local: set[str], seen: set[int]
) -> bool:
    """``uses_numpy``, and true too if a function of the user's that it names (a helper the
    objective calls: ``data_loss(w, b) + l2(w)``) is array code; ``seen`` breaks cycles."""
    array_syntax = False
    looked_up = set(local)  # each outside name once: `math` is read at every call
    called: set[str] = set()  # names of called functions: user helpers are inlined
    called_in_modules: set[tuple[str, str]] = set()  # `helpers.f(x)`: (module name, f)
    for child in walk(node):
        cls = child.__class__
        if cls is ast.Name:
            if child.id not in looked_up:
                looked_up.add(child.id)
                if is_numpy(namespace.get(child.id)):
                    return True
        elif cls is ast.Call:
            func = child.func
            if func.__class__ is ast.Name and func.id not in local:
                called.add(func.id)
            elif (
                func.__class__ is ast.Attribute
                and func.value.__class__ is ast.Name
                and func.value.id not in local
            ):
                called_in_modules.add((func.value.id, func.attr))
        elif cls is ast.BinOp:
            array_syntax = array_syntax or isinstance(child.op, ast.MatMult)
        elif cls is ast.Attribute or cls is ast.Subscript:
            array_syntax = array_syntax or _on_local_name(child, local)
    if array_syntax:
        return _numpy_available()
    helpers = [namespace.get(name) for name in sorted(called)]
    for module_name, attr in sorted(called_in_modules):
        module = namespace.get(module_name)
        if isinstance(module, types.ModuleType):
            helpers.append(getattr(module, attr, None))
    return any(_helper_uses_numpy(helper, seen) for helper in helpers if _is_user_code(helper))


def _is_user_code(value: object) -> bool:
    if value.__class__ is StaticFunction:
        return True
    package = (getattr(value, "__module__", None) or "").split(".")[0]
    return value.__class__ is types.FunctionType and package != "adcompile"  # not `grad`


def _helper_uses_numpy(helper: object, seen: set[int]) -> bool:
    if id(helper) in seen or recipe_of(helper) is not None:
        return False  # a cycle, or generated code (its helpers are known primitives)
    seen.add(id(helper))
    try:
        fs = helper.source() if isinstance(helper, StaticFunction) else load_function(helper)
    except (AdcompileError, TypeError):  # no source to read: lowering it will say so
        return False
    from .lower import assigned_names  # the lowering imports this module

    body = fs.node.body if isinstance(fs.node.body, list) else [fs.node.body]
    local = set(fs.param_names()) | assigned_names(body)
    return _array_code(fs, local, seen)


def _on_local_name(node: ast.Attribute | ast.Subscript, local: set[str]) -> bool:
    """``x.T``, ``x.sum``, ``params["W1"]``, ``A[1, 2]``: an attribute, constant key or
    index tuple (no list or tuple takes one) of a local; or an attribute of a computed value
    (``(x ** 2).sum``), which only arrays have here."""
    value = node.value
    if node.__class__ is ast.Attribute and value.__class__ not in _NAMED_OR_CONSTANT:
        return True
    if value.__class__ is not ast.Name or value.id not in local:
        return False
    if node.__class__ is ast.Attribute:
        return True
    return node.slice.__class__ is ast.Tuple or _constant_key(node.slice) is not None


# Attributes of these are modules' (`math.pi`, `np.linalg.det`) or literals' (`(1.0).real`).
_NAMED_OR_CONSTANT = (ast.Name, ast.Attribute, ast.Constant)


def _numpy_available() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:  # scalar code then: the operations fail later, with their own errors
        return False
    return True


def _constant_key(node: ast.expr) -> object:
    """The key of a constant index (``"W1"``, ``0``, ``-1``), or None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _flat_parts(
    parts: ast.Dict, path: tuple[ast.expr, ...]
) -> list[tuple[tuple[ast.expr, ...], ast.expr]] | None:
    """The (index path, adjoint) pairs of a generated ``gradient_like`` dict, or None.

    Keys are constants (``()`` for the adjoint of the whole value); a value is an adjoint,
    or a dict of the parts below its key.
    """
    flat = []
    for key, value in zip(parts.keys, parts.values, strict=True):
        if key is None or not _constant_key_expr(key):
            return None
        below = path if _is_empty_tuple(key) else (*path, key)
        if isinstance(value, ast.Dict):
            nested = _flat_parts(value, below)
            if nested is None:
                return None
            flat += nested
        else:
            flat.append((below, value))
    return flat


def _constant_key_expr(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _is_empty_tuple(node: ast.expr) -> bool:
    return isinstance(node, ast.Tuple) and not node.elts


def _simple_static(node: ast.expr) -> bool:
    """A static expression cheap and safe to repeat: literals, names, slices of those."""
    for child in ast.walk(node):
        if not isinstance(
            child,
            ast.Constant
            | ast.Name
            | ast.Tuple
            | ast.Slice
            | ast.UnaryOp
            | ast.USub
            | ast.Load
            | ast.Attribute,
        ):
            return False
    return True


def as_value(index: ast.expr) -> ast.expr:
    """An index as an ordinary expression: ``1:3`` becomes ``slice(1, 3, None)``."""
    if isinstance(index, ast.Slice):
        parts = [
            p if p is not None else ast.Constant(value=None)
            for p in (index.lower, index.upper, index.step)
        ]
        return ast.Call(func=ast.Name(id="slice", ctx=ast.Load()), args=parts, keywords=[])
    if isinstance(index, ast.Tuple):
        return ast.Tuple(elts=[as_value(e) for e in index.elts], ctx=ast.Load())
    return index


class ArrayLowering:
    """The array-mode parts of ``Lowerer`` (see the module docstring)."""

    # ----- generated code read again (hessian, grad of grad) ------------------------------
    def _helper_alias(self, name: str) -> str:
        """This module's name for a helper function (allocated on first use)."""
        return helper_alias(self.helpers, self.names, name)

    def _assembled_gradient(self, node: ast.Call, target: str) -> bool:
        """``gradient_like(x, {0: b0, 2: b2})`` read back: ``assemble([b0, b2], x, paths)``.

        ``assemble`` (``array_helpers.py``) is the same computation with the parts listed: a
        variadic primitive whose rules pick each part's item of the cotangent or tangent.
        """
        if len(node.args) != 2 or node.keywords or not isinstance(node.args[1], ast.Dict):
            return False
        parts = _flat_parts(node.args[1], ())
        if parts is None:
            return False
        paths = ast.Tuple(
            elts=[ast.Tuple(elts=list(path), ctx=ast.Load()) for path, _ in parts], ctx=ast.Load()
        )
        listed = ast.List(elts=[value for _, value in parts], ctx=ast.Load())
        call = ast.copy_location(
            ast.Call(func=node.func, args=[listed, node.args[0], paths], keywords=[]), node
        )
        rule = lookup_rule(self.rules, canonical_helper("assemble"), 1, arrays=True)
        shown = ast.Name(id=self._helper_alias("assemble"), ctx=ast.Load())
        self._variadic_call(call, target, None, rule, shown)  # its statics are its parameters
        return True

    def _scatter_sum(self, node: ast.Call) -> ast.expr | None:
        """``scatter_into(acc, g, x, i)`` read back: ``acc + scatter(g, x, i)``, the value it
        computes (adding into ``acc`` in place is only how, ``in_place.py``); None if the
        module has no ``scatter`` to call (the user's own code calling ``scatter_into``)."""
        acc, *rest = node.args
        named = (k for k, v in self.fs.namespace.items() if helper_name(v) == "scatter")
        scatter = next(named, None)
        if scatter is None:
            return None
        call = ast.Call(func=ast.Name(id=scatter, ctx=ast.Load()), args=rest, keywords=[])
        total = ast.BinOp(left=acc, op=ast.Add(), right=ast.copy_location(call, node))
        return ast.copy_location(total, node)

    def _split_pieces(self, node: ast.Call, target: str) -> None:
        """``parts = split_adjoint(g, (a, b), axis)`` read back: ``parts[i]`` is a primitive.

        The list itself is kept as a value no derivative may flow through; each ``parts[i]``
        becomes ``split_part(g, (a, b), axis, i)`` (``_split_piece``).
        """
        g, arrays, axis = node.args
        self.split_lists[target] = (self._atom(g), self._static(arrays), self._static(axis))
        error = self._error(NoDerivativeError, node, messages.no_second_derivative("split_adjoint"))
        self._opaque(node, target, no_rule=error)

    def _split_piece(self, node: ast.Subscript, target: str) -> bool:
        """``parts[i]`` for a list made by ``split_adjoint`` (see ``_split_pieces``)."""
        value = node.value
        if not isinstance(value, ast.Name) or value.id not in self.locals:
            return False
        split = self.split_lists.get(self.env.get(value.id))
        if split is None or not isinstance(node.slice, ast.Constant):
            return False
        g, arrays, axis = split
        statics = {"arrays": arrays, "axis": axis, "i": node.slice}
        rule = lookup_rule(self.rules, canonical_helper("split_part"), 1, arrays=True)
        func = ast.Name(id=self._helper_alias("split_part"), ctx=ast.Load())
        render = ast.Call(func=func, args=[_placeholder(0), *statics.values()], keywords=[])
        self._append_apply(node, Apply(target, rule, [g], render, node.lineno, statics=statics))
        return True

    def _is_output_check(self, expr: ast.expr) -> bool:
        """``check_scalar(f)``, ``check_rule_adjoint(a, x, rule)``: a generated gradient's
        checks (a scalar output, a user rule's adjoint of its argument's shape)."""
        if not (self.array_mode and isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
            return False
        if expr.func.id in self.locals:
            return False
        return helper_name(self._resolve_global(expr.func)) in (
            "check_scalar",
            "check_rule_adjoint",
        )

    # ----- rules -------------------------------------------------------------------------
    def _array_rule(self, node: ast.Call, callee: object, n_args: int) -> Rule | None:
        """The rule for a call with ``n_args`` positional arguments (statics may follow)."""
        table = array_rules()
        arities = sorted(set(table.arities(callee)) | set(self.rules.arities(callee)))
        for arity in reversed(arities):
            if arity > n_args:
                continue
            rule = lookup_rule(self.rules, callee, arity, arrays=True)
            if rule is None:
                continue
            extra = n_args - arity  # NumPy's signature is read only past the rule's statics
            if extra <= len(rule.statics) or extra <= _positional_room(callee, rule):
                return rule
        return None

    def _named_extras(
        self, callee: object, rule: Rule, extra: list[ast.expr], skip: int
    ) -> list[tuple[str, ast.expr]]:
        """Each extra positional argument with the name NumPy gives it: ``np.sum(x, 1, None,
        None, True)`` passes axis, dtype, out and keepdims, where the rule lists axis and
        keepdims. A parameter the rule does not take may be passed only as None (its
        default). ``skip`` counts the arguments before the extras (the arrays)."""
        names = [name for name, _ in rule.statics]
        numpy_names = _numpy_positionals(callee)[skip:]
        if len(extra) < 2 or len(numpy_names) < len(extra):
            return list(zip(names[: len(extra)], extra, strict=True))  # as the rule names them
        named = list(zip([names[0], *numpy_names[1 : len(extra)]], extra, strict=True))
        for name, expr in named:
            if name not in names and not _is_none(expr):
                message = messages.unsupported_argument(rule.name, name, names)
                raise self._error(UnsupportedSyntaxError, expr, message)
        return named

    def _statics(
        self,
        node: ast.AST,
        rule: Rule,
        named: list[tuple[str, ast.expr]],
        keywords: list[ast.keyword],
    ) -> dict[str, ast.expr]:
        """Bind named extra positional arguments (``_named_extras``) and keywords to the
        rule's static parameters."""
        names = [name for name, _ in rule.statics]
        given = {name: expr for name, expr in named if name in names}
        for keyword in keywords:
            if keyword.arg not in names:
                shown = keyword.arg or "**"
                message = messages.unsupported_keyword(rule.name, shown, names)
                raise self._error(UnsupportedSyntaxError, keyword, message)
            if keyword.arg in given:
                message = f"{rule.name} got `{keyword.arg}` twice"
                raise self._error(UnsupportedSyntaxError, keyword, message)
            given[keyword.arg] = keyword.value
        statics = {}
        for name, default in rule.statics:
            if name in given:
                statics[name] = self._static(given[name])
            elif default is REQUIRED:
                message = f"{rule.name} needs its `{name}` argument"
                raise self._error(UnsupportedSyntaxError, node, message)
            else:
                statics[name] = ast.parse(repr(default), mode="eval").body
        return statics

    def _static(self, node: ast.expr) -> ast.expr:
        """A non-differentiable argument: renamed, and stored in a temporary unless simple."""
        if isinstance(node, ast.Slice):
            parts = {
                field: None if part is None else self._static(part)
                for field, part in (
                    ("lower", node.lower),
                    ("upper", node.upper),
                    ("step", node.step),
                )
            }
            return ast.Slice(**parts)
        if isinstance(node, ast.Tuple):
            return ast.Tuple(elts=[self._static(e) for e in node.elts], ctx=ast.Load())
        rewritten, reads = self._rewrite_opaque(node)
        if _simple_static(rewritten):
            return rewritten
        temp = self.names.numbered("t")
        self.block.append(Opaque(temp, rewritten, frozenset(reads), node.lineno))
        return ast.Name(id=temp, ctx=ast.Load())

    # ----- calls -------------------------------------------------------------------------
    def _numpy_call(self, node: ast.Call, target: str, callee: object, shown: ast.expr) -> bool:
        """Lower a call of a NumPy function; False if it has no array rule."""
        args = list(node.args)
        for arg in args:
            if isinstance(arg, ast.Starred):
                raise self._error(UnsupportedSyntaxError, arg, messages.CALL_STARRED)
        if callee is getattr(self.numpy, "clip", None):
            self._clip(node, target, shown)
            return True
        if callee is getattr(self.numpy, "einsum", None):
            self._einsum(node, target, callee, shown)
            return True
        rule = self._array_rule(node, callee, len(args))
        if rule is None:
            self._refuse_arrays_by_keyword(node, callee, shown)
            self._refuse_extra_arguments(node, callee, node.args)
            return False
        if rule.variadic:
            self._variadic_call(node, target, callee, rule, shown)
            return True
        operands, extra = args[: rule.arity], args[rule.arity :]
        atoms = [self._atom(arg) for arg in operands]
        named = self._named_extras(callee, rule, extra, rule.arity)
        statics = self._statics(node, rule, named, node.keywords)
        given = [statics.get(name, ast.Constant(value=None)) for name, _ in named]
        keywords = [ast.keyword(arg=k.arg, value=statics[k.arg]) for k in node.keywords]
        placeholders = [_placeholder(i) for i in range(len(atoms))]
        render = ast.Call(func=shown, args=placeholders + given, keywords=keywords)
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno, statics=statics))
        return True

    def _refuse_arrays_by_keyword(self, node: ast.Call, callee: object, shown: ast.expr) -> None:
        """An array a rule differentiates passed by keyword (``np.linalg.solve(A, b=b)``):
        say to pass it by position, rather than that the function has no derivative (a
        user's rule on it too: ``np.sinc(x=x)``)."""
        arities = set(array_rules().arities(callee)) | set(self.rules.arities(callee))
        if not arities:
            return
        try:
            parameters = list(inspect.signature(callee).parameters)  # type: ignore[arg-type]
        except (TypeError, ValueError):  # ufuncs and builtins: their arrays are positional
            return
        differentiated = parameters[: max(arities)]
        for keyword in node.keywords:
            if keyword.arg in differentiated:
                example = differentiated + ["..."] * (len(parameters) > len(differentiated))
                message = messages.array_by_keyword(ast.unparse(shown), keyword.arg, example)
                raise self._error(UnsupportedSyntaxError, keyword, message)

    def _refuse_extra_arguments(self, node: ast.Call, callee: object, args: list[ast.expr]) -> None:
        """A function with a rule for fewer positional arguments (``np.trace(x, 1)``, or
        ``x.cumsum(1, np.float64)``, whose ``args`` start with ``x``): say which arguments
        it takes, rather than that it has no derivative."""
        fewer = [a for a in array_rules().arities(callee) if a < len(args)]
        if fewer:
            rule = lookup_rule(self.rules, callee, max(fewer), arrays=True)
            message = messages.extra_arguments(rule.name, rule.params[: rule.arity], rule.statics)
            first_extra = args[min(len(args) - 1, rule.arity + _positional_room(callee, rule))]
            raise self._error(UnsupportedSyntaxError, first_extra, message)

    def _clip(self, node: ast.Call, target: str, shown: ast.expr) -> None:
        """``np.clip(x, lo, hi)``, bounds given by position or keyword (``a_min``/``min``,
        ``a_max``/``max``). A ``None`` bound clips one side only: ``clip_below(x, lo)`` or
        ``clip_above(x, hi)`` (``rules/arrays.py``), whose rules apply; the forward code shows
        the call as written."""
        operands = _clip_operands(node)
        if isinstance(operands, str):
            raise self._error(UnsupportedSyntaxError, node, operands)
        bounds = [e for e in operands[1:] if not _is_none(e)]
        if not bounds:
            raise self._error(UnsupportedSyntaxError, node, messages.CLIP_WITHOUT_BOUNDS)
        if len(bounds) == 2:
            primal = self.numpy.clip
        else:
            from .rules.arrays import clip_above, clip_below  # imports NumPy: not at start-up

            primal = clip_below if bounds[0] is operands[1] else clip_above
        rule = self._array_rule(node, primal, 1 + len(bounds))
        present = [operands[0], *bounds]
        slots = {id(e): _placeholder(i) for i, e in enumerate(present)}
        render = ast.Call(
            func=shown,
            args=[slots.get(id(a), a) for a in node.args],
            keywords=[ast.keyword(k.arg, slots.get(id(k.value), k.value)) for k in node.keywords],
        )
        atoms = [self._atom(e) for e in present]
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno))

    def _einsum(self, node: ast.Call, target: str, callee: object, shown: ast.expr) -> None:
        """``np.einsum("ij,jk->ik", A, B)``: the subscripts are read now, and with them the
        subscripts of each operand's adjoint (``einsum.py``), static arguments of the rule.
        A call of more than 3 operands has no derivative rule: a value no derivative may
        pass through."""
        if len(node.args) < 2:
            raise self._error(UnsupportedSyntaxError, node, messages.EINSUM_ARGUMENTS)
        spec, operands = node.args[0], node.args[1:]
        text = self._einsum_subscripts(spec)
        try:
            subscripts = parse_subscripts(text, len(operands))
        except EinsumError as exc:
            raise self._error(UnsupportedSyntaxError, spec, f"np.einsum: {exc}") from None
        optimize = self._einsum_optimize(node)
        literal = ast.copy_location(ast.Constant(value=text), spec)
        rule = lookup_rule(self.rules, callee, len(operands), arrays=True)
        try:
            statics = _einsum_statics(rule, subscripts, literal, optimize)
        except EinsumError as exc:
            call = ast.copy_location(ast.Call(node.func, [literal, *operands], node.keywords), node)
            error = self._error(NoDerivativeError, node.func, f"np.einsum: {exc}")
            self._opaque(call, target, no_rule=error)
            return
        atoms = [self._atom(arg) for arg in operands]
        keywords = [ast.keyword(arg="optimize", value=optimize)] if node.keywords else []
        placeholders = [_placeholder(i) for i in range(len(atoms))]
        render = ast.Call(func=shown, args=[literal, *placeholders], keywords=keywords)
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno, statics=statics))

    def _einsum_subscripts(self, node: ast.expr) -> str:
        """The subscripts of an einsum call: a string literal, or a module-level string."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id not in self.locals:
            scope = self.closure
            while scope is not None and node.id not in scope.locals:
                scope = scope.closure
            value = self._resolve_global(node) if scope is None else None
            if isinstance(value, str):
                return value
        raise self._error(UnsupportedSyntaxError, node, messages.EINSUM_SUBSCRIPTS)

    def _einsum_optimize(self, node: ast.Call) -> ast.expr:
        """The ``optimize=`` of an einsum call (False if none), which its adjoints pass on."""
        for keyword in node.keywords:
            if keyword.arg != "optimize":
                message = messages.unsupported_keyword(
                    "np.einsum", keyword.arg or "**", ["optimize"]
                )
                raise self._error(UnsupportedSyntaxError, keyword, message)
            value = keyword.value
            if not (isinstance(value, ast.Constant) and value.value in EINSUM_OPTIMIZE):
                raise self._error(UnsupportedSyntaxError, value, messages.EINSUM_OPTIMIZE)
            return ast.Constant(value=value.value)
        return ast.Constant(value=False)

    def _variadic_call(
        self, node: ast.Call, target: str, callee: object, rule: Rule, shown: ast.expr
    ) -> None:
        """``np.concatenate([a, b], axis=1)``: one operand per element of the list."""
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant | ast.UnaryOp) and _all_constant(first):
            self._opaque(node, target)  # `np.array(1)`, a constant (an index, say)
            return
        if not isinstance(first, ast.List | ast.Tuple):
            message = f"{rule.name} takes a list or tuple literal of arrays here, e.g. [a, b]"
            raise self._error(UnsupportedSyntaxError, node, message)
        sequence = node.args[0]
        if any(isinstance(e, ast.List | ast.Tuple) for e in sequence.elts):
            if _all_constant(sequence):
                self._opaque(node, target)
                return
            message = "nested lists of variables are not supported; build them with np.stack"
            raise self._error(UnsupportedSyntaxError, sequence, message)
        atoms = [self._atom(e) for e in sequence.elts]
        named = self._named_extras(callee, rule, node.args[1:], 1)
        statics = self._statics(node, rule, named, node.keywords)
        listed = type(sequence)(elts=[_placeholder(i) for i in range(len(atoms))], ctx=ast.Load())
        given = [statics.get(name, ast.Constant(value=None)) for name, _ in named]
        keywords = [ast.keyword(arg=k.arg, value=statics[k.arg]) for k in node.keywords]
        render = ast.Call(func=shown, args=[listed, *given], keywords=keywords)
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno, statics=statics))

    def _method_call(self, node: ast.Call, target: str) -> None:
        """``x.sum(axis=0)``, ``x.reshape(3, 4)``: the NumPy function's rule on ``x``."""
        method = node.func
        if method.attr.startswith("arg"):  # argmax, argmin, argsort: integer-valued
            shown = ast.unparse(method)
            error = self._error(NoDerivativeError, node, messages.no_rule_on_path(shown))
            self._opaque(node, target, no_rule=error)
            return
        if method.attr not in METHODS:  # fine on a value no derivative passes through
            message = messages.unsupported_method(method.attr, METHODS)
            self._opaque(node, target, no_rule=self._error(NoDerivativeError, method, message))
            return
        callee = getattr(self.numpy, method.attr)
        args = list(node.args)
        spread = method.attr in SPREAD_METHODS and len(args) > 1
        if spread:  # x.reshape(3, 4) passes the shape (3, 4)
            args = [ast.copy_location(ast.Tuple(elts=args, ctx=ast.Load()), args[0])]
        rule = self._array_rule(node, callee, 1 + len(args))
        if rule is None:
            self._refuse_extra_arguments(node, callee, [method.value, *args])
            shown = ast.unparse(method)
            raise self._error(NoDerivativeError, method, messages.no_rule(shown, callee))
        operands, extra = args[: rule.arity - 1], args[rule.arity - 1 :]
        atoms = [self._atom(method.value), *(self._atom(a) for a in operands)]
        named = self._named_extras(None if spread else callee, rule, extra, rule.arity)
        statics = self._statics(node, rule, named, node.keywords)
        given = [statics.get(name, ast.Constant(value=None)) for name, _ in named]
        if spread:
            given = list(given[0].elts)
        render = ast.Call(
            func=ast.Attribute(value=_placeholder(0), attr=method.attr, ctx=ast.Load()),
            args=[_placeholder(i) for i in range(1, len(atoms))] + given,
            keywords=[ast.keyword(arg=k.arg, value=statics[k.arg]) for k in node.keywords],
        )
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno, statics=statics))

    # ----- attributes --------------------------------------------------------------------
    def _array_attribute(self, node: ast.Attribute, target: str) -> None:
        """``x.T`` takes the transpose rule; ``x.shape`` & co. are values with no derivative."""
        if node.attr in SHAPE_ATTRIBUTES:
            self._opaque(node, target)
            return
        if node.attr != "T":
            message = messages.unsupported_attribute(ast.unparse(node))  # `(x + y).real`
            raise self._error(UnsupportedSyntaxError, node, message)
        rule = lookup_rule(self.rules, self.numpy.transpose, 1, arrays=True)
        atoms = [self._atom(node.value)]
        render = ast.Attribute(value=_placeholder(0), attr="T", ctx=ast.Load())
        statics = {"axes": ast.Constant(value=None)}
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno, statics=statics))

    # ----- indexing ----------------------------------------------------------------------
    def _array_subscript(self, node: ast.Subscript, target: str) -> None:
        """A leaf of a structured parameter, or ``operator.getitem`` with a static index."""
        if self._split_piece(node, target):
            return
        found = self._tree_path(node)
        if found is not None:
            self._leaf(target, *found, node.lineno)
            return
        rule = lookup_rule(self.rules, operator.getitem, 1, arrays=True)
        atoms = [self._atom(node.value)]
        index = self._static(node.slice)
        render = ast.Subscript(value=_placeholder(0), slice=index, ctx=ast.Load())
        statics = {"index": as_value(index)}
        self._append_apply(node, Apply(target, rule, atoms, render, node.lineno, statics=statics))

    def _tree_path(self, node: ast.expr) -> tuple[str, tuple[object, ...]] | None:
        """(parameter, keys) if ``node`` is a parameter indexed by constant keys only."""
        keys: list[object] = []
        while isinstance(node, ast.Subscript):
            key = _constant_key(node.slice)
            if key is None:
                return None
            keys.append(key)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.locals:
            return None
        root = self.tree_aliases.get(self.env.get(node.id))
        if root is None:
            return None
        param, path = root
        return param, (*path, *reversed(keys))

    def _leaf(self, target: str, param: str, path: tuple[object, ...], line: int) -> None:
        """``target = param[k1][k2]``: a copy of the leaf's stand-in variable."""
        stand_in = self.leaf_names.get((param, path))
        if stand_in is None:
            stand_in = self.names.fresh("_".join([param, *(str(k).lstrip("-") for k in path)]))
            self.leaf_names[(param, path)] = stand_in
            self.leaves.setdefault(param, []).append((path, stand_in))
            self.leaf_exprs[stand_in] = _path_expr(param, path)
        render = _path_expr(param, path)
        self.block.append(Copy(target, Var(stand_in), line, render=render))
        self.tree_aliases[target] = (param, path)

    def _unpack_tree(self, target: ast.Tuple | ast.List, value: ast.expr) -> bool:
        """``W, b = layers[1]``: each name a leaf one level further down; False if not a tree."""
        found = self._tree_path(
            ast.Subscript(value=value, slice=ast.Constant(value=0), ctx=ast.Load())
        )
        if found is None:
            return False
        param, path = found
        for elt in target.elts:
            self._check_name_target(elt)
        for i, elt in enumerate(target.elts):
            new = self._version(elt.id)
            self._leaf(new, param, (*path[:-1], i), target.lineno)
            self.env[elt.id] = new
        return True


def _einsum_statics(
    rule: Rule | None, subscripts: Subscripts, literal: ast.Constant, optimize: ast.Constant
) -> dict[str, ast.expr]:
    """The static arguments of np.einsum's rule: the call's subscripts and optimize=, and
    how each operand's adjoint is built (``to_a``, ``fill_a``, ...: ``einsum.Adjoint``);
    EinsumError for a call with no rule."""
    if rule is None:
        raise EinsumError(messages.einsum_operands(len(subscripts.inputs)))
    statics: dict[str, ast.expr] = {"subscripts": literal, "optimize": optimize}
    for name, value in adjoint_statics(subscripts).items():
        statics[name] = ast.Constant(value=value)
    return statics


_CLIP_KEYWORDS = {"a_min": 1, "min": 1, "a_max": 2, "max": 2}


def _clip_operands(node: ast.Call) -> list[ast.expr] | str:
    """``x``, the lower and the upper bound of an ``np.clip`` call (a missing bound is a
    ``None`` literal), or what is wrong with the call."""
    if len(node.args) > 3:
        return "np.clip takes an array and two bounds here (no `out`)"
    operands: list[ast.expr | None] = [*node.args, None, None, None][:3]
    for keyword in node.keywords:
        position = _CLIP_KEYWORDS.get(keyword.arg)
        if position is None:
            return messages.unsupported_keyword(
                "np.clip", keyword.arg or "**", list(_CLIP_KEYWORDS)
            )
        if operands[position] is not None:
            return f"np.clip got its {'lower' if position == 1 else 'upper'} bound twice"
        operands[position] = keyword.value
    if operands[0] is None:
        return "np.clip needs the array to clip as its first argument"
    return [e if e is not None else ast.Constant(value=None) for e in operands]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _placeholder(i: int) -> ast.Name:
    return ast.Name(id=ARG_PLACEHOLDER.format(i), ctx=ast.Load())


def _path_expr(param: str, path: tuple[object, ...]) -> ast.expr:
    expr: ast.expr = ast.Name(id=param, ctx=ast.Load())
    for key in path:
        expr = ast.Subscript(value=expr, slice=ast.Constant(value=key), ctx=ast.Load())
    return expr


def _all_constant(node: ast.expr) -> bool:
    return all(
        isinstance(n, ast.Constant | ast.List | ast.Tuple | ast.Load | ast.UnaryOp | ast.USub)
        for n in ast.walk(node)
    )


def _positional_room(callee: object, rule: Rule) -> int:
    """How many positional arguments may follow a call's arrays: the rule's static
    parameters or, where it has some, NumPy's (passed as None where the rule lacks them,
    see ``_named_extras``)."""
    if not rule.statics:
        return 0
    return max(len(rule.statics), len(_numpy_positionals(callee)) - rule.arity)


def _numpy_positionals(callee: object) -> list[str]:
    """The names of a NumPy function's positional parameters, in order (none known for a
    ufunc or where there is no signature)."""
    try:
        parameters = inspect.signature(callee).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in positional]
