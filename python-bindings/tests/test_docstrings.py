"""Every public function, class and method of the attnfuse package has a
docstring that names each of its parameters, so that help() is useful.

Public: the names a module exports (its __all__, else the names without a
leading underscore) that are defined in the package, and the methods and
properties without a leading underscore that a public class defines itself.
A parameter is named when the docstring (for a class: the class's or its
__init__'s) contains it as a word; `self`, `cls` and *args / **kwargs are
not asked for.
"""

import importlib
import inspect
import re

import pytest

MODULES = ["attnfuse", "attnfuse.builders", "attnfuse.bf16",
           "attnfuse.importer", "attnfuse.weights", "attnfuse.runtime",
           "attnfuse.torch", "attnfuse.generation", "attnfuse.serve"]
NEEDS = {"attnfuse.torch": ["torch"],
         "attnfuse.generation": ["torch", "transformers"],
         "attnfuse.serve": ["torch", "transformers"]}


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return names


def parameters(function):
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return []
    return [p.name for p in signature.parameters.values()
            if p.name not in ("self", "cls")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def missing(doc, names):
    return [n for n in names
            if not re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", doc)]


def problems_of(module_name):
    for package in NEEDS.get(module_name, []):
        pytest.importorskip(package)
    module = importlib.import_module(module_name)
    problems = []

    def check_function(where, function):
        """A docstring that names each of `function`'s parameters."""
        doc = function.__doc__ or ""
        if not doc:
            problems.append(f"{where}: no docstring")
            return
        lost = missing(doc, parameters(function))
        if lost:
            problems.append(f"{where}: parameters not described: "
                            f"{', '.join(lost)}")

    for name in public_names(module):
        value = getattr(module, name)
        if inspect.ismodule(value) or not str(
                getattr(value, "__module__", "")).startswith("attnfuse"):
            continue
        where = f"{module_name}.{name}"
        if inspect.isclass(value):
            doc = inspect.getdoc(value) or ""
            if not doc:
                problems.append(f"{where}: no docstring")
            init = value.__dict__.get("__init__")
            if init is not None:
                full = doc + "\n" + (init.__doc__ or "")
                lost = missing(full, parameters(init))
                if lost:
                    problems.append(f"{where}(): parameters not described: "
                                    f"{', '.join(lost)}")
            for attribute, member in vars(value).items():
                if attribute.startswith("_"):
                    continue
                if isinstance(member, property):
                    if not member.__doc__:
                        problems.append(f"{where}.{attribute}: no docstring")
                    continue
                function = member
                if isinstance(member, (classmethod, staticmethod)):
                    function = member.__func__
                if inspect.isfunction(function):
                    check_function(f"{where}.{attribute}", function)
        elif callable(value):
            check_function(where, value)
    return problems


@pytest.mark.parametrize("module_name", MODULES)
def test_public_api_has_docstrings_naming_parameters(module_name):
    problems = problems_of(module_name)
    assert not problems, "\n".join(problems)
