"""``python -m jaxmdp``: the command line (:mod:`jaxmdp.cli`)."""

import sys

from jaxmdp.cli import main

sys.exit(main())
