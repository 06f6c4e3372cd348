"""``model_router``: the model of each model call, chosen by rules or a classifier."""

from plait_model_router.middleware import ModelRouterMiddleware, ModelRoutingMiddleware
from plait_model_router.rules import Rule

__all__ = ["ModelRouterMiddleware", "ModelRoutingMiddleware", "Rule"]
