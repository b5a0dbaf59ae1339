"""`python -m opbench.cli`: the opbench command."""
from opbench.cli.main import main

raise SystemExit(main())
