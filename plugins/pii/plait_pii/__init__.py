"""PII detection for plait: find emails, card numbers, IPs, MAC addresses, URLs (or your
own types) in what the user sends, what the model answers and what tools return, and
block, redact, mask, hash or pseudonymize them before they reach the model or the checkpoint.

One instance handles one type; stack instances for several.
"""

from plait_pii.middleware import PIIMatch, PIIMiddleware

__all__ = ["PIIMatch", "PIIMiddleware"]
