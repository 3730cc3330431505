"""`python -m harness.cli ...` is `wholeloop ...`."""

from . import main

main()
