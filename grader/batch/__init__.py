"""Grading a class: finding its submissions, grading them in parallel and isolated, and showing progress."""
