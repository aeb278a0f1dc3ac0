from memsif.cli import main

raise SystemExit(main())
