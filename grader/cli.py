"""The ``grade`` command: options only; every verb calls one function of :mod:`grader.api`."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from grader import __version__
from grader.errors import GraderError
from grader.platforms import GRADEBOOKS  # cheap: csv and the report's csv_text
from grader.reporting.formats import FORMATS, wants_colour  # cheap: rich is imported only to draw a table


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except GraderError as error:  # the user's mistake: one line, no traceback
            click.echo(f"grade: error: {error}", err=True)
            sys.exit(error.exit_code)
        except KeyboardInterrupt:  # where grader/interrupt.py's handler is not in place: never Click's exit 1
            from grader.interrupt import EXIT_CODE, LINE

            click.echo(LINE, err=True)
            sys.exit(EXIT_CODE)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grade")
@click.option("--course", "course_dir", type=click.Path(path_type=Path, file_okay=False),
              help="The course folder (with course.toml). Default: found from the current folder upwards.")
@click.pass_context
def cli(ctx, course_dir):
    """Grade PyTorch exercises against the reference, with feedback that names the mistake."""
    ctx.obj = course_dir


@cli.command()
@click.argument("assignments", nargs=-1)
@click.option("--submission", type=click.Path(path_type=Path),
              help="A folder like assignments/, one assignment folder, a .py module or a .ipynb notebook.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report here.")
@click.option("--device", type=click.Choice(("auto", "cpu", "cuda")), default="auto", show_default=True)
@click.option("--seed", help="Reproduce a run: the seed its report names.")
@click.option("--debug", is_flag=True, help="For suite authors: a check that breaks shows its traceback, and pytest's "
                                            "output goes to stderr (also GRADE_DEBUG=1).")
@click.option("--watch", "watching", is_flag=True,
              help="Grade again on every save of the submission's files, from a grader kept warm (Ctrl-C stops).")
@click.option("--figures", type=click.Path(path_type=Path, file_okay=False),
              help="Also write, as ASSIGNMENT-EXERCISE.png in this folder, each wrong pictured exercise's output "
                   "beside the right one on the lesson's data (course.toml's [course] figures).")
@click.pass_obj
def check(course_dir, assignments, submission, fmt, output, device, seed, debug, watching, figures):
    """Grade one submission (default: assignments/). Exit 0 for full marks, 1 otherwise."""
    from grader import api

    course = api.open_course(course_dir)
    sys.exit(api.check(course=course, assignment_ids=assignments, submission=submission, fmt=fmt, output=output,
                       device=device, seed=api.parse_seed(seed), colour=wants_colour(sys.stdout), debug=debug,
                       watching=watching, figures=figures))


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Where DIR/<submission>.json and DIR/summary.csv are written.")
@click.option("--workers", type=int, default=2, show_default=True, help="Submissions graded at once.")
@click.option("--shard", help="I/N: grade only the I-th of N deterministic slices (a CI matrix, a Slurm array).")
@click.option("--resume", is_flag=True, help="Grade only what has no result in --out yet, on the seed --out records.")
@click.option("--fresh", is_flag=True, help="Drop the results --out holds and grade the whole class again.")
@click.option("--device", type=click.Choice(("auto", "cpu", "cuda")), default="auto", show_default=True)
@click.option("--seed", help="The class's seed (default: the one --out records, else a fresh one); give every "
                             "shard of a class the same.")
@click.option("--assignment", "assignment_ids", multiple=True,
              help="Grade this assignment only (repeatable; default: all): a week's batch, scored out of its points.")
@click.pass_obj
def autograde(course_dir, paths, out, workers, shard, resume, fresh, device, seed, assignment_ids):
    """Grade many submissions (folders, .zip files, or folders of them), isolated and in parallel."""
    from grader import api

    course = api.open_course(course_dir)
    sys.exit(api.autograde(course=course, paths=paths, out=out, workers=workers, shard=shard, resume=resume,
                           device=device, seed=api.parse_seed(seed), assignment_ids=assignment_ids, fresh=fresh))


@cli.command()
@click.argument("results", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the CSV here (default: stdout).")
@click.option("--gradebook", type=click.Path(path_type=Path, dir_okay=False),
              help="nbgrader's gradebook (default: gradebook.db at the course root, where there is one).")
@click.option("--no-gradebook", is_flag=True, help="The autograde results alone: leave the course's gradebook.db out.")
@click.option("--mixed-seeds", is_flag=True, help="Merge results of one assignment graded on different seeds "
                                                  "(refused by default: a class is graded on one seed).")
@click.option("--format", "fmt", type=click.Choice(("csv", *GRADEBOOKS)), default="csv", show_default=True,
              help="Ours (a row per submission and source, every exercise), or the CSV an LMS's gradebook imports.")
@click.option("--roster", type=click.Path(path_type=Path, dir_okay=False),
              help="With canvas or moodle: a CSV mapping each submission (column 'submission') to the LMS's "
                   "identifiers (canvas: ID, SIS User ID, SIS Login ID, Section; moodle: idnumber, email or username).")
@click.option("--missing-as-zero", is_flag=True,
              help="With canvas or moodle: 0 for a student without a result (default: an empty grade).")
@click.pass_obj
def export(course_dir, results, output, gradebook, no_gradebook, mixed_seeds, fmt, roster, missing_as_zero):
    """One CSV of all grades: autograde result folders (every shard's; default ./grades) and nbgrader's gradebook."""
    from grader import api

    if no_gradebook and gradebook is not None:
        raise click.UsageError("--gradebook and --no-gradebook say opposite things")
    gradebook = False if no_gradebook else gradebook
    course = api.open_course(course_dir)
    sys.exit(api.export(course=course, result_dirs=results, output=output, gradebook=gradebook,
                        mixed_seeds=mixed_seeds, fmt=fmt, roster=roster, missing_as_zero=missing_as_zero))


@cli.command("list")
@click.pass_obj
def list_(course_dir):
    """The assignments, their exercises and points."""
    from grader import api

    click.echo(api.list_course(course=api.open_course(course_dir)), nl=False)


@cli.command()
@click.argument("assignments", nargs=-1)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=Path("autograder.zip"),
              show_default=True, help="The package to upload to Gradescope's autograder settings.")
@click.option("--seed", help="The seed every upload is graded on (default: one drawn now, the class's).")
@click.pass_obj
def gradescope(course_dir, assignments, out, seed):
    """Package the autograder Gradescope takes, for these assignments (default: all)."""
    from grader import api

    sys.exit(api.gradescope(course=api.open_course(course_dir), assignment_ids=assignments, out=out,
                            seed=api.parse_seed(seed)))


@cli.command()
@click.argument("assignments", nargs=-1)
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 if assignments/ (with --out: the distribution there) is stale or leaks "
                   "a solution or hidden test.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="Write the student distribution here instead (a new or empty folder, or a previous "
                   "distribution, all of it replaced but .git).")
@click.option("--force", is_flag=True,
              help="Overwrite files in assignments/ that release did not write (someone's edits), keeping a copy of "
                   "each in .grade-kept/ first (without it, release refuses and names them).")
@click.pass_obj
def release(course_dir, assignments, check_only, out, force):
    """Regenerate assignments/ (stubs, release notebooks) from solutions/, or write the student distribution."""
    from grader import api

    sys.exit(api.release(course=api.open_course(course_dir), assignment_ids=assignments, check_only=check_only,
                         out=out, force=force))


@cli.command("new-exercise")
@click.argument("assignment")
@click.argument("name")
@click.option("--points", type=float, default=10, show_default=True, help="The exercise's points in course.toml.")
@click.pass_obj
def new_exercise(course_dir, assignment, name, points):
    """Add exercise NAME to ASSIGNMENT: course.toml, the reference and lesson notebook, both suites."""
    from grader import api

    sys.exit(api.new_exercise(course=api.open_course(course_dir), assignment_id=assignment, name=name, points=points))


@cli.command()
@click.argument("results", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the report here (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(("html", "json", "csv", "markdown")), default="html",
              show_default=True)
@click.option("--anonymise", is_flag=True, help="Stable pseudonyms instead of names (to share with TAs, or in class).")
@click.option("--gradebook", type=click.Path(path_type=Path, dir_okay=False), help="nbgrader's gradebook too.")
@click.option("--mixed-seeds", is_flag=True, help="Merge results of one assignment graded on different seeds "
                                                  "(refused by default: a class is graded on one seed).")
@click.pass_obj
def report(course_dir, results, out, fmt, anonymise, gradebook, mixed_seeds):
    """What the class got wrong: scores, misconceptions ranked by points lost, who needs help (autograde
    result folders, shards merged; default ./grades)."""
    from grader import api

    course = api.open_course(course_dir)  # its secret verifies the results folders (and keys --anonymise)
    sys.exit(api.report(course=course, result_dirs=results or (Path("grades"),), out=out, fmt=fmt,
                        anonymise=anonymise, gradebook=gradebook, mixed_seeds=mixed_seeds))


@cli.command()
@click.argument("result", type=click.Path(path_type=Path, dir_okay=False))
def classroom(result):
    """GitHub Classroom's notices of the points in RESULT (a JSON result of `grade check`), on stdout."""
    from grader import api

    sys.exit(api.classroom(result=result))


def main():
    from grader import interrupt

    interrupt.install()  # Ctrl-C: exit 130 and one line, never an abort inside torch
    cli(prog_name="grade")
