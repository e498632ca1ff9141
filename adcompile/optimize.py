"""Passes over the generated statements: algebraic simplification and dead-code elimination.

Each pass is a small function from statements to statements. Simplification touches only the
adjoint sweep: the forward sweep keeps the user's own arithmetic exactly as written. Every
adjoint expression is a product with the incoming adjoint (a float), so rewriting ``x ** 1.0``
to ``x`` inside it cannot change the type or value of the result.
"""

from __future__ import annotations

import ast
import math
import operator
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction

from .astutil import (
    BLOCK_STATEMENTS,
    LOOP_STATEMENTS,
    TEST_BLOCKS,
    block_fields,
    clone,
    collect_names,
    loads_in,
    map_children,
    names_in,
    rename_in_place,
    same_tree,
    statements_in,
    stored_names,
)
from .floats import NO_FACTS, FloatFacts
from .overlay import SetOverlay
from .reverse import ADJOINT, TANGENT
from .share import share_common_subexpressions
from .statics import literal_truth

_FOLDABLE: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_ADD_SUB = (ast.Add, ast.Sub)
_MULT_DIV = (ast.Mult, ast.Div)


def _number(node: ast.expr) -> float | int | None:
    cls = node.__class__
    if cls is ast.Constant:
        value = node.value
        if type(value) in (int, float, bool):
            return int(value) if type(value) is bool else value
        return None
    if cls is ast.UnaryOp and node.op.__class__ is ast.USub:
        operand = node.operand
        if operand.__class__ is ast.Constant and type(operand.value) in (int, float):
            return -operand.value
    return None


def _literal(value: float | int) -> ast.expr:
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


def _fold(op: ast.operator, left: float | int, right: float | int) -> ast.expr | None:
    fold = _FOLDABLE.get(op.__class__)
    if fold is None:
        return None
    try:
        value = fold(left, right)
    except (ArithmeticError, ValueError):
        return None
    if isinstance(value, complex) or not math.isfinite(value) or abs(value) > 1e15:
        return None
    if not _exact(fold, left, right, value):
        return None  # `0.1 * 3` stays as written: 0.30000000000000004 would only puzzle
    return _literal(value)


def _exact(
    fold: Callable[[object, object], object], left: float, right: float, value: float
) -> bool:
    """Whether ``value`` is the exact result of the folded operation (no rounding)."""
    try:
        exact = fold(Fraction(left), Fraction(right))
    except (ArithmeticError, ValueError):
        return False
    return isinstance(exact, Fraction | int) and exact == Fraction(value)


def _is_zero(node: ast.expr) -> bool:
    return _number(node) == 0


def simplify(node: ast.AST, facts: FloatFacts = NO_FACTS) -> ast.AST:
    """Constant folding and the identities ``e*1``, ``e+0``, ``e/1``, ``e**1``, ``-(-e)``;
    with ``facts``, also ``u * e`` for a name ``u`` holding ``1.0`` and a float ``e``."""
    cls = node.__class__
    if cls is ast.Name:
        value = facts.constant(node.id) if facts.has_constants else None
        return node if value is None else ast.Constant(value=value)
    if cls is ast.Constant:
        return node
    if cls is ast.BinOp:  # the common cases first, without a callback per child
        node.left, node.right = simplify(node.left, facts), simplify(node.right, facts)
        return _simplify_binop(node, facts)
    if cls is ast.UnaryOp:
        node.operand = simplify(node.operand, facts)
        return _simplify_unary(node)
    map_children(node, lambda child: simplify(child, facts))
    if cls is ast.IfExp:  # a rule's test on a literal argument: `2.0 > 0`, `3 != 0`
        node.test = _without_neutral_literals(node.test)
        decided = literal_truth(node.test)
        if decided is not None:
            return node.body if decided else node.orelse
    if cls is ast.Compare:  # the same test as a number: `2 - (2 != 0)` is 1
        decided = literal_truth(node)
        if decided is not None:
            return ast.Constant(value=int(decided))
    if cls is ast.BoolOp:  # `3 != 0 or a != 0` with the first test decided: `1`
        return _short_circuit(node)
    return node


def _short_circuit(node: ast.BoolOp) -> ast.expr:
    """``and``/``or`` with its leading literal operands evaluated as Python would."""
    stops_on = isinstance(node.op, ast.Or)  # `or` stops at a true operand, `and` at a false
    values = list(node.values)
    while len(values) > 1:
        decided = literal_truth(values[0])
        if decided is None:
            break
        if decided is stops_on:
            return values[0]
        values.pop(0)
    if len(values) == 1:
        return values[0]
    node.values = values
    return node


def _without_neutral_literals(test: ast.expr) -> ast.expr:
    """A test read for its truth without the literal operands that cannot decide it:
    ``a == 0 or 0`` is ``a == 0`` (an explanation's ``g == 0`` with ``g = 1``)."""
    if test.__class__ is not ast.BoolOp:
        return test
    neutral = isinstance(test.op, ast.And)  # `and` goes on past a true operand, `or` a false
    kept = [value for value in test.values if literal_truth(value) is not neutral]
    if not kept:
        return ast.Constant(value=neutral)
    if len(kept) == 1:
        return kept[0]
    test.values = kept
    return test


def _simplify_binop(node: ast.BinOp, facts: FloatFacts) -> ast.expr:
    op, left, right = node.op.__class__, node.left, node.right
    a, b = _number(left), _number(right)
    if a is not None and b is not None:
        folded = _fold(node.op, a, b)
        if folded is not None:
            return folded
    without_unit = _drop_unit_factor(node, facts)
    if without_unit is not None:
        return without_unit
    # A literal zero factor comes from a literal exponent or coefficient (d/dx x**0 == 0):
    # the product is zero even where the other factor's formula is undefined (x**-1 at 0).
    if op is ast.Mult and (a == 0 or b == 0) and not facts.keeps_shapes:
        return ast.Constant(value=0.0)
    if op is ast.Add and facts.keeps_shapes:
        kept = _without_zero_mask(left, right)
        if kept is not None:
            return kept
    if op is ast.Pow and b == 0 and not facts.keeps_shapes:  # (an array's ones keep its shape)
        return ast.Constant(value=1.0)
    if op is ast.Mult and facts.keeps_types:  # a float factor makes the product a float
        # The cheap test first: asking whether a factor is a float may follow definitions.
        stripped = _without_float_unit(right)
        if stripped is not right and facts.is_float(left):
            node.right = right = stripped
        stripped = _without_float_unit(left)
        if stripped is not left and facts.is_float(right):
            node.left = left = stripped
    if op is ast.Mult and a == 1 and _keeps_type(a, right, facts):
        return right
    if (op is ast.Mult or op is ast.Pow) and b == 1 and _keeps_type(b, left, facts):
        return left
    if op is ast.Div and b == 1 and _keeps_type(1.0, left, facts):  # e / 1 is a float
        return left
    if op is ast.Add and a == 0 and _keeps_type(a, right, facts):
        return right
    if (op is ast.Add or op is ast.Sub) and b == 0 and _keeps_type(b, left, facts):
        return left
    if op is ast.Pow and b == 2 and left.__class__ is ast.Name:
        return ast.BinOp(left=left, op=ast.Mult(), right=ast.Name(id=left.id, ctx=ast.Load()))
    return node


def _keeps_type(literal: float | int, other: ast.expr, facts: FloatFacts) -> bool:
    """Whether ``other`` in place of ``other`` op ``literal`` keeps its type: a float literal
    makes an int a float, and scalar gradients promise float partials (``0.5 * 2 * t``
    must not become an int ``t`` for int inputs). Only asked where ``facts`` keep types."""
    return type(literal) is not float or not facts.keeps_types or facts.is_float(other)


def _without_float_unit(expr: ast.expr) -> ast.expr:
    """``e`` for ``e ** 1.0``, ``e * 1.0``, ``1.0 * e`` or ``e / 1``, kept only to make an
    int ``e`` a float: what a float factor next to it does too."""
    if expr.__class__ is not ast.BinOp:
        return expr
    op = expr.op.__class__
    if op in (ast.Mult, ast.Pow, ast.Div) and _number(expr.right) == 1:
        return _without_float_unit(expr.left)
    if op is ast.Mult and _number(expr.left) == 1:
        return _without_float_unit(expr.right)
    return expr


def _without_zero_mask(left: ast.expr, right: ast.expr) -> ast.expr | None:
    """``x`` for ``x + (x == c) * 0`` (either order), ``x`` a name and ``c`` a number.

    In array code a zero product keeps its factor's shape (it may broadcast the sum), but a
    comparison of ``x`` with a number has ``x``'s own shape, so the sum is ``x``. This is
    what the power rule's mask for ``0 ** 0`` leaves where the exponent is a literal."""
    for kept, term in ((left, right), (right, left)):
        if kept.__class__ is ast.Name and _is_zero_mask_of(term, kept.id):
            return kept
    return None


def _is_zero_mask_of(term: ast.expr, name: str) -> bool:
    """True for ``(name <op> c) * 0`` or ``0 * (name <op> c)``, ``c`` a number."""
    if term.__class__ is not ast.BinOp or term.op.__class__ is not ast.Mult:
        return False
    if _number(term.right) == 0:
        mask = term.left
    elif _number(term.left) == 0:
        mask = term.right
    else:
        return False
    return (
        mask.__class__ is ast.Compare
        and len(mask.ops) == 1
        and mask.left.__class__ is ast.Name
        and mask.left.id == name
        and _number(mask.comparators[0]) is not None
    )


def _drop_unit_factor(node: ast.BinOp, facts: FloatFacts) -> ast.expr | None:
    """``e`` for ``u * e``, ``e * u`` or ``e / u`` (``-e`` for ``-u * e``), where ``u`` holds
    ``1.0`` and ``e`` is a float: then the product is ``e`` exactly, and ``u`` is not needed
    to make an int partial a float."""
    if not facts.units:
        return None
    op, left, right = node.op, node.left, node.right
    if isinstance(op, _MULT_DIV) and facts.is_unit(right) and facts.is_float(left):
        return left
    if not isinstance(op, ast.Mult):
        return None
    # The unit is looked for first: asking whether `e` is a float may follow its definitions.
    if facts.is_unit(left):
        return right if facts.is_float(right) else None
    negated_unit = isinstance(left, ast.UnaryOp) and isinstance(left.op, ast.USub)
    if negated_unit and facts.is_unit(left.operand) and facts.is_float(right):
        return ast.UnaryOp(op=ast.USub(), operand=right)
    return None


def _simplify_unary(node: ast.UnaryOp) -> ast.expr:
    inner = node.operand
    double_negation = isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub)
    if isinstance(node.op, ast.USub) and double_negation:
        return inner.operand
    if isinstance(node.op, ast.UAdd):
        return inner
    return node


def _without_negation(expr: ast.expr) -> ast.expr | None:
    """``e`` for ``-e`` or for a product whose leftmost factor is negated; else None."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        return expr.operand
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, _MULT_DIV):
        left = _without_negation(expr.left)
        if left is not None:
            return ast.BinOp(left=left, op=expr.op, right=expr.right)
    return None


def _subtract_instead(stmt: ast.stmt) -> None:
    # `b += -e * r` reads better, and runs faster, as `b -= e * r`.
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, _ADD_SUB):
        positive = _without_negation(stmt.value)
        if positive is not None:
            stmt.value = positive
            stmt.op = ast.Sub() if isinstance(stmt.op, ast.Add) else ast.Add()


def simplify_adjoints(statements: list[ast.stmt], facts: FloatFacts = NO_FACTS) -> list[ast.stmt]:
    """Simplify the expressions of adjoint and tangent statements, in place."""
    for stmt in statements:
        if isinstance(stmt, BLOCK_STATEMENTS):
            simplify_adjoints(stmt.body, facts)
            simplify_adjoints(stmt.orelse, facts)
        elif getattr(stmt, "adcompile_sweep", None) in (ADJOINT, TANGENT) and hasattr(
            stmt, "value"
        ):
            stmt.value = simplify(stmt.value, facts)
            _subtract_instead(stmt)
    _merge_repeated_contributions(statements)
    return statements


def _merge_repeated_contributions(statements: list[ast.stmt]) -> None:
    """The same contribution twice in a row (``x * x`` sends ``g * x`` twice) is added once,
    doubled: ``b = e; b += e`` becomes ``b = 2.0 * e``, and ``b += e; b += e`` becomes
    ``b += 2.0 * e``.

    The first is exact (``e + e == 2.0 * e`` in floating point); the second rounds once where
    the two additions rounded twice, so it may differ in the last bit, towards the exact sum.
    ``e`` reads nothing the first line changes: it cannot read ``b``.
    """
    i = 0
    while i + 1 < len(statements):
        first, second = statements[i], statements[i + 1]
        if _repeats(first, second):
            two = ast.Constant(value=2.0)
            first.value = ast.BinOp(left=two, op=ast.Mult(), right=first.value)
            del statements[i + 1]
        i += 1


def _repeats(first: ast.stmt, second: ast.stmt) -> bool:
    if second.__class__ is not ast.AugAssign:  # the usual answer, found cheaply
        return False
    target = _contribution_target(first)
    return (
        target is not None
        and type(second.op) is (type(first.op) if isinstance(first, ast.AugAssign) else ast.Add)
        and getattr(second, "adcompile_sweep", None) == ADJOINT
        and target == second.target.id
        and target not in names_in(first.value)
        and same_tree(first.value, second.value)
    )


def _contribution_target(stmt: ast.stmt) -> str | None:
    """The adjoint that ``b = e``, ``b += e`` or ``b -= e`` contributes to, else None."""
    if getattr(stmt, "adcompile_sweep", None) != ADJOINT:
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, _ADD_SUB):
        return stmt.target.id if isinstance(stmt.target, ast.Name) else None
    return None


def _reads(node: ast.AST) -> set[str]:
    found: list[ast.Name] = []
    collect_names(node, found, loads_only=False)
    return {name.id for name in found}


def eliminate_dead_code(
    statements: list[ast.stmt], live: set[str] | SetOverlay, unread: frozenset[str] = frozenset()
) -> list[ast.stmt]:
    """Drop assignments whose value nothing later reads; ``live`` is updated to the entry set.

    Inside loops, where a value may be read by the next iteration, an assignment goes only
    if its name is in ``unread``: read nowhere in the function (``never_read``).
    """
    kept: list[ast.stmt] = []
    for stmt in reversed(statements):
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if target not in live:
                continue
            live.discard(target)
            live |= _reads(stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            if stmt.target.id not in live:
                continue
            live |= _reads(stmt.value)
        elif isinstance(stmt, ast.If):
            stmt = _dead_code_in_if(stmt, live, unread)
            if stmt is None:
                continue
        elif isinstance(stmt, LOOP_STATEMENTS):
            if _dead_loop(stmt, live):
                continue
            # A loop may run any number of times: keep all but stores nothing reads, and all
            # it reads is live.
            if unread:
                _drop_unread_stores(stmt, unread)
            live |= _reads_and_updates([stmt]) - _own_index(stmt)
        else:
            live |= _reads(stmt)
        kept.append(stmt)
    kept.reverse()
    return kept


def never_read(statements: list[ast.stmt], returns: ast.expr) -> frozenset[str]:
    """Names the statements store to that nothing the function needs reads: not the return,
    a test, a call made for its effect, nor (in turn) a store of a name those read. A loop's
    copies that only feed each other (a flag carried from one iteration to the next that no
    test reads) are such names, though each is read."""
    stored: set[str] = set()
    feeds: dict[str, set[str]] = {}  # name -> what its stores read
    needed = set(_reads(returns))
    for stmt in statements_in(statements):
        cls = stmt.__class__
        if cls is ast.Assign and all(isinstance(t, ast.Name | ast.Tuple) for t in stmt.targets):
            names = stored_names(stmt)
        elif cls is ast.AugAssign and stmt.target.__class__ is ast.Name:
            feeds.setdefault(stmt.target.id, set()).update(_reads(stmt.value), (stmt.target.id,))
            continue
        elif cls is ast.If and _only_binds(stmt):  # its test matters only to what it binds
            for name in stored_names(stmt):
                feeds.setdefault(name, set()).update(_reads(stmt.test))
            continue
        else:  # a test, a loop's range, a call statement, a raise: needed as they stand
            needed |= _own_reads(stmt)
            continue
        stored |= names
        for name in names:
            feeds.setdefault(name, set()).update(_reads(stmt.value))
    pending = list(needed)
    while pending:
        for name in feeds.get(pending.pop(), ()):
            if name not in needed:
                needed.add(name)
                pending.append(name)
    return frozenset(stored - needed)


def _only_binds(stmt: ast.If) -> bool:
    """An ``if`` that only assigns names (no loop, no call for its effect), on a test that
    calls nothing: where none of its names is needed, neither is its test."""
    if any(isinstance(node, ast.Call) for node in ast.walk(stmt.test)):
        return False
    inner = (ast.Assign, ast.AugAssign, ast.If, ast.Pass)
    return all(isinstance(s, inner) for s in statements_in([*stmt.body, *stmt.orelse]))


def _own_reads(stmt: ast.stmt) -> set[str]:
    """What a statement reads itself, without the blocks it holds."""
    if isinstance(stmt, ast.If | ast.While):
        return _reads(stmt.test)
    if isinstance(stmt, ast.For):
        return _reads(stmt.iter)
    return _reads(stmt)


def _reads_and_updates(statements: list[ast.stmt]) -> set[str]:
    """Names read, counting ``b += e`` as a read of ``b`` (it needs ``b``'s value)."""
    found = {name for stmt in statements for name in loads_in(stmt)}
    for stmt in statements_in(statements):
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            found.add(stmt.target.id)
    return found


def _own_index(loop: ast.For | ast.While) -> set[str]:
    """``for i in ...``: the body reads the ``i`` the loop itself binds, not one from before
    (unless the range does: ``for i in range(i)``)."""
    if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name):
        return {loop.target.id} - set(loads_in(loop.iter))
    return set()


# Statements that only bind names (no call whose effect could matter, such as an append).
_BINDING_ONLY = (ast.Assign, ast.AugAssign, ast.If, ast.For, ast.While, ast.Pass)


def _dead_loop(loop: ast.For | ast.While, live: set[str] | SetOverlay) -> bool:
    """A forward loop whose stores nothing after it reads, and that records nothing (no
    ``stack.append``): a gradient that does not need the loop's values skips it. Its tests and
    bounds are pure (calls of math, NumPy and the helpers), so dropping it changes no value."""
    inner = statements_in([loop])
    if not all(isinstance(stmt, _BINDING_ONLY) for stmt in inner):
        return False
    return not any(name in live for stmt in inner for name in stored_names(stmt))


def _drop_unread_stores(owner: ast.stmt, unread: frozenset[str]) -> None:
    """Remove ``name = e`` for names never read, anywhere in the loop (nested blocks too),
    and the ``if``s left with nothing to do (their tests are names: nothing runs)."""
    for field in block_fields(owner.__class__):
        kept = []
        for stmt in getattr(owner, field):
            if _stores_unread(stmt, unread):
                continue
            if isinstance(stmt, BLOCK_STATEMENTS):
                _drop_unread_stores(stmt, unread)
            if isinstance(stmt, ast.If) and _does_nothing(stmt):
                continue
            kept.append(stmt)
        setattr(owner, field, kept or ([ast.Pass()] if field == "body" else []))


def _does_nothing(stmt: ast.If) -> bool:
    """An ``if`` whose branches only ``pass``, on a test that calls nothing."""
    blocks_pass = all(isinstance(s, ast.Pass) for s in [*stmt.body, *stmt.orelse])
    return blocks_pass and not any(isinstance(n, ast.Call) for n in ast.walk(stmt.test))


def _stores_unread(stmt: ast.stmt, unread: frozenset[str]) -> bool:
    if isinstance(stmt, ast.AugAssign):  # its name's first store goes too
        return isinstance(stmt.target, ast.Name) and stmt.target.id in unread
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id in unread
    )


def _dead_code_in_if(
    stmt: ast.If, live: set[str] | SetOverlay, unread: frozenset[str]
) -> ast.If | None:
    live_body, live_orelse = SetOverlay(live), SetOverlay(live)
    body = eliminate_dead_code(stmt.body, live_body, unread)
    orelse = eliminate_dead_code(stmt.orelse, live_orelse, unread)
    if not body and not orelse:
        return None
    # Live before the `if`: live on entry to either branch, plus what the test reads.
    for name in live_body.removed & live_orelse.removed:
        if name not in live_body.added and name not in live_orelse.added:
            live.discard(name)
    live |= live_body.added | live_orelse.added | _reads(stmt.test)
    if not body:
        stmt.test = ast.UnaryOp(op=ast.Not(), operand=stmt.test)
        body, orelse = orelse, []
    stmt.body, stmt.orelse = body, orelse
    return stmt


def _is_zero_assign(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Assign)
        and getattr(stmt, "adcompile_sweep", None) == ADJOINT
        and _is_zero(stmt.value)
    )


def drop_zero_contributions(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Remove ``b += 0.0``, and ``b = 0.0`` whose next use is ``b += e`` (that becomes ``b = e``).

    Zeros appear when simplification finds a contribution that is identically zero.
    """
    out: list[ast.stmt] = []
    zeroed: dict[str, int] = {}  # name -> index in `out` of its pending `name = 0.0`
    for stmt in statements:
        if isinstance(stmt, ast.AugAssign) and _is_zero(stmt.value):
            continue
        if isinstance(stmt, BLOCK_STATEMENTS):
            for body in (stmt.body, stmt.orelse):
                body[:] = drop_zero_contributions(body) or [ast.Pass()]
            stmt.orelse = [s for s in stmt.orelse if not isinstance(s, ast.Pass)]
            for name in _reads(stmt):
                zeroed.pop(name, None)
        elif (
            isinstance(stmt, ast.AugAssign)
            and isinstance(stmt.op, _ADD_SUB)
            and stmt.target.id in zeroed
        ):
            out[zeroed.pop(stmt.target.id)] = None
            stmt = assign_like(stmt)
        elif zeroed:  # a read of a zeroed adjoint keeps its `b = 0.0`
            for name in _reads(stmt.value if hasattr(stmt, "value") else stmt):
                zeroed.pop(name, None)
        if _is_zero_assign(stmt):
            zeroed[stmt.targets[0].id] = len(out)
        out.append(stmt)
    return [s for s in out if s is not None]


def assign_like(stmt: ast.AugAssign) -> ast.Assign:
    """``b = e`` for ``b += e`` (``b = -e`` for ``b -= e``), keeping the generated-code tags."""
    value = stmt.value
    if isinstance(stmt.op, ast.Sub):
        value = ast.UnaryOp(op=ast.USub(), operand=value)
    node = ast.Assign(targets=[stmt.target], value=value, lineno=0)
    node.adcompile_line = stmt.adcompile_line
    node.adcompile_sweep = stmt.adcompile_sweep
    return node


PASSES = ("simplify", "zeros", "dead_code", "inline", "copies", "share")


def choose_passes(optimize: bool | Sequence[str]) -> tuple[str, ...]:
    """``True``: every pass; ``False``: none; or the named passes (ValueError on a bad name)."""
    if optimize is True:
        return PASSES
    if optimize is False:
        return ()
    if isinstance(optimize, str | bytes) or not isinstance(optimize, Sequence):
        raise TypeError(
            f"optimize must be True, False or a sequence of pass names, not {optimize!r}"
        )
    unknown = [name for name in optimize if name not in PASSES]
    if unknown:
        raise ValueError(f"unknown optimisation pass {unknown[0]!r}; the passes are {PASSES}")
    return tuple(optimize)


def optimize(
    statements: list[ast.stmt],
    returns: ast.expr,
    temporaries: set[str] = frozenset(),
    temporary_adjoints: set[str] = frozenset(),
    passes: Sequence[str] = PASSES,
    sharing: tuple[Callable[[], str], frozenset[str]] | None = None,
    facts: FloatFacts = NO_FACTS,
) -> list[ast.stmt]:
    """Run the chosen passes in order: simplify, zeros, dead code, inline, copies, share.

    ``sharing`` is what ``share.py`` needs: a source of fresh names and the modules whose
    calls are pure; without it the share pass is skipped. ``facts`` (scalar code only) say
    which names hold floats and which hold ``1.0`` (``floats.py``).
    """
    if "simplify" in passes:
        simplify_adjoints(statements, facts)
    if "zeros" in passes:
        statements = drop_zero_contributions(statements)
    if "dead_code" in passes:
        has_loops = _has_loop(statements)
        unread = never_read(statements, returns) if has_loops else frozenset()
        statements = eliminate_dead_code(statements, _reads(returns), unread)
    if "inline" in passes:
        statements = inline_temporaries(statements, returns, temporaries)
    if "copies" in passes:
        statements = propagate_copies(statements, temporary_adjoints)
        statements = drop_copies_back(statements)
    if "share" in passes and sharing is not None:
        statements = share_common_subexpressions(statements, *sharing)
    return statements


def _has_loop(statements: list[ast.stmt]) -> bool:
    for stmt in statements:
        if isinstance(stmt, LOOP_STATEMENTS):
            return True
        if isinstance(stmt, ast.If) and (_has_loop(stmt.body) or _has_loop(stmt.orelse)):
            return True
    return False


def propagate_copies(statements: list[ast.stmt], replaceable: set[str]) -> list[ast.stmt]:
    """Remove ``b_t = b_s`` for temporaries' adjoints, reading ``b_s`` wherever ``b_t`` was.

    Safe because a temporary is used once (its adjoint is assigned once) and the adjoint it
    copies is final by then: all uses of a value come after its definition, so the reverse
    sweep has added every contribution before it reaches the definition.
    """
    renames: dict[str, str] = {}

    def walk(block: list[ast.stmt]) -> list[ast.stmt]:
        kept = []
        for stmt in block:
            if not renames:  # nothing removed yet: nothing to rename
                pass
            elif isinstance(stmt, TEST_BLOCKS):
                rename_in_place(stmt.test, renames)
            elif isinstance(stmt, ast.For):
                rename_in_place(stmt.iter, renames)
            else:
                rename_in_place(stmt, renames)
            if isinstance(stmt, BLOCK_STATEMENTS):
                stmt.body, stmt.orelse = walk(stmt.body), walk(stmt.orelse)
            elif _is_copy(stmt) and stmt.targets[0].id in replaceable:
                renames[stmt.targets[0].id] = stmt.value.id
                continue
            kept.append(stmt)
        return kept

    return walk(statements)


def drop_copies_back(statements: list[ast.stmt], in_loop: bool = False) -> list[ast.stmt]:
    """Remove ``a = b`` right where ``b = a`` left them equal (a loop's reverse body writes
    ``b_x_2 = b_x_1`` and then, as the first contribution to ``b_x_1``, ``b_x_1 = b_x_2``).

    Exact for floats and arrays alike: ``a`` already is ``b``. Only within one straight-line
    run of a loop body: elsewhere every assignment has a fresh name, so no adjoint is copied
    back, and looking would cost a walk of the whole gradient. A statement that stores to
    either name, or a nested block, ends what is known.
    """
    kept: list[ast.stmt] = []
    last: dict[str, int] = {}  # name -> the index of the statement that last stored it
    copied_from: dict[int, str] = {}  # index of a copy `a = b` -> b
    for i, stmt in enumerate(statements):
        if isinstance(stmt, BLOCK_STATEMENTS):
            inner = in_loop or not isinstance(stmt, ast.If)
            stmt.body = drop_copies_back(stmt.body, inner)
            stmt.orelse = drop_copies_back(stmt.orelse, inner)
            last.clear()
        elif not in_loop:
            pass
        elif _is_copy(stmt):
            target, source = stmt.targets[0].id, stmt.value.id
            j = last.get(source)
            if j is not None and copied_from.get(j) == target and last.get(target, -1) < j:
                continue  # `source = target` was the last word on both
            copied_from[i] = source
            last[target] = i
        else:
            for name in stored_names(stmt):
                last[name] = i
        kept.append(stmt)
    return kept


def _is_copy(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Assign)
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Name)
        and getattr(stmt, "adcompile_sweep", None) == ADJOINT
    )


def _read_counts(statements: list[ast.stmt], returns: ast.expr) -> Counter[str]:
    reads: list[ast.Name] = []
    for node in [*statements, returns]:
        collect_names(node, reads, loads_only=True)
    return Counter([name.id for name in reads])


def _inline(node: ast.AST, pending: dict[str, ast.stmt]) -> ast.AST:
    if node.__class__ is ast.Name:
        definition = pending.pop(node.id, None)
        return definition.value if definition is not None else node
    if pending:
        map_children(node, lambda child: _inline(child, pending))
    return node


# How deep a folded expression may nest. A tangent chains through a whole line (the
# tangent of a 200-factor product nests 400 levels), past what astor renders on the
# default recursion limit and past what reads as code; the user's own lines stay whole.
MAX_INLINED_DEPTH = 40


def _expression_depth(node: ast.AST) -> int:
    """How many levels ``node`` nests (iteratively: the tree may be deep)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return deepest


def inline_temporaries(
    statements: list[ast.stmt], returns: ast.expr, temporaries: set[str]
) -> list[ast.stmt]:
    """Fold a forward temporary read exactly once back into the statement that reads it.

    Only within one source line's statements, so ``a = sin(x * y) + K`` reads as one line
    again whenever the adjoints do not need the intermediate values; a temporary whose
    expression has grown ``MAX_INLINED_DEPTH`` deep stays a statement of its own.
    """
    counts = _read_counts(statements, returns)
    inlinable = {t for t in temporaries if counts.get(t) == 1}

    def walk(block: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        pending: dict[str, ast.stmt] = {}
        line = None
        for stmt in block:
            is_forward_assign = (
                isinstance(stmt, ast.Assign) and getattr(stmt, "adcompile_sweep", None) != ADJOINT
            )
            if not is_forward_assign or stmt.adcompile_line != line:
                out.extend(pending.values())
                pending.clear()
            if isinstance(stmt, BLOCK_STATEMENTS):
                stmt.body, stmt.orelse = walk(stmt.body), walk(stmt.orelse)
            if is_forward_assign:
                line = stmt.adcompile_line
                stmt.value = _inline(stmt.value, pending)
                if stmt.targets[0].id in inlinable and not _too_deep_to_fold(stmt.value):
                    pending[stmt.targets[0].id] = stmt
                    continue
            out.append(stmt)
        out.extend(pending.values())
        return out

    return walk(statements)


def _too_deep_to_fold(value: ast.expr) -> bool:
    """Whether folding ``value`` into its reader would nest past ``MAX_INLINED_DEPTH``."""
    return _expression_depth(value) >= MAX_INLINED_DEPTH


def finish_array_code(
    statements: list[ast.stmt], primal_of: dict[str, ast.expr], numpy_alias: str
) -> list[ast.stmt]:
    """Array mode: accumulate with ``b = b + e``, and start zero adjoints as arrays.

    ``b += e`` would add into the array ``b`` in place, and ``b`` may be the very array
    another adjoint (or a rule's result) holds. A zero adjoint ``b_x = 0.0`` becomes
    ``np.zeros_like(x)``, so it has ``x``'s shape wherever a rule reads it (``g @ W``).
    """
    out = []
    for stmt in statements:
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            read = ast.Name(id=stmt.target.id, ctx=ast.Load())
            value = ast.BinOp(left=read, op=stmt.op, right=stmt.value)
            new = ast.Assign(targets=[stmt.target], value=value, lineno=0)
            new.adcompile_line = getattr(stmt, "adcompile_line", None)
            new.adcompile_sweep = getattr(stmt, "adcompile_sweep", None)
            stmt = new
        elif _is_zero_assign(stmt) and stmt.targets[0].id in primal_of:
            primal = clone(primal_of[stmt.targets[0].id])
            zeros = ast.Attribute(
                value=ast.Name(id=numpy_alias, ctx=ast.Load()), attr="zeros_like", ctx=ast.Load()
            )
            stmt.value = ast.Call(func=zeros, args=[primal], keywords=[])
        for field in ("body", "orelse"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(stmt, field, finish_array_code(block, primal_of, numpy_alias))
        out.append(stmt)
    return out
