"""``model_refusal``: a model's refusal as a typed outcome (``ModelRefusalMiddleware``)."""

from plait_model_refusal.middleware import ModelRefusalMiddleware
from plait_model_refusal.refusal import ModelRefusedError, Refusal, refusal_in, refusal_of_error

__all__ = [
    "ModelRefusalMiddleware",
    "ModelRefusedError",
    "Refusal",
    "refusal_in",
    "refusal_of_error",
]
