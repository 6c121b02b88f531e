from course_tools.site.build import main

raise SystemExit(main())
