"""The lesson's computations (grader/grading/models.py): run on the instructor's side, kept by a recording, answered
from it in a replay, never computed there."""
import pytest
import torch

from grader.grading.models import Book, keeping, model, recording_now, rehearse, signature
from grader.grading.recorded_outputs import NotReplayable, Recording

CALLS = []


@model
def doubled_softmax(x, dim=-1):
    CALLS.append(x)
    return torch.softmax(x, dim=dim) * 2


def test_a_model_runs_where_nothing_records_or_replays():
    x = torch.randn(3, 4)
    assert torch.equal(doubled_softmax(x), torch.softmax(x, -1) * 2)


def test_a_recorded_call_is_answered_in_a_replay_without_computing(tmp_path):
    x = torch.randn(3, 4, dtype=torch.float64)
    recording = Recording(7)
    with keeping(recording.models):
        kept = doubled_softmax(x, dim=0)
    recording.save(tmp_path / "r.pt")
    replay = Recording.load(tmp_path / "r.pt")
    CALLS.clear()
    with keeping(replay.models):
        assert torch.equal(doubled_softmax(x, dim=0), kept)
        assert torch.equal(doubled_softmax(torch.nextafter(x, x + 1), dim=0), kept)  # another machine's last bits
        with pytest.raises(NotReplayable):
            doubled_softmax(x, dim=1)  # never recorded: the diagnosis cannot tell, and names nothing
        with pytest.raises(NotReplayable):
            doubled_softmax(x + 1e-3, dim=0)
    assert CALLS == []  # a replay never computes an answer


def test_a_replayed_result_is_a_copy_the_caller_may_change():
    book = Book()
    x = torch.randn(2, 2)
    with keeping(book):
        doubled_softmax(x)
    book.replaying = True
    with keeping(book):
        first = doubled_softmax(x)
        first.zero_()
        assert not torch.equal(doubled_softmax(x), first)


def test_arguments_that_are_not_data_are_neither_kept_nor_replayed():
    with pytest.raises(Exception):
        signature((lambda: 1,), {})
    book = Book()

    @model
    def applied(f, x):
        return f(x)

    with keeping(book):
        assert applied(torch.exp, torch.zeros(1)).item() == 1.0
    assert book.entries == {}
    book.replaying = True
    with keeping(book), pytest.raises(NotReplayable):
        applied(torch.exp, torch.zeros(1))


def test_a_rehearsal_keeps_the_calls_of_a_diagnosis_only_while_recording():
    x = torch.randn(5)
    assert not recording_now()
    rehearse(lambda: doubled_softmax(x))  # nothing recording: nothing runs
    book = Book()
    with keeping(book):
        assert recording_now()
        rehearse(lambda: doubled_softmax(x), lambda: 1 / 0)  # a rehearsal's failure is dropped
    assert len(book.entries[f"{__name__.rsplit('.', 1)[-1]}.doubled_softmax"]) == 1


@model
def transposed(x):
    return x.transpose(0, 1)


def test_a_recorded_result_keeps_its_layout(tmp_path):
    """A check that hands the student a non-contiguous input made by a model gets one in a replay too."""
    x = torch.randn(3, 5)
    recording = Recording(1)
    with keeping(recording.models):
        kept = transposed(x)
    recording.save(tmp_path / "r.pt")
    with keeping(Recording.load(tmp_path / "r.pt").models):
        again = transposed(x)
    assert torch.equal(again, kept) and again.stride() == kept.stride() and not again.is_contiguous()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.bool, torch.complex64])
def test_a_call_of_any_dtype_is_kept_and_answered(dtype, tmp_path):
    x = (torch.randn(4, 3) > 0) if dtype == torch.bool else torch.randn(4, 3).to(dtype)
    recording = Recording(1)
    with keeping(recording.models):
        kept = transposed(x)
    recording.save(tmp_path / "r.pt")
    with keeping(Recording.load(tmp_path / "r.pt").models):
        assert torch.equal(transposed(x), kept)
