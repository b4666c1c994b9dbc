"""Fixtures of the Python package tests: the codectalk program (CODECTALK_BIN, from the build
dir) and the tiny random models it makes (CustomVoice; Base for voice cloning).
tests/python/test_python.sh installs the package with pip into a fresh venv and runs these tests
with it."""
import os
import subprocess

import pytest


def make_model(bin_path, d, preset, seed):
    subprocess.run([bin_path, "make-model", "--preset", preset, "--seed", str(seed), "--out",
                    str(d), "--force"], check=True, stdout=subprocess.DEVNULL)
    return str(d)


@pytest.fixture(scope="session")
def bin_path():
    p = os.environ.get("CODECTALK_BIN")
    if not p or not os.access(p, os.X_OK):
        pytest.fail("CODECTALK_BIN must name the built codectalk program (got %r)" % (p,))
    return p


@pytest.fixture(scope="session")
def model_dir(bin_path, tmp_path_factory):
    """A tiny random CustomVoice model."""
    return make_model(bin_path, tmp_path_factory.mktemp("tiny"), "tiny", 1)


@pytest.fixture(scope="session")
def model(model_dir):
    import codectalk
    with codectalk.Model(model_dir) as m:
        yield m


@pytest.fixture(scope="session")
def base_dir(bin_path, tmp_path_factory):
    """A tiny random Base model (voice cloning)."""
    return make_model(bin_path, tmp_path_factory.mktemp("tiny-base"), "tiny-base", 2)


@pytest.fixture(scope="session")
def other_base_dir(bin_path, tmp_path_factory):
    """Another tiny Base model: other weights, so another model hash."""
    return make_model(bin_path, tmp_path_factory.mktemp("tiny-base-5"), "tiny-base", 5)


@pytest.fixture(scope="session")
def base(base_dir):
    import codectalk
    with codectalk.Model(base_dir) as m:
        yield m
