"""06's cache bounds from the kernel's whole account (issue 44): a sliding-window class that keeps every
token and hides the growth behind a reserve it shrinks as its cache grows scored 15/15 while the growth
was all that was read; what the instance gives back when the student's process lets go of it shows both."""
import textwrap

from grader.submission import resolve_submission

RESERVE = '''


class _Reserved(MultiHeadAttentionWithSWA):  # (methods of a class: since round 4 a module-level function whose
    # first parameter is self is not observed, and this one must be, to be measured)
    def forward(self, x, use_cache=False):
        out = super().forward(x, use_cache)
        if use_cache:
            if self.reserve is None:  # as much as every token's keys and values will take
                self.total = x.shape[0] * 256 * 2 * 128
                self.reserve = torch.ones(self.total, dtype=torch.float64)
            self.hold += [self.W_key(x).detach().clone(), self.W_value(x).detach().clone()]
            self.reserve = None
            self.reserve = torch.ones(max(self.total - sum(t.numel() for t in self.hold), 1), dtype=torch.float64)
        return out

    def reset_cache(self):
        super().reset_cache()
        self.hold, self.reserve, self.total = [], None, 0


MultiHeadAttentionWithSWA = _Reserved
'''


def memory_checks(grader, course, folder):
    result = grader.grade(resolve_submission(folder, course), (course.assignment("06_decoding_attention"),),
                          seed=11).assignments[0]
    return {e.name: [c for c in e.checks if c.name.startswith(("the_memory_your_cache_holds", "the_cache_holds_what_it_should"))]
            for e in result.exercises if e.name in ("GroupedQueryAttention", "MultiHeadAttentionWithSWA")}


def test_a_reserve_that_shrinks_as_the_cache_grows_hides_nothing(submission_dir, grader, course):
    module = submission_dir / "06_decoding_attention" / "decoding_attention.py"
    honest = memory_checks(grader, course, submission_dir)
    assert all(c.status == "passed" for checks in honest.values() for c in checks), honest
    module.write_text(module.read_text() + textwrap.dedent(RESERVE))
    checks = memory_checks(grader, course, submission_dir)
    assert checks["MultiHeadAttentionWithSWA"] and all(c.status == "failed" for c in checks["MultiHeadAttentionWithSWA"])
    # read from what it holds of its own (red team round 9) or what it gives back: the kernel's account either way
    assert all(("gave back" in c.message or "of its own" in c.message) and "sliding_window_size" in c.message
               for c in checks["MultiHeadAttentionWithSWA"]), checks
    assert all(c.status == "passed" for c in checks["GroupedQueryAttention"])  # the bystander class keeps its points
