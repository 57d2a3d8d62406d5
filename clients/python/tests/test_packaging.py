"""The extras install what the examples import: `pip install
"./clients/python[langgraph]"` is enough to run examples/langgraph_refund.py."""

import ast
import os
import sys

import pytest

tomllib = pytest.importorskip("tomllib")

HERE = os.path.dirname(__file__)
PYPROJECT = os.path.join(HERE, "..", "pyproject.toml")
EXAMPLE = os.path.join(HERE, "..", "examples", "langgraph_refund.py")


def _requirement_name(req: str) -> str:
    for sep in "<>=!~[; ":
        req = req.split(sep)[0]
    return req.strip().lower().replace("_", "-")


def test_the_langgraph_extra_covers_the_example_imports():
    with open(PYPROJECT, "rb") as f:
        project = tomllib.load(f)["project"]
    installed = {_requirement_name(r) for r in project["dependencies"] + project["optional-dependencies"]["langgraph"]}
    with open(EXAMPLE) as f:
        tree = ast.parse(f.read())
    imported = {(n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
                for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in (n.names if isinstance(n, ast.Import) else [n])}
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "toolexec"}
    assert third_party == {"langgraph"}, third_party
    assert third_party <= installed, f"{third_party - installed} not in the [langgraph] extra"


def test_no_document_cites_practices_that_are_defined_nowhere():
    """Citations of an operating procedure's steps (its acronym, or "OP-"
    and a number) named practices of a document outside the repository;
    the texts say the practice itself instead."""
    import re

    root = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
    cite = re.compile(r"\bSOP\b|\bOP-\d")
    found = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("node_modules", "__pycache__")]
        for name in files:
            if name.endswith((".md", ".py", ".go")):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    found += [f"{os.path.relpath(os.path.join(d, name), root)}:{i}" for i, line in enumerate(f, 1)
                              if cite.search(line)]
    assert found == [], found
