import sys

from course_tools.vllm_api.cli import main

sys.exit(main())
