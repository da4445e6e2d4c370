"""Runs the vendored `e2e_test` suite of the Kubernetes Python client against an
installed `kubernetes` package, without changing the suite.

Upstream the suite lives inside the package (`kubernetes/e2e_test`) and is run from the
repository's root: its modules import `kubernetes.e2e_test.base`, and `test_utils` opens
its manifests at `kubernetes/e2e_test/test_yaml/...`, relative to the working directory.
The published package does not ship the suite, so this file makes both hold: the
vendored directory becomes the `kubernetes.e2e_test` package, and the tests run in a
scratch directory where `kubernetes/e2e_test` leads to it.
"""

import os
import pathlib

import kubernetes
import pytest

HERE = pathlib.Path(__file__).resolve().parent

# `kubernetes.e2e_test` is `HERE / "e2e_test"`: the installed package's own modules stay
# where they are, and this directory only adds the one the package does not ship.
kubernetes.__path__.append(str(HERE))


@pytest.fixture(scope="session", autouse=True)
def upstream_working_directory(tmp_path_factory):
    """The working directory upstream's CI has (the repository's root), as far as the
    suite reads files from it."""
    root = tmp_path_factory.mktemp("python-client-root")
    (root / "kubernetes").mkdir()
    (root / "kubernetes" / "e2e_test").symlink_to(HERE / "e2e_test", target_is_directory=True)
    previous = os.getcwd()
    os.chdir(root)
    yield root
    os.chdir(previous)
