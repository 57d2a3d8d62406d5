"""Shared fixtures. The end-to-end fixtures (executor, gateway, ledger) are
in e2e.py and used by the test_e2e_* modules."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VECTORS = os.path.join(ROOT, "topics", "testdata", "client-vectors.json")
