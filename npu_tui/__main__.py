from npu_tui.cli import main

raise SystemExit(main())
