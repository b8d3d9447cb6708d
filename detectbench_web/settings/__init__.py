"""Default settings module: everything is read from the environment (see base.py)."""
from .base import *  # noqa: F401,F403
