"""The student side of the trust boundary: the only grader code a sandbox holds.

Copied whole into every zygote's view, and nothing else of the grader with it.

- :mod:`grader.inside.protocol`: the one protocol both sides speak (plain data, bounded, no pickle);
- :mod:`grader.inside.zygote`: the process that imports torch once and forks, confined, a worker per
  submission module;
- :mod:`grader.inside.worker`: imports the student's module and answers the grader's calls, watching
  them with its tracer;
- :mod:`grader.inside.operators`: what the tracer knows of torch's operators (bare names, how many
  entries each combines);
- :mod:`grader.inside.forbidden`: the library calls a course may forbid, and the operators each reaches;
- :mod:`grader.inside.stand_in`: stand-ins for a student's helpers while a case is verified;
- :mod:`grader.inside.notebook_source`: reads a notebook's code cells as a module (the worker imports
  ``.ipynb`` submissions with it).

These modules import nothing of ``grader`` outside this folder (tests/grader/test_imports.py): what
runs beside student code cannot reach the suites, the reference, the diagnosis or the results.
"""
