"""Writes for Prolific, one transaction each: `connections` (a study's connection, test connection, reviews),
`webhooks` (a delivery applied once) and `bonuses` (batches proposed, approved and paid once)."""
from studies.prolific.services.bonuses import (
    bonus_batch_approve,
    bonus_batch_check_sendable,
    bonus_batch_propose,
    bonus_batch_send,
    bonus_batches_to_resume,
)
from studies.prolific.services.connections import (
    connection_set,
    connection_test,
    prolific_client,
    submission_approve,
    submission_reject,
)
from studies.prolific.services.screen_outs import screen_out_report, screen_outs_unreported
from studies.prolific.services.webhooks import webhook_receive

__all__ = [
    "bonus_batch_approve", "bonus_batch_check_sendable", "bonus_batch_propose", "bonus_batch_send", "bonus_batches_to_resume", "connection_set", "connection_test",
    "prolific_client", "screen_out_report", "screen_outs_unreported", "submission_approve", "submission_reject", "webhook_receive",
]
