"""``python -m viewer``: the same as the ``autodiff-viewer`` command."""

import sys

from viewer.app import main

sys.exit(main())
