"""``python -m tests.support.lambda_emulator <module.handler>``: one container's runtime."""

import sys

from tests.support.lambda_emulator.runtime import serve

serve(sys.argv[1])
