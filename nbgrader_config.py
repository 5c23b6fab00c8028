"""nbgrader, run from the course root: sources in solutions/, releases in assignments/.

The same mapping `grade release` uses (grader/nbgrader_glue.py). Submissions go in
submitted/<student>/<assignment>/; the gradebook is gradebook.db (SQLite).
"""
from grader.nbgrader_glue import IGNORE

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attention-pytorch"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.ignore = IGNORE
c.CourseDirectory.db_url = "sqlite:///gradebook.db"
