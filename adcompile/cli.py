"""The ``adcompile`` command: ``dump`` shows generated code, ``check`` verifies it with SymPy,
``explain`` walks through backprop step by step and ``graph`` draws the computation graph.

``PATH.py:FUNC`` is read without running the file; ``package.module:FUNC`` imports the module.
Errors are one located message on stderr and exit status 1; bad usage exits 2. No traceback.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import copy
import dataclasses
import importlib
import importlib.util
import math
import os
import re
import sys
import tokenize
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import messages
from .api import generate_source
from .astutil import parse_again
from .depth import room_for_deep_expressions
from .errors import AdcompileError, Location, UnsupportedSyntaxError, format_message
from .graph import GraphError
from .recipes import recipe_of
from .render import load_module
from .source import (
    FunctionSource,
    StaticFunction,
    UnreadDefault,
    load_from_file,
    load_function,
)
from .static_decorators import decorator_options, decorator_wrt, refuse_rebound_target
from .symbolic import NoSamplePoints


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class RunError(Exception):
    """The function failed at the given point (e.g. ``log`` of a negative): exit status 1."""


class _Once(argparse.Action):
    """An option given at most once (``explain --at``: one point; ``--wrt``, whose
    repeats are not added up), not silently the last of several."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} is given more than once (this command takes one)")
        setattr(namespace, self.dest, values)


def parse_target(target: str) -> tuple[str, str]:
    """Split ``PATH.py:FUNC`` or ``package.module:FUNC`` into its two parts."""
    where, sep, func = target.rpartition(":")
    if not sep or not where or not func.isidentifier():
        raise UsageError(f"expected PATH.py:FUNC or package.module:FUNC, got {target!r}")
    return where, func


def load_target(target: str) -> FunctionSource:
    """Load the function a target names: statically from a file, or by importing a module."""
    where, func = parse_target(target)
    if where.endswith(".py") or Path(where).is_file():
        fs = _load_file(where, func)
        refuse_rebound_target(fs)
        decorator_wrt(fs)  # refuses a decorator reading the file cannot apply
        _note_static_rules(fs)
        return fs
    module = _import(where)
    fn = getattr(module, func, None)
    if fn is None:
        raise LookupError(f"module {where!r} has no attribute {func!r}")
    if recipe_of(fn) is not None or hasattr(fn, "adcompile_composite"):
        fn = fn.__wrapped__  # `@grad def f`: the module's f is its gradient; f is the primal
    # Another decorator's wrapper stays: its own code (calling the function it wraps) is what
    # the module's name runs, so it is what is differentiated, or refused.
    if not isinstance(fn, types.FunctionType):
        kind = type(fn).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise LookupError(
            f"{where}:{func} is {article} {kind}, not a function defined with def or lambda"
        )
    return load_function(fn)


def _import(name: str) -> types.ModuleType:
    """Import a module as ``python -m`` would: the current directory comes first."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    argv, sys.argv = sys.argv, [name]  # a module that reads its arguments sees none of ours
    try:
        # What it prints while loading is not our output (`dump pkg.mod:f > grad.py`).
        with contextlib.redirect_stdout(sys.stderr):
            return importlib.import_module(name)
    except ImportError as exc:
        raise LookupError(f"cannot import module {name!r}: {exc}") from None
    except SyntaxError as exc:
        raise _unparsable(name, exc) from None
    except AdcompileError:  # `@grad` on code adcompile refuses: its own located error
        raise
    except Exception as exc:  # the module's own code failed: its error, in one line
        raise LookupError(f"importing {name!r} failed: {type(exc).__name__}: {exc}") from None
    except SystemExit as exc:  # a script that runs (or parses its arguments) when imported
        raise LookupError(
            f"importing {name!r} failed: it called sys.exit({exc.code!r}) (code that runs on "
            "import; put it under `if __name__ == '__main__':`)"
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # e.g. pytest.importorskip's Skipped at the module's top
        raise LookupError(
            f"importing {name!r} failed: it raised {type(exc).__name__}: {exc} (a "
            "BaseException, not an Exception)"
        ) from None
    finally:
        sys.argv = argv


def _unparsable(name: str, exc: SyntaxError) -> Exception:
    """A module that does not parse, located as for ``PATH.py``: the import's SyntaxError
    counts columns in UTF-8 bytes (3.11, 3.12), has no position for a NUL byte and no file
    name for a bad encoding, so the file is read again the way ``PATH.py`` is. A module
    that parses but runs code raising SyntaxError (``eval("1 +")``) failed as any other."""
    path = exc.filename if exc.filename and os.path.isfile(exc.filename) else _origin(name)
    if path is not None:
        try:
            _load_file(path, "")  # no function has that name: it only reads and parses
        except AdcompileError as located:
            return located
        except LookupError:  # it parses: the compiler refused it (`return` outside a def)
            if exc.filename != path:  # ... or code it ran raised the error
                return LookupError(f"importing {name!r} failed: SyntaxError: {exc}")
    text = exc.text or ""
    column = _characters_before(text, (exc.offset or 1) - 1) + 1 if exc.offset else 0
    location = Location(exc.filename or path or name, exc.lineno or 0, column, text)
    return UnsupportedSyntaxError(f"the module does not parse: {exc.msg}", location)


def _characters_before(text: str, byte_offset: int) -> int:
    """How many characters of ``text`` its first ``byte_offset`` UTF-8 bytes hold: the
    compiler's columns count bytes, on every version."""
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


def _origin(name: str) -> str | None:
    """The file a module is loaded from, if it is one."""
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # a parent package that fails: no file to name
        return None
    origin = getattr(spec, "origin", None)
    return origin if origin and os.path.isfile(origin) else None


def _load_file(path: str, func: str) -> FunctionSource:
    """``load_from_file``, with one message on every version for a file its declared
    encoding cannot read (a ``coding: utf-16`` cookie: a UnicodeError without the file's
    name up to 3.12, an error at line 0 from 3.13)."""
    try:
        return load_from_file(path, func)
    except UnicodeDecodeError:
        raise  # load_from_file locates those itself
    except UnicodeError:
        raise _undeclared_encoding(path) from None
    except AdcompileError as exc:
        if exc.location is not None and exc.location.line == 0:  # nowhere to point at
            raise _undeclared_encoding(path) from None
        raise


def _undeclared_encoding(path: str) -> AdcompileError:
    with open(path, "rb") as handle:
        encoding, _ = tokenize.detect_encoding(handle.readline)
    return AdcompileError(
        f"cannot read {path} as Python source: it declares the encoding {encoding}, "
        "which does not decode it"
    )


def _note_static_rules(fs: FunctionSource) -> None:
    """Warn that rules a file registers with ``adcompile.derivative`` do not apply when the
    file is read without running it (as a decorator or called, under any name)."""
    text = "".join(fs.lines)
    if "derivative" not in text:
        return
    tree = parse_again(text)
    names = {"derivative"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adcompile"):
            names |= {a.asname or a.name for a in node.names if a.name == "derivative"}
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if (isinstance(func, ast.Name) and func.id in names) or (
            isinstance(func, ast.Attribute) and func.attr == "derivative"
        ):
            print(
                f"adcompile: note: {fs.filename} registers rules with adcompile.derivative, "
                "which apply only when the module runs; name it as module:FUNC to use them",
                file=sys.stderr,
            )
            return


def parse_wrt(text: str | None) -> tuple[str, ...] | None:
    """``x,z`` -> ("x", "z"); None stays None."""
    if text is None:
        return None
    names = tuple(part.strip() for part in text.split(","))
    if not all(names):
        raise UsageError(f"--wrt expects comma-separated parameter names, got {text!r}")
    return names


def parse_point(
    text: str, params: list[str], defaults: tuple[object, ...] = ()
) -> dict[str, float]:
    """``x=4,y=-3`` -> {"x": 4.0, "y": -3.0}, checking names and numbers; a parameter left
    out takes its default value (``defaults`` belong to the last parameters) if it is a number
    or a flag (``clip=True``).
    """
    point: dict[str, float | int] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep:
            raise UsageError(f"--at expects name=value pairs separated by commas, got {part!r}")
        if name not in params:
            raise UsageError(f"--at names {name!r}, which is not a parameter ({', '.join(params)})")
        if name in point:
            raise UsageError(f"--at gives {name} twice")
        point[name] = _number(name, value)
    for name, default in zip(params[len(params) - len(defaults) :], defaults, strict=True):
        if name not in point and type(default) in (int, float, bool):
            point[name] = default
    missing = [p for p in params if p not in point]
    if missing:
        raise UsageError(f"--at is missing a value for {', '.join(missing)}")
    return {name: point[name] for name in params}  # in the order of the signature


def _number(name: str, text: str) -> float | int:
    """The number ``--at NAME=TEXT`` gives: an int for what Python reads as an int literal
    (``10``, ``1_0``, ``0x3``: it may be a loop count), a bool for ``True``/``False`` (a
    flag), else a float. A float too large for one (``1e400``) is refused, where it became inf
    silently; ``inf`` itself is allowed."""
    if text.strip() in ("True", "False"):
        return text.strip() == "True"
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--at {name}={text!r}: not a number") from None
    if math.isinf(value) and "inf" not in text.lower():
        raise UsageError(
            f"--at {name}={text!r}: too large for a float (it would be inf; write inf if "
            "that is the point meant)"
        )
    return value


def _wrt_argument(wrt: tuple[str, ...] | None) -> Any:
    return wrt[0] if wrt is not None and len(wrt) == 1 else wrt


def _requested_wrt(args: argparse.Namespace, fs: FunctionSource) -> Any:
    """``--wrt``; without it, the ``wrt`` of a ``@grad(wrt=...)`` target (as the module's
    own name computes), else every parameter."""
    if args.wrt is not None:
        return _wrt_argument(parse_wrt(args.wrt))
    wrt = decorator_wrt(fs) if fs.origin is None else _module_wrt(args.target)
    if wrt is None and not fs.param_names():  # the file's fault, not the command line's
        raise fs.error(
            AdcompileError, fs.node, f"{fs.name} has no parameters to differentiate with respect to"
        )
    return wrt


def _module_wrt(target: str) -> Any:
    """The ``wrt`` of an imported ``@grad(wrt=...)`` target; None for any other."""
    recipe = _module_recipe(target)
    return None if recipe is None else recipe.wrt


def _module_recipe(target: str) -> Any:
    """The recipe of an imported ``@grad`` target's gradient; None for any other target."""
    where, func = parse_target(target)
    module = sys.modules.get(where)  # imported by load_target; a file is read, not run
    return recipe_of(getattr(module, func, None))


def _decorator_options(args: argparse.Namespace, fs: FunctionSource) -> dict[str, Any]:
    """``mode`` and ``optimize`` as the target's ``@grad(mode=..., optimize=...)`` compiled
    the module's function, and ``with_value`` for ``@value_and_grad`` (so that ``dump``
    prints its ``.source``); ``--mode`` wins."""
    if fs.origin is None:
        options = decorator_options(fs)
    else:
        recipe = _module_recipe(args.target)
        options = {} if recipe is None else {"mode": recipe.mode, "optimize": recipe.optimize}
        if recipe is not None and recipe.kind == "value_and_grad":
            options["with_value"] = True
    if args.mode is not None:
        options["mode"] = args.mode
    return options


def highlight(text: str, stream: Any) -> str:
    """Syntax-highlight Python text when ``stream`` is a terminal and pygments is present."""
    if not getattr(stream, "isatty", lambda: False)() or not _colour_wanted():
        return text
    try:
        from pygments import highlight as pyg_highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return text
    return pyg_highlight(text, PythonLexer(), TerminalFormatter())


def _colour_wanted() -> bool:
    """No colour when NO_COLOR is set to anything (no-color.org) or the terminal is dumb."""
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def command_dump(args: argparse.Namespace) -> int:
    """Print the generated gradient module (``--annotate``: beside the primal source)."""
    fs = load_target(args.target)
    text, _ = generate_source(fs, _requested_wrt(args, fs), **_decorator_options(args, fs))
    if args.annotate:
        from .explain import annotate

        sys.stdout.write(annotate(text, fs))
        return 0
    sys.stdout.write(highlight(text, sys.stdout))
    return 0


# What the user's function (or its gradient) raises when it fails at a point: reported with
# the point and adcompile's note naming the line. IndexError/KeyError (`T[i]` out of range)
# are LookupErrors; a variable not bound on the path taken is an UnboundLocalError.
_RUN_FAILURES = (ArithmeticError, ValueError, TypeError, LookupError, UnboundLocalError)


def _explained(args: argparse.Namespace, required: bool) -> tuple[FunctionSource, Any]:
    """Load the target and, given ``--at``, run the explanation there."""
    from .api import resolve_wrt
    from .explain import explain_source

    fs = load_target(args.target)
    wrt = _requested_wrt(args, fs)
    resolve_wrt(fs.param_names(), wrt, fs.name)  # a bad --wrt is a usage error (exit 2)
    _compile_scalar(fs, wrt, args.command)  # what cannot be explained says so first
    if args.at is None and required:
        raise UsageError("explain needs a point: --at NAME=VALUE,... (e.g. --at x=4,y=-3)")
    point = None if args.at is None else parse_point(args.at, fs.param_names(), fs.defaults)
    if point is None:
        return fs, None
    try:
        return fs, explain_source(fs, point, wrt)
    except _RUN_FAILURES as exc:  # the user's function failed there
        raise _failed_at(exc, args.at) from None


def _failed_at(exc: Exception, at: str) -> RunError:
    """The function failed at the point ``at``: say how, with adcompile's notes."""
    notes = "; ".join(getattr(exc, "__notes__", []))
    hint = ""
    text = str(exc)
    if isinstance(exc, TypeError) and "mpf" in text and re.search(r"for //=?:", text):
        hint = (
            "; the mpmath reference (used where SymPy cannot follow, as in loops) cannot "
            "compute // on mpmath numbers, so check cannot verify this function"
        )
    elif isinstance(exc, TypeError) and "mpf" in text:
        hint = "; an int parameter (a loop count?) has no derivative: leave it out with --wrt"
    message = f"{type(exc).__name__}: {exc} at {at}"
    if notes:  # "(computing the mpmath reference ...)" or "in line 4 of f.py: ..."
        message += f" {notes}" if notes.startswith("(") else f", {notes}"
    return RunError(message + hint)


def _compile_scalar(fs: FunctionSource, wrt: Any, command: str) -> tuple[str, str]:
    """The gradient's source and name, as ``dump`` makes them, for a function of numbers.

    Compiling first gives the located error ``dump`` gives for code adcompile refuses (a
    tuple of differentiated values, ``int(x)``), where the array test alone said "uses
    NumPy arrays" and ``graph`` drew nodes marked "?".
    """
    compiled = generate_source(fs, wrt)
    _scalar_only(fs, command)
    return compiled


def _scalar_only(fs: FunctionSource, command: str) -> None:
    """``explain``, ``graph`` and ``check`` work on numbers: say so for NumPy code."""
    from .lower import lower_function

    if lower_function(fs).array_mode:
        raise UsageError(
            f"{command} works on functions of numbers; {fs.name} uses NumPy arrays "
            "(adcompile dump shows its gradient)"
        )


def command_explain(args: argparse.Namespace) -> int:
    """Print the forward and reverse sweep at a point, step by step."""
    _, explanation = _explained(args, required=True)
    if args.format == "json":
        print(explanation.to_json())
    elif args.format == "markdown":
        sys.stdout.write(explanation.to_markdown(all_iterations=args.all))
    else:
        sys.stdout.write(explanation.to_text(all_iterations=args.all))
    return 0


def command_graph(args: argparse.Namespace) -> int:
    """Write the computation graph as .dot, .svg, .png or .pdf."""
    from .graph import executed_graph, output_format, static_graph, write_graph

    try:
        output_format(args.output)  # an unknown suffix fails before any work
    except GraphError as exc:
        raise UsageError(str(exc)) from None
    fs, explanation = _explained(args, required=False)
    graph = executed_graph(explanation) if explanation is not None else static_graph(fs)
    write_graph(graph, args.output)
    print(f"wrote {args.output}")
    return 0


def command_check(args: argparse.Namespace) -> int:
    """Compare the generated gradient with SymPy's partials; exit 1 on a mismatch."""
    fs = load_target(args.target)
    wrt = _requested_wrt(args, fs)
    text, name = _compile_scalar(fs, wrt, "check")
    gradient = load_module(text, f"{name} (check)")[name]
    given = args.at is not None
    points = [parse_point(at, fs.param_names(), fs.defaults) for at in args.at] if given else None
    try:
        report, reference = _compare(fs, gradient, points, wrt)
        unverifiable = _set_aside_unverifiable(report)
        kinks = _settle_kinks(fs, report)
    except NoSamplePoints as exc:
        raise RunError(f"{exc.reason}; give a point in its domain with --at") from None
    except _RUN_FAILURES as exc:  # the user's function failed there
        raise _failed_at(exc, " or ".join(args.at) if given else "the sample points") from None
    if not report.rows:
        raise RunError("no partial can be verified: " + "; ".join(unverifiable))
    print(report.table())
    if not report.ok:
        print("MISMATCH: see the rows marked above")
    elif kinks:
        print(f"OK: matches {reference}, and one-sided mpmath derivatives on kinks:")
    else:
        print(f"OK: matches {reference}")
    for note in kinks:
        print(f"  {note}")
    if unverifiable:
        print("not verifiable (left out of the table):")
    for note in unverifiable:
        print(f"  {note}")
    return 0 if report.ok else 1


def _set_aside_unverifiable(report: Any) -> list[str]:
    """Take out of the report the rows whose reference is nan at a point with nan or inf
    while the gradient gives a number: every difference quotient there is nan, so the
    reference cannot tell a right partial (d(x*y)/dy = x at y=nan) from a wrong one. It is
    neither a match nor a mismatch. Returns a note for each row taken out."""
    notes = []
    for row in list(report.rows):
        coordinates = [v for v in row.point.values() if isinstance(v, float)]
        if (
            not math.isnan(row.expected)
            or math.isnan(row.got)
            or all(map(math.isfinite, coordinates))
        ):
            continue
        report.rows.remove(row)
        at = ", ".join(f"{k}={v!r}" for k, v in row.point.items())
        notes.append(
            f"d/d{row.param} at {at}: the reference is nan at a point with nan or inf (its "
            f"difference quotients are nan there), so it cannot check the gradient's {row.got!r}"
        )
    return notes


def _settle_kinks(fs: FunctionSource, report: Any) -> list[str]:
    """Accept a differing partial at a point on a kink (a tie of ``min``/``max``, a branch
    boundary) when it is one of the one-sided derivatives there: both references average the
    two sides (SymPy's ``Heaviside(0)`` is 1/2), while Python's comparison picks one side and
    the gradient follows it. Returns a note for each accepted row."""
    from .reference import agrees, one_sided_partials

    notes = []
    for i, row in enumerate(report.rows):
        if row.ok:
            continue
        try:
            left, right = one_sided_partials(_primal(fs), row.point, row.param)
        except (ArithmeticError, ValueError, TypeError):  # mpmath cannot run it (`//`):
            continue  # the row stays a mismatch, shown as such
        if agrees(left, right, report.rtol, report.atol):
            continue  # smooth there: a real mismatch
        sides = (("left", left), ("right", right))
        chosen = [(n, v) for n, v in sides if agrees(v, row.got, report.rtol, report.atol)]
        if not chosen:
            continue
        side, value = chosen[0]
        report.rows[i] = dataclasses.replace(row, expected=value, ok=True)
        at = ", ".join(f"{k}={v!r}" for k, v in row.point.items())
        notes.append(
            f"d/d{row.param} at {at}: the one-sided derivatives differ ({left!r} from the "
            f"left, {right!r} from the right: a kink, a tie of min/max or a branch "
            f"boundary); the gradient gives the {side} one"
        )
    return notes


def _compare(
    fs: FunctionSource, gradient: Callable[..., Any], points: list | None, wrt: Any
) -> tuple[Any, str]:
    """The check's report, against SymPy or, where SymPy cannot follow, mpmath."""
    from .testing import compare_source_with_sympy  # imports SymPy: only for `check`

    if points is None or not _has_nan(points):  # SymPy's comparisons refuse nan; mpmath's not
        try:
            report = compare_source_with_sympy(
                fs, gradient, points=points, wrt=wrt, load_primal=lambda: _primal(fs)
            )
            return report, "SymPy"
        except UnsupportedSyntaxError as stop:  # a loop, a variable unbound on a path...
            if points is None:
                raise UsageError(
                    "SymPy cannot follow this function; give a point with --at to check it "
                    "against a high-precision numerical reference (mpmath). The SymPy "
                    f"reference stopped here:\n{stop}"
                ) from None
    from .reference import compare_with_mp

    return compare_with_mp(_primal(fs), points, wrt=wrt, gradient=gradient), "the mpmath reference"


def _primal(fs: FunctionSource) -> Callable[..., Any]:
    """The user's function itself: imported, or defined from the file without running it."""
    return fs.origin if fs.origin is not None else define_statically(fs)


def _has_nan(points: list) -> bool:
    return any(isinstance(v, float) and math.isnan(v) for point in points for v in point.values())


def define_statically(fs: FunctionSource) -> Callable[..., Any]:
    """Define a file's functions without running any of its code: no module code, and no
    default, decorator or annotation expression (defaults are the values read statically)."""
    # Builtins stay out: in the module's globals they would hide the stand-ins the mpmath
    # reference puts in for them (its `float` keeps mpmath numbers).
    namespace = {
        k: v
        for k, v in fs.namespace.items()
        if not isinstance(v, StaticFunction) and getattr(builtins, k, None) is not v
    }
    namespace[_UNREAD] = object()  # a default known only by running the file: unusable
    statics = [value for value in fs.namespace.values() if isinstance(value, StaticFunction)]
    defs = [_static_definition(value.node, value.defaults) for value in statics]
    if all(value.node is not fs.node for value in statics):  # decorated: itself, undecorated
        defs.append(_static_definition(fs.node, fs.defaults))
    module = ast.Module(body=defs, type_ignores=[])
    exec(compile(module, fs.filename, "exec"), namespace)
    return namespace[fs.name]


_UNREAD = "__adcompile_unread_default__"


def _static_definition(node: ast.FunctionDef, defaults: tuple) -> ast.FunctionDef:
    """A copy of ``node`` whose defaults are the given values, without decorators (e.g.
    ``@grad``: the primal itself is wanted) or annotations."""
    node = copy.deepcopy(node)
    node.decorator_list, node.returns = [], None
    arguments = node.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        arg.annotation = None
    for special in (arguments.vararg, arguments.kwarg):
        if special is not None:
            special.annotation = None
    arguments.defaults = [
        ast.Name(id=_UNREAD, ctx=ast.Load()) if isinstance(v, UnreadDefault) else ast.Constant(v)
        for v in defaults
    ]
    arguments.kw_defaults = [
        None if d is None else ast.Name(id=_UNREAD, ctx=ast.Load()) for d in arguments.kw_defaults
    ]
    return ast.fix_missing_locations(node)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for the ``adcompile`` command."""
    parser = argparse.ArgumentParser(
        prog="adcompile", description="Reverse-mode AD by source transformation."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    dump = commands.add_parser("dump", help="print the generated gradient code")
    check = commands.add_parser("check", help="verify the gradient against SymPy")
    explain = commands.add_parser("explain", help="backprop at a point, step by step")
    graph = commands.add_parser("graph", help="draw the computation graph")
    for sub in (dump, check, explain, graph):
        sub.add_argument("target", help="PATH.py:FUNC or package.module:FUNC")
        sub.add_argument(
            "--wrt", action=_Once, help="comma-separated parameter names (default: all)"
        )
    dump.add_argument(
        "--annotate", action="store_true", help="show the primal source beside the generated code"
    )
    dump.add_argument(
        "--mode",
        choices=("reverse", "forward"),
        help="reverse or forward mode (default: the target's @grad(mode=...), else reverse)",
    )
    check.add_argument(
        "--at",
        action="append",
        help="a point, e.g. x=4,y=-3,z=5, given once per point (default: random points; "
        "needed for loops and keyword calls, which SymPy cannot follow)",
    )
    explain.add_argument("--at", action=_Once, help="the point, e.g. x=4,y=-3,z=5 (required)")
    explain.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    explain.add_argument("--all", action="store_true", help="show every loop iteration")
    graph.add_argument(
        "--at", action=_Once, help="a point: values on the nodes, adjoints on reverse edges"
    )
    graph.add_argument("-o", "--output", required=True, help="graph.svg, .png, .pdf, .dot or .gv")
    dump.set_defaults(run=command_dump)
    check.set_defaults(run=command_check)
    explain.set_defaults(run=command_explain)
    graph.set_defaults(run=command_graph)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    if sys.stderr is None:  # started with `2>&-`: errors go nowhere, as the user asked
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (open for the process's life)
    if sys.stdout is None:  # started with `>&-`: Python gives None, and the output is lost
        print("adcompile: error: standard output is closed: nowhere to write", file=sys.stderr)
        return 1
    args = build_parser().parse_args(argv)
    try:
        with room_for_deep_expressions():
            return args.run(args)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except AdcompileError as exc:
        if exc.location is None:  # nothing in a file to point at: one line, as the others
            print(f"adcompile: error: {exc.message}", file=sys.stderr)
        else:
            print(format_message(exc.message, exc.location, kind="error"), file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"adcompile: error: {exc}", file=sys.stderr)
        return 2
    except RunError as exc:
        print(f"adcompile: error: {exc}", file=sys.stderr)
        return 1
    except RecursionError:  # beyond even the raised limit (Python's own compiler gives up too)
        print(f"adcompile: error: {messages.TOO_DEEP}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("adcompile: interrupted", file=sys.stderr)
        return 130
    except UnicodeError as exc:  # e.g. printing a name the terminal's encoding cannot show
        print(f"adcompile: error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad --wrt, reported by resolve_wrt
        print(f"adcompile: error: {exc}", file=sys.stderr)
        return 2
    except (LookupError, FileNotFoundError, GraphError, OSError) as exc:
        print(f"adcompile: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(
            f"adcompile: internal error: {type(exc).__name__}: {exc} (please report this)",
            file=sys.stderr,
        )
        return 3
