#!/usr/bin/env bash
# The Python client's tests against the daemon `make test` built (clients/python):
# installs the client with pip into a virtual environment of the build directory, as a user
# would (`pip install ./clients/python`), and runs its tests with that environment's Python, so
# they import the installed package, not the source tree. The tests start the daemon themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/python-client-venv
# Made again when a former attempt left it without a working pip.
"$venv/bin/python" -m pip --version >/dev/null 2>&1 || { rm -rf "$venv" && python3 -m venv "$venv"; }
# Without build isolation when the environment can build a wheel of a pyproject.toml project
# itself (setuptools 70.1 or newer, or 61 or newer with wheel): no download. Otherwise pip
# fetches them from PyPI for the build, as install-deps did the mcp package.
isolation=()
"$venv/bin/python" - <<'PY' 2>/dev/null && isolation=(--no-build-isolation)
import importlib.util, setuptools
version = tuple(int(part) for part in setuptools.__version__.split(".")[:2])
assert version >= (70, 1) or (version >= (61, 0) and importlib.util.find_spec("wheel"))
PY
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-deps --force-reinstall \
    "${isolation[@]}" ./clients/python
rm -rf clients/python/build clients/python/*.egg-info
TOKENVAULT_BIN=${TOKENVAULT_BIN:-$PWD/.build/debug/tokenvault} \
    "$venv/bin/python" -m unittest discover --start-directory clients/python/tests --top-level-directory clients/python/tests -v
