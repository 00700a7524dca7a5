"""The suite runs against the wheel installed in a clean venv, with its type marker."""

import os
import sysconfig
from importlib import metadata, resources

import voiced


def test_the_installed_wheel_is_what_runs():
    site = sysconfig.get_paths()["purelib"]
    assert os.path.realpath(voiced.__file__).startswith(os.path.realpath(site)), voiced.__file__
    assert metadata.version("voiced") == voiced.__version__
    assert resources.files("voiced").joinpath("py.typed").is_file()
    assert metadata.metadata("voiced")["License-Expression"] == "MIT"
    requires = metadata.requires("voiced") or []
    assert any(r.startswith("httpx") for r in requires), requires
