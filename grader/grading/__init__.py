"""Grading one submission: the suites' pytest run, the ``grade`` fixture, and how an answer is compared and its mistake named."""
