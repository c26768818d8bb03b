import sys

from panewatch.cli import main

sys.exit(main())
