from mambasizer.service.cli import main

raise SystemExit(main())
