"""Lower a function's AST to the core form (see ``ir.py``).

One primitive per statement, a fresh name on every reassignment, augmented assignment, tuple
unpacking and conditional expressions desugared. This module knows nothing about derivatives
beyond asking the rule table whether a callable has a rule; everything outside the supported
subset is rejected here, at the node that uses it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import math
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass, replace

from . import messages
from .aliasing import OwnedArrays, shared_name
from .astutil import BUILTIN_MARK, builtin_call, clone, clone_located, load, names_in, walk
from .calls import Binding, bind_arguments, check_cycle, relabel
from .desugar import Desugar
from .errors import AdcompileError, NoDerivativeError, UnsupportedSyntaxError
from .ir import (
    ARG_PLACEHOLDER,
    UNBOUND,
    Apply,
    Atom,
    Const,
    Copy,
    CoreFunction,
    Global,
    If,
    Loop,
    Opaque,
    Return,
    RuledBody,
    Stmt,
    Var,
    assignment_counts,
    atom_expr,
    refuse_differentiating_again,
)
from .iteration import IterationRewriter
from .local_functions import local_functions, misplaced_local_function
from .lower_arrays import (
    SHAPE_FUNCTIONS,
    ArrayLowering,
    canonical_helper,
    helper_name,
    is_numpy,
    uses_numpy,
)
from .mutating_calls import first_mutating_call
from .names import NameTable, function_identifiers, user_name_table
from .none_returns import none_returned
from .recipes import recipe_of
from .rules import Rule, RuleTable, active_rules
from .rules.registry import is_users_rule, lookup_rule
from .source import (
    ComputedGlobal,
    FunctionSource,
    StaticFunction,
    UnboundClosureVariable,
    literal_value,
    load_function,
)
from .unbound import checked_name, maybe_unbound_reads

BINARY_OPERATORS: dict[type[ast.operator], Callable[..., object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
UNARY_OPERATORS: dict[type[ast.unaryop], Callable[..., object]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
# Modules whose functions and constants generated code may name (under a fresh alias).
RENDERABLE_MODULES = {"math": math}
# Calls of the user's functions inlined into one generated function, at most. Each call is
# a copy of the callee's body; a helper calling another twice, nested d deep, makes 2**d.
MAX_INLINED = 5_000
# `for v in (a, b, ...)` over the function's own values picks each item by a chain of tests,
# of at most this many items (a longer one is refused with its own message).
MAX_LITERAL_LOOP = 32
# Builtins generated code may call where no derivative is needed (branch tests).
NONDIFF_BUILTINS = frozenset(
    {"abs", "min", "max", "pow", "float", "int", "round", "bool", "len", "range", "list", "tuple"}
)

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_ATOMIC = (ast.Constant, ast.Name, ast.Attribute)
_BIT_OPS = (ast.BitAnd, ast.BitOr, ast.BitXor)
_NUMBER_TYPES = (bool, int, float)
_TUPLE_LIST = (ast.Tuple, ast.List)
_NAME_ATTRIBUTE = (ast.Name, ast.Attribute)
# Array and autodiff libraries whose functions are Python code adcompile must not inline
# as the user's own (autograd.numpy's wrappers): their modules are refused by name.
_OTHER_AD_LIBRARIES = frozenset({"autograd", "jax", "torch", "tensorflow"})


_PLACEHOLDER_IDS = [ARG_PLACEHOLDER.format(i) for i in range(8)]


_HANDLERS: dict[tuple[type, str, type], Callable[..., None] | None] = {}


def _handler(lowerer: type, prefix: str, node_class: type) -> Callable[..., None] | None:
    """The lowerer's method for a node class (``_expr_BinOp``), looked up once per class."""
    key = (lowerer, prefix, node_class)
    if key not in _HANDLERS:
        _HANDLERS[key] = getattr(lowerer, f"{prefix}{node_class.__name__}", None)
    return _HANDLERS[key]


def _placeholder(i: int) -> ast.Name:
    return load(_PLACEHOLDER_IDS[i] if i < 8 else ARG_PLACEHOLDER.format(i))


def _bound_by(stmt: ast.stmt) -> tuple[list[ast.expr], list[ast.stmt]]:
    """The targets a statement binds, and the statements nested in it (same scope)."""
    cls = stmt.__class__
    if cls is ast.Assign:
        return stmt.targets, []
    if cls is ast.AugAssign or cls is ast.AnnAssign:
        return [stmt.target], []
    if cls is ast.For or cls is ast.AsyncFor:
        return [stmt.target], stmt.body + stmt.orelse
    if cls is ast.If or cls is ast.While:
        return [], stmt.body + stmt.orelse
    if cls is ast.With or cls is ast.AsyncWith:
        return [i.optional_vars for i in stmt.items if i.optional_vars], stmt.body
    if cls is ast.FunctionDef:  # `def g` makes `g` a local, as an assignment does
        return [ast.Name(id=stmt.name, ctx=ast.Store())], []
    if cls is ast.Try:
        handlers = [s for h in stmt.handlers for s in h.body]
        return [], stmt.body + handlers + stmt.orelse + stmt.finalbody
    return [], []


def assigned_names(body: list[ast.stmt]) -> set[str]:
    """Names the function body binds (its locals), not looking into nested scopes."""
    found: set[str] = set()
    stack = list(body)
    while stack:
        targets, nested = _bound_by(stack.pop())
        stack.extend(nested)
        for target in targets:
            found.update(n.id for n in walk(target) if isinstance(n, ast.Name))
    return found


def returns_in(body: list[ast.stmt]) -> list[ast.Return]:
    """The ``return`` statements among the statements (not in nested functions)."""
    found, stack = [], list(body)
    while stack:
        stmt = stack.pop()
        if stmt.__class__ is ast.Return:
            found.append(stmt)
        elif stmt.__class__ in _COMPOUND:  # simple statements hold none: most are skipped
            stack.extend(getattr(stmt, "body", []))
            stack.extend(getattr(stmt, "orelse", []))
            stack.extend(getattr(stmt, "finalbody", []))
            stack.extend(s for h in getattr(stmt, "handlers", []) for s in h.body)
            stack.extend(s for case in getattr(stmt, "cases", []) for s in case.body)
    return sorted(found, key=lambda r: (r.lineno, r.col_offset))


# Statements holding other statements of the same function (nested defs are other scopes);
# a set, as a class lookup costs less than isinstance against nine classes.
_COMPOUND = frozenset(
    {ast.If, ast.For, ast.While, ast.Try, ast.TryStar, ast.With, ast.AsyncFor, ast.AsyncWith}
    | {ast.Match}
)


def _only_range_index(var: str, body: list[ast.stmt]) -> bool:
    """True if the statements bind ``var`` only as the index of ``for var in range(...)``."""
    stores = ranges = 0
    for stmt in body:
        for node in walk(stmt, prune=_NEW_SCOPES):
            if isinstance(node, ast.Name) and node.id == var and isinstance(node.ctx, ast.Store):
                stores += 1
            elif (
                isinstance(node, ast.For)
                and isinstance(node.target, ast.Name)
                and node.target.id == var
                and isinstance(node.iter, ast.Call)
                and isinstance(node.iter.func, ast.Name)
                and node.iter.func.id == "range"
            ):
                ranges += 1
    return stores == ranges


def falls_off_end(body: list[ast.stmt]) -> bool:
    """True if some path through the statements reaches their end without a ``return`` (or
    ``raise``): there Python returns None. Judged from the syntax alone, like a type checker:
    ``if x > 0: return a`` followed by ``if x <= 0: return b`` counts as falling off."""
    return not any(_always_leaves(stmt) for stmt in body)


def _always_leaves(stmt: ast.stmt) -> bool:
    """True if control never passes from ``stmt`` to the statement after it."""
    cls = stmt.__class__
    if cls is ast.Return or cls is ast.Raise:
        return True
    if cls is ast.If:
        return not falls_off_end(stmt.body) and bool(stmt.orelse) and not falls_off_end(stmt.orelse)
    if cls is ast.While or cls is ast.For:
        if _breaks_out(stmt.body):
            return False
        endless = cls is ast.While and _always_true(stmt.test)
        return endless or (bool(stmt.orelse) and not falls_off_end(stmt.orelse))
    # `try`, `with`, `match`: unsupported, and the lowering says so at the block itself.
    return cls in _COMPOUND


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def _breaks_out(body: list[ast.stmt]) -> bool:
    """A ``break`` that leaves the loop whose body this is: not one inside an inner loop's
    body, but one in an inner loop's ``else:``, which belongs to this loop."""
    for stmt in body:
        if stmt.__class__ is ast.Break:
            return True
        if stmt.__class__ is ast.If and (_breaks_out(stmt.body) or _breaks_out(stmt.orelse)):
            return True
        if stmt.__class__ in (ast.For, ast.While) and _breaks_out(stmt.orelse):
            return True
    return False


def _first_yield(body: list[ast.stmt]) -> ast.expr | None:
    """A ``yield`` of the function itself (it is then a generator), if any."""
    for stmt in body:
        for node in walk(stmt, prune=_NEW_SCOPES):
            if isinstance(node, ast.Yield | ast.YieldFrom):
                return node
    return None


_NEW_SCOPES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.comprehension)


class Lowerer(ArrayLowering):
    """Turns one function's AST into a ``CoreFunction``."""

    def __init__(
        self, fs: FunctionSource, rules: RuleTable | None = None, parent: Lowerer | None = None
    ) -> None:
        self.fs = fs
        self.rules = rules or active_rules()
        self.parent = parent
        self.env: dict[str, str] = {}
        self.block: list[Stmt] = []
        self.locals: set[str] = set()
        self.first_bound: set[str] = set()
        self.loop_indices: set[str] = set()  # versions that hold a range loop's index (ints)
        # Array code only: names that hold one array (aliasing.py); set in array mode.
        self.shared: OwnedArrays | None = None
        self.local_functions: dict[str, ast.FunctionDef | ast.Lambda] = {}
        self.closure: Lowerer | None = None  # the enclosing function of a nested def/lambda
        self.in_loop_test = False
        if parent is None:
            self.names: NameTable = user_name_table(fs.node, source=fs.text_of(fs.node))
            self.math_alias = "math"
            self.constants: dict[str, object] = {}
            # (id of the namespace, name) -> (chosen name, the namespace): holding the
            # namespace keeps its id from being reused by a later callee's namespace.
            self.constant_names: dict[tuple[int, str], tuple[str, object]] = {}
            self.temporaries: set[str] = set()
            self.call_labels: dict[str, tuple[ast.Call, list[Atom]]] = {}
            self.call_results: dict[str, str] = {}
            self.call_chain: list[FunctionSource] = [fs]
            self.array_mode, self.numpy, self.numpy_alias = False, None, "np"
            # Structured parameters: names bound to a parameter indexed by constant keys.
            self.tree_aliases: dict[str, tuple[str, tuple[object, ...]]] = {}
            self.leaf_names: dict[tuple[str, tuple[object, ...]], str] = {}
            self.leaves: dict[str, list[tuple[tuple[object, ...], str]]] = {}
            self.leaf_exprs: dict[str, ast.expr] = {}
            self.helpers: dict[str, str] = {}  # helper functions called, by their alias
            # Generated gradients read back: lists made by split_adjoint (lower_arrays.py).
            self.split_lists: dict[str, tuple[Atom, ast.expr, ast.expr]] = {}
            self.inlined = [0]  # bodies inlined so far, shared with every callee's lowerer
            self.inlined_functions: list[object] = []  # ... and the functions they are of
            self.ruled_bodies: list[RuledBody] = []  # bodies of functions with a user rule
        else:  # an inlined callee shares the caller's names and module-level state
            self.names, self.math_alias = parent.names, parent.math_alias
            self.constants, self.constant_names = parent.constants, parent.constant_names
            self.temporaries, self.call_labels = parent.temporaries, parent.call_labels
            self.call_results = parent.call_results
            self.call_chain = [*parent.call_chain, fs]
            self.array_mode, self.numpy = parent.array_mode, parent.numpy
            self.shared = OwnedArrays(frozenset()) if parent.array_mode else None
            self.numpy_alias, self.tree_aliases = parent.numpy_alias, parent.tree_aliases
            self.leaf_names, self.leaves = parent.leaf_names, parent.leaves
            self.leaf_exprs, self.helpers = parent.leaf_exprs, parent.helpers
            self.split_lists = parent.split_lists
            self.inlined = parent.inlined
            self.inlined_functions = parent.inlined_functions
            self.ruled_bodies = parent.ruled_bodies
        self.uses_math = False
        # Set by lower_function for jacobians and jvp/vjp: a final ``return a, b`` is allowed.
        self.tuple_output = False
        self.outputs: list[str] | None = None
        self.gathered: str | None = None  # the early returns' result variable (desugar.py)
        # Reads of the user's locals that some path leaves unbound, and the checks made.
        self.unbound_reads: dict[tuple[int, int, str], bool] = {}
        self.in_opaque = False  # rewriting a test or a value with no derivative, whole
        self.opaque_may_skip = False  # ... at a part of it Python may skip (`and` operands)
        self.bound_checks: set[tuple[int, str]] = set()

    # ----- entry point -------------------------------------------------------------------
    def lower(self) -> CoreFunction:
        """Lower the whole function."""
        node = self.fs.node
        self._check_signature(node)
        params = self.fs.param_names()
        body = self._function_body(node)
        self._check_returns(body)
        self._refuse_none_returned(body)  # before lowering, which rewrites early returns
        self._check_local_functions(body)
        self._find_unbound_reads(body)
        body = Desugar(self.names).function_body(body)
        self.locals = set(params) | assigned_names(body)
        self._check_einsum_subscripts(node)
        self.math_alias = self._choose_math_alias()
        if uses_numpy(self.fs, self.locals) or _generated_array_code(self.fs):
            self._enter_array_mode(params)
        for name in params:
            self.env[name] = name
        output = self.names.fresh(_output_stem(self.fs.name, params))
        own_rule = self._own_rule(params)
        if own_rule is not None:
            self.call_chain = []  # the body is lowered once more, as the rule's forward part
            atoms: list[Atom] = [Var(p) for p in params]
            self._apply_user_rule(node, output, self.fs, atoms, own_rule)
            self.block.append(Return(Var(output), self.block[-1].line))
        else:
            self._lower_body(body, output)
        return CoreFunction(
            name=self.fs.name,
            params=params,
            body=self.block,
            output=output,
            constants=self.constants,
            math_alias=self.math_alias,
            uses_math=self.uses_math,
            names=self.names,
            temporaries=self.temporaries,
            call_labels=self.call_labels,
            call_results=self.call_results,
            outputs=self.outputs,
            def_line=node.lineno,
            gathered=self.gathered,
            array_mode=self.array_mode,
            numpy_alias=self.numpy_alias,
            leaves=self.leaves,
            leaf_exprs=self.leaf_exprs,
            helpers=self.helpers,
            ruled_bodies=self.ruled_bodies,
            inlined_functions=self.inlined_functions,
        )

    def _enter_array_mode(self, params: list[str]) -> None:
        import numpy  # only functions that name NumPy get here: it is imported already

        self.array_mode, self.numpy = True, numpy
        self.shared = OwnedArrays(frozenset(params))
        user_np_is_numpy = "np" not in self.locals and self.fs.namespace.get("np") is numpy
        self.numpy_alias = "np" if user_np_is_numpy else self.names.fresh("np")
        self.tree_aliases.update({p: (p, ()) for p in params})

    def _own_rule(self, params: list[str]) -> Rule | None:
        """A user rule registered for the very function being differentiated."""
        origin = self.fs.origin
        return self.rules.lookup(origin, len(params)) if origin is not None else None

    def _choose_math_alias(self) -> str:
        # The user's own `math`, when it is the math module, can keep its name.
        user_math_is_module = "math" not in self.locals and self.fs.namespace.get("math") is math
        if user_math_is_module:
            return "math"
        return self.names.fresh("math")

    def _error(self, cls: type[AdcompileError], node: ast.AST, message: str) -> AdcompileError:
        return self.fs.error(cls, node, message)

    def _check_einsum_subscripts(self, node: ast.FunctionDef | ast.Lambda) -> None:
        """``s = "ij,jk->ik"; np.einsum(s, x, y)``, here or in a local function: subscripts
        in a variable of the function are refused at the call (lowering ``s = ...`` would
        say that a string is not a number), as other subscripts that are not literals."""
        if "einsum" not in self.fs.text_of(node):  # the usual case: no walk of the tree
            return
        bound = set(self.locals)
        for inner in walk(node):
            if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
                bound.add(inner.id)
            elif isinstance(inner, ast.arg):
                bound.add(inner.arg)
        for call in walk(node):
            if not (isinstance(call, ast.Call) and call.args):
                continue
            func, spec = call.func, call.args[0]
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "einsum"
                and isinstance(func.value, ast.Name)
                and func.value.id not in bound
                and is_numpy(self.fs.namespace.get(func.value.id))
                and isinstance(spec, ast.Name)
                and spec.id in bound
            ):
                raise self._error(UnsupportedSyntaxError, spec, messages.EINSUM_SUBSCRIPTS)

    def _check_signature(self, node: ast.FunctionDef | ast.Lambda) -> None:
        if isinstance(node, ast.AsyncFunctionDef):
            raise self._error(UnsupportedSyntaxError, node, messages.ASYNC_DEF)
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs:
            bad = args.vararg or args.kwarg or args.kwonlyargs[0]
            raise self._error(UnsupportedSyntaxError, bad, messages.NON_POSITIONAL_PARAMS)

    def _function_body(self, node: ast.FunctionDef | ast.Lambda) -> list[ast.stmt]:
        if isinstance(node, ast.Lambda):
            ret = ast.Return(value=node.body)
            ast.copy_location(ret, node.body)
            return [ret]
        body = list(node.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        return body

    def _refuse_none_returned(self, body: list[ast.stmt]) -> None:
        """The differentiated function may not return None (``none_returns.py``). (A helper
        may: its caller can test the result, ``if h(x) is None:``.)"""
        found = none_returned(self.fs.node, body, _CalleesReturningNone(self, body))
        if found is None:
            return
        where, given = found.where, found.given
        if isinstance(where, ast.Call):
            message = messages.call_returns_none(ast.unparse(where.func))
        elif given is None:
            message = messages.RETURN_NONE
        elif isinstance(given, ast.arg):
            message = messages.none_default_returned(where.id)
        else:
            message = messages.none_returned(where.id, given.lineno)
        raise self._error(UnsupportedSyntaxError, where, message)

    def _check_local_functions(self, body: list[ast.stmt]) -> None:
        """Each nested function is bound once and called only where it is surely defined."""
        misplaced = misplaced_local_function(body)
        if misplaced is not None:
            raise self._error(UnsupportedSyntaxError, *misplaced)

    def _check_returns(self, body: list[ast.stmt]) -> None:
        """There is a ``return``, and each gives a value (the desugaring of early returns
        would otherwise let ``return`` alone pass on whatever the result held)."""
        returns = returns_in(body)
        if not returns:
            generator = _first_yield(body)
            if generator is not None:
                message = messages.UNSUPPORTED_EXPRESSIONS[type(generator)]
                raise self._error(UnsupportedSyntaxError, generator, message)
            where = body[-1] if body else self.fs.node
            raise self._error(UnsupportedSyntaxError, where, messages.MISSING_RETURN)
        for ret in returns:
            if ret.value is None:
                raise self._error(UnsupportedSyntaxError, ret, messages.RETURN_NOTHING)
            if isinstance(ret.value, _TUPLE_LIST) and ret is not body[-1]:
                several = (
                    messages.EARLY_RETURN_TUPLE if self.tuple_output else messages.RETURN_TUPLE
                )
                raise self._error(UnsupportedSyntaxError, ret.value, several)
        if falls_off_end(body):  # returns inside an `if` or a loop, none on some path
            last = body[-1]
            raise self._error(UnsupportedSyntaxError, last, messages.falls_off_end(last))

    def _lower_body(self, body: list[ast.stmt], output: str) -> None:
        ends_in_return = bool(body) and isinstance(body[-1], ast.Return)
        # Without a final return, the statements are still lowered first: a `try` or `with`
        # that holds the return then says what it is, not that the return is missing.
        for stmt in body[:-1] if ends_in_return else body:
            if isinstance(stmt, ast.Return):
                raise self._error(UnsupportedSyntaxError, stmt, messages.EARLY_RETURN)
            self._statement(stmt)
        if not ends_in_return:
            where = body[-1] if body else self.fs.node
            raise self._error(UnsupportedSyntaxError, where, messages.MISSING_RETURN)
        self._return(body[-1], output)

    # ----- statements --------------------------------------------------------------------
    def _statement(self, stmt: ast.stmt) -> None:
        handler = _handler(Lowerer, "_stmt_", stmt.__class__)
        if handler is None:
            message = messages.UNSUPPORTED_STATEMENTS.get(
                type(stmt), f"`{type(stmt).__name__}` statements are not supported"
            )
            raise self._error(UnsupportedSyntaxError, stmt, message)
        handler(self, stmt)

    def _stmt_Pass(self, stmt: ast.Pass) -> None:
        pass

    def _stmt_Expr(self, stmt: ast.Expr) -> None:
        if _is_docstring(stmt):
            return
        if self._is_output_check(stmt.value):
            rewritten, reads = self._rewrite_opaque(stmt.value)
            check = self.names.numbered("check")  # names nothing that is read
            self.block.append(Opaque(check, rewritten, frozenset(reads), stmt.lineno, effect=True))
            return
        kind = self._empty_check_kind(stmt.value)
        if kind is not None:  # generated code read again: `min(()) if acc is None else None`
            test, reads = self._rewrite_opaque(stmt.value.test)
            self._check_not_empty(kind, test, reads, stmt.lineno)
            return
        message = messages.UNSUPPORTED_EXPRESSIONS.get(
            type(stmt.value), messages.EXPRESSION_STATEMENT
        )
        if isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
            message = messages.call_statement(stmt.value)
        raise self._error(UnsupportedSyntaxError, stmt, message)

    def _stmt_Assign(self, stmt: ast.Assign) -> None:
        first, *others = stmt.targets
        if isinstance(first, _TUPLE_LIST):
            if others:
                raise self._error(UnsupportedSyntaxError, stmt, messages.CHAINED_UNPACKING)
            self._unpack(first, stmt.value)
            return
        self._bind(first, stmt.value)
        for target in others:
            self._check_name_target(target)
            self._bind_atom(target.id, Var(self.env[first.id]), target.lineno)

    def _stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self._bind(stmt.target, stmt.value)

    def _stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        self._check_name_target(stmt.target)
        read = ast.Name(id=stmt.target.id, ctx=ast.Load())
        value = ast.BinOp(left=read, op=stmt.op, right=stmt.value)
        for node in (read, value):
            ast.copy_location(node, stmt)
        before = self.env.get(stmt.target.id)
        if (
            self.shared is not None
            and before is not None
            and self.shared.refusal(before, stmt.target.id)
        ):
            message = messages.changed_in_place(stmt.target.id, stmt)
            raise self._error(UnsupportedSyntaxError, stmt.target, message)
        if self.shared is not None and before is not None:
            self.shared.updated(before, stmt)
        self._bind(stmt.target, value)

    # ----- control flow ------------------------------------------------------------------
    def _stmt_If(self, stmt: ast.If) -> None:
        checked = checked_name(stmt)
        if checked is not None:  # generated code read again: a check `_check_bound` wrote
            test, name = checked
            rewritten, reads = self._rewrite_opaque(test)
            self._append_bound_check(rewritten, frozenset(reads), name, stmt.lineno)
            return
        cond = self.names.numbered("cond")
        self._opaque(stmt.test, cond)
        before = dict(self.env)
        body = self._sub_block(lambda: self._statements(stmt.body))
        after_body, self.env = self.env, dict(before)
        orelse = self._sub_block(lambda: self._statements(stmt.orelse))
        after_orelse = self.env
        self.env = self._merge(after_body, after_orelse, body, orelse, stmt.lineno)
        self.block.append(If(cond, body, orelse, stmt.lineno, has_else=bool(stmt.orelse)))

    def _statements(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self._statement(stmt)

    def _merge(
        self,
        left: dict[str, str],
        right: dict[str, str],
        left_block: list[Stmt],
        right_block: list[Stmt],
        line: int,
    ) -> dict[str, str]:
        """Join two paths: a variable with different versions gets one new merged name."""
        merged = {}
        for var in sorted(set(left) | set(right)):
            a, b = left.get(var), right.get(var)
            if a == b:
                merged[var] = a
                continue
            # A path that never bound the variable gives it the placeholder UNBOUND: Python
            # would never read it there, but later merges copy it, and a copy must read a
            # bound name.
            new = self.names.fresh(var)
            left_block.append(Copy(new, Var(a) if a is not None else UNBOUND, line))
            right_block.append(Copy(new, Var(b) if b is not None else UNBOUND, line))
            merged[var] = new
            if self.shared is not None:
                self.shared.merged(new, var, [a, b])
        return merged

    def _stmt_For(self, stmt: ast.For) -> None:
        iterator = stmt.iter
        callee = None
        if isinstance(iterator, ast.Call) and isinstance(iterator.func, _NAME_ATTRIBUTE):
            callee = _resolved_or_none(self, iterator.func)
        if callee is not builtins.range:  # sequences, enumerate, zip, reversed
            iteration = self._iteration()
            literal = self._over_local_values(stmt)
            rewritten = iteration.literal_loop(stmt) if literal else iteration.sequence_loop(stmt)
            self.locals |= rewritten.new_locals
            self._statements(rewritten.prelude)
            self._stmt_For(rewritten.loop)
            return
        if not isinstance(stmt.target, ast.Name):
            raise self._error(UnsupportedSyntaxError, stmt.target, messages.FOR_TARGET)
        if not 1 <= len(iterator.args) <= 3 or iterator.keywords:
            raise self._error(UnsupportedSyntaxError, iterator, messages.RANGE_ARGUMENTS)
        bounds = [self._atom(arg) for arg in iterator.args]
        self._loop(stmt, index=stmt.target.id, bounds=bounds)

    def _over_local_values(self, stmt: ast.For) -> bool:
        """``for v in (a, b, c)`` over a literal tuple or list holding the function's own
        values (which may carry derivatives), short enough to pick items by tests."""
        items = stmt.iter
        if not isinstance(items, _TUPLE_LIST) or not isinstance(stmt.target, ast.Name):
            return False
        if not items.elts or any(isinstance(e, ast.Starred) for e in items.elts):
            return False
        if not any(name in self.locals for name in names_in(items)):
            return False
        if len(items.elts) > MAX_LITERAL_LOOP:
            message = messages.literal_loop_too_long(len(items.elts), MAX_LITERAL_LOOP)
            raise self._error(UnsupportedSyntaxError, items, message)
        return True

    def _stmt_While(self, stmt: ast.While) -> None:
        self._loop(stmt, index=None, bounds=[])

    def _loop(self, stmt: ast.For | ast.While, index: str | None, bounds: list[Atom]) -> None:
        body_stmts, exit_test = _split_exit_test(stmt.body)
        assigned = assigned_names(stmt.body)
        known = set(self.env) | assigned
        before = self.env.get(index) if index else None
        # A body that rebinds the index (`i = i + x`) makes it a carried variable too: its
        # header holds what the last iteration left (or the old value), the index itself
        # only what `for` assigns.
        rebinds = index is not None and index in assigned
        carried = sorted(assigned - ({index} if index and not rebinds else set()))
        entry, headers = [], []
        entry_of: dict[str, str | None] = {}  # header -> the version it starts as (None: unbound)
        for var in carried:
            header = self.names.fresh(var)
            entry_of[header] = self.env.get(var)
            # A variable first bound inside the loop starts as UNBOUND, so that merges of
            # paths that did not bind it yet read a defined name (Python never reads it).
            source = Var(self.env[var]) if var in self.env else UNBOUND
            entry.append(Copy(header, source, stmt.lineno))
            if var in self.env and self.shared is not None:
                self.shared.carried(header, self.env[var])
            no_derivative = isinstance(source, Const) or source.name in self.loop_indices
            if no_derivative and _only_range_index(var, stmt.body):
                self.loop_indices.add(header)  # an inner loop's index: an int, or UNBOUND
            self.env[var] = header
            headers.append(header)
        index_name = self._version(index) if index else None
        old_value: Atom | None = None  # the loop variable before the loop, if a merge needs it
        if index:
            kept: Atom = Var(before) if before else UNBOUND
            if rebinds:
                # The header carries the variable's value (and derivative) past the loop and
                # `for` sets the index before every read: this copy only binds the name, so
                # it carries nothing (the old value's adjoint would gather every iteration's).
                entry.append(Copy(index_name, UNBOUND, stmt.lineno))
            elif before is None or before in self.loop_indices:
                # After zero iterations the loop variable keeps its previous value (or none);
                # with no derivative in it, a copy before the loop does.
                entry.append(Copy(index_name, kept, stmt.lineno))
            else:
                old_value = kept
            self.env[index] = index_name
            self.loop_indices.add(index_name)
        test, reads = None, frozenset()
        test_checks: list[Stmt] = []  # a while test's unbound checks: after the entry copies
        if isinstance(stmt, ast.While):
            self.in_loop_test = True
            mark = len(self.block)
            try:
                test, read_set = self._rewrite_opaque(stmt.test)
            finally:
                self.in_loop_test = False
            test_checks, self.block[mark:] = self.block[mark:], []
            reads = frozenset(read_set)
        if self.shared is not None:
            self.shared.enter_loop()
        body = self._sub_block(lambda: self._statements(body_stmts))
        back_edges = [
            Copy(header, Var(self.env[var]), stmt.lineno)
            for var, header in zip(carried, headers, strict=True)
            if var in self.env and self.env[var] != header
        ]
        if self.shared is not None:
            self._check_updates_across_iterations(back_edges)
            for edge in back_edges:  # after the loop a header holds what it started as (no
                # iteration) or what the body left: `F = E` inside makes F's array E's too
                sources = [entry_of[edge.target], edge.source.name]
                self.shared.merged(edge.target, self.names.bases[edge.target], sources)
        exit_when = None
        if exit_test is not None:
            exit_when, _ = self._rewrite_opaque(exit_test.test)
        for var, header in zip(carried, headers, strict=True):
            self.env[var] = header
        for name in set(self.env) - known - {index}:
            # A name first bound by the desugaring inside the body (a generator's index and
            # sum): local to its expression, and unbound after a loop that never ran.
            del self.env[name]
        loop = Loop(entry, body, back_edges, headers, stmt.lineno, index_name, bounds, test, reads)
        loop.exit_when = exit_when
        ran = self._loop_runs(bounds, stmt.lineno) if old_value is not None else None
        self.block.extend(entry)
        self.block.extend(test_checks)  # the first test reads what the entry copies bound
        self.block.append(loop)
        if ran is not None:
            self._index_after_loop(index, ran, old_value, stmt.lineno)

    def _check_updates_across_iterations(self, back_edges: list[Copy]) -> None:
        """Refuse an in-place update that a later iteration would apply to an array another
        name holds by then (``cur += ...; prev = cur``: NumPy changes ``prev`` too)."""
        bases = self.names.bases
        edges = [(bases[e.target], e.target, e.source.name) for e in back_edges]
        update = self.shared.leave_loop(edges)
        if update is not None:
            message = messages.changed_in_place(update.target.id, update)
            raise self._error(UnsupportedSyntaxError, update.target, message)

    def _loop_runs(self, bounds: list[Atom], line: int) -> str:
        """A recorded condition: does ``range(*bounds)`` run at least once?"""
        ran = self.names.numbered("cond")
        count = builtin_call("len", builtin_call("range", *[atom_expr(b) for b in bounds]))
        test = ast.Compare(left=count, ops=[ast.Gt()], comparators=[ast.Constant(value=0)])
        reads = frozenset(b.name for b in bounds if isinstance(b, Var))
        self.block.append(Opaque(ran, test, reads, line, hidden="the loop ran"))
        return ran

    def _index_after_loop(self, index: str, ran: str, old_value: Atom, line: int) -> None:
        """After ``for i in range(...)``, ``i`` is the last index (no derivative) or, if the
        loop ran zero times, the value it had (whose derivative then flows on): a merge."""
        merged = self.names.fresh(index)
        last = [Copy(merged, Var(self.env[index]), line)]
        self.block.append(If(ran, last, [Copy(merged, old_value, line)], line))
        self.env[index] = merged

    def _check_name_target(self, target: ast.expr) -> None:
        if not isinstance(target, ast.Name):
            message = messages.UNSUPPORTED_TARGETS.get(
                type(target), "only plain names can be assigned to"
            )
            raise self._error(UnsupportedSyntaxError, target, message)

    def _version(self, name: str) -> str:
        """The name for a new assignment of ``name``: itself the first time, then fresh."""
        if self.parent is None and name not in self.env and name not in self.first_bound:
            self.first_bound.add(name)
            return name
        return self.names.fresh(name)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        self._check_name_target(target)
        if isinstance(value, ast.Lambda):  # `h = lambda a: ...`: a local function
            self.local_functions[target.id] = value
            return
        new = self._version(target.id)
        shared = self.env.get(shared_name(value) or "") if self.shared is not None else None
        reads = {}
        if self.shared is not None:
            for name in self._may_share(value):  # before lowering: the versions read now
                self.shared.share(self.env[name])
            reads = {name: self.env[name] for name in names_in(value) if name in self.env}
        self._lower_into(value, new)
        self.env[target.id] = new
        if self.shared is not None:
            self.shared.bound(new, value, shared, reads)

    def _may_share(self, value: ast.expr) -> list[str]:
        """Names whose array ``value`` may be without ``shared_name`` seeing it: an arm of
        a conditional expression, or an argument of the user's function (inlined; it may
        return its argument, as ``def ident(v): return v`` does)."""
        found = []
        for node in walk(value):
            if isinstance(node, ast.IfExp):
                arms = (node.body, node.orelse)
                found += [n for n in map(shared_name, arms) if n is not None]
            elif isinstance(node, ast.Call) and self._runs_code(node):
                values = [*node.args, *(k.value for k in node.keywords)]
                found += [n for n in map(shared_name, values) if n is not None]
        return [name for name in found if name in self.env]

    def _bind_atom(self, name: str, atom: Atom, line: int) -> None:
        new = self._version(name)
        self.block.append(Copy(new, atom, line))
        self.env[name] = new
        if isinstance(atom, Var) and self.shared is not None:
            self.shared.bound(new, ast.Name(id=name), atom.name)

    def _unpack(self, target: ast.Tuple | ast.List, value: ast.expr) -> None:
        if not isinstance(value, _TUPLE_LIST):
            if self.array_mode and self._unpack_tree(target, value):
                return
            if self._unpack_call(target, value):
                return
            if isinstance(value, ast.Call):  # a call that cannot be made here says why first
                with contextlib.suppress(NoDerivativeError):  # (`divmod`: the unpacking)
                    self._atom(value)
            said = messages.UNPACK_CALL if isinstance(value, ast.Call) else None
            raise self._error(UnsupportedSyntaxError, value, said or messages.UNPACK_NON_LITERAL)
        for elt in target.elts:
            self._check_name_target(elt)
        if len(target.elts) != len(value.elts):
            raise self._error(UnsupportedSyntaxError, target, messages.UNPACK_LENGTH)
        # Evaluate every right-hand side before binding, as Python does (`a, b = b, a`).
        new_names = []
        for elt, expr in zip(target.elts, value.elts, strict=True):
            new = self._version(elt.id)
            shared = self.env.get(shared_name(expr) or "") if self.shared is not None else None
            self._lower_into(expr, new)
            new_names.append(new)
            if self.shared is not None:
                self.shared.bound(new, expr, shared)
        for elt, new in zip(target.elts, new_names, strict=True):
            self.env[elt.id] = new

    def _return(self, stmt: ast.Return, output: str) -> None:
        if stmt.value is None:
            raise self._error(UnsupportedSyntaxError, stmt, messages.RETURN_NOTHING)
        if isinstance(stmt.value, _TUPLE_LIST):
            self._return_tuple(stmt, output)
            return
        start, line = len(self.block), stmt.lineno
        self._lower_into(stmt.value, output)
        if getattr(stmt, "adcompile_gathered", False):  # what the early returns stored:
            line = self.fs.node.lineno  # the function's, not the last line's (it may not run)
            _move_to_line(self.block[start:], line)
            self.gathered = stmt.value.id
        self.block.append(Return(Var(output), line))

    def _return_tuple(self, stmt: ast.Return, output: str) -> None:
        """``return a, b``: each element into its own output name (jacobians, jvp, vjp)."""
        value = stmt.value
        starred = any(isinstance(e, ast.Starred) for e in value.elts)
        if not self.tuple_output or self.parent is not None or starred or not value.elts:
            raise self._error(UnsupportedSyntaxError, value, messages.RETURN_TUPLE)
        self.outputs = [self.names.fresh(f"{output}_{i}") for i in range(len(value.elts))]
        for element, name in zip(value.elts, self.outputs, strict=True):
            self._lower_into(element, name)
        self.block.append(Return(Var(self.outputs[0]), stmt.lineno))

    # ----- expressions -------------------------------------------------------------------
    def _atom(self, node: ast.expr) -> Atom:
        """An operand: names and literals as they are, anything else into a temporary."""
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Name):
            return self._name_atom(node)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
        ):
            return Const(-self._number(node.operand))
        if isinstance(node, ast.Attribute) and not (self.array_mode and self._on_local(node)):
            return self._attribute_atom(node)
        temp = self.names.numbered("t")
        self.temporaries.add(temp)
        self._lower_into(node, temp)
        return Var(temp)

    def _lower_into(self, node: ast.expr, target: str) -> None:
        """Emit statements that leave the value of ``node`` in ``target``."""
        handler = _handler(Lowerer, "_expr_", node.__class__)
        if handler is None:
            if isinstance(node, ast.Attribute) and self.array_mode and self._on_local(node):
                self._array_attribute(node, target)
                return
            if isinstance(node, _ATOMIC):
                atom = self._atom(node)
                self.block.append(Copy(target, atom, node.lineno))
                if isinstance(atom, Var):
                    self._keep_tree_alias(atom.name, target)
                return
            message = messages.UNSUPPORTED_EXPRESSIONS.get(
                type(node), f"`{type(node).__name__}` expressions are not supported"
            )
            raise self._error(UnsupportedSyntaxError, node, message)
        handler(self, node, target)

    def _expr_BinOp(self, node: ast.BinOp, target: str) -> None:
        primal = BINARY_OPERATORS.get(type(node.op))
        if self.array_mode and isinstance(node.op, ast.MatMult):
            primal = operator.matmul
        if self.array_mode and isinstance(node.op, _BIT_OPS):
            self._opaque(node, target)  # masks combined: piecewise constant, like comparisons
            return
        if primal is None:
            symbol = messages.operator_symbol(node.op)
            raise self._error(UnsupportedSyntaxError, node, messages.unsupported_operator(symbol))
        args = [self._atom(node.left), self._atom(node.right)]
        shape = ast.BinOp(_placeholder(0), node.op, _placeholder(1))
        self._apply(node, target, primal, args, shape)

    def _expr_UnaryOp(self, node: ast.UnaryOp, target: str) -> None:
        if isinstance(node.op, ast.Not) or (self.array_mode and isinstance(node.op, ast.Invert)):
            self._opaque(node, target)
            return
        primal = UNARY_OPERATORS.get(type(node.op))
        if primal is None:
            raise self._error(UnsupportedSyntaxError, node, messages.unsupported_operator("~"))
        args = [self._atom(node.operand)]
        self._apply(node, target, primal, args, ast.UnaryOp(op=node.op, operand=_placeholder(0)))

    def _expr_Compare(self, node: ast.Compare, target: str) -> None:
        self._opaque(node, target)

    def _expr_BoolOp(self, node: ast.BoolOp, target: str) -> None:
        error = self._error(NoDerivativeError, node, messages.BOOLOP_VALUE)
        self._opaque(node, target, no_rule=error)

    def _expr_Tuple(self, node: ast.Tuple, target: str) -> None:
        error = self._error(NoDerivativeError, node, messages.SEQUENCE_VALUE)
        self._opaque(node, target, no_rule=error)

    _expr_List = _expr_Tuple

    def _expr_Subscript(self, node: ast.Subscript, target: str) -> None:
        picked = self._picked_from_call(node)
        if picked is not None:  # `polar(x, y)[1]`: the one value
            self.block.append(Copy(target, Var(picked), node.lineno))
            self._keep_tree_alias(picked, target)
            return
        if self.array_mode:
            self._array_subscript(node, target)
            return
        error = self._error(NoDerivativeError, node, messages.INDEX_ON_PATH)
        self._opaque(node, target, no_rule=error)

    def _iteration(self) -> IterationRewriter:
        return IterationRewriter(self.fs, self.names, lambda f: _resolved_or_none(self, f))

    def _reduction(self, node: ast.Call, target: str, kind: str) -> None:
        statements, acc, new_locals = self._iteration().reduction(node, kind)
        self.locals |= new_locals
        self._statements(statements)
        if kind != "sum":
            result = ast.Name(id=self.env[acc], ctx=ast.Load())
            empty = ast.Compare(left=result, ops=[ast.Is()], comparators=[ast.Constant(None)])
            self._check_not_empty(kind, empty, {self.env[acc]}, node.lineno)
        self.block.append(Copy(target, Var(self.env[acc]), node.lineno))
        # The accumulator and the comprehension's variables live only inside the reduction:
        # forgetting them keeps later merges from copying values that may never be bound.
        for name in new_locals:
            self.env.pop(name, None)

    def _find_unbound_reads(self, body: list[ast.stmt]) -> None:
        """The user's reads that some path leaves unbound (before desugaring adds flags)."""
        if self._reads_generated_code():
            # Generated code read again (a Hessian): its own checks say where the user's
            # reads may be unbound. Its placeholders (`result_2 = ...` on the path a
            # helper's early return skipped) are read only under the same tests that bound
            # them, and a check would take the placeholder for unbound.
            self.unbound_reads = {}
            return
        params = self.fs.param_names()
        self.unbound_reads = maybe_unbound_reads(body, params, assigned_names(body) - set(params))

    def _reads_generated_code(self) -> bool:
        """Whether the function lowered is a gradient adcompile generated (a Hessian)."""
        return recipe_of(self.fs.origin) is not None

    def _check_bound(self, name: str, version: str, line: int) -> None:
        """Before a read of ``name`` that some path leaves unbound (``unbound.py``): raise
        UnboundLocalError where it holds the placeholder UNBOUND (``NotImplemented``), as
        Python would."""
        key = (id(self.block), version)
        if key in self.bound_checks:  # checked already, earlier in this block
            return
        self.bound_checks.add(key)
        test = ast.Compare(
            left=ast.Name(id=version, ctx=ast.Load()),
            ops=[ast.Is()],
            comparators=[atom_expr(UNBOUND)],
        )
        self._append_bound_check(test, frozenset({version}), name, line)

    def _append_bound_check(
        self, test: ast.expr, reads: frozenset[str], name: str, line: int
    ) -> None:
        target = self.names.numbered("check")  # names nothing that is read
        self.block.append(Opaque(target, test, reads, line, effect=True, unbound=name))

    def _check_not_empty(self, kind: str, empty: ast.expr, reads: set[str], line: int) -> None:
        """``min``/``max`` of nothing raises ValueError in Python; so does ``min(())``."""
        fail = builtin_call(kind, ast.Tuple(elts=[], ctx=ast.Load()))
        check = ast.IfExp(test=empty, body=fail, orelse=ast.Constant(None))
        target = self.names.numbered("check")
        empty_text = "the sequence is empty"
        self.block.append(
            Opaque(target, check, frozenset(reads), line, effect=True, hidden=empty_text)
        )

    def _empty_check_kind(self, expr: ast.expr) -> str | None:
        """``min``/``max`` for the statement ``_check_not_empty`` writes, else None."""
        if not (isinstance(expr, ast.IfExp) and isinstance(expr.body, ast.Call)):
            return None
        call = expr.body
        if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], ast.Tuple):
            return None
        callee = _resolved_or_none(self, call.func)
        return next((k for k in ("min", "max") if callee is getattr(builtins, k)), None)

    def _expr_IfExp(self, node: ast.IfExp, target: str) -> None:
        cond = self.names.numbered("cond")
        self._opaque(node.test, cond, hidden=self._item_test(node.test))
        body = self._sub_block(lambda: self._lower_into(node.body, target))
        from_body = self.tree_aliases.pop(target, None)
        orelse = self._sub_block(lambda: self._lower_into(node.orelse, target))
        if self.tree_aliases.get(target) != from_body:  # `A if c else B`: either parameter,
            self.tree_aliases.pop(target, None)  # so `target[0]` indexes the value, not B
        self.block.append(If(cond, body, orelse, node.lineno))

    def _item_test(self, test: ast.expr) -> str:
        """What graphs call a test of the compiler's that picks an item: ``acc is None`` in
        a generator's ``min``/``max`` (before its first item the running value is None), ``k
        == 1`` in ``for t in (x, y)``; else "" (a test of the user's)."""
        if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)):
            return ""
        name, op, right = test.left.id, test.ops[0], test.comparators[0]
        if not self.names.is_internal(name) or not isinstance(right, ast.Constant):
            return ""
        if isinstance(op, ast.Is) and right.value is None:
            return "it is the first item"
        if isinstance(op, ast.Eq) and name in self.names.item_counters:
            return f"it is item {right.value + 1}"
        return ""

    def _sub_block(self, lower: Callable[[], None]) -> list[Stmt]:
        outer, self.block = self.block, []
        try:
            lower()
            return self.block
        finally:
            self.block = outer

    def _expr_Call(self, node: ast.Call, target: str) -> None:
        reduction = _reduction_kind(node, _resolved_or_none(self, node.func))
        if reduction is not None:
            self._reduction(node, target, reduction)
            return
        local = self._local_function(node.func)
        if local is not None:
            start = len(self.block)
            self._inline(node, target, local)
            self._place_tuple_refusal(node, target, None, local, start)
            return
        if self.array_mode and isinstance(node.func, ast.Attribute) and self._on_local(node.func):
            self._method_call(node, target)
            return
        callee, shown = self._callee(node.func)
        if helper_name(callee) == "gradient_like" and self._assembled_gradient(node, target):
            return
        is_scatter_into = helper_name(callee) == "scatter_into" and len(node.args) == 4
        summed = self._scatter_sum(node) if is_scatter_into and not node.keywords else None
        if summed is not None:
            self._lower_into(summed, target)
            return
        if helper_name(callee) == "split_adjoint" and len(node.args) == 3 and not node.keywords:
            self._split_pieces(node, target)
            return
        if self.array_mode and (is_numpy(callee) or helper_name(callee)):
            if not self._numpy_call(node, target, callee, shown):
                self._call_without_rule(node, target, callee, shown)
            return
        user_source = self._user_function(callee, node)
        if user_source is not None:
            self._call_user_function(node, target, callee, user_source)
            return
        if isinstance(callee, ComputedGlobal):  # `from helpers import h` in a file read only
            name = ast.unparse(node.func)
            raise self._error(
                UnsupportedSyntaxError, node.func, messages.computed_global(name, callee)
            )
        if node.keywords:
            message = messages.CALL_KEYWORDS
            if callee in (builtins.min, builtins.max, builtins.sum):
                message = messages.reduction_keyword(callee.__name__, node.keywords[0].arg)
            raise self._error(UnsupportedSyntaxError, node.keywords[0], message)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self._error(UnsupportedSyntaxError, arg, messages.CALL_STARRED)
        args = node.args
        if callee in (builtins.min, builtins.max) and len(args) > 2:
            # min(a, b, c) == min(min(a, b), c), ties included (the first wins in both).
            inner = ast.Call(func=node.func, args=args[:-1], keywords=[])
            args = [ast.copy_location(inner, node), args[-1]]
        rule = lookup_rule(self.rules, callee, len(args), arrays=self.array_mode)
        if rule is None:
            self._call_without_rule(node, target, callee, shown)
            return
        if not self._nameable(callee):  # a rule on a functools.partial, a callable object
            message = messages.not_callable_from_generated_code(ast.unparse(node.func), callee)
            raise self._error(UnsupportedSyntaxError, node.func, message)
        atoms = [self._atom(arg) for arg in args]
        shape = ast.Call(func=shown, args=[_placeholder(i) for i in range(len(atoms))], keywords=[])
        self._apply(node, target, callee, atoms, shape, rule)

    # ----- calls to the user's functions ---------------------------------------------------
    def _local_function(self, func: ast.expr) -> FunctionSource | None:
        """A lambda or nested def of this function (or of an enclosing one) being called."""
        scope: Lowerer | None = self
        while scope is not None and isinstance(func, ast.Name):
            node = scope.local_functions.get(func.id)
            if node is not None:
                name = _function_name(node, func.id)
                defaults = tuple(_nested_default(d) for d in node.args.defaults)
                return replace(scope.fs, node=node, name=name, defaults=defaults, enclosing=scope)
            if func.id in scope.locals:
                return None
            scope = scope.closure
        return None

    def _user_function(self, callee: object, call: ast.Call) -> FunctionSource | None:
        """The source of a user's Python function (not a builtin or C function) ``call``
        calls; an error without a place of its own is placed at ``call``."""
        library = (getattr(callee, "__module__", None) or "").partition(".")[0]
        if library in _OTHER_AD_LIBRARIES:  # `from autograd.numpy import sin`
            message = messages.other_library_function(ast.unparse(call.func), library)
            raise self._error(UnsupportedSyntaxError, call, message)
        try:
            return _user_function_source(callee)
        except AdcompileError as exc:
            if exc.location is not None:
                raise
            # Its source cannot be read (made by exec, typed at the prompt): say where it is
            # called, in the caller's file.
            raise self._error(UnsupportedSyntaxError, call, exc.message) from None

    def _tuple_call(self, node: ast.expr) -> _TupleCall | None:
        """A call of the user's function (inlined: no rule of its own) whose body ends in
        ``return a, b, ...``; else None."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, _NAME_ATTRIBUTE):
            return None
        fs, callee = self._local_function(node.func), None
        if fs is None:
            try:
                callee, _ = self._callee(node.func)
                fs = _user_function_source(callee)
            except AdcompileError:
                return None  # said where the call is lowered as a value
            if fs is None or self.rules.lookup(callee, len(fs.param_names())) is not None:
                return None
            refuse_differentiating_again(callee)
        count = _final_tuple_length(self._function_body(fs.node))
        return _TupleCall(node, fs, count, callee) if count else None

    def _call_into_names(self, found: _TupleCall) -> list[str]:
        """Inline a call found by ``_tuple_call``: a temporary for each value it returns."""
        names = [self.names.numbered("t") for _ in range(found.count)]
        self.temporaries.update(names)
        start = len(self.block)
        self._inline(found.call, names, found.fs)
        for name in names:  # value_and_grad's partials: a tuple, said at the call
            self._place_tuple_refusal(found.call, name, found.callee, found.fs, start)
        return names

    def _unpack_call(self, target: ast.Tuple | ast.List, value: ast.expr) -> bool:
        """``r, theta = polar(x, y)``: each name one of the values; False if ``value`` is
        not a call of the user's function ending in ``return a, b``."""
        found = self._tuple_call(value)
        if found is None:
            return False
        for elt in target.elts:
            self._check_name_target(elt)
        if len(target.elts) != found.count:
            message = messages.unpack_call_count(found.fs.name, found.count, len(target.elts))
            raise self._error(UnsupportedSyntaxError, target, message)
        values = self._call_into_names(found)
        for elt, name in zip(target.elts, values, strict=True):
            self._bind_atom(elt.id, Var(name), target.lineno)
            self._keep_tree_alias(name, self.env[elt.id])
        return True

    def _keep_tree_alias(self, source: str, target: str) -> None:
        """``target`` holds ``source``'s value: a structured parameter (``params``) stays one
        (``p["W"]`` reads its leaf)."""
        if source in self.tree_aliases:
            self.tree_aliases[target] = self.tree_aliases[source]

    def _picked_from_call(self, node: ast.Subscript) -> str | None:
        """``polar(x, y)[1]`` (a constant index in range): the name holding that value."""
        index = _constant_int(node.slice)
        found = self._tuple_call(node.value)
        if index is None or found is None:
            return None
        if not -found.count <= index < found.count:  # Python's IndexError, said here
            message = messages.tuple_index_out_of_range(found.fs.name, found.count, index)
            raise self._error(UnsupportedSyntaxError, node.slice, message)
        return self._call_into_names(found)[index]

    def _call_user_function(
        self, node: ast.Call, target: str, callee: object, fs: FunctionSource
    ) -> None:
        refuse_differentiating_again(callee)  # a generated gradient through a user rule
        rule = self.rules.lookup(callee, len(fs.param_names()))
        if rule is None:
            start = len(self.block)
            self._inline(node, target, fs)
            self._place_tuple_refusal(node, target, callee, fs, start)
            return
        # Keywords and defaults bind as for a call without a rule: the rule gets every argument.
        atoms = [self._argument_atom(b, node) for b in bind_arguments(node, fs, self.fs)]
        self._apply_user_rule(node, target, fs, atoms, rule)

    def _place_tuple_refusal(
        self, call: ast.Call, target: str, callee: object, fs: FunctionSource, start: int
    ) -> None:
        """A tuple a call returns (a generated gradient's partials, value and partials, or
        the values of ``return a, b`` held in one name) is a value with no derivative:
        should one be needed, say so at ``call`` in the user's terms, not at the ``return``.
        (A test may still read it: `if dh(x, y)[0] > 0:`.)"""
        from .api import tuple_result_refusal  # (api imports this module)

        message = tuple_result_refusal(callee) if callee is not None else None
        if message is not None and callee is not None and recipe_of(callee).kind == "grad":
            shown = ast.unparse(call.func)  # a tuple of partials: unpacked, each is a number
            message += f"; or, in a function you differentiate, unpack it: `a, b = {shown}(...)`"
        elif message is None and _final_tuple_length(self._function_body(fs.node)):
            message = messages.tuple_held_whole(fs.name)
        if message is None:
            return
        error = self._error(UnsupportedSyntaxError, call, message)
        for stmt in self.block[start:]:
            if isinstance(stmt, Opaque) and stmt.target == target:
                stmt.no_rule = error

    def _apply_user_rule(
        self, node: ast.AST, target: str, fs: FunctionSource, atoms: list[Atom], rule: Rule
    ) -> None:
        # A user rule overrides differentiating the body: the body only computes the value.
        if not self.array_mode and _reads_numpy(rule):  # the module would not import NumPy
            message = messages.numpy_rule_in_scalar_code(fs.name)
            raise self._error(UnsupportedSyntaxError, node, message)
        if _returns_tuple(fs.node):  # its g would be a tuple of adjoints, the code one number
            message = messages.rule_on_tuple_output(fs.name)
            raise self._error(UnsupportedSyntaxError, node, message)
        forward = self._sub_block(lambda: self._inline(node, target, fs, atoms))
        placeholders = [_placeholder(i) for i in range(len(atoms))]
        shape = ast.Call(func=ast.Name(id=fs.name, ctx=ast.Load()), args=placeholders, keywords=[])
        apply = Apply(target, rule, atoms, shape, node.lineno, forward)
        message = messages.user_rule_differentiated_again(fs.name)
        names = frozenset({target, *assignment_counts(forward)})
        self.ruled_bodies.append(RuledBody(names, self._error(NoDerivativeError, node, message)))
        if self.array_mode:
            self._refuse_tangent(apply, node, fs.name)
        self.block.append(apply)

    def _refuse_tangent(self, apply: Apply, node: ast.AST, name: str) -> None:
        """Forward mode cannot use a user's rule on arrays: a vector-Jacobian product gives
        the tangent only for numbers or elementwise functions, which cannot be told apart
        (a rule on a binary ufunc sums a broadcast argument's adjoint back itself)."""
        message = messages.user_rule_in_forward_mode(name)
        apply.tangent_refusal = self._error(NoDerivativeError, node, message)
        apply.tangent_refusal.user_rule = name  # hessian words it for itself

    def _inline(
        self,
        node: ast.AST,
        target: str | list[str],
        fs: FunctionSource,
        atoms: list[Atom] | None = None,
    ) -> None:
        """Lower the callee's body in place, leaving its return value in ``target`` (or,
        given several names, each value of its ``return a, b`` in one)."""
        check_cycle(self.call_chain, fs, node)
        self.inlined[0] += 1
        self.inlined_functions.append(fs.origin)
        if self.inlined[0] > MAX_INLINED:  # helpers calling helpers twice: 2**depth bodies
            raise self._error(UnsupportedSyntaxError, node, messages.too_many_inlined(MAX_INLINED))
        callee = Lowerer(fs, self.rules, parent=self)
        callee.closure = fs.enclosing
        callee._check_signature(fs.node)
        if atoms is None:
            bindings = bind_arguments(node, fs, self.fs)
            bound = [(b.param, self._argument_atom(b, node)) for b in bindings]
            arguments = [atom for _, atom in bound]
            for i, name in enumerate(target if isinstance(target, list) else [target]):
                if name in self.temporaries:
                    index = i if isinstance(target, list) else None
                    self._label_call(node, name, bindings, arguments, index)
        else:
            bound = list(zip(fs.param_names(), atoms, strict=True))
        outer_scope = self.names.scope
        self.names.scope = fs.name if fs.name.isidentifier() else "lambda"
        try:
            for param, atom in bound:
                name = self.names.fresh(param)
                self.block.append(Copy(name, atom, node.lineno))
                callee.env[param] = name
                if isinstance(atom, Var):
                    self._keep_tree_alias(atom.name, name)
            start = len(self.block)
            callee.block = self.block
            gathered = callee.lower_inline(target)
        finally:
            self.names.scope = outer_scope
        relabel(self.block[start:], fs)
        if gathered is not None:  # `b = result` after early returns: the call's line
            _move_to_line(self.block[gathered:], node.lineno)
            if target in self.call_labels:  # explanations show `result` as the call
                self.call_results[callee.gathered] = target
        self.uses_math |= callee.uses_math

    def _label_call(
        self,
        call: ast.Call,
        target: str,
        bindings: list[Binding],
        atoms: list[Atom],
        index: int | None = None,
    ) -> None:
        """How an explanation shows the value of an inlined call: ``helper(x)``, as written,
        rather than the callee's returned expression (``helper.a * helper.a``); one of the
        values it returns as ``polar(x, y)[1]``."""
        by_node = {id(b.expr): atom for b, atom in zip(bindings, atoms, strict=True)}
        written = [*call.args, *(keyword.value for keyword in call.keywords)]
        shape = ast.Call(
            func=clone(call.func),
            args=[_placeholder(i) for i in range(len(call.args))],
            keywords=[
                ast.keyword(arg=keyword.arg, value=_placeholder(len(call.args) + i))
                for i, keyword in enumerate(call.keywords)
            ],
        )
        if index is not None:
            shape = ast.Subscript(value=shape, slice=ast.Constant(value=index), ctx=ast.Load())
        self.call_labels[target] = (shape, [by_node[id(expr)] for expr in written])

    def _argument_atom(self, binding: Binding, node: ast.Call) -> Atom:
        if binding.expr is not None:
            return self._atom(binding.expr)
        if binding.default is None or isinstance(binding.default, _NUMBER_TYPES):
            return Const(binding.default)  # None, as when passed: `if scale is None:`
        literal = _number_tuple_literal(binding.default)
        if literal is not None:  # `w=(1.0, 2.0)`: as if passed (a value with no derivative)
            return self._atom(ast.fix_missing_locations(ast.copy_location(literal, node)))
        message = messages.default_not_number(binding.param, binding.default)
        # A nested function's default is in this file: shown where it is written.
        where = getattr(binding.default, "node", node)
        raise self._error(UnsupportedSyntaxError, where, message)

    def lower_inline(self, target: str | list[str]) -> int | None:
        """Lower this (callee) function's body, its return value going to ``target`` (or,
        given several names, the values of its final ``return a, b`` one to each).

        Returns where the statements copying a result gathered after early returns begin in
        the block (they belong to the call's line), or None."""
        body = self._function_body(self.fs.node)
        self.locals = set(self.fs.param_names()) | assigned_names(body)
        if isinstance(target, list):
            self._check_single_return(body)
        self._check_returns(body)
        self._check_local_functions(body)
        self._find_unbound_reads(body)
        # The flags desugaring adds (`returned`, `broke`, ...) must not be the callee's names:
        # the shared table was filled from the caller's source only.
        for word in function_identifiers(self.fs.node):
            self.names.reserve(word)
        body = Desugar(self.names).function_body(body)
        self.locals |= assigned_names(body)
        for stmt in body[:-1]:
            self._statement(stmt)
        last = body[-1]
        if not isinstance(last, ast.Return):
            self._statement(last)  # a `try` or `with` that holds the return says what it is
            raise self._error(UnsupportedSyntaxError, last, messages.MISSING_RETURN)
        if getattr(last, "adcompile_gathered", False):
            self.gathered = last.value.id
        start = len(self.block)
        if isinstance(target, list):
            for element, name in zip(last.value.elts, target, strict=True):
                self._lower_into(element, name)
            return None
        self._lower_into(last.value, target)
        return start if getattr(last, "adcompile_gathered", False) else None

    def _check_single_return(self, body: list[ast.stmt]) -> None:
        """A function whose values are unpacked returns them once, at its end."""
        for ret in returns_in(body):
            if ret is not body[-1]:
                raise self._error(UnsupportedSyntaxError, ret, messages.EARLY_RETURN_TUPLE)

    def _stmt_FunctionDef(self, stmt: ast.FunctionDef) -> None:
        if stmt.decorator_list:
            raise self._error(UnsupportedSyntaxError, stmt, messages.NESTED_DECORATOR)
        self.local_functions[stmt.name] = stmt

    def _call_without_rule(self, node: ast.Call, target: str, callee: object, shown: str) -> None:
        name = ast.unparse(node.func)
        if helper_name(callee):  # in a generated gradient, differentiated again
            message = messages.no_second_derivative(helper_name(callee))
            raise self._error(NoDerivativeError, node, message)
        if callee is builtins.len or callee is builtins.range:
            # A length never depends on the values (like x.shape); a range's items are loop
            # counts, as in `for k in range(n)`, also inside reversed/enumerate/zip.
            self._opaque(node, target)
            return
        arities = self.rules.arities(callee)
        if self.array_mode and is_numpy(callee):
            arities = []  # array rules were tried with every arity and static arguments
            if getattr(callee, "__name__", None) in SHAPE_FUNCTIONS:
                self._opaque(node, target)  # depends on shapes only: exactly constant
                return
        if arities:
            message = messages.wrong_arity(name, len(node.args), arities)
            raise self._error(UnsupportedSyntaxError, node, message)
        if not self._nameable(callee):
            message = messages.not_callable_from_generated_code(name, callee)
            raise self._error(UnsupportedSyntaxError, node.func, message)
        if not self._renderable_callee(callee):
            raise self._error(NoDerivativeError, node.func, messages.no_rule(name, callee))
        # A known function with no derivative (math.floor, round, ...): fine as long as no
        # derivative has to pass through it; reverse.py raises this error if one does.
        error = self._error(NoDerivativeError, node.func, messages.no_rule_on_path(name))
        self._opaque(node, target, no_rule=error)

    def _apply(
        self,
        node: ast.expr,
        target: str,
        primal: object,
        args: list[Atom],
        shape: ast.expr,
        rule: Rule | None = None,
    ) -> None:
        rule = rule or lookup_rule(self.rules, primal, len(args), arrays=self.array_mode)
        if rule is None:  # an operator without a rule: the rule table was changed
            raise self._error(NoDerivativeError, node, messages.no_rule(ast.unparse(node), primal))
        self._append_apply(node, Apply(target, rule, args, shape, node.lineno))

    def _append_apply(self, node: ast.AST, apply: Apply) -> None:
        """Add a primitive's statement to the block; in array code, one whose rule is a
        user's (on a library function: `np.inner`) is refused by forward mode."""
        if self.array_mode and is_users_rule(apply.rule):
            self._refuse_tangent(apply, node, apply.rule.name)
            message = messages.user_rule_forward_over_gradient(apply.rule.name)
            refusal = self._error(NoDerivativeError, node, message)
            self.ruled_bodies.append(RuledBody(frozenset({apply.target}), refusal, True))
        self.block.append(apply)

    # ----- names, attributes and callees -------------------------------------------------
    def _constant(self, node: ast.Constant) -> Const:
        """A number or None."""
        if node.value is None:
            return Const(None)
        return Const(self._number(node))

    def _number(self, node: ast.Constant) -> int | float | bool:
        value = node.value
        if isinstance(value, _NUMBER_TYPES):
            return value
        raise self._error(UnsupportedSyntaxError, node, messages.non_numeric_constant(value))

    def _name_atom(self, node: ast.Name) -> Atom:
        if node.id in self.local_functions:
            raise self._error(UnsupportedSyntaxError, node, messages.function_value(node.id))
        if node.id in self.locals:
            if node.id not in self.env:
                raise self._error(UnsupportedSyntaxError, node, messages.unbound_local(node.id))
            version = self.env[node.id]
            read = (node.lineno, node.col_offset, node.id) if self.unbound_reads else None
            conditional = self.unbound_reads.get(read) if read is not None else None
            # A read Python may skip is checked only where it is lowered on its own path
            # (an arm of `a if c else b` becomes a branch, an `and` operand a statement of
            # its own), not where a test computed whole may skip it: a check there would run
            # before Python decides to read (a `while` test, a chained comparison).
            if conditional is not None and not (self.in_opaque and self.opaque_may_skip):
                self._check_bound(node.id, version, node.lineno)
            return Var(version)
        scope = self.closure
        while scope is not None and node.id not in scope.locals:
            scope = scope.closure  # a def nested in a nested def reads the outermost too
        if scope is not None:
            return scope._name_atom(node)  # a nested function reads its enclosing scope
        value = self._resolve_global(node)
        if value is UNBOUND.value and self._reads_generated_code():
            return UNBOUND  # generated code read again: its placeholder
        if (
            isinstance(value, _NUMBER_TYPES)
            or _is_number_tuple(value)
            or (self.array_mode and isinstance(value, self.numpy.ndarray))
        ):  # data (an array, a tuple of numbers) is read when the gradient is compiled
            name = self._constant_name(node.id, value)
            return Global(ast.Name(id=name, ctx=ast.Load()), name)
        raise self._error(UnsupportedSyntaxError, node, messages.global_not_number(node.id, value))

    def _constant_name(self, name: str, value: object) -> str:
        """The module-level name of a constant; an inlined callee's may need renaming."""
        key = (id(self.fs.namespace), name)
        if key in self.constant_names:
            return self.constant_names[key][0]
        if self.parent is not None and (
            name in self.names.taken and not self._already_means(name, value)
        ):
            chosen = self.names.fresh(name)
        else:
            chosen = name
            self.names.reserve(name)
        self.constant_names[key] = (chosen, self.fs.namespace)
        self.constants[chosen] = value
        return chosen

    def _already_means(self, name: str, value: object) -> bool:
        """True if ``name`` already stands for ``value`` in the generated module: a constant
        chosen earlier, or a global the outermost function reads under that name."""
        if _same_constant(self.constants.get(name), value):
            return True
        root = self
        while root.parent is not None:
            root = root.parent
        if name in root.locals or name not in root.fs.namespace:
            return False
        return _same_constant(root.fs.namespace.get(name), value)

    def _resolve_global(self, node: ast.Name) -> object:
        try:
            value = self.fs.namespace[node.id]
        except KeyError:
            raise self._error(
                UnsupportedSyntaxError, node, messages.undefined_name(node.id)
            ) from None
        if isinstance(value, UnboundClosureVariable):
            message = messages.unbound_closure_variable(node.id)
            raise self._error(UnsupportedSyntaxError, node, message)
        return value

    def _attribute_atom(self, node: ast.Attribute) -> Atom:
        constant = self._user_module_constant(node)
        if constant is not None:
            return constant
        value, shown = self._resolve_attribute(node)
        if isinstance(value, _NUMBER_TYPES):
            return Global(shown, ast.unparse(shown))
        raise self._error(
            UnsupportedSyntaxError, node, messages.global_not_number(ast.unparse(node), value)
        )

    def _names_numpy_type(self, node: ast.Attribute) -> bool:
        """Whether ``node`` names a NumPy scalar type (``np.float32``): a dtype, no value."""
        base = node.value
        if not isinstance(base, ast.Name) or base.id in self.locals:
            return False
        if self.fs.namespace.get(base.id) is not self.numpy:
            return False
        value = getattr(self.numpy, node.attr, None)
        return isinstance(value, type) and issubclass(value, self.numpy.generic)

    def _on_local(self, node: ast.Attribute) -> bool:
        """True if an attribute is read from a value (``x.T``), not from a module."""
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            return True
        if base.id in self.locals:
            return True
        if self.closure is not None and base.id in self.closure.locals:
            return True
        return not isinstance(self.fs.namespace.get(base.id), types.ModuleType)

    def _resolve_attribute(self, node: ast.Attribute) -> tuple[object, ast.expr]:
        if isinstance(node.value, ast.Attribute) and self.array_mode:
            module, _ = self._resolve_attribute(node.value)  # np.linalg.norm
        elif not isinstance(node.value, ast.Name) or node.value.id in self.locals:
            raise self._error(UnsupportedSyntaxError, node, messages.ATTRIBUTE_ACCESS)
        else:
            module = self._resolve_global(node.value)
        if isinstance(module, ComputedGlobal):  # `import helpers` in a file read, not run
            message = messages.computed_global(node.value.id, module)
            raise self._error(UnsupportedSyntaxError, node, message)
        if not isinstance(module, types.ModuleType):
            raise self._error(UnsupportedSyntaxError, node, messages.ATTRIBUTE_ACCESS)
        if not hasattr(module, node.attr):
            raise self._error(
                UnsupportedSyntaxError, node, messages.missing_attribute(module, node.attr)
            )
        value = getattr(module, node.attr)
        return value, self._module_member(module, node.attr, node)

    def _module_member(self, module: types.ModuleType, attr: str, node: ast.AST) -> ast.expr:
        if self.array_mode and is_numpy(module):
            path = module.__name__.split(".")[1:]  # numpy.linalg -> np.linalg
            expr: ast.expr = ast.Name(id=self.numpy_alias, ctx=ast.Load())
            for part in [*path, attr]:
                expr = ast.Attribute(value=expr, attr=part, ctx=ast.Load())
            return expr
        for name, known in RENDERABLE_MODULES.items():
            if module is known:
                if name == "math":
                    self.uses_math = True
                alias = ast.Name(id=self.math_alias, ctx=ast.Load())
                return ast.Attribute(value=alias, attr=attr, ctx=ast.Load())
        raise self._error(UnsupportedSyntaxError, node, messages.unknown_module(module.__name__))

    def _callee(self, func: ast.expr) -> tuple[object, ast.expr]:
        """Resolve a called expression to the object it names and how generated code names it."""
        if isinstance(func, ast.Attribute):
            user_function = self._user_module_function(func)
            if user_function is not None:  # inlined: generated code never names it
                return user_function, func
            return self._resolve_attribute(func)
        if not isinstance(func, ast.Name):
            raise self._error(UnsupportedSyntaxError, func, messages.COMPLEX_CALLEE)
        if getattr(func, BUILTIN_MARK, False):  # written by the compiler: the builtin itself
            return getattr(builtins, func.id), builtin_call(func.id).func
        if func.id in self.locals:
            if func.id not in self.env:  # e.g. a nested def called above its `def` line
                raise self._error(UnsupportedSyntaxError, func, messages.unbound_local(func.id))
            raise self._error(UnsupportedSyntaxError, func, messages.LOCAL_CALLEE)
        value = self._resolve_global(func)
        if self.array_mode and value in (builtins.abs, builtins.pow):
            # On arrays they are np.abs and np.power, whose rules work elementwise; the
            # scalar rules branch on `x > 0`, which an array cannot answer.
            value = self.numpy.abs if value is builtins.abs else self.numpy.power
        helper = helper_name(value) if self.array_mode else None
        if helper:  # generated array code differentiated again: its helpers are primitives
            return canonical_helper(helper), ast.Name(id=self._helper_alias(helper), ctx=ast.Load())
        return value, self._canonical_callee(value, func)

    def _user_module_constant(self, node: ast.Attribute) -> Atom | None:
        """``helpers.K`` in ``import helpers``: data of the user's own module, read when the
        gradient is compiled (as a global is), under a module-level name ``helpers_K``."""
        module = self._user_module(node)
        if module is None:
            return None
        value = getattr(module, node.attr, None)
        is_array = self.array_mode and isinstance(value, self.numpy.ndarray)
        if not (isinstance(value, _NUMBER_TYPES) or _is_number_tuple(value) or is_array):
            return None
        key = (id(vars(module)), node.attr)
        if key not in self.constant_names:
            chosen = self.names.fresh(ast.unparse(node).replace(".", "_"))
            self.constant_names[key] = (chosen, module)
            self.constants[chosen] = value
        name = self.constant_names[key][0]
        return Global(ast.Name(id=name, ctx=ast.Load()), name)

    def _user_module_function(self, func: ast.Attribute) -> types.FunctionType | None:
        """``helpers.scaled`` in ``import helpers``: a Python function of the user's own
        module, called (and inlined) as ``from helpers import scaled`` would be."""
        module = self._user_module(func)
        value = getattr(module, func.attr, None)  # math.sin is a builtin: the usual case
        return value if value.__class__ is types.FunctionType else None

    def _user_module(self, node: ast.Attribute) -> types.ModuleType | None:
        """The module ``node`` reads from (``helpers`` in ``helpers.f``, ``pkg.sub`` in
        ``pkg.sub.f``) if it is one of the user's own: not a local, NumPy or a module
        generated code names (math)."""
        base, path = node.value, []
        while base.__class__ is ast.Attribute:  # `pkg.sub`: submodules of a module
            path.append(base.attr)
            base = base.value
        if base.__class__ is not ast.Name or base.id in self.locals:
            return None
        module = self.fs.namespace.get(base.id)
        for attr in reversed(path):
            if module.__class__ is not types.ModuleType or is_numpy(module):
                return None
            module = getattr(module, attr, None)
        if module.__class__ is not types.ModuleType or is_numpy(module):
            return None
        if module.__name__.partition(".")[0] in _OTHER_AD_LIBRARIES:  # not to be inlined
            return None
        return None if any(module is m for m in RENDERABLE_MODULES.values()) else module

    def _canonical_callee(self, value: object, node: ast.Name) -> ast.expr:
        # `from math import sin` and `import math as m` both become `math.sin`.
        modules = list(RENDERABLE_MODULES.values())
        if self.array_mode:  # `from numpy.linalg import inv`: np.linalg.inv
            modules += [self.numpy, self.numpy.linalg]
        for module in modules:
            name = getattr(value, "__name__", None)
            if name and getattr(module, name, None) is value:
                return self._module_member(module, name, node)
        name = getattr(value, "__name__", None)
        if name and getattr(builtins, name, None) is value:  # `len`, or its alias `len_1`
            return builtin_call(name).func
        return load(node.id)

    def _nameable(self, value: object) -> bool:
        """Whether the generated module can call ``value`` by name: a function of ``math``
        (or NumPy, in array code), a builtin, or a helper of generated array code."""
        name = getattr(value, "__name__", None)
        is_builtin = name is not None and getattr(builtins, name, None) is value
        return is_builtin or self._renderable_callee(value)

    def _renderable_callee(self, value: object) -> bool:
        name = getattr(value, "__name__", None)
        if name is None:
            return False
        if self.array_mode and (is_numpy(value) or helper_name(value) or value is slice):
            return True
        in_module = any(getattr(m, name, None) is value for m in RENDERABLE_MODULES.values())
        return in_module or (name in NONDIFF_BUILTINS and getattr(builtins, name) is value)

    # ----- values with no derivative -----------------------------------------------------
    def _opaque(
        self, node: ast.expr, target: str, no_rule: Exception | None = None, hidden: str = ""
    ) -> None:
        flags: list[str] = []
        if not self.in_loop_test and self._needs_own_path(node):  # (a `while` test is
            # evaluated again each time round.) A copy: the parsed tree is cached and shared.
            node = self._hoisted_short_circuits(clone_located(node), flags)
        rewritten, reads = self._rewrite_opaque(node)
        for flag in flags:  # read only here: forgotten, so no later merge copies them
            self.env.pop(flag, None)
        line = node.lineno
        self.block.append(Opaque(target, rewritten, frozenset(reads), line, no_rule, hidden=hidden))

    def _hoisted_short_circuits(self, node: ast.expr, flags: list[str]) -> ast.expr:
        """A test whose `and`/`or` or conditional expression guards a call of the user's
        function (``x > 0 and safe_log(x) > 0.5``), with that part computed before it by
        statements that call the function only where Python does: ``flag = x > 0`` then
        ``if flag: flag = safe_log(x) > 0.5``. Calls in a test are otherwise computed
        before the test, as values, whatever it decides. The same for a guarded read of a
        variable some path leaves unbound (``c > 0 and y != 0``): its check goes there."""
        if not self._needs_own_path(node):
            return node
        if isinstance(node, ast.BoolOp) and any(self._needs_own_path(v) for v in node.values[1:]):
            flag = self._new_flag(flags)
            return self._flag(self._short_circuit(node, flag), node, flag)
        if isinstance(node, ast.IfExp) and (
            self._needs_own_path(node.body) or self._needs_own_path(node.orelse)
        ):
            flag = self._new_flag(flags)
            chosen = ast.If(
                test=node.test,
                body=[self._flag_assign(flag, node.body)],
                orelse=[self._flag_assign(flag, node.orelse)],
            )
            return self._flag([ast.copy_location(chosen, node)], node, flag)
        if isinstance(node, ast.Compare) and any(
            self._calls_user_code(c) for c in node.comparators[1:]
        ):
            raise self._error(UnsupportedSyntaxError, node, messages.CALL_IN_CHAINED_COMPARISON)
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, field, self._hoisted_short_circuits(value, flags))
            elif isinstance(value, list):
                setattr(node, field, [self._hoisted_short_circuits(v, flags) for v in value])
        return node

    def _short_circuit(self, node: ast.expr, flag: str) -> list[ast.stmt]:
        """Statements leaving ``node``'s value in ``flag``, each operand of an `and`/`or`
        evaluated only if Python evaluates it."""
        if not (isinstance(node, ast.BoolOp) and self._needs_own_path(node)):
            return [self._flag_assign(flag, node)]
        statements = self._short_circuit(node.values[0], flag)
        for value in node.values[1:]:
            read = ast.copy_location(ast.Name(id=flag, ctx=ast.Load()), value)
            go_on = read if isinstance(node.op, ast.And) else ast.UnaryOp(ast.Not(), read)
            guarded = ast.If(test=go_on, body=self._short_circuit(value, flag), orelse=[])
            statements.append(ast.copy_location(guarded, value))
        return statements

    def _new_flag(self, flags: list[str]) -> str:
        flag = self.names.numbered("flag")
        self.locals.add(flag)
        flags.append(flag)
        return flag

    def _flag(self, statements: list[ast.stmt], node: ast.expr, flag: str) -> ast.expr:
        """Lower ``statements`` (which set ``flag``) and read the flag in place of ``node``."""
        self._statements([ast.fix_missing_locations(s) for s in statements])
        return ast.copy_location(ast.Name(id=flag, ctx=ast.Load()), node)

    @staticmethod
    def _flag_assign(flag: str, value: ast.expr) -> ast.stmt:
        target = ast.Name(id=flag, ctx=ast.Store())
        return ast.copy_location(ast.Assign(targets=[target], value=value), value)

    def _calls_user_code(self, node: ast.expr) -> bool:
        """Whether ``node`` calls a function of the user's or sums a generator."""
        return any(child.__class__ is ast.Call and self._runs_code(child) for child in walk(node))

    def _needs_own_path(self, node: ast.expr) -> bool:
        """Whether a part of a test Python may skip must be lowered on its own path: it
        calls the user's code, or reads a variable that may be unbound there."""
        return self._calls_user_code(node) or self._reads_maybe_unbound(node)

    def _reads_maybe_unbound(self, node: ast.expr) -> bool:
        """Whether ``node`` reads a variable some path leaves unbound, where Python may
        skip the read (``unbound.py``)."""
        reads = self.unbound_reads
        return bool(reads) and any(
            child.__class__ is ast.Name and reads.get((child.lineno, child.col_offset, child.id))
            for child in walk(node)
        )

    def _runs_code(self, call: ast.Call) -> bool:
        """A call lowered into statements (the user's function inlined, a loop summing a
        generator): in a test, it is computed before the test as a value."""
        callee = _resolved_or_none(self, call.func)
        return (
            self._local_function(call.func) is not None
            or self._user_function(callee, call) is not None
            or _reduction_kind(call, callee) is not None
        )

    def _rewrite_opaque(self, node: ast.expr) -> tuple[ast.expr, set[str]]:
        """Copy a test expression with names renamed and callees made canonical."""
        mutating = first_mutating_call(node, functools.partial(_resolved_or_none, self))
        if mutating is not None:  # generated code would not replay the change
            raise self._error(UnsupportedSyntaxError, mutating, messages.mutating_call(mutating))
        rewriter = _OpaqueRewriter(self)
        was = self.in_opaque, self.opaque_may_skip
        self.in_opaque, self.opaque_may_skip = True, False
        try:
            return rewriter.visit(clone_located(node)), rewriter.reads
        finally:
            self.in_opaque, self.opaque_may_skip = was


def _number_tuple_literal(value: object) -> ast.expr | None:
    """A tuple of finite numbers (or of such tuples) written as a literal, else None."""
    if isinstance(value, _NUMBER_TYPES) and math.isfinite(value):
        return ast.Constant(value=value)
    if not isinstance(value, tuple):
        return None
    items = [_number_tuple_literal(item) for item in value]
    if any(item is None for item in items):
        return None
    return ast.Tuple(elts=items, ctx=ast.Load())


def _is_number_tuple(value: object) -> bool:
    """A tuple of numbers, or of such tuples: data that cannot change after compiling."""
    return isinstance(value, tuple) and all(
        isinstance(item, _NUMBER_TYPES) or _is_number_tuple(item) for item in value
    )


# Values with no derivative may also be tuples, lists and items of them.
_OPAQUE_UNSUPPORTED = {
    kind: message
    for kind, message in messages.UNSUPPORTED_EXPRESSIONS.items()
    if kind not in (ast.Tuple, ast.List, ast.Subscript, ast.Slice)
}


class _OpaqueRewriter(ast.NodeTransformer):
    """Renames variables to their current versions and resolves callees in a test expression."""

    def __init__(self, lowerer: Lowerer) -> None:
        self.lowerer = lowerer
        self.reads: set[str] = set()

    def visit_Name(self, name: ast.Name) -> ast.expr:
        atom = self.lowerer._name_atom(name)
        if isinstance(atom, Var):
            self.reads.add(atom.name)
        return ast.copy_location(atom_expr(atom), name)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        first, *rest = node.values
        node.values = [self.visit(first), *self._may_skip(rest)]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        node.test = self.visit(node.test)
        node.body, node.orelse = self._may_skip([node.body, node.orelse])
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        node.left = self.visit(node.left)
        first, *rest = node.comparators
        node.comparators = [self.visit(first), *self._may_skip(rest)]
        return node

    def _may_skip(self, parts: list[ast.expr]) -> list[ast.expr]:
        """Rewrite parts of the test that Python evaluates only on some paths."""
        lowerer = self.lowerer
        was, lowerer.opaque_may_skip = lowerer.opaque_may_skip, True
        try:
            return [self.visit(part) for part in parts]
        finally:
            lowerer.opaque_may_skip = was

    def visit_Attribute(self, attr: ast.Attribute) -> ast.expr:
        lowerer = self.lowerer
        if lowerer.array_mode and lowerer._on_local(attr):  # x.shape, x.size, ...
            value = self.visit(attr.value)
            return ast.Attribute(value=value, attr=attr.attr, ctx=ast.Load())
        if lowerer.array_mode and attr.attr == "newaxis":
            return ast.Constant(value=None)
        if lowerer.array_mode and lowerer._names_numpy_type(attr):  # `.astype(np.float32)`
            return lowerer._resolve_attribute(attr)[1]
        return lowerer._attribute_atom(attr).expr

    def visit_Call(self, call: ast.Call) -> ast.expr:
        lowerer = self.lowerer
        if lowerer._runs_code(call):
            if lowerer.in_loop_test:
                raise lowerer._error(UnsupportedSyntaxError, call, messages.CALL_IN_WHILE_TEST)
            # A call of the user's own function in a test: computed before the test, as a
            # value (so a test with `and`/`or` evaluates it even when it would short-circuit).
            atom = lowerer._atom(call)
            self.reads.add(atom.name)
            return ast.copy_location(atom_expr(atom), call)
        args = [self.visit(a) for a in call.args]
        keywords = [ast.keyword(arg=k.arg, value=self.visit(k.value)) for k in call.keywords]
        func = call.func
        if lowerer.array_mode and isinstance(func, ast.Attribute) and lowerer._on_local(func):
            return ast.Call(func=self.visit(func), args=args, keywords=keywords)  # x.argmax()
        value, shown = lowerer._callee(func)
        if not lowerer._renderable_callee(value):
            name = ast.unparse(func)
            raise lowerer._error(NoDerivativeError, func, messages.no_rule(name, value))
        if call.keywords and not lowerer.array_mode:
            raise lowerer._error(UnsupportedSyntaxError, call, messages.CALL_KEYWORDS)
        return ast.Call(func=shown, args=args, keywords=keywords)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        message = _OPAQUE_UNSUPPORTED.get(type(node))
        if message is not None:
            raise self.lowerer._error(UnsupportedSyntaxError, node, message)
        return super().generic_visit(node)


def _reads_numpy(rule: Rule) -> bool:
    """Whether a rule's template names ``np`` (fine in NumPy code only)."""
    return any(
        isinstance(n, ast.Name) and n.id == "np"
        for tree in (*rule.parsed[0], *rule.parsed[1])
        if tree is not None
        for n in ast.walk(tree)
    )


def _reduction_kind(node: ast.Call, callee: object) -> str | None:
    """``sum``/``min``/``max`` of a single generator expression or list comprehension (and
    ``sum``'s ``start``, by position or keyword)."""
    comprehension = (ast.GeneratorExp, ast.ListComp)
    if not node.args or not isinstance(node.args[0], comprehension):
        return None
    extras = [*node.args[1:], *node.keywords]
    if callee is builtins.sum and len(extras) <= 1 and all(k.arg == "start" for k in node.keywords):
        return "sum"
    if len(node.args) != 1 or node.keywords:
        return None
    for kind in ("min", "max"):
        if callee is getattr(builtins, kind):
            return kind
    return None


def _same_constant(known: object, value: object) -> bool:
    """The same number (type and sign of zero too: ``2**53`` is not ``2.0**53``, nor ``0.0``
    ``-0.0``), or the very same array (arrays do not compare to one truth value)."""
    if known is value:
        return True
    return (
        isinstance(value, _NUMBER_TYPES)
        and type(known) is type(value)
        and repr(known) == repr(value)
    )


def _move_to_line(statements: list[Stmt], line: int) -> None:
    """Give ``statements`` the source line ``line`` (for comments and ``explain``)."""
    for stmt in statements:
        stmt.line = line


class _CalleesReturningNone:
    """Whether a call of the user's own function (nested, a lambda, or a helper, followed
    into its own calls) may return None: ``none_returns.py``'s question, for one function."""

    def __init__(self, lowerer: Lowerer, body: list[ast.stmt]) -> None:
        self.lowerer = lowerer
        self.nested = local_functions(body)
        self.answers: dict[tuple[str, ...], bool] = {}  # by callee name: `math.sin` once

    def __call__(
        self, call: ast.Call, inside: FunctionSource | None = None, seen: frozenset = frozenset()
    ) -> bool:
        key = _callee_key(call.func) if inside is None else None
        if key is not None and key in self.answers:
            return self.answers[key]
        callee = self._callee(call.func, inside)
        # A function by where it is written: its source may be parsed afresh at each call
        # (a default filled in), so the node's id would never be seen twice.
        where = (
            None
            if callee is None
            else (callee.filename, callee.node.lineno, callee.node.col_offset)
        )
        if callee is None or where in seen:  # (recursion is refused elsewhere)
            answer = False
        else:
            check = functools.partial(self, inside=callee, seen=seen | {where})
            body = self.lowerer._function_body(callee.node)
            answer = none_returned(callee.node, body, check) is not None
        if key is not None:
            self.answers[key] = answer
        return answer

    def _callee(self, func: ast.expr, inside: FunctionSource | None) -> FunctionSource | None:
        """The user's function ``func`` names, in the differentiated function (a nested one
        too) or in the helper ``inside``; None for anything else."""
        if inside is None:
            nested = self.nested.get(func.id) if isinstance(func, ast.Name) else None
            if nested is not None:
                fs = self.lowerer.fs
                return replace(fs, node=nested, name=_function_name(nested, func.id))
            target = _resolved_or_none(self.lowerer, func)
        elif isinstance(func, ast.Name):
            target = inside.namespace.get(func.id)
        else:
            return None
        try:
            return _user_function_source(target)
        except AdcompileError:
            return None


def _callee_key(func: ast.expr) -> tuple[str, ...] | None:
    """``("math", "sin")`` for ``math.sin``, ``("h",)`` for ``h``: a callee named by a
    dotted name means one function throughout a function's body; None for other callees."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return tuple(reversed(parts))


@dataclass(frozen=True)
class _TupleCall:
    """A call of the user's function that ends in ``return a, b``: its values go to one
    name each (``callee`` None for a nested function or lambda)."""

    call: ast.Call
    fs: FunctionSource
    count: int
    callee: object


def _final_tuple_length(body: list[ast.stmt]) -> int:
    """How many values a body's final ``return a, b, ...`` gives (0: no such return)."""
    returned = body[-1].value if body and isinstance(body[-1], ast.Return) else None
    if not isinstance(returned, ast.Tuple):
        return 0
    if any(isinstance(element, ast.Starred) for element in returned.elts):
        return 0
    return len(returned.elts)


def _constant_int(node: ast.expr) -> int | None:
    """The int a literal index is (``1``, ``-1``), else None."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    value = node.operand if negative else node
    if not isinstance(value, ast.Constant) or type(value.value) is not int:
        return None
    return -value.value if negative else value.value


def _returns_tuple(node: ast.AST) -> bool:
    """Whether a function's own body (not a nested def's) returns a literal tuple."""
    pending = list(ast.iter_child_nodes(node))
    while pending:
        child = pending.pop()
        if isinstance(child, ast.Return) and isinstance(child.value, ast.Tuple):
            return True
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(child))
    return False


def _user_function_source(callee: object) -> FunctionSource | None:
    """The source of a user's Python function (not a builtin or C function)."""
    if isinstance(callee, StaticFunction):
        return callee.source()
    if not isinstance(callee, types.FunctionType):
        return None
    if getattr(callee, "__module__", None) in ("math", "builtins") or is_numpy(callee):
        return None
    if helper_name(callee):  # a primitive of generated array code
        return None
    from .api import called_version  # (api imports this module)

    return load_function(called_version(callee))


def _resolved_or_none(lowerer: Lowerer, func: ast.expr) -> object:
    """The object a callee expression names, or None if it names nothing resolvable."""
    try:
        return lowerer._callee(func)[0]
    except AdcompileError:
        return None


class _DefaultExpression(str):
    """A nested function's default that is not a number literal (shown in the error)."""

    node: ast.expr  # where it is written

    def __repr__(self) -> str:
        return f"`{self}`, an expression (a nested function's default must be a number)"


def _nested_default(expr: ast.expr) -> object:
    """A nested def's or lambda's default: its value if it is a number literal (``k=3``,
    ``eps=-1e-3``). Python evaluates a default once, where the ``def`` runs; any other
    expression could read values that change before the call, so it is refused."""
    value = literal_value(expr)
    if isinstance(value, _NUMBER_TYPES):
        return value
    default = _DefaultExpression(ast.unparse(expr))
    default.node = expr
    return default


def _function_name(node: ast.FunctionDef | ast.Lambda, bound_to: str) -> str:
    return node.name if isinstance(node, ast.FunctionDef) else bound_to


def _split_exit_test(body: list[ast.stmt]) -> tuple[list[ast.stmt], ast.If | None]:
    """Separate the ``if FLAG: break`` that desugaring puts at the end of a loop body."""
    last = body[-1] if body else None
    if isinstance(last, ast.If) and len(last.body) == 1 and isinstance(last.body[0], ast.Break):
        return body[:-1], last
    return body, None


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _output_stem(function_name: str, params: list[str]) -> str:
    stem = function_name if function_name.isidentifier() else "out"
    return "out" if stem in params else stem


def _generated_array_code(fs: FunctionSource) -> bool:
    """A generated gradient of NumPy code (it may call only helpers, never ``np``)."""
    return recipe_of(fs.origin) is not None and is_array_code(fs)


def is_array_code(fs: FunctionSource) -> bool:
    """True if ``fs`` would be lowered in array mode (it names NumPy or uses array syntax).

    A generated gradient is array code when the function it differentiates is.
    """
    recipe = recipe_of(fs.origin)
    if recipe is not None:
        return is_array_code(load_function(recipe.primal))
    body = fs.node.body if isinstance(fs.node.body, list) else []  # a lambda binds nothing
    local = set(fs.param_names()) | assigned_names(body)
    return uses_numpy(fs, local)


def lower_function(
    fs: FunctionSource, rules: RuleTable | None = None, *, tuple_output: bool = False
) -> CoreFunction:
    """Lower ``fs`` to the core form, raising a located error for anything unsupported.

    With ``tuple_output``, a function may end in ``return a, b, ...`` (one output per element).
    """
    lowerer = Lowerer(fs, rules)
    lowerer.tuple_output = tuple_output
    return lowerer.lower()
