"""nbgrader, run from the course root: sources in solutions/, releases in assignments/.

The same mapping `grade release` uses (grader/course/notebooks.py). Submissions go in
submitted/<student>/<assignment>/; the gradebook is gradebook.db (SQLite) at the course root.
`nbgrader generate_assignment ID` always regenerates the committed release folder (it is generated
from solutions/, so there is nothing to keep) and writes the stub module beside the release notebook,
as `grade release` does; `nbgrader generate_feedback` shows no hidden test.
"""
from pathlib import Path

from grader.config import load_course
from grader.course.notebooks import shared_settings

ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file
shared_settings(c)

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.course_id = load_course(ROOT).id
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.db_url = f"sqlite:///{ROOT / 'gradebook.db'}"
c.GenerateAssignment.force = True  # else an existing assignments/<id>/ is skipped, and never enters the gradebook
c.GenerateAssignment.post_convert_hook = "grader.course.notebooks.write_stubs"
