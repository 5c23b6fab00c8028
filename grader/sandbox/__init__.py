"""The grading side of the trust boundary: how student code is confined, and the grader's handles on it.

- :mod:`grader.sandbox.confine`: which protections this machine offers, and the sandbox's view;
- :mod:`grader.sandbox.client`: the handles on a zygote and its workers (:class:`ZygoteClient`,
  :class:`Worker`), which speak :mod:`grader.inside.protocol`;
- :mod:`grader.sandbox.submission_sandbox`: one grader's sandbox, and a cell per submission (its uid,
  working copy and cgroup);
- :mod:`grader.sandbox.cgroups`: a memory and process limit per submission;
- :mod:`grader.sandbox.leftovers`: what a killed grader leaves, and who removes it;
- :mod:`grader.sandbox.kernel_boundary`: a notebook kernel confined as a worker is.
- :mod:`grader.sandbox.ownership`: folders no other user can change, for what the grader writes or believes
  outside the sandbox (results folders, exports, a student distribution).

It imports :mod:`grader.inside` and the shared basics (config, errors, submission), nothing else of
the grader (tests/grader/test_imports.py).
"""
