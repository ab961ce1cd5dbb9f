"""``python -m campaign_engine.cli``: the same commands as the ``campaign-engine`` script."""

import sys

from campaign_engine.cli import main

sys.exit(main())
