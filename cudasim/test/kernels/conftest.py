import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "integration_test"))


def pytest_terminal_summary(terminalreporter):
    """The mutation suite's table and catch rate (test_mutations.summary)."""
    mod = sys.modules.get("test_mutations")
    if mod is not None:
        for line in mod.summary():
            terminalreporter.write_line(line)
