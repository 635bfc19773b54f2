"""ctxkit: decide what context an LLM agent sends with every request.

The skills whose trigger keywords a message holds (one pass over the message, whatever the
number of skills) and the project memories that matter, from the same Rust core as the
``ctxkit`` command line. ``ctxkit.maf`` wraps both as Microsoft Agent Framework context
providers (``pip install ctxkit[maf]``).
"""

from ._native import CtxkitError, Invocation, Memory, SkillContext, Skills, Tool, __version__

__all__ = ["CtxkitError", "Invocation", "Memory", "SkillContext", "Skills", "Tool", "__version__"]
