"""ValueReview's status rules, the one place actions, undo, bulk actions and gold read them."""

from review.models import BulkAction, ValueEvent, ValueReview

Status, Action = ValueReview.Status, ValueEvent.Action


def test_an_action_leads_to_its_status_and_reviewed_value():
    assert ValueReview.after(Action.ACCEPT, "Nike") == (Status.ACCEPTED, "Nike")
    assert ValueReview.after(Action.REJECT, "Nike") == (Status.REJECTED, "")
    assert ValueReview.after(Action.SET_NA, "Nike") == (Status.CORRECTED, "n/a")
    assert ValueReview.after(Action.SET_NA, "n/a") == (Status.ACCEPTED, "n/a")  # n/a kept is accepted
    assert ValueReview.after(Action.CORRECT, "Nike", correction="Adidas") == (Status.CORRECTED, "Adidas")
    assert ValueReview.after(Action.CORRECT, "Nike", correction="Nike") == (Status.ACCEPTED, "Nike")


def test_a_reader_sees_the_reviewers_value_only_when_approved():
    assert ValueReview(status=Status.CORRECTED, reviewed_value="Adidas").shown("Nike") == "Adidas"
    assert ValueReview(status=Status.ACCEPTED, reviewed_value="Nike").shown("Nike") == "Nike"
    assert ValueReview(status=Status.REJECTED, reviewed_value="").shown("Nike") == "Nike"
    assert ValueReview(status=Status.PENDING).shown("Nike") == "Nike"


def test_undo_restores_a_value_only_to_an_approved_state_and_pending_names_nobody():
    assert ValueReview.restored_value(Status.CORRECTED, "Adidas") == "Adidas"
    assert ValueReview.restored_value(Status.PENDING, "Nike") == ""
    assert ValueReview.reviewer_for(Status.PENDING, "bob") is None
    assert ValueReview.reviewer_for(Status.REJECTED, "bob") == "bob"


def test_bulk_actions_move_to_their_status():
    assert ValueReview.bulk_target(BulkAction.Action.ACCEPT) == Status.ACCEPTED
    assert ValueReview.bulk_target(BulkAction.Action.REJECT) == Status.REJECTED
