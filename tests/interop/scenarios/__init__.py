"""One module per framework; each is run as ``python -m tests.interop.scenarios.NAME --out FILE ...``
in its own process (see :mod:`tests.interop.runner`)."""
