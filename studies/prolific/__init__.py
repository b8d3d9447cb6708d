"""Prolific, end to end: a study's connection to its Prolific study, signed webhooks (returns and time-outs end
the attempt at once and give its leases back), approvals and rejections, and bonus batches paid once.

Pure modules (no Django): `signatures` (webhook signatures), `client` (Prolific's HTTP API over httpx) and
`errors`. Django layers: `models`, `services` (writes, one transaction each), `selectors`, `views`, `apis`.
"""
