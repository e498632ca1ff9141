"""In-place updates of NumPy arrays that may be shared, which generated code cannot follow.

In NumPy, ``y = x; y += 1.0`` changes the one array both names hold, so ``x`` reads the new
values afterwards; so do ``q = params["a"]; q *= 2.0`` and ``y = np.asarray(x)``. Generated
code computes every assignment as a new value (``y_1 = y + 1.0``) and leaves ``x`` as it was.
Rather than differ silently, array code may update in place (``y op= ...``) only a name that
surely owns its value:

- a new array this function made (arithmetic, or a NumPy function that is not a view such as
  ``np.reshape`` or ``np.asarray``), or a number (a literal, or a reduction of a whole array);
- a parameter under its own name (NumPy would change the caller's array, which the gradient
  does not; the function's own values are the same).

Anything else (a plain copy ``y = x``, ``x[i]``, ``x.T``, ``params["a"]``, unpacked items, a
branch that may give either) is refused at compile time with a message saying to write
``y = y + ...``. In a loop, a later iteration updates the array the previous one left: an
update is refused too if that array is then held by another name as well (``cur += ...``
followed by ``prev = cur``, or ``y += ...`` followed by ``y = x``). Python numbers cannot be
changed in place, so scalar code is not checked.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from .einsum import EinsumError, parse_subscripts

# NumPy functions and methods whose result may be their first argument or a view of it.
SHARING = frozenset(
    {"reshape", "transpose", "ravel", "squeeze", "swapaxes", "view", "asarray", "asanyarray"}
    | {"expand_dims", "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d", "moveaxis"}
    | {"diagonal", "diag", "flip", "fliplr", "flipud", "rot90", "rollaxis", "permute_dims"}
    | {"matrix_transpose", "ascontiguousarray", "asfortranarray", "require", "real", "imag"}
    | {"asarray_chkfinite", "real_if_close", "trim_zeros", "broadcast_arrays"}
)
# Functions and methods that surely make a new array (or a number), besides the NumPy
# functions with derivative rules and NumPy's ufuncs (``_new_array_names``).
_ALWAYS_NEW = frozenset(
    {"zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like", "full_like"}
    | {"arange", "linspace", "eye", "identity", "flatten", "tolist", "item"}
    | {"all", "any", "argmax", "argmin", "argsort", "sort", "hstack", "vstack", "shape"}
    | {
        "size",
        "ndim",
        "tile",
        "repeat",
        "kron",
        "cross",
        "tril",
        "triu",
        "take",
        "take_along_axis",
        "pad",
    }
    | {"append", "insert", "delete", "unique", "logspace", "geomspace", "vander"}
    | {"convolve", "correlate", "polyval", "interp", "tensordot", "pinv", "cholesky"}
    | {"column_stack", "dstack", "around", "resize", "median", "average", "select", "cov"}
    | {"corrcoef", "percentile", "quantile", "nanmean", "nansum", "ediff1d", "nan_to_num"}
)


def may_share(name: str, call: ast.Call) -> bool:
    """True if the call ``np.name(x, ...)`` or ``x.name(...)`` may give ``x`` or a view of it.

    A function not known to make a new array may (``np.ascontiguousarray(x)`` is ``x``
    itself), so an in-place update of its result counts as one of ``x``.
    """
    if name in SHARING or any(keyword.arg == "out" for keyword in call.keywords):
        return True
    if name == "einsum":  # of one operand, a view of it: np.einsum("ij->ji", x), "ii->i"
        return len(call.args) == 2 and not _einsum_sums(call.args[0])
    if name == "diff":  # np.diff(x, 0) is x itself: an order not a literal above 0 may be 0
        return not _positive_order(call)
    if name in ("astype", "nan_to_num"):  # with copy=False: x itself where it can be
        return any(k.arg == "copy" and not _literal_true(k.value) for k in call.keywords)
    return name not in _new_array_names()


def _literal_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


@functools.cache
def _new_array_names() -> frozenset[str]:
    """Names of calls that surely make a new array: the NumPy functions with derivative
    rules (none of them returns a view but those in SHARING), NumPy's ufuncs, and
    ``_ALWAYS_NEW``. Only array code asks, so NumPy is loaded."""
    import numpy as np

    from .rules.registry import array_rules

    primals = {id(rule.primal) for rule in array_rules()}
    ruled = {getattr(rule.primal, "__name__", "") for rule in array_rules()}
    # the names NumPy binds them to too (np.round and np.around; np.max is amax in NumPy 1)
    for module in (np, np.linalg):
        ruled |= {name for name, value in vars(module).items() if id(value) in primals}
    ufuncs = {name for name, value in vars(np).items() if isinstance(value, np.ufunc)}
    return frozenset((ruled | ufuncs | _ALWAYS_NEW) - SHARING)


def _einsum_sums(spec: ast.expr) -> bool:
    """A one-operand einsum whose literal subscripts sum a label (``"ij->j"``, ``"ii->"``):
    NumPy makes a new array for it. False if the subscripts are not a literal, or not read."""
    if not (isinstance(spec, ast.Constant) and isinstance(spec.value, str)):
        return False
    try:
        subscripts = parse_subscripts(spec.value, 1)
    except EinsumError:
        return False
    return any(label not in subscripts.output for label in subscripts.inputs[0] if label != "...")


def _positive_order(call: ast.Call) -> bool:
    """``np.diff``'s ``n`` (second argument, or keyword) is left out (1) or a literal int > 0."""
    given = [k.value for k in call.keywords if k.arg == "n"] + call.args[1:2]
    if not given:
        return True
    n = given[0]
    return isinstance(n, ast.Constant) and type(n.value) is int and n.value > 0


# Methods (and NumPy functions) that always return a new array: x.copy(), x.cumsum(axis=0).
_NEW_ARRAY_METHODS = frozenset({"copy", "cumsum", "cumprod"})
# Reductions that give a number when they take the whole array (no axis, no keepdims).
_WHOLE_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "var", "std", "norm"})


def owns_value(value: ast.expr) -> bool:
    """True if ``value`` is surely a new array, or a number: never another name's array."""
    if isinstance(value, ast.Constant | ast.BinOp | ast.UnaryOp | ast.Compare):
        return True
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    owner, name = value.func.value, value.func.attr
    if name in _NEW_ARRAY_METHODS:  # whatever the owner: np.flip(x).copy() is new too
        return True
    if may_share(name, value) or not isinstance(owner, ast.Name | ast.Attribute):
        return False
    # np.f(...) makes a new array; x.f(...) only for the whole-array reductions (x.sum())
    return _is_numpy(owner) or (name in _WHOLE_REDUCTIONS and not value.args)


def is_number(value: ast.expr) -> bool:
    """A literal, or a reduction of a whole array (``np.sum(x)``, ``x.mean()``): a number."""
    if isinstance(value, ast.Constant):
        return True
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    owner, name = value.func.value, value.func.attr
    if name not in _WHOLE_REDUCTIONS or value.keywords:
        return False
    return len(value.args) == 1 if _is_numpy(owner) else not value.args


def shared_name(value: ast.expr) -> str | None:
    """The name whose array ``value`` may be, or view: ``x``, ``x.T``, ``x[0]``,
    ``x.reshape(2, 3)``, ``np.asarray(x)``; None for anything else."""
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute | ast.Subscript):
        return shared_name(value.value)
    func = value.func if isinstance(value, ast.Call) else None
    if isinstance(func, ast.Attribute) and may_share(func.attr, value):
        if _is_numpy(func.value) and value.args:  # np.reshape(x, ...)
            return shared_name(shared_argument(value))
        return shared_name(func.value)  # x.reshape(...)
    return None


def shared_argument(call: ast.Call) -> ast.expr:
    """The argument whose array a sharing NumPy call ``np.name(...)`` may give: the first,
    or einsum's operand (after its subscripts)."""
    func = call.func
    einsum = isinstance(func, ast.Attribute) and func.attr == "einsum"
    return call.args[1] if einsum else call.args[0]


def _is_numpy(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):  # np.linalg.norm
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


@dataclass
class OwnedArrays:
    """For each version of the user's names, the array it holds (named by the version that
    made it, its root) and whether that array is this function's own (see the docstring)."""

    params: frozenset[str]
    roots: dict[str, str] = field(default_factory=dict)
    own: set[str] = field(default_factory=set)  # roots: new arrays made here, or numbers
    numbers: set[str] = field(default_factory=set)  # roots that are numbers
    shared: set[str] = field(default_factory=set)  # roots held by two names or more
    # Per enclosing loop, innermost last: the in-place updates in its body (version, node).
    loops: list[list[tuple[str, ast.AugAssign]]] = field(default_factory=list)
    # Per enclosing loop, innermost last: the versions bound before its body.
    bound_before: list[set[str]] = field(default_factory=list)
    # Merged versions owning their value, and the arrays they may be (see ``merged``).
    merge_sources: dict[str, set[str]] = field(default_factory=dict)

    def root(self, version: str) -> str:
        """The version whose array ``version`` holds."""
        return self.roots.get(version, version)

    def bound(
        self,
        version: str,
        value: ast.expr,
        existing: str | None,
        reads: Mapping[str, str] | None = None,
    ) -> None:
        """``version = value``; ``existing`` is the version of the name ``value`` may share,
        ``reads`` the versions of the names ``value`` reads."""
        if existing is not None and not owns_value(value):
            root = self.root(existing)
            self.roots[version] = root
            if root not in self.numbers:
                self.shared.add(root)
            return
        if owns_value(value):
            self.own.add(version)
            if self._number_arithmetic(value, reads or {}):
                self.numbers.add(version)

    def _number_arithmetic(self, value: ast.expr, reads: Mapping[str, str]) -> bool:
        """Arithmetic of numbers only (``loss + np.sum(e)`` with ``loss`` a number): a number."""
        if is_number(value):
            return True
        if isinstance(value, ast.Name):
            return value.id in reads and self.root(reads[value.id]) in self.numbers
        if isinstance(value, ast.UnaryOp):
            return self._number_arithmetic(value.operand, reads)
        if isinstance(value, ast.BinOp):
            return all(self._number_arithmetic(v, reads) for v in (value.left, value.right))
        return False

    def share(self, version: str) -> None:
        """``version``'s array may now be held by another name too (without its knowing)."""
        root = self.root(version)
        if root not in self.numbers:
            self.shared.add(root)

    def carried(self, header: str, source: str) -> None:
        """A loop's header starts as ``source``: the same variable, so the same array."""
        self.roots[header] = self.root(source)

    def merged(self, version: str, name: str, sources: list[str | None]) -> None:
        """``version`` joins the versions of the user's ``name`` that two paths left (None:
        not bound on that path): the one array they all hold, or an own array (or number)
        if each path's is."""
        roots = {self.root(source) for source in sources if source is not None}
        # Whatever a loop's entry made of ``version`` (a header) is decided here afresh;
        # with none of the cases below it is an array of its own that nobody owns.
        self.roots.pop(version, None)
        self.own.discard(version)
        if len(roots) == 1:
            self.roots[version] = roots.pop()
        elif all(root in self.numbers for root in roots):
            self.own.add(version)
            self.numbers.add(version)
        elif all(self._owned_by(name, root) for root in roots):
            self.own.add(version)
            self.merge_sources[version] = roots  # judged again at a loop's back edges

    def refusal(self, version: str, name: str) -> bool:
        """True if updating ``version`` (of the user's ``name``) in place could change another
        name's array."""
        root = self.root(version)
        return root not in self.numbers and not self._owned_by(name, root)

    def updated(self, version: str, stmt: ast.AugAssign) -> None:
        """``stmt`` updates ``version``'s array in place (allowed where it stands)."""
        if self.loops:
            self.loops[-1].append((version, stmt))

    def enter_loop(self) -> None:
        """A loop body starts: its in-place updates are judged again at its back edges."""
        self.loops.append([])
        self.bound_before.append(set(self.roots) | self.own)

    def leave_loop(self, back_edges: list[tuple[str, str, str]]) -> ast.AugAssign | None:
        """The body ended; ``back_edges`` are (user name, its header, the version the header
        gets for the next iteration). Returns an in-place update of the body that a later
        iteration would apply to an array another name holds too (``cur += ...`` then
        ``prev = cur``; or ``y += ...`` then ``y = x``)."""
        updates = self.loops.pop()
        before = self.bound_before.pop()
        if self.loops:  # an outer loop's body holds these updates too
            self.loops[-1].extend(updates)
        roots = [self.root(value) for _, _, value in back_edges]
        unsafe = self._numbers_turned_arrays(back_edges, roots, before)
        arrays = Counter(root for root in roots if root not in self.numbers)
        # The array a header starts the next iteration with is the one the body left: an
        # update of either (the entry's, or one a merge in the body made) is unsafe.
        unsafe |= {
            array
            for (name, header, _), root in zip(back_edges, roots, strict=True)
            if root not in self.numbers and (arrays[root] > 1 or not self._owned_by(name, root))
            for array in (self.root(header), root)
        }
        self._spread_through_merges(unsafe)
        for version, stmt in updates:
            if self.root(version) in unsafe:
                return stmt
        return None

    def _numbers_turned_arrays(
        self, back_edges: list[tuple[str, str, str]], roots: list[str], before: set[str]
    ) -> set[str]:
        """Headers that start as a number and come back as an array, copied in the body.

        ``s = 0.0``, then ``t = s; s += w * x[i]`` in the loop: from the second iteration on
        ``s`` holds an array, which ``t = s`` shares, so ``s +=`` changes ``t`` as well.
        """
        copied = {root for version, root in self.roots.items() if version not in before}
        return {
            entry
            for (_, header, _), root in zip(back_edges, roots, strict=True)
            if (entry := self.root(header)) in self.numbers
            and root not in self.numbers
            and entry in copied
        }

    def _spread_through_merges(self, unsafe: set[str]) -> None:
        """A merged version that may be an unsafe array is unsafe too: in a later iteration
        a path of the merge can bring the array another name took (``F = E`` last time)."""
        spreading = True
        while spreading:
            spreading = False
            for version, sources in self.merge_sources.items():
                if version not in unsafe and not sources.isdisjoint(unsafe):
                    unsafe.add(version)
                    spreading = True

    def _owned_by(self, name: str, root: str) -> bool:
        """Whether the user's ``name`` may update the array ``root`` in place: a new array
        no other name holds, or the parameter ``name`` itself."""
        if root in self.shared:
            return False
        return root in self.own or (root == name and name in self.params)
