"""Fixtures of the Python package tests: the codectalk program (CODECTALK_BIN, from the build
dir) and a tiny random model it makes. tests/python/test_python.sh installs the package with pip
into a fresh venv and runs these tests with it."""
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def bin_path():
    p = os.environ.get("CODECTALK_BIN")
    if not p or not os.access(p, os.X_OK):
        pytest.fail("CODECTALK_BIN must name the built codectalk program (got %r)" % (p,))
    return p


@pytest.fixture(scope="session")
def model_dir(bin_path, tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    subprocess.run([bin_path, "make-model", "--preset", "tiny", "--seed", "1", "--out", str(d),
                    "--force"], check=True, stdout=subprocess.DEVNULL)
    return str(d)


@pytest.fixture(scope="session")
def model(model_dir):
    import codectalk
    with codectalk.Model(model_dir) as m:
        yield m
