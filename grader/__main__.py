"""``python -m grader`` and the ``grade`` script: the process, then the command (grader/cli.py)."""
import sys


def keep_compiled() -> None:
    """Where the environment asks Python not to write bytecode (PYTHONDONTWRITEBYTECODE=1, as container
    images for Gradescope and CI often do), every run would compile the grader's and the course's
    sources again: about 0.1 s of a `grade check`. Their compiled files then go to the user's cache
    folder (never beside the sources), unless the environment names its own place
    (PYTHONPYCACHEPREFIX). Only a folder that the user alone owns and can write, all the way
    down from the cache's root, is used: compiled code read from a folder another user can change
    would run as this user (as root, when an instructor grades)."""
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return
    from grader.grading.user_cache import folder

    compiled = folder("pycache")
    if compiled is None:
        return
    sys.pycache_prefix, sys.dont_write_bytecode = compiled, False


def main() -> None:
    keep_compiled()
    from grader.cli import main as command

    command()


if __name__ == "__main__":
    main()
