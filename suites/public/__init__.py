"""The public grading suites: shipped to students, run offline by `grade check` in the student distribution.

A package, so that pytest imports these modules as ``public.test_<id>``, never confusing them with the
hidden suites of the same file names when both run in one process (as `grade release --out` does).
"""
