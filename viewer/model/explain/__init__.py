"""Chain-rule explanations of a recording: what one backward step computed (each input's
local derivative as text, with the step's own numbers) and the chain-rule product along every
path from the graph's output down to a node."""

from viewer.model.explain.chain import Chain, ChainPath, chain
from viewer.model.explain.step import StepExplanation, Term, explain_step

__all__ = ["Chain", "ChainPath", "StepExplanation", "Term", "chain", "explain_step"]
