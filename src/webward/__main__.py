import sys

from webward.cli import main

sys.exit(main())
