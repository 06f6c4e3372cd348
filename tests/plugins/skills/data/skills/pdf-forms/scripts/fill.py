"""Fill a PDF form (a test fixture: prints what it would fill)."""

import sys

print(f"filled {sys.argv[1]} with {sys.argv[2]}")
