"""``python -m otel_prov.cli``: the same as ``otel-prov``."""

import sys

from . import main

sys.exit(main())
