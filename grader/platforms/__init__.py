"""Where the course meets the platforms it runs on: Gradescope, Classroom, notebook kernels, LMS gradebooks."""
from grader.platforms import canvas, moodle

# a gradebook's format name -> its writer: write(grades, roster, warnings, *, missing_as_zero) -> CSV text.
# A new gradebook is a module beside these and one line here.
GRADEBOOKS = {"canvas": canvas.write, "moodle": moodle.write}
