"""The rules a trace's tables keep, whatever made them: the recorder keeps them by construction,
both loaders (JSON, npz) check them once a file's tables are filled, and both writers before
they write, so a file either format writes is one both read. A loader checks the shape of each
field as it reads it (types, lengths, the references it needs to go on); what ties the tables
together is checked here, once, for both.

Messages name the field as the JSON file spells it (``steps[4].backward_pass``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autodiff.trace._checks import MAX_LINE, _fail, _int
from autodiff.trace._recorder import _EMPTIED
from autodiff.trace._rows import BWD, FUNCTION, VARIABLE

if TYPE_CHECKING:
    from autodiff.trace._recorder import Recorder

__all__ = ["check_graph", "check_tables"]


def check_tables(tables: Recorder, graph: bool = True) -> None:
    """Raise :class:`~autodiff.trace.TraceFormatError` naming the first broken rule
    (``graph`` False: the graph's were checked already, :func:`check_graph`):

    - the graph's (:func:`check_graph`);
    - a step's Function is one, with as many values (gradients) as it has outputs (inputs);
      an accumulation's node is the step's input at its slot, its contribution that input's
      gradient, its old and new values values; cleared nodes are variables;
    - a backward step's pass, a forward step's ``during_backward`` and a gradient event's
      ``pass`` name a backward pass that exists (0 to the number of roots - 1; -1: none);
    - backward roots, cuts, names, constants, parameters and ``grad_of`` (both ends) are
      variables; operands are constants; a node's scope exists; attributes (``params``)
      belong to function nodes, and so do source lines (``lines``, 0 to MAX_LINE);
    - events come in stamp order, each shown at a step from -1 up to its stamp.
    """
    is_variable = check_graph(tables) if graph else _variables(tables._info)
    n = len(is_variable)
    passes = len(tables.backward_roots)
    for i, root in enumerate(tables.backward_roots):
        _variable(root, f"backward_roots[{i}]", is_variable)
    _check_steps(tables, is_variable, passes)
    _check_events(tables, n, passes)
    steps = len(tables._raw)
    for i, (node, step) in enumerate(sorted(tables._cut.items())):
        _variable(node, f"cuts[{i}][0]", is_variable)
        _int(step, f"cuts[{i}][1]", 0, steps)
    for node, target in tables._grad_of.items():
        _variable(node, "grad_of", is_variable)
        _variable(target, f"graph.nodes[{node}].grad_of", is_variable)
    for node in tables._names:
        _variable(node, "names", is_variable)
    for field, nodes in (
        ("constant", tables._constants),
        ("operand", tables._operands),
        ("parameter", tables._parameters),
    ):
        for node in nodes:
            _variable(node, f"{field}s", is_variable)
    if not tables._operands <= tables._constants:
        node = min(tables._operands - tables._constants)
        raise _fail(f"graph.nodes[{node}].operand", "an operand must be a constant")
    n_scopes = len(tables._scopes)
    for node, scope in tables._scope_of.items():
        if type(node) is not int or not 0 <= node < n:
            raise _fail("scopes of the nodes", f"node {node} does not exist")
        _int(scope, f"graph.nodes[{node}].scope", 1, n_scopes - 1)
    for node in tables._params:
        if type(node) is not int or not 0 <= node < n or is_variable[node]:
            raise _fail(f"graph.nodes[{node}].params", "only a function node has attributes")
    for node, line in tables._lines.items():
        if type(node) is not int or not 0 <= node < n or is_variable[node]:
            raise _fail(f"graph.nodes[{node}].line", "only a function node has a source line")
        _int(line, f"graph.nodes[{node}].line", 0, MAX_LINE)


def check_graph(tables: Recorder) -> bytearray:
    """Raise TraceFormatError unless a Function's inputs and outputs are variables, each
    variable has at most one creator and the graph has no cycle; returns which nodes are
    variables (1) and which functions (0)."""
    info = tables._info
    is_variable = _variables(info)
    _check_links(info, is_variable)
    return is_variable


def _variables(info: list) -> bytearray:
    is_variable = bytearray(len(info))
    for nid, row in enumerate(info):
        if row[0] == VARIABLE:
            is_variable[nid] = 1
    return is_variable


def _variable(node: int, path: str, is_variable: bytearray) -> int:
    if type(node) is not int or not 0 <= node < len(is_variable):
        raise _fail(path, f"node {node} does not exist (the graph has {len(is_variable)} nodes)")
    if not is_variable[node]:
        raise _fail(path, f"node {node} is not a variable")
    return node


def _check_links(info: list, is_variable: bytearray) -> None:
    """A recorded graph joins variables and functions, has one creator per variable and no
    cycle. Node ids that grow along every link (a recording's, nearly always) are a
    topological order already; otherwise Kahn's algorithm decides (a self-loop is a cycle)."""
    n = len(info)
    has_creator = bytearray(n)
    ordered = True
    for f, row in enumerate(info):
        if row[0] != FUNCTION:
            continue
        for x in row.inputs:
            if type(x) is not int or not 0 <= x < n or not is_variable[x]:
                _variable(x, f"graph.nodes[{f}]: an input", is_variable)
            if x > f:
                ordered = False
        for y in row.outputs:
            if type(y) is not int or not 0 <= y < n or not is_variable[y]:
                _variable(y, f"graph.nodes[{f}]: an output", is_variable)
            if has_creator[y]:
                first = next(g for g, r in enumerate(info) if r[0] == FUNCTION and y in r.outputs)
                raise _fail(
                    "graph.links",
                    f"variable node {y} has two creators (function nodes {first} and {f})",
                )
            has_creator[y] = 1
            if y < f:
                ordered = False
    if not ordered:
        _check_acyclic(info)


def _check_acyclic(info: list) -> None:
    n = len(info)
    indegree = [0] * n
    successors: list[list[int]] = [[] for _ in range(n)]
    for f, row in enumerate(info):
        if row[0] != FUNCTION:
            continue
        for x in row.inputs:
            successors[x].append(f)
            indegree[f] += 1
        for y in row.outputs:
            successors[f].append(y)
            indegree[y] += 1
    ready = [v for v in range(n) if indegree[v] == 0]
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for w in successors[v]:
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    if seen != n:
        stuck = next(v for v in range(n) if indegree[v] > 0)
        raise _fail("graph.links", f"the links contain a cycle (through node {stuck})")


def _check_steps(tables: Recorder, is_variable: bytearray, passes: int) -> None:
    info = tables._info
    n = len(info)
    last_pass = passes - 1
    for k, r in enumerate(tables._raw):
        fid = r[1]
        if type(fid) is not int or not 0 <= fid < n or is_variable[fid]:
            raise _fail(f"steps[{k}].function", f"node {fid} is not a function")
        _, _, _, ins, outs = info[fid]
        if r[0] == BWD:
            _, _, gys, gxs, accs, cleared, bpass = r
            if len(gys) != len(outs) or len(gxs) != len(ins):
                raise _fail(f"steps[{k}]", "the gradients do not match the function's slots")
            if type(bpass) is not int or not 0 <= bpass <= last_pass:
                raise _fail(f"steps[{k}].backward_pass", _no_pass(bpass, passes))
            for i, a in enumerate(accs):
                slot = a[1]
                if not 0 <= slot < len(ins) or a[0] != ins[slot]:
                    raise _fail(
                        f"steps[{k}].accumulations[{i}]", "not the function's input at its slot"
                    )
                if a[2] is None or a[4] is None or a[3] is None or a[3] is not gxs[slot]:
                    raise _fail(
                        f"steps[{k}].accumulations[{i}]",
                        "expected old + contribution = new, the contribution the input's gradient",
                    )
            for i, node in enumerate(cleared):
                if type(node) is not int or not 0 <= node < n or not is_variable[node]:
                    _variable(node, f"steps[{k}].cleared[{i}]", is_variable)
        else:
            _, _, step_ins, step_outs, values, during = r
            if step_ins != ins or step_outs != outs:
                raise _fail(f"steps[{k}]", f"the inputs and outputs differ from node {fid}'s")
            if len(values) != len(outs):
                raise _fail(f"steps[{k}].values", f"{len(values)} values for {len(outs)} outputs")
            if type(during) is not int or not -1 <= during <= last_pass:
                raise _fail(f"steps[{k}].during_backward", _no_pass(during, passes))


def _no_pass(number: object, passes: int) -> str:
    have = f"{passes}, numbered 0 to {passes - 1}" if passes else "none"
    return f"backward pass {number} does not exist: the trace has {have}"


def _check_events(tables: Recorder, n: int, passes: int) -> None:
    steps = len(tables._raw)
    last = 0
    for i, (stamp, visible, node, kind, _raw, origin) in enumerate(tables._extra):
        if not (
            type(stamp) is int
            and last <= stamp <= steps
            and type(visible) is int
            and -1 <= visible <= stamp
            and type(node) is int
            and 0 <= node < n
            and type(kind) is int
            and 0 <= kind <= _EMPTIED  # the kinds are 0 to _EMPTIED
            and (origin is None or (type(origin) is int and -1 <= origin < passes))
        ):
            p = f"events[{i}]"
            _int(stamp, f"{p}.stamp", last, steps)
            _int(visible, f"{p}.visible", -1, stamp)
            _int(node, f"{p}.node", 0, n - 1)
            _int(kind, f"{p}.kind", 0, _EMPTIED)
            raise _fail(f"{p}.pass", _no_pass(origin, passes))
        last = stamp
